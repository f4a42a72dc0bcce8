"""An oltp trial's cell: a database, per runtime and repetition."""
from __future__ import annotations

from dataclasses import dataclass

from ...store import Cell


@dataclass
class OltpCell(Cell, kind="oltp"):
    database: str  # postgres, mariadb
    params: dict  # share, disruptors, load, scale; rate_tps once the first repetition measured it

    def labels(self) -> tuple[str, str]:
        return "oltp", self.database

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "OltpCell":
        return cls(resource, params)
