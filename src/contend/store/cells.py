"""What one kind's trial is, in typed columns of a table of the kind's own (`cells_<kind>`).

The `trials` table holds what every trial has (runtime, repetition, status, times, capacity, facts); a kind's
Cell holds the rest with the types it has (parallel: a benchmark and a container count; guard: a workload and
a policy), so no kind bends its data into another kind's columns. metrics.csv names a cell by a scenario and
a resource (DESIGN §7): `labels` says how this kind's cell is named there.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import re
import typing
from typing import Any, ClassVar

SQL_TYPES = {str: "VARCHAR", int: "BIGINT", float: "DOUBLE", dict: "JSON", list: "JSON"}
NAME = re.compile(r"[a-z][a-z0-9_]*\Z")  # a kind's or a field's name, as it may stand in SQL


@dataclasses.dataclass
class Cell:
    """A kind's cell: subclass it as a dataclass with `kind="..."` in the class line."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, kind: str = "", **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if not NAME.match(kind):
            raise TypeError(f"{cls.__name__}: kind {kind!r} is not a name a table may carry")
        cls.kind = kind

    def labels(self) -> tuple[str, str]:
        """(scenario, resource): how metrics.csv and the shared tables name this cell."""
        raise NotImplementedError

    @classmethod
    def legacy(cls, scenario: str, resource: str, params: dict) -> "Cell":
        """The cell of a trial stored before cells had tables of their own (its scenario, resource and
        scenario_params columns): how an older results directory is converted."""
        raise NotImplementedError

    # -- the table (names come from code, never from data)
    @classmethod
    def table(cls) -> str:
        return f"cells_{cls.kind}"

    @classmethod
    @functools.cache
    def columns(cls) -> dict[str, type]:
        hints = typing.get_type_hints(cls)
        out = {}
        for f in dataclasses.fields(cls):
            kind = typing.get_origin(hints[f.name]) or hints[f.name]
            if not NAME.match(f.name) or kind not in SQL_TYPES:
                raise TypeError(f"{cls.__name__}.{f.name}: not a column a cell table can have")
            out[f.name] = kind
        return out

    @classmethod
    def ddl(cls) -> str:
        cols = ", ".join(f"{name} {SQL_TYPES[kind]}" for name, kind in cls.columns().items())
        return f"CREATE TABLE IF NOT EXISTS {cls.table()} (trial_id VARCHAR PRIMARY KEY, {cols})"

    def row(self) -> list:
        return [json.dumps(getattr(self, n)) if SQL_TYPES[k] == "JSON" else getattr(self, n)
                for n, k in self.columns().items()]

    @classmethod
    def from_row(cls, values: dict) -> "Cell":
        return cls(**{n: json.loads(values[n]) if SQL_TYPES[k] == "JSON" and values[n] is not None else values[n]
                      for n, k in cls.columns().items()})
