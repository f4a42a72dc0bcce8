"""Which way is better, for a metric of a results directory's metrics.csv (pure).

HIGHER: a larger value is better (isolation, throughput); LOWER: a smaller one is (latency, loss, escape,
times); DESCRIPTIVE: a level or a fact, never better or worse (a reference point, a baseline, a count).
Each kind names its own metrics' directions in its folder (`DIRECTIONS` in its metrics, given in its Study's
class line); the registry gathers them. `compare` gates on that table only; a metric not in it is reported as
unknown, never silently judged.
"""
from __future__ import annotations

from collections.abc import Mapping

HIGHER, LOWER, DESCRIPTIVE = 1, -1, 0

# ratios whose direction is their benchmark's headline figure's (resource = the benchmark)
FOLLOWS_HEADLINE = ("normalized", "loss_pct")


def direction(metric: str, directions: Mapping[str, int], headline: int | None = None) -> int | None:
    """HIGHER, LOWER or DESCRIPTIVE by `directions` (metric → direction, every kind's); None when unknown.
    `headline`: the direction of the benchmark's headline figure, for the parallel suite's ratios
    (normalized, loss_pct)."""
    if metric in FOLLOWS_HEADLINE:
        return headline
    return directions.get(metric)
