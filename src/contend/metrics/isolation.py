"""Isolation metrics over an isolation curve (Volpert et al. ICPE'24 Eq. 1-6, Krebs; DESIGN §3). Pure.

A curve is two arrays of the same length, sorted by w_d: the disruptive load applied (x) and the abiding
tenant's measured use (y), both as a fraction of the resource's capacity, so the non-isolated line has slope -1.
The first point is the undisturbed baseline (w_d = 0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

NAN = float("nan")


@dataclass(frozen=True)
class RefPoint:
    w_d: float
    w_a: float
    index: int
    degraded: bool  # False: no change point, the reference is the undisturbed start


def smooth(y: np.ndarray, window: int) -> np.ndarray:
    """Centred moving average with shrinking windows at the edges."""
    if window <= 1 or len(y) < 2:
        return np.asarray(y, dtype=float)
    half = window // 2
    return np.array([y[max(0, i - half): i + half + 1].mean() for i in range(len(y))])


def reference_point(w_d: np.ndarray, w_a: np.ndarray, threshold: float = 0.05, window: int = 1) -> RefPoint:
    """The first w_d at which the smoothed abiding curve drops by more than `threshold` of its undisturbed level."""
    w_d, w_a = np.asarray(w_d, float), np.asarray(w_a, float)
    s = smooth(w_a, window)
    base = w_a[0]
    below = np.nonzero(s < (1 - threshold) * base)[0]
    if len(below) == 0:
        return RefPoint(float(w_d[0]), float(base), 0, False)
    i = int(below[0])
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
    """resctl-style per-sample isol = min(W_a / W_a,ref, 1); empty without samples or a reference."""
    w_a = np.asarray(w_a, float)
    if len(w_a) == 0 or not w_a_ref > 0:
        return np.array([])
    return np.minimum(w_a / w_a_ref, 1.0)


def isolation_percentiles(w_a: np.ndarray, w_a_ref: float) -> dict[str, float]:
    """Per-sample isol (isol_series): p01, p05, p50 and mean."""
    isol = isol_series(w_a, w_a_ref)
    if len(isol) == 0:
        return {k: NAN for k in ("isol_p01", "isol_p05", "isol_p50", "isol_mean")}
    return {"isol_p01": float(np.percentile(isol, 1)), "isol_p05": float(np.percentile(isol, 5)),
            "isol_p50": float(np.percentile(isol, 50)), "isol_mean": float(isol.mean())}


def degradation(disturbed: float, base: float) -> float:
    """D = (1 − disturbed / base) × 100 (Xavier et al. Eq. 1)."""
    return (1 - disturbed / base) * 100 if base else NAN


def curve_metrics(w_d: np.ndarray, w_a: np.ndarray, threshold: float = 0.05, window: int = 1) -> dict[str, float]:
    """Every curve metric at once, keyed by the names metrics.csv uses."""
    ref = reference_point(w_d, w_a, threshold, window)
    plr = i_plr(w_a)
    free = i_int_free(w_d, w_a, ref)
    return {
        "I_plr": plr, "loss": 1 - plr, "I_intFree": free, "S_I": similarity(free, plr),
        "I_intBase": i_int_base(w_d, w_a, ref), "I_base": i_base(w_d, w_a, ref), "I_end": i_end(w_d, w_a, ref),
        "W_d_ref": ref.w_d, "W_a_ref": ref.w_a,
    }
