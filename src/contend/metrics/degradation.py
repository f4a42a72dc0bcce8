"""A victim measured undisturbed (its base) and under each attack or disruptor, paired per repetition: the
IOPS drop and latency multiplier of the disk-fill attack (Kim et al. WISA 2025) and the degradation D of a
database's transactions (Xavier et al. PDP 2015, Eq. 1). Pure."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .isolation import degradation
from .stats import mean_ci


@dataclass
class Window:
    """What the victim measured in one window: its figures (e.g. read_iops, tps) in one view."""

    runtime: str
    scenario: str  # the base's name, or the attack / disruptor
    resource: str  # "disk", or database:transaction type
    repetition: int
    view: str = "guest"
    figures: dict[str, float] = field(default_factory=dict)


# how a metric compares a disturbed figure with the same repetition's base figure
HOW = {
    "drop": lambda base, disturbed: degradation(disturbed, base),  # D, in %: the share lost
    "x": lambda base, disturbed: disturbed / base if base else math.nan,  # a multiplier (latency)
    "base": lambda base, disturbed: base,
    "value": lambda base, disturbed: disturbed,
}

DISKFILL_RULES = {  # WISA Figs. 2-3: D's IOPS drop and latency multiplier, read and write
    "read_iops_drop_pct": ("read_iops", "drop"), "write_iops_drop_pct": ("write_iops", "drop"),
    # the worst 500 ms of the window against the base's mean: how deep the attack cut at its worst
    "read_iops_worst_drop_pct": ("read_iops_min", "drop", "read_iops"),
    "write_iops_worst_drop_pct": ("write_iops_min", "drop", "write_iops"),
    "read_lat_x": ("read_lat_us", "x"), "write_lat_x": ("write_lat_us", "x"),
    "read_p99_x": ("read_p99_us", "x"), "write_p99_x": ("write_p99_us", "x"),
}
OLTP_RULES = {  # PDP 2015 Tables II-III: D per disruptor and transaction type
    "D": ("tps", "drop"), "tps_base": ("tps", "base"), "tps_disturbed": ("tps", "value"), "lat_x": ("lat_ms", "x"),
}


def paired(windows: list[Window], base: str, rules: dict[str, tuple], alone: tuple[str, ...] = ()) -> list[dict]:
    """Per repetition, each disturbed window against its base window (same runtime, resource, repetition and
    view): one row per metric of `rules` (metric: (figure, how), or (figure, how, the base's figure) when the
    base is read under another name). Plus every window's own figures under their
    own names, so the base's level is in the table too. Windows of the scenarios in `alone` (e.g. an
    unthrottled calibration) keep their figures and are compared with nothing."""
    bases = {(w.runtime, w.resource, w.repetition, w.view): w for w in windows if w.scenario == base}
    out = []
    for w in windows:
        row = {"runtime": w.runtime, "scenario": w.scenario, "resource": w.resource, "view": w.view,
               "repetition": w.repetition}
        out += [{**row, "metric": k, "value": v} for k, v in w.figures.items()]
        b = bases.get((w.runtime, w.resource, w.repetition, w.view))
        if w.scenario == base or w.scenario in alone or b is None:
            continue
        for metric, (figure, how, *of_base) in rules.items():
            base_figure = of_base[0] if of_base else figure
            if figure in w.figures and base_figure in b.figures:
                out.append({**row, "metric": metric, "value": HOW[how](b.figures[base_figure], w.figures[figure])})
    return out


def converged(values: list[float], ci_pct: float) -> bool:
    """The repetition rule of PDP 2015: the 95 % interval within ±ci_pct % of the mean (n >= 2)."""
    mean, lo, hi, n = mean_ci(values)
    return n >= 2 and math.isfinite(lo) and (hi - lo) / 2 <= ci_pct / 100 * abs(mean)
