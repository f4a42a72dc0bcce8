"""How well a guard protected a victim from a burst (pure: arrays in, numbers out).

resctl-bench's protection benchmark judges by the victim's isolation (its work during the interference
over its work before, p05 and mean) and latency impact; Aridac by whether the victim kept its lifeline and
how long the burst took. Here, for one run of a workload under one policy:

- isol: per whole second of the burst (counted from its start), the victim's mean throughput in it / the rate
  it asks for (else its throughput before the burst; a study takes the lower of the rate and what the victim did
  before the burst in its references under no policy: report.victim_reference), at most 1 (DESIGN §3,
  resctl-bench's: a 100 ms squeeze the victim made up for within its second costs nothing; one it did not costs
  its share of the second);
  `isol_mean` and `isol_p05` (the 5th percentile: the worst seconds). Studies before 2026-11-27 took them on
  100 ms buckets (docs/results/archive.md says which).
- lat_imp: the victim's mean latency during the burst / before it, - 1, at least 0 (DESIGN §3, resctl-bench's
  max(lat / base_lat - 1, 0): a victim faster during the burst was not impacted, and is not "better than none").
- lat_p99_imp: the same for the 99th percentile of every I/O's latency (the tail a user sees).
- neighbour_mb_s: the neighbour's mean throughput during the burst, MB/s: the work a policy let it do
  (its burst is a fixed amount of I/O, so this is that amount over burst_completion_s).
- work_conservation (resctl-bench's): the share of the capacity the victim left unused that the burst still
  got, neighbour / (reference delivery - victim), both means over the burst, in [0, 1]. The reference delivery
  is what the disk gave both tenants during the burst under no policy, measured in the runs right before and
  after this one (paired evaluation: the disk's delivery moves by about 25 % from minute to minute, so a
  reference from another minute put `none` itself at 1.34); a run under no policy is its own reference, so
  it scores 1 by construction. Above 1 before the bound means the disk delivered more in this run than in its
  references (`delivery_mb_s` shows both).
- delivery_mb_s: what the disk delivered to both tenants during the burst, MB/s.
- reaction_s: from the burst's onset as the host sees it (the first 100 ms bucket of the burst phase in which the
  neighbour did more than 1.5 × its level before it, or the victim less than `level` of its reference; the phase
  opens at the burst job's first I/O, so that is its first bucket or the next, where until 2026-12-03 it was 0.3-0.45
  s later, fio's start-up) until the victim's throughput over the last
  half second (`smooth` buckets), over its reference, is at least `level`, and stays so for `hold_s` (or to the
  burst's end); 0 if it never dropped; nan if never. What the victim caught up on counts, as isol per second counts
  it; a stall after the recovery still resets it (before 2026-12-02: timed from the phase's start, on buckets
  capped at 1 before they were averaged, so a catch-up never counted; docs/results/archive.md says which).
- reclaim_s: from the burst's end until the neighbour's cap is back within 1.5 × its cap before the burst
  (nan: no caps, nothing to reclaim).
- burst_completion_s: how long the burst's fixed amount of I/O took.
- victim_calm: the victim's level before the burst (from its warm-up's end, as `baseline` reads a reference's) over
  its reference, not capped at 1: below 1 where this run's minute, or its policy's caps, slowed it before any burst
  (issue 55). With `held_share` (the share of buckets it wrote at 0.9 × what its own cap let through or more),
  report.minute_notes tells the disk's minute (slow before the burst, not held) from the policy's cap.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...metrics.directions import DESCRIPTIVE, HIGHER, LOWER
from ...metrics.isolation import DIRECTIONS as ISOLATION
from ...metrics.isolation import isol_series, isolation_percentiles, per_second

# which way is better (contend compare): a latency impact is a cost
DIRECTIONS = {
    **{k: ISOLATION[k] for k in ("isol_mean", "isol_p01", "isol_p05", "isol_p50")},
    "work_conservation": HIGHER, "lat_imp": LOWER, "lat_p99_imp": LOWER, "reaction_s": LOWER, "reclaim_s": LOWER,
    "burst_completion_s": LOWER, "neighbour_mb_s": HIGHER, "delivery_mb_s": DESCRIPTIVE,
    "ref_delivery_mb_s": DESCRIPTIVE, "unattributed_mb_s": LOWER, "victim_calm": DESCRIPTIVE,
}


def _window(t: np.ndarray, v: np.ndarray, t0: float, t1: float) -> np.ndarray:
    return v[(t >= t0) & (t < t1)]


def baseline(t: np.ndarray, v: np.ndarray, burst_start: float, warmup_s: float) -> float:
    """The victim's level before the burst, after its warm-up (nan: no data there)."""
    w = _window(t, v, min(warmup_s, burst_start / 2), burst_start)
    return float(np.mean(w)) if len(w) else math.nan


def calm_window(burst_start: float, warmup_s: float = 2.0) -> tuple[float, float]:
    """Where the victim's level before the burst is read (`baseline`): from its warm-up's end to the burst."""
    return min(warmup_s, burst_start / 2), burst_start


def calm_ratio(t: np.ndarray, victim: np.ndarray, burst_start: float, reference: float,
               warmup_s: float = 2.0) -> float:
    """The victim's level before the burst over its reference (nan: no data there, no reference); a run under no
    policy judged against itself is at 1."""
    return baseline(t, victim, burst_start, warmup_s) / reference if reference > 0 else math.nan


def held_share(t: np.ndarray, victim: np.ndarray, size: np.ndarray, cap_t: np.ndarray, cap: np.ndarray, t0: float,
               t1: float, through: Callable[[float, float], float]) -> float:
    """The share of the buckets in [t0, t1) in which the victim wrote at least 0.9 × what its cap in force (the
    last set before the bucket) let through for I/Os of its own size (`size`, bytes per I/O, per bucket; `through`:
    (cap, io size) -> bytes/s, the throttle the cap becomes); nan: no cap in force there."""
    held = []
    for i in np.nonzero((t >= t0) & (t < t1))[0]:
        k = int(np.searchsorted(cap_t, t[i], side="right")) - 1
        if k >= 0 and math.isfinite(cap[k]) and cap[k] > 0:
            held.append(bool(victim[i] >= 0.9 * through(float(cap[k]), float(size[i]))))
    return float(np.mean(held)) if held else math.nan


def isolation_per_second(t: np.ndarray, victim: np.ndarray, burst_start: float, burst_end: float,
                         warmup_s: float = 2.0, reference: float | None = None) -> np.ndarray:
    """Per whole second of the burst (from its start), isol of the victim's mean throughput in it (the figures'
    isol; `isolation` per bucket times the reaction)."""
    base = reference if reference else baseline(t, victim, burst_start, warmup_s)
    w = (t >= burst_start) & (t < burst_end)
    return isol_series(per_second(t[w] - burst_start, victim[w]), base)


def isol_stats(isol: np.ndarray) -> dict[str, float]:
    """The two of resctl's isolation figures a guard study reports: mean and 5th percentile."""
    p = isolation_percentiles(isol, 1.0)  # isol is already a fraction, at most 1
    return {"isol_mean": p["isol_mean"], "isol_p05": p["isol_p05"]}


def reaction(isol_t: np.ndarray, ratio: np.ndarray, onset: float, level: float = 0.95, hold_s: float = 1.0,
             smooth: int = 5) -> float:
    """`ratio`: the victim's throughput over its reference per bucket of the burst (not capped: a catch-up counts);
    `onset`: when the clock starts. Seconds until the mean of the last `smooth` buckets is at least `level`, and
    stays so for `hold_s`."""
    if not len(ratio):
        return math.nan
    n = min(smooth, len(ratio))
    ok = np.convolve(ratio, np.ones(n) / n, mode="valid") >= level
    ts = isol_t[n - 1:]
    if ok.all():
        return 0.0
    for k in np.nonzero(ok & (ts >= onset))[0]:
        if ok[k:][ts[k:] <= ts[k] + hold_s].all():
            return float(ts[k] - onset)
    return math.nan


def onset(t: np.ndarray, victim_ratio: np.ndarray, neighbour: np.ndarray, burst_start: float, burst_end: float,
          warmup_s: float, level: float = 0.95, rise: float = 1.5) -> float:
    """The first bucket of the burst in which the neighbour did more than `rise` × its level before it or the victim
    less than `level` of its reference (`victim_ratio`, on the burst's buckets); the burst's start if none."""
    w = (t >= burst_start) & (t < burst_end)
    before = baseline(t, neighbour, burst_start, warmup_s)
    hit = (neighbour[w] > rise * before if math.isfinite(before) else np.zeros(int(w.sum()), bool)) | (
        victim_ratio < level)
    return float(t[w][np.argmax(hit)]) if hit.any() else burst_start


def reclaim(cap_t: np.ndarray, cap: np.ndarray, burst_start: float, burst_end: float, ref_s: float = 3.0) -> float:
    keep = ~np.isnan(cap)
    cap_t, cap = cap_t[keep], cap[keep]
    before = _window(cap_t, cap, burst_start - ref_s, burst_start)
    if not len(before):
        return math.nan
    ref = float(np.median(before))
    after = cap_t >= burst_end
    back = np.nonzero(after & (cap <= 1.5 * ref))[0]
    return float(cap_t[back[0]] - burst_end) if len(back) else math.nan


def work_conservation(neighbour: float, victim: float, delivered: float) -> float:
    """The share of the capacity the victim left unused (`delivered`, the reference delivery, less what the
    victim got) that the neighbour got, in [0, 1]; nan when it cannot be said (no reference, or a victim that
    got all of it). Means over the burst, bytes/s."""
    spare = delivered - victim
    if not (math.isfinite(spare) and math.isfinite(neighbour)) or spare <= 0:
        return math.nan
    return float(min(max(neighbour / spare, 0.0), 1.0))


def delivery(t: np.ndarray, victim: np.ndarray, neighbour: np.ndarray, burst_start: float, burst_end: float) -> float:
    """What the disk delivered to both tenants during the burst, bytes/s (nan: no buckets there)."""
    total = _window(t, victim + neighbour, burst_start, burst_end)
    return float(np.mean(total)) if len(total) else math.nan


def protection_metrics(t: np.ndarray, victim: np.ndarray, neighbour: np.ndarray, burst_start: float,
                       burst_end: float, delivered: float, cap_t: np.ndarray | None = None,
                       cap: np.ndarray | None = None, warmup_s: float = 2.0,
                       reference: float | None = None) -> dict[str, float]:
    """The host view of one run: victim and neighbour throughput on the same buckets t (bytes/s); `delivered`:
    the reference delivery (the paired runs under no policy, this run's own if it is one of them)."""
    base = reference if reference else baseline(t, victim, burst_start, warmup_s)
    ratio = _window(t, victim, burst_start, burst_end) / base if base > 0 else np.array([])
    isol_t = _window(t, t, burst_start, burst_end)
    burst = _window(t, neighbour, burst_start, burst_end)
    got = _window(t, victim, burst_start, burst_end)
    return {
        **isol_stats(isolation_per_second(t, victim, burst_start, burst_end, warmup_s, reference)),
        "work_conservation": (work_conservation(float(np.mean(burst)), float(np.mean(got)), delivered)
                              if len(burst) else math.nan),
        "neighbour_mb_s": float(np.mean(burst)) / 1e6 if len(burst) else math.nan,
        "delivery_mb_s": delivery(t, victim, neighbour, burst_start, burst_end) / 1e6,
        "reaction_s": (reaction(isol_t, ratio, onset(t, ratio, neighbour, burst_start, burst_end, warmup_s))
                       if len(ratio) else math.nan),
        "reclaim_s": (reclaim(cap_t, cap, burst_start, burst_end) if cap_t is not None and cap is not None
                      and len(cap_t) else math.nan),
        "burst_completion_s": float(burst_end - burst_start),
    }


def impact(t: np.ndarray, v: np.ndarray, burst_start: float, burst_end: float, warmup_s: float,
           stat: Callable[[np.ndarray], float] = np.mean) -> float:
    """stat(v) during the burst / stat(v) before it (after the warm-up) - 1, at least 0; nan if either is empty."""
    before = _window(t, v, min(warmup_s, burst_start / 2), burst_start)
    during = _window(t, v, burst_start, burst_end)
    if not len(before) or not len(during):
        return math.nan
    base = float(stat(before))
    return max(float(stat(during)) / base - 1, 0.0) if base > 0 else math.nan


def p99(v: np.ndarray) -> float:
    return float(np.percentile(v, 99))


def guest_metrics(t: np.ndarray, victim: np.ndarray, lat_t: np.ndarray, lat: np.ndarray, burst_start: float,
                  burst_end: float, warmup_s: float = 2.0, reference: float | None = None,
                  io_t: np.ndarray | None = None, io_lat: np.ndarray | None = None) -> dict[str, float]:
    """The guest view: the victim's own throughput and latency as its load generator logged them (lat: mean
    per bucket; io_lat: every I/O's latency, for the tail)."""
    isol = isolation_per_second(t, victim, burst_start, burst_end, warmup_s, reference)
    out = {**isol_stats(isol), "lat_imp": impact(lat_t, lat, burst_start, burst_end, warmup_s)}
    if io_t is not None and io_lat is not None and len(io_t):
        out["lat_p99_imp"] = impact(io_t, io_lat, burst_start, burst_end, warmup_s, p99)
    return out
