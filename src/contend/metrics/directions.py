"""Which way is better, for every metric a results directory's metrics.csv can hold (pure).

HIGHER: a larger value is better (isolation, throughput); LOWER: a smaller one is (latency, loss, escape,
times); DESCRIPTIVE: a level or a fact, never better or worse (a reference point, a baseline, a count).
`compare` gates on this table only; a metric not in it is reported as unknown, never silently judged.
"""
from __future__ import annotations

HIGHER, LOWER, DESCRIPTIVE = 1, -1, 0

DIRECTION: dict[str, int] = {
    # isolation studies (metrics/isolation.py, DESIGN §3)
    "I_plr": HIGHER, "I_intFree": HIGHER, "S_I": HIGHER, "I_intBase": HIGHER, "I_end": HIGHER, "I_base": HIGHER,
    "isol_mean": HIGHER, "isol_p01": HIGHER, "isol_p05": HIGHER, "isol_p50": HIGHER,
    "loss": LOWER, "escape": LOWER, "W_d_ref": DESCRIPTIVE, "W_a_ref": DESCRIPTIVE, "host_speedup": DESCRIPTIVE,
    "ebpf_coverage": DESCRIPTIVE, "host_outside": DESCRIPTIVE,
    # guard studies (kinds/protection/metrics.py): a latency impact is a cost
    "work_conservation": HIGHER, "lat_imp": LOWER, "lat_p99_imp": LOWER, "reaction_s": LOWER, "reclaim_s": LOWER,
    "burst_completion_s": LOWER, "neighbour_mb_s": HIGHER, "delivery_mb_s": DESCRIPTIVE,
    "ref_delivery_mb_s": DESCRIPTIVE, "unattributed_mb_s": LOWER,
    # victim studies (kinds/victim/metrics.py): D and drops are losses, multipliers of latency are costs
    "D": LOWER, "read_iops_drop_pct": LOWER, "write_iops_drop_pct": LOWER, "read_iops_worst_drop_pct": LOWER,
    "write_iops_worst_drop_pct": LOWER, "read_lat_x": LOWER, "write_lat_x": LOWER, "read_p99_x": LOWER,
    "write_p99_x": LOWER, "lat_x": LOWER, "tps_base": DESCRIPTIVE, "tps_disturbed": HIGHER,
    # a victim window's own figures
    "tps": HIGHER, "lat_ms": LOWER, "read_iops": HIGHER, "write_iops": HIGHER, "read_iops_min": HIGHER,
    "write_iops_min": HIGHER, "read_lat_us": LOWER, "write_lat_us": LOWER, "read_p50_us": LOWER,
    "write_p50_us": LOWER, "read_p99_us": LOWER, "write_p99_us": LOWER,
    "device_util": DESCRIPTIVE, "device_queue_depth": DESCRIPTIVE, "device_wbytes_s": DESCRIPTIVE,
    "attackers_charged_pct": DESCRIPTIVE, "victim_charged_pct": DESCRIPTIVE, "victim_cpu": DESCRIPTIVE,
    "oom_kills": LOWER,
    # the parallel suite (kinds/parallel/metrics.py): the benchmarks' figures, and what says how even a share was
    "mflops": HIGHER, "ghz": HIGHER, "copy_mb_s": HIGHER, "scale_mb_s": HIGHER, "add_mb_s": HIGHER,
    "triad_mb_s": HIGHER, "events_s": HIGHER, "mib_s": HIGHER, "iops": HIGHER, "lat_mean_us": LOWER,
    "seconds": LOWER,
    "jain": HIGHER, "cpu": DESCRIPTIVE, "mem_peak_mib": DESCRIPTIVE, "concurrency": DESCRIPTIVE,
    # detect studies (kinds/detect/metrics.py): contend watch against a known answer
    "detected": HIGHER, "first_right": HIGHER, "precision": HIGHER, "latency_s": LOWER, "latency_p50_s": LOWER,
    "latency_p95_s": LOWER, "false_blames": LOWER, "false_per_h": LOWER, "watch_cpu_pct": LOWER,
    "blames": DESCRIPTIVE, "correct_blames": DESCRIPTIVE, "latency_request_s": LOWER, "request_p50_s": LOWER,
    "request_p95_s": LOWER, "start_delay_s": DESCRIPTIVE,
}

# ratios whose direction is their benchmark's headline figure's (resource = the benchmark)
FOLLOWS_HEADLINE = ("normalized", "loss_pct")


def direction(metric: str, headline: int | None = None) -> int | None:
    """HIGHER, LOWER or DESCRIPTIVE; None when unknown. `headline`: the direction of the benchmark's
    headline figure, for the parallel suite's ratios (normalized, loss_pct)."""
    if metric in FOLLOWS_HEADLINE:
        return headline
    return DIRECTION.get(metric)
