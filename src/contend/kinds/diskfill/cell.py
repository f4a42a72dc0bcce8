"""A disk-fill trial's cell: one per runtime and repetition."""
from __future__ import annotations

from dataclasses import dataclass

from ...store import Cell


@dataclass
class DiskFillCell(Cell, kind="diskfill"):
    params: dict  # file sizes, attackers, limits, the victim's load

    def labels(self) -> tuple[str, str]:
        return "diskfill", "disk"

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "DiskFillCell":
        return cls(params)
