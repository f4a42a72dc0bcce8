"""Repetitions: mean and Student-t 95 % confidence interval."""
from __future__ import annotations

import math

import numpy as np
from scipy import stats


def mean_ci(values, level: float = 0.95) -> tuple[float, float, float, int]:
    """(mean, ci_low, ci_high, n) over the finite values; the CI is nan for n < 2."""
    v = np.asarray([x for x in values if x is not None and math.isfinite(x)], dtype=float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(v.mean())
    if n < 2:
        return m, math.nan, math.nan, n
    half = float(stats.t.ppf((1 + level) / 2, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return m, m - half, m + half, n
