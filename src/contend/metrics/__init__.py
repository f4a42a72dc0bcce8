"""metrics: pure functions over sample arrays (DESIGN §3). Never starts a process."""
from __future__ import annotations

from .curves import Curve, Samples, StepWindow, capacity_of, curves
from .isolation import (curve_metrics, degradation, escape_ratio, i_plr, isolation_percentiles,
                        reference_point, similarity)
from .stats import mean_ci

__all__ = ["Curve", "Samples", "StepWindow", "capacity_of", "curves", "curve_metrics", "degradation",
           "escape_ratio", "i_plr", "isolation_percentiles", "reference_point", "similarity", "mean_ci",
           "trial_metrics", "aggregate"]

def trial_metrics(curve: Curve, l_d: float, threshold: float = 0.05, window: int = 1) -> dict[str, float]:
    """All metrics of one trial in one view: curve metrics, escape ratio, isolation percentiles."""
    m = curve_metrics(curve.w_d_ideal, curve.w_a, threshold, window)
    m["escape"] = escape_ratio(float(curve.w_d[-1]), l_d)
    m.update(isolation_percentiles(curve.bucket_w_a, m["W_a_ref"]))
    return m


def aggregate(rows: list[dict]) -> list[dict]:
    """Per-trial rows (runtime, scenario, resource, view, metric, value) → mean and 95 % CI per cell."""
    cells: dict[tuple, list[float]] = {}
    for r in rows:
        key = (r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"])
        cells.setdefault(key, []).append(r["value"])
    out = []
    for (rt, sc, res, view, metric), values in cells.items():
        mean, lo, hi, n = mean_ci(values)
        out.append({"runtime": rt, "scenario": sc, "resource": res, "view": view, "metric": metric,
                    "value": mean, "ci_low": lo, "ci_high": hi, "n": n})
    return out
