"""Repetitions: mean and Student-t 95 % confidence interval; S_I of a cell with a bootstrap interval."""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np

from .bounds import clip


def mean_ci(values: Iterable[float] | np.ndarray, level: float = 0.95,
            metric: str = "") -> tuple[float, float, float, int]:
    """(mean, ci_low, ci_high, n) over the finite values; the CI is nan for n < 2, and within `metric`'s bounds
    (a share's never above 1: bounds.clip)."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(v.mean())
    if n < 2:
        return m, math.nan, math.nan, n
    from scipy import stats  # about half a second to import: only where an interval is computed
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return m, *clip(metric, m - half, m + half), n


def similarity_ci(i_int_free: Sequence[float] | np.ndarray, i_plr: Sequence[float] | np.ndarray,
                  level: float = 0.95, resamples: int = 2000,
                  seed: int = 0) -> tuple[float, float, float, int]:
    """(S_I, ci_low, ci_high, n) of a cell: S_I = min/max of the mean I_intFree and the mean I_plr over the
    trials that have both (Volpert Table 4), its interval a percentile bootstrap over those trials (the pairs
    resampled together, a fixed seed: the same data give the same interval). The CI is nan for n < 2."""
    from .isolation import similarity
    pairs = np.asarray([(a, b) for a, b in zip(i_int_free, i_plr)
                        if a is not None and b is not None and math.isfinite(a) and math.isfinite(b)], float)
    n = len(pairs)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    value = similarity(float(pairs[:, 0].mean()), float(pairs[:, 1].mean()))
    if n < 2:
        return value, math.nan, math.nan, n
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    means = pairs[idx].mean(axis=1)  # (resamples, 2)
    lo, hi = np.minimum(means[:, 0], means[:, 1]), np.maximum(means[:, 0], means[:, 1])
    ok = hi > 1e-12
    boot = lo[ok] / hi[ok]
    if len(boot) == 0:
        return value, math.nan, math.nan, n
    q = (1 - level) / 2
    return value, float(np.quantile(boot, q)), float(np.quantile(boot, 1 - q)), n


def aggregate(rows: list[dict]) -> list[dict]:
    """Per-trial rows (runtime, scenario, resource, view, metric, value[, trial_id]) → mean and 95 % CI per
    cell. S_I of a cell is Volpert's: min/max of the cell's mean I_intFree and mean I_plr (similarity_ci),
    not the mean of per-trial S_I; the two agree only at n = 1."""
    cells: dict[tuple, list[float]] = {}
    pairs: dict[tuple, dict[object, dict[str, float]]] = {}
    for i, r in enumerate(rows):
        key = (r["runtime"], r["scenario"], r["resource"], r["view"])
        if r["metric"] in ("I_intFree", "I_plr"):
            pairs.setdefault(key, {}).setdefault(r.get("trial_id", i), {})[r["metric"]] = r["value"]
        if r["metric"] != "S_I":
            cells.setdefault((*key, r["metric"]), []).append(r["value"])
    out = []
    for (rt, sc, res, view, metric), values in cells.items():
        mean, lo, hi, n = mean_ci(values, metric=metric)
        out.append({"runtime": rt, "scenario": sc, "resource": res, "view": view, "metric": metric,
                    "value": mean, "ci_low": lo, "ci_high": hi, "n": n})
    for (rt, sc, res, view), trials in pairs.items():
        both = [(t["I_intFree"], t["I_plr"]) for t in trials.values() if "I_intFree" in t and "I_plr" in t]
        value, lo, hi, n = similarity_ci([a for a, _ in both], [b for _, b in both])
        if n == 0:
            continue
        out.append({"runtime": rt, "scenario": sc, "resource": res, "view": view, "metric": "S_I",
                    "value": value, "ci_low": lo, "ci_high": hi, "n": n})
    return out
