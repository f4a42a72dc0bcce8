"""A guard evaluation's cell: a workload under a policy."""
from __future__ import annotations

from dataclasses import dataclass

from ...store import Cell


@dataclass
class GuardCell(Cell, kind="guard"):
    workload: str
    policy: str
    params: dict  # the workload (victim, neighbour shares, …) and the guard's settings as they ran

    def labels(self) -> tuple[str, str]:
        return f"{self.workload}/{self.policy}", "disk"

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "GuardCell":
        workload, _, policy = scenario.rpartition("/")
        return cls(workload, policy, params)
