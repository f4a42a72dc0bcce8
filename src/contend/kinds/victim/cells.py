"""The victim kinds' cells: a disk-fill trial (one per runtime and repetition), an oltp trial (a database)."""
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


@dataclass
class OltpCell(Cell, kind="oltp"):
    database: str  # postgres, mariadb
    params: dict  # share, disruptors, load, scale; rate_tps once the first repetition measured it

    def labels(self) -> tuple[str, str]:
        return "oltp", self.database

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "OltpCell":
        return cls(resource, params)
