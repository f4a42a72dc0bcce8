"""A protect trial's cell: a detect case under one mode (none, protect, fixed) on a runtime."""
from __future__ import annotations

from dataclasses import dataclass

from ..detect.cell import DetectCell


@dataclass
class ProtectCell(DetectCell, kind="protect"):
    mode: str = "none"

    def labels(self) -> tuple[str, str]:
        return self.case_name, self.mode

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "ProtectCell":
        raise NotImplementedError("protect studies are newer than the store's legacy layout")
