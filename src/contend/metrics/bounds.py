"""Where a metric can lie by its definition (pure): a share, a fraction of trials or a resctl `isol` in [0, 1]; a
time, a latency or a count never below 0. A cell's Student-t interval is its mean ± a half-width, and near such an
edge it crosses it (coverages 0.82, 0.98 and 1.00 give 0.75-1.16): the interval is clipped there, so no table
shows a share above 1 or a count below 0. Metrics not named here (a retention I_plr, which may exceed 1; a
drop in %, which may be negative) are left as they are."""
from __future__ import annotations

import math

UNIT = (0.0, 1.0)
NON_NEGATIVE = (0.0, math.inf)

BOUNDS: dict[str, tuple[float, float]] = {
    # isolation and the guard: resctl's per-second isol = min(W_a / W_a,ref, 1) and its percentiles; the share of
    # the spare capacity a neighbour got (guard.metrics.work_conservation, clipped to [0, 1] per trial)
    **dict.fromkeys(("isol_mean", "isol_p01", "isol_p05", "isol_p50", "work_conservation"), UNIT),
    # detect: rates of trials (found, ranked first, without a baseline), shares of blames and of harmed periods,
    # the mean distance between two shares
    **dict.fromkeys(("detected", "first_right", "precision", "no_baseline", "coverage", "share_error",
                     "all_named"), UNIT),
    **dict.fromkeys(("latency_s", "latency_p50_s", "latency_p95_s", "latency_request_s", "request_p50_s",
                     "request_p95_s", "blames", "correct_blames", "false_blames", "false_per_h", "watch_cpu_pct",
                     "harmed_periods", "oom_kills", "reclaim_s", "burst_completion_s", "lat_imp", "lat_p99_imp",
                     "read_lat_us", "write_lat_us", "read_p50_us", "write_p50_us", "read_p99_us", "write_p99_us",
                     "lat_ms", "tps", "read_iops", "write_iops", "read_iops_min", "write_iops_min"), NON_NEGATIVE),
    # protect: the victim's isolation period by period (each at most 1) and its p05, the culprits' work kept against
    # no action's (at most all of it); a reaction, actions and settings left are times and counts
    **dict.fromkeys(("isolation", "p05", "culprit_kept"), UNIT),
    **dict.fromkeys(("reaction_s", "back_s", "actions", "control_actions", "settings_left", "culprit_rate"),
                   NON_NEGATIVE),
    # parallel: each benchmark's figures (kinds/parallel/benchmarks.py: rates and times), normalised to a base,
    # the host's CPU use and memory peak
    **dict.fromkeys(("mflops", "ghz", "seconds", "copy_mb_s", "scale_mb_s", "add_mb_s", "triad_mb_s", "events_s",
                     "mib_s", "iops", "lat_mean_us", "normalized", "cpu", "mem_peak_mib"), NON_NEGATIVE),
}


def clip(metric: str, low: float, high: float) -> tuple[float, float]:
    """A cell's interval (low, high) within its metric's bounds (unchanged for a metric without any; nan stays)."""
    lo_b, hi_b = BOUNDS.get(metric, (-math.inf, math.inf))
    return (max(low, lo_b) if math.isfinite(low) else low), (min(high, hi_b) if math.isfinite(high) else high)
