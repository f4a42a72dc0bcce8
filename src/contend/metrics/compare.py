"""Two studies' metrics side by side: the change per cell and whether it is significant (pure).

A cell got significantly worse when both sides have a 95 % interval (n >= 2), the intervals do not
overlap, B lies on the worse side, and the change is at least `min_change` (so two bit-identical
intervals a rounding apart are not a regression). With one repetition there is no interval: such a
cell is `untested`, shown but never gating, because one-shot isolation metrics move by up to ±0.6
between identical runs on this host (docs/results/archive.md).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from .directions import DESCRIPTIVE, direction

VERDICTS = ("worse", "better", "same", "untested", "descriptive", "unknown", "not measured", "only in A", "only in B")


@dataclass(frozen=True)
class Cell:
    value: float
    ci_low: float
    ci_high: float
    n: int

    @property
    def has_ci(self) -> bool:
        return self.n >= 2 and math.isfinite(self.ci_low) and math.isfinite(self.ci_high)

    @property
    def measured(self) -> bool:
        return self.n > 0 and math.isfinite(self.value)


@dataclass(frozen=True)
class Comparison:
    runtime: str
    scenario: str
    resource: str
    view: str
    metric: str
    a: Cell | None
    b: Cell | None
    change: float  # B − A (nan when either is missing)
    overlap: bool | None  # do the 95 % intervals overlap (None: not both have one)
    verdict: str

    def as_dict(self) -> dict:
        d = asdict(self)
        for side in ("a", "b"):  # JSON has no nan: an unknown number is null
            if d[side] is not None:
                d[side] = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                           for k, v in d[side].items()}
        d["change"] = None if not math.isfinite(self.change) else self.change
        return d


def key_of(row: dict) -> tuple[str, str, str, str, str]:
    return row["runtime"], row["scenario"], row["resource"], row["view"], row["metric"]


def cell_of(row: dict) -> Cell:
    return Cell(float(row["value"]), float(row["ci_low"]), float(row["ci_high"]), int(row["n"]))


def judge(metric: str, a: Cell, b: Cell, min_change: float, directions: Mapping[str, int],
          headline: int | None = None) -> tuple[bool | None, str]:
    """(overlap, verdict) of one cell measured on both sides; its direction from `directions` (every kind's:
    the registry's), `headline` the benchmark's for the parallel suite's ratios."""
    way = direction(metric, directions, headline)
    if not (a.measured and b.measured):
        return None, "not measured"
    overlap = (a.ci_low <= b.ci_high and b.ci_low <= a.ci_high) if a.has_ci and b.has_ci else None
    if way is None:
        return overlap, "unknown"
    if way == DESCRIPTIVE:
        return overlap, "descriptive"
    if overlap is None:
        return None, "untested"
    gain = way * (b.value - a.value)
    if overlap or abs(gain) < min_change:
        return overlap, "same"
    return overlap, "better" if gain > 0 else "worse"


def compare(a_rows: list[dict], b_rows: list[dict], directions: Mapping[str, int], min_change: float = 0.05,
            headlines: dict[str, int] | None = None) -> list[Comparison]:
    """Every cell of either side (rows as in metrics.csv), in A's order then B's new ones. `directions`: metric ->
    which way is better (every kind's, the registry's); `headlines`: resource (a parallel-suite benchmark) -> its
    headline figure's direction."""
    headlines = headlines or {}
    a = {key_of(r): cell_of(r) for r in a_rows}
    b = {key_of(r): cell_of(r) for r in b_rows}
    out = []
    for key in [*a, *(k for k in b if k not in a)]:
        ca, cb = a.get(key), b.get(key)
        if ca is None or cb is None:
            verdict = "only in B" if ca is None else "only in A"
            out.append(Comparison(*key, ca, cb, math.nan, None, verdict))
            continue
        overlap, verdict = judge(key[4], ca, cb, min_change, directions, headlines.get(key[2]))
        out.append(Comparison(*key, ca, cb, cb.value - ca.value, overlap, verdict))
    return out


def regressions(comparisons: list[Comparison]) -> list[Comparison]:
    return [c for c in comparisons if c.verdict == "worse"]


def tally(comparisons: list[Comparison]) -> dict[str, int]:
    """How many cells got each verdict (every verdict listed, zeros included)."""
    return {v: sum(c.verdict == v for c in comparisons) for v in VERDICTS}
