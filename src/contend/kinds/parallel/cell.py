"""A parallel suite's cell: one benchmark in `count` concurrent containers (1: isolated)."""
from __future__ import annotations

from dataclasses import dataclass

from ...store import Cell
from .metrics import count_of, scenario_of


@dataclass
class ParallelCell(Cell, kind="parallel"):
    benchmark: str
    count: int  # containers at once
    params: dict  # containers per process, runs per container, sizes, limits

    def labels(self) -> tuple[str, str]:
        return scenario_of(self.count), self.benchmark

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "ParallelCell":
        return cls(resource, count_of(scenario), {k: v for k, v in params.items() if k != "count"})
