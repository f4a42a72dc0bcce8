"""An echo trial's cell: one per runtime and repetition."""
from __future__ import annotations

from dataclasses import dataclass

from contend.store import Cell


@dataclass
class EchoCell(Cell, kind="echo"):
    words: int

    def labels(self) -> tuple[str, str]:
        return "echo", "cpu"
