"""An isolation trial's cell: a scenario on a resource."""
from __future__ import annotations

from dataclasses import dataclass

from ...store import Cell


@dataclass
class IsolationCell(Cell, kind="isolation"):
    scenario: str  # its name (harmony, escape, steal, …)
    resource: str  # cpu, memory, disk, network
    scenario_params: dict  # the scenario as it ran (l_a, l_d, w_d, steps, …)

    def labels(self) -> tuple[str, str]:
        return self.scenario, self.resource

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "IsolationCell":
        return cls(scenario, resource, params)
