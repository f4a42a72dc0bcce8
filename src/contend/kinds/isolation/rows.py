"""metrics: pure functions over sample arrays (DESIGN §3). Never starts a process."""
from __future__ import annotations

import math

import numpy as np

from ...metrics.curves import SAME_QUANTITY_AS_HOST, Curve
from ...metrics.isolation import (
    RefPoint,
    curve_metrics,
    escape_ratio,
    isolation_percentiles,
    per_second,
    reference_point,
)
from ...resources import RESOURCES

NAN = float("nan")



def trial_metrics(curve: Curve, l_d: float, threshold: float = 0.05, alpha: float = 0.01,
                  decided: RefPoint | None = None) -> dict[str, float]:
    """All metrics of one trial in one view: curve metrics, escape ratio, isolation percentiles (per second).
    `decided`: the change point of another view of the same quantity (trial_refs)."""
    m = curve_metrics(curve.w_d_ideal, curve.w_a, curve.groups, threshold, alpha, decided)
    m["escape"] = escape_ratio(float(curve.w_d[-1]), l_d)
    # isol against the undisturbed level (resctl's convention), per second
    m.update(isolation_percentiles(per_second(curve.bucket_t, curve.bucket_w_a), float(curve.w_a[0])))
    return m


def trial_refs(curves_: list[Curve], threshold: float = 0.05, alpha: float = 0.01) -> dict[str, RefPoint | None]:
    """Per view, the change point its metrics use: a trial's host and eBPF views count the same quantity
    (CPU time, bytes) twice, so the host view's test decides for both; a borderline step must not put the
    reference at the start in one and at the last step in the other (0.08 of I_intFree apart, in a real
    runc escape trial). The guest view measures something else (throughput) and decides for itself."""
    host = next((c for c in curves_ if c.view == "host"), None)
    shared = reference_point(host.w_d_ideal, host.w_a, host.groups, threshold, alpha) if host else None
    return {c.view: shared if c.view in ("host", *SAME_QUANTITY_AS_HOST) else None for c in curves_}


def host_speedup(curves_: list[Curve]) -> float:
    """CPU trials: the most work per CPU-second the abiding tenant did in any step, over the baseline's (the
    guest view's work over the host view's CPU time, 1 = the same speed throughout). A neighbour can slow a
    tenant's work per CPU-second (caches, memory bandwidth) but never speed it up, so a value above 1 is the
    host itself running faster than during the baseline (a VM's hypervisor sharing its cores): the guest
    view's figures then measure the host as much as the isolation. nan without both views."""
    by = {c.view: c for c in curves_}
    if "guest" not in by or "host" not in by:
        return NAN
    guest, host = by["guest"].w_a, by["host"].w_a
    if not host[0] > 0 or not guest[0] > 0:
        return NAN
    busy = host > 0.1 * host[0]  # a step with (almost) no CPU time has no speed to read
    return float(np.max((guest[busy] / host[busy]) / (guest[0] / host[0])))


def ebpf_coverage(curves_: list[Curve]) -> float:
    """The eBPF view's count of the abiding tenant's use over the host view's count of the same quantity (CPU
    time, written bytes, sent bytes), in the step where the two differ most (1 = they agree in every step).
    Where they differ, the eBPF view is not whole: a disk tenant held at its throttle has the bios blk-throttle
    held back submitted later by a kernel worker, in no tenant's cgroup (0.91-0.93 in real runc and youki disk
    trials, docs/metrics.md). Steps with almost none of the tenant's use are left out; nan without both views."""
    by = {c.view: c for c in curves_}
    if "ebpf" not in by or "host" not in by:
        return NAN
    host, ebpf = by["host"].w_a, by["ebpf"].w_a
    if not host[0] > 0 or len(ebpf) != len(host):
        return NAN
    ratio = ebpf[host > 0.1 * host[0]] / host[host > 0.1 * host[0]]
    with np.errstate(divide="ignore"):
        return float(ratio[np.argmax(np.abs(np.log(ratio)))])


def trial_rows(resource: str, curves_: list[Curve], l_d: float, threshold: float = 0.05,
               alpha: float = 0.01, outside: float = NAN) -> list[tuple[str, str, float]]:
    """Every (view, metric, value) of one trial: each view's metrics, the change point shared where two views
    count the same quantity, and the caveats the table flags: for CPU the host's CPU taken outside the tenants
    (`outside`: metrics.host_outside, every view's), the guest view's (host_speedup), where the eBPF view
    counts the host view's quantity the eBPF view's (ebpf_coverage)."""
    refs = trial_refs(curves_, threshold, alpha)
    rows = [(c.view, k, v) for c in curves_ for k, v in trial_metrics(c, l_d, threshold, alpha, refs[c.view]).items()]
    if resource == "cpu" and math.isfinite(outside):
        rows += [(c.view, "host_outside", outside) for c in curves_]
    if resource == "cpu" and math.isfinite(speed := host_speedup(curves_)):
        rows.append(("guest", "host_speedup", speed))
    if RESOURCES[resource].ebpf_counts_host and math.isfinite(cover := ebpf_coverage(curves_)):
        rows.append(("ebpf", "ebpf_coverage", cover))
    return rows
