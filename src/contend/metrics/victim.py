"""What the two victim kinds (diskfill, oltp) share: a victim measured undisturbed (its base) and under each
attack or disruptor, paired per repetition by each kind's rules (kinds/diskfill/metrics.py: the IOPS drop and
latency multiplier of the disk-fill attack; kinds/oltp/metrics.py: the degradation D of a database's
transactions); the windows themselves reduced from a trial's samples. Pure."""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from .curves import Samples, StepWindow
from .directions import DESCRIPTIVE, HIGHER, LOWER
from .isolation import degradation

# which way is better for a victim window's own figures (both victim kinds' metrics.csv hold them)
WINDOW_DIRECTIONS = {
    "tps": HIGHER, "lat_ms": LOWER, "read_iops": HIGHER, "write_iops": HIGHER, "read_iops_min": HIGHER,
    "write_iops_min": HIGHER, "read_lat_us": LOWER, "write_lat_us": LOWER, "read_p50_us": LOWER,
    "write_p50_us": LOWER, "read_p99_us": LOWER, "write_p99_us": LOWER,
    "device_util": DESCRIPTIVE, "device_queue_depth": DESCRIPTIVE, "device_wbytes_s": DESCRIPTIVE,
    "attackers_charged_pct": DESCRIPTIVE, "victim_charged_pct": DESCRIPTIVE, "victim_cpu": DESCRIPTIVE,
    "oom_kills": LOWER,
}


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


def measured_windows(s: Samples, steps: list[StepWindow], runtime: str, resource: str, repetition: int) -> list[Window]:
    """A trial's measurement windows (its steps), each with what was measured in it. Guest view: the
    victim's figures (a quantity "<resource>/<figure>" names its resource, else the trial's) and its worst
    500 ms (the lowest of its IOPS series). Host view: the disk's mean utilisation, queue depth and write
    rate, the shares of those writes charged to the attackers' and to the victim's cgroups (writeback by the
    kernel's flusher may be charged to nobody), the victim's CPUs, the OOM kills in any tenant."""
    out = []
    for st in steps:
        inside = (s.t >= st.t_start) & (s.t <= st.t_end)
        g = inside & (s.source == "guest")
        guest: dict[str, dict[str, float]] = defaultdict(dict)  # resource -> figures
        for q, v in zip(s.quantity[g], s.value[g]):
            res, _, figure = str(q).rpartition("/")  # "postgresql:tpcb-like/tps"; "read_iops" (disk)
            if figure.endswith("_t"):  # a series: its worst point only
                if figure in ("read_iops_t", "write_iops_t"):
                    key = figure.removesuffix("_t") + "_min"
                    guest[res or resource][key] = min(float(v), guest[res or resource].get(key, math.inf))
                continue
            guest[res or resource][figure] = float(v)
        out += [Window(runtime, st.phase, res, repetition, "guest", figures) for res, figures in guest.items()]
        host = _host_figures(s, inside, set(st.ideal))
        if host:
            out.append(Window(runtime, st.phase, resource, repetition, "host", host))
    return out


def _host_figures(s: Samples, inside: np.ndarray, victims: set[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    dev = inside & (s.source == "device")
    for q in ("util", "queue_depth", "wbytes_s"):
        v = s.value[dev & (s.quantity == q)]
        if len(v):
            out[f"device_{q}"] = float(v.mean())
    cg = inside & (s.source == "cgroup")
    w = cg & (s.quantity == "io_wbytes_s")
    if out.get("device_wbytes_s", 0) > 0 and w.any():  # who the disk's writes were charged to
        per_tenant = defaultdict(list)
        for tenant, v in zip(s.tenant[w], s.value[w]):
            per_tenant[str(tenant)].append(v)
        share = {t: 100 * float(np.mean(v)) / out["device_wbytes_s"] for t, v in per_tenant.items()}
        out["attackers_charged_pct"] = min(100.0, sum(v for t, v in share.items() if t not in victims))
        out["victim_charged_pct"] = min(100.0, sum(v for t, v in share.items() if t in victims))
    cpu = s.value[cg & (s.quantity == "cpu") & np.isin(s.tenant, list(victims))]
    if len(cpu):
        out["victim_cpu"] = float(cpu.mean())
    oom = s.value[cg & (s.quantity == "oom_kill")]
    if len(oom):
        out["oom_kills"] = float(oom.sum())
    return out
