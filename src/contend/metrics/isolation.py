"""Isolation metrics over an isolation curve (Volpert et al. ICPE'24 Eq. 1-6, Krebs; DESIGN §3). Pure.

A curve is two arrays of the same length, sorted by w_d: the disruptive load applied (x) and the abiding
tenant's measured use (y), both as a fraction of the resource's capacity, so the non-isolated line has slope -1.
The first point is the undisturbed baseline (w_d = 0).
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .directions import DESCRIPTIVE, HIGHER, LOWER

# which way is better, for each of the isolation metrics (DESIGN §3): the isolation study's, and the guard's isol_*
DIRECTIONS = {
    "I_plr": HIGHER, "I_intFree": HIGHER, "S_I": HIGHER, "I_intBase": HIGHER, "I_end": HIGHER, "I_base": HIGHER,
    "isol_mean": HIGHER, "isol_p01": HIGHER, "isol_p05": HIGHER, "isol_p50": HIGHER,
    "loss": LOWER, "escape": LOWER, "W_d_ref": DESCRIPTIVE, "W_a_ref": DESCRIPTIVE, "host_speedup": DESCRIPTIVE,
    "ebpf_coverage": DESCRIPTIVE, "host_outside": DESCRIPTIVE,
}

NAN = float("nan")


@dataclass(frozen=True)
class RefPoint:
    w_d: float  # W_d,ref: the last applied W_d before the abiding curve left the baseline's band for good
    w_a: float  # W_a,ref: the measured W_a there (inside the baseline's band; the baseline itself at the start)
    index: int
    degraded: bool  # False: the curve never left the band for good; the reference is the undisturbed start


def below_band(w_a: np.ndarray, groups: list[np.ndarray] | None = None, threshold: float = 0.05,
               alpha: float = 0.01) -> np.ndarray:
    """Per point, has the abiding curve left the baseline's band (downwards)? The band is the baseline's own
    noise with `threshold` × the baseline as its floor: a point is below it when it is more than the floor
    below the baseline and, where its buckets are known (`groups`: each point's bucket values, the baseline's
    first), a one-sided Welch t-test says its buckets are lower than the baseline's at level `alpha`."""
    w_a = np.asarray(w_a, float)
    base = w_a[0]
    out = np.zeros(len(w_a), bool)
    for k in range(1, len(w_a)):
        if not base - w_a[k] > threshold * base:
            continue
        g0 = groups[0] if groups else None
        gk = groups[k] if groups and k < len(groups) else None
        if g0 is None or gk is None or len(g0) < 2 or len(gk) < 2:
            out[k] = True  # no buckets to test against: the floor alone
            continue
        with warnings.catch_warnings():  # near-constant buckets: scipy warns, the p-value still says it
            warnings.simplefilter("ignore", RuntimeWarning)
            from scipy import stats  # imported where the change point is tested, not with the module
            p = stats.ttest_ind(gk, g0, equal_var=False, alternative="less").pvalue
        out[k] = bool(p < alpha) or not np.isfinite(p)  # nan: two constant groups, a drop beyond the floor
    return out


def reference_point(w_d: np.ndarray, w_a: np.ndarray, groups: list[np.ndarray] | None = None,
                    threshold: float = 0.05, alpha: float = 0.01) -> RefPoint:
    """W_d,ref = the last applied W_d before the curve leaves the baseline's band (below_band) and stays out
    of it to the end of the ramp; W_a,ref = the measured W_a there, which is inside the band (Krebs' reference
    point lies on the measured curve: the non-isolated line starts where the curve does, so a curve that falls
    with slope −1 scores 0, not below it). No such point: the undisturbed start. A one-step dip the curve
    recovers from is not a change point; a drop first seen at the last step is a degradation one step long."""
    w_d, w_a = np.asarray(w_d, float), np.asarray(w_a, float)
    below = below_band(w_a, groups, threshold, alpha)
    if len(w_a) < 2 or not below[-1]:
        return RefPoint(float(w_d[0]), float(w_a[0]), 0, False)
    i = int(np.nonzero(~below)[0][-1])  # the last point inside the band; every later one is below it
    return RefPoint(float(w_d[i]), float(w_a[i]), i, True)


def i_plr(w_a: np.ndarray) -> float:
    """Retention W_a2 / W_a1: the abiding use at the highest applied w_d over the undisturbed one (1 = no loss)."""
    w_a = np.asarray(w_a, float)
    return float(w_a[-1] / w_a[0]) if w_a[0] > 0 else NAN


def non_isolated_area(w_a_ref: float, length: float) -> float:
    """Area under the non-isolated line (slope -1 from w_a_ref, floored at 0) over `length` of w_d.

    Equals W_a,ref²/2 once the line has reached 0 (length >= W_a,ref), as in Eq. 5/6; shorter ramps
    only see the trapezoid, which keeps the metric in [0, 1] where the paper's form would not be.
    """
    if length >= w_a_ref:
        return w_a_ref ** 2 / 2
    return w_a_ref * length - length ** 2 / 2


def area(w_d: np.ndarray, w_a: np.ndarray, start: float, end: float) -> float:
    """∫ f_m dW_d from start to end, f_m linear between measured points."""
    w_d, w_a = np.asarray(w_d, float), np.asarray(w_a, float)
    if end <= start:
        return 0.0
    inner = (w_d > start) & (w_d < end)
    xs = np.concatenate([[start], w_d[inner], [end]])
    ys = np.interp(xs, w_d, w_a)
    return float(np.trapezoid(ys, xs))


def i_int_free(w_d: np.ndarray, w_a: np.ndarray, ref: RefPoint) -> float:
    """Eq. 6 as Krebs meant it: measured area above the non-isolated one, over the perfectly isolated area above it."""
    p_end = float(np.max(w_d))
    length = p_end - ref.w_d
    if length <= 0 or ref.w_a <= 0:
        return 1.0 if length <= 0 else NAN
    worst = non_isolated_area(ref.w_a, length)
    best = ref.w_a * length
    return (area(w_d, w_a, ref.w_d, p_end) - worst) / (best - worst)


def w_d_base(ref: RefPoint) -> float:
    """Where a non-isolated W_a would reach 0."""
    return ref.w_d + ref.w_a


def i_base(w_d: np.ndarray, w_a: np.ndarray, ref: RefPoint) -> float:
    """Eq. 4: W_a,base / W_a,ref, W_a,base measured at W_d,base (n/a when the ramp stops short of it)."""
    base = w_d_base(ref)
    if ref.w_a <= 0 or base > np.max(w_d) + 1e-9:
        return NAN
    return float(np.interp(base, w_d, w_a) / ref.w_a)


def i_end(w_d: np.ndarray, w_a: np.ndarray, ref: RefPoint, zero: float = 0.01) -> float:
    """Eq. 3: (W_d,end − W_d,base) / W_a,ref, W_d,end where the measured W_a reaches 0 (n/a if it never does)."""
    w_d, w_a = np.asarray(w_d, float), np.asarray(w_a, float)
    hit = np.nonzero((w_a <= zero * max(ref.w_a, 1e-12)) & (w_d >= ref.w_d))[0]
    if len(hit) == 0 or ref.w_a <= 0:
        return NAN
    return float((w_d[hit[0]] - w_d_base(ref)) / ref.w_a)


def i_int_base(w_d: np.ndarray, w_a: np.ndarray, ref: RefPoint) -> float:
    """Eq. 5 (n/a when the ramp stops short of W_d,base)."""
    base = w_d_base(ref)
    if ref.w_a <= 0 or base > np.max(w_d) + 1e-9:
        return NAN
    half = ref.w_a ** 2 / 2
    return (area(w_d, w_a, ref.w_d, base) - half) / half


def similarity(a: float, b: float) -> float:
    """S_I = min / max of I_intFree and I_plr (1 = the two metrics agree)."""
    if any(math.isnan(x) for x in (a, b)):
        return NAN
    hi = max(a, b)
    if hi <= 1e-12:
        return 1.0 if abs(a - b) <= 1e-9 else NAN  # both (near) zero: the metrics agree
    return min(a, b) / hi


def escape_ratio(achieved: float, limit: float) -> float:
    """The disruptive tenant's achieved use over its limit; > 1 means the limit did not hold."""
    return achieved / limit if limit > 0 else NAN


def isol_series(w_a: np.ndarray, w_a_ref: float) -> np.ndarray:
    """resctl-style isol = min(W_a / W_a,ref, 1) of each value; empty without values or a reference."""
    w_a = np.asarray(w_a, float)
    if len(w_a) == 0 or not w_a_ref > 0:
        return np.array([])
    return np.minimum(w_a / w_a_ref, 1.0)


def per_second(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The mean of the values in each whole second of t (resctl-bench's isol is per second); a second with
    fewer than half the values of the fullest one (cut by a step's trims) is left out."""
    t, v = np.asarray(t, float), np.asarray(v, float)
    if len(t) == 0:
        return np.array([])
    sec = np.floor(t).astype(int)
    keys, inverse, counts = np.unique(sec, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=v)
    keep = counts >= counts.max() / 2
    return sums[keep] / counts[keep]


def isolation_percentiles(w_a: np.ndarray, w_a_ref: float) -> dict[str, float]:
    """isol of each value (isol_series): p01, p05, p50 and mean."""
    isol = isol_series(w_a, w_a_ref)
    if len(isol) == 0:
        return {k: NAN for k in ("isol_p01", "isol_p05", "isol_p50", "isol_mean")}
    return {"isol_p01": float(np.percentile(isol, 1)), "isol_p05": float(np.percentile(isol, 5)),
            "isol_p50": float(np.percentile(isol, 50)), "isol_mean": float(isol.mean())}


def degradation(disturbed: float, base: float) -> float:
    """D = (1 − disturbed / base) × 100 (Xavier et al. Eq. 1)."""
    return (1 - disturbed / base) * 100 if base else NAN


def curve_metrics(w_d: np.ndarray, w_a: np.ndarray, groups: list[np.ndarray] | None = None,
                  threshold: float = 0.05, alpha: float = 0.01, decided: RefPoint | None = None) -> dict[str, float]:
    """Every curve metric at once, keyed by the names metrics.csv uses. `decided`: a change point found on
    another view of the same quantity (its index is used; W_a,ref is this curve's own value there)."""
    w_d, w_a = np.asarray(w_d, float), np.asarray(w_a, float)
    if decided is None:
        ref = reference_point(w_d, w_a, groups, threshold, alpha)
    else:
        ref = RefPoint(float(w_d[decided.index]), float(w_a[decided.index]), decided.index, decided.degraded)
    plr = i_plr(w_a)
    free = i_int_free(w_d, w_a, ref)
    return {
        "I_plr": plr, "loss": 1 - plr, "I_intFree": free, "S_I": similarity(free, plr),
        "I_intBase": i_int_base(w_d, w_a, ref), "I_base": i_base(w_d, w_a, ref), "I_end": i_end(w_d, w_a, ref),
        "W_d_ref": ref.w_d, "W_a_ref": ref.w_a,
    }
