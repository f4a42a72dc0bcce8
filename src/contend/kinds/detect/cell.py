"""A detect trial's cell: a case (an antagonist on a resource, or a control) on a runtime."""
from __future__ import annotations

from dataclasses import dataclass

from ...store import Cell


@dataclass
class DetectCell(Cell, kind="detect"):
    case_name: str
    resource: str  # the antagonist's resource; a control's: the one its change is on ("none" for idle)
    params: dict  # the trial's clock, the antagonist's start, the tenants' loads and limits

    def labels(self) -> tuple[str, str]:
        return self.case_name, self.resource

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "DetectCell":
        return cls(scenario, resource, params)
