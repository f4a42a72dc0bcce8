"""From a trial's samples and steps to isolation curves, one per view (pure).

A view says who measured W_a and W_d: `host` (the kernel's cgroup counters), `ebpf` (bpftrace on the host),
`guest` (what the load generator itself reported). Each is converted to a fraction of the resource's
measured capacity, so that every view's curve has the same axes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..measured import Samples, StepWindow
from ..resources import RESOURCES

__all__ = ["Samples", "StepWindow"]  # re-exported: curves are read from them

# views that count the host view's quantity again, by other means (their change point is the host view's)
SAME_QUANTITY_AS_HOST = ("ebpf",)


@dataclass
class Curve:
    view: str
    w_d_ideal: np.ndarray  # per step
    w_d: np.ndarray  # achieved, per step
    w_a: np.ndarray  # per step
    bucket_t: np.ndarray  # per bucket of the ramp, past each step's trims (for percentiles and timelines)
    bucket_w_a: np.ndarray
    groups: list[np.ndarray] = field(default_factory=list)  # W_a's buckets of each step (the change-point test)


def in_step(t: np.ndarray, s: StepWindow, trim: float, trim_end: float = 0.0) -> np.ndarray:
    """Mask of the samples inside a step's window (where its level was in force), its first `trim` share
    skipped as the transient and its last `trim_end` share as the hand-over to the next level."""
    length = s.t_end - s.t_start
    return (t > s.t_start + trim * length) & (t <= s.t_end - trim_end * length)


def curves(resource: str, samples: Samples, steps: list[StepWindow], capacity: dict,
           trim: float = 0.25, trim_end: float = 0.05) -> list[Curve]:
    """One curve per view that has data; the abiding tenant is W_a, the disruptive W_d. A step's point is
    the mean of its buckets inside its trimmed window, in every view (the guest view's buckets are the load
    agent's report intervals)."""
    caps = RESOURCES[resource].capacity(capacity)
    steps = sorted(steps, key=lambda s: s.step)
    ideal = np.array([s.ideal.get("disruptive", 0.0) for s in steps])
    out = []
    for view, source, quantity, cap_key in RESOURCES[resource].views:
        cap = caps.get(cap_key, 0.0)
        if cap <= 0:
            continue
        ta, va = samples.series("abiding", source, quantity)
        td, vd = samples.series("disruptive", source, quantity)
        if len(ta) == 0:
            continue
        va, vd = va / cap, vd / cap
        masks = [in_step(ta, s, trim, trim_end) for s in steps]
        groups = [va[m] for m in masks]
        w_a = np.array([g.mean() if len(g) else np.nan for g in groups])
        w_d = step_means(td, vd, steps, trim, trim_end)
        w_d = np.where(np.isnan(w_d) & (ideal == 0), 0.0, w_d)  # an idle tenant reports nothing
        if np.isnan(w_a).any():
            continue
        steady = np.zeros(len(ta), bool)  # ramp buckets inside each step's trimmed window
        for s, m in zip(steps, masks):
            if s.phase == "ramp":
                steady |= m
        out.append(Curve(view, ideal, w_d, w_a, ta[steady], va[steady], groups))
    return out


def step_means(t: np.ndarray, v: np.ndarray, steps: list[StepWindow], trim: float, trim_end: float) -> np.ndarray:
    """The mean of a series in each step's trimmed window (nan where it has no value)."""
    out = np.full(len(steps), np.nan)
    for i, s in enumerate(steps):
        m = in_step(t, s, trim, trim_end)
        if m.any():
            out[i] = float(v[m].mean())
    return out


def host_outside(samples: Samples, steps: list[StepWindow], cpus: float, trim: float = 0.25,
                 trim_end: float = 0.05, tenants: tuple[str, ...] = ("abiding", "disruptive")) -> float:
    """How much what the host's CPUs did outside the tenants changed during the ramp, as a share of the host's
    `cpus` (0 = nothing outside changed). Two parts, per step: the CPUs a hypervisor stole from running work,
    and the CPUs busy outside the tenants (the host's busy CPUs less the tenants' cgroups: contend's own
    sampler and probes, any other process) beyond what the step left idle. Each part's change from the
    baseline to each ramp step; the one of largest size, with its sign. Both bias the abiding tenant's
    figures as a neighbour would without being the neighbour: more steal or another process during the ramp
    reads as a loss, more of them during the baseline as a gain (a runc harmony trial's baseline with 0.42 CPU
    stolen: I_plr 1.19). nan without the host's samples (source "host": probes.sampler.HostCpuSampler)."""
    steps = sorted(steps, key=lambda s: s.step)
    if len(steps) < 2 or not cpus > 0:
        return math.nan
    mean = {}
    for tenant, source, quantity in (("host", "host", "cpu_busy"), ("host", "host", "cpu_steal"),
                                     *((t, "cgroup", "cpu") for t in tenants)):
        t, v = samples.series(tenant, source, quantity)
        if not len(t):
            return math.nan
        mean[(tenant, quantity)] = step_means(t, v, steps, trim, trim_end)
    stolen, busy = mean[("host", "cpu_steal")], mean[("host", "cpu_busy")]
    # what ran outside the tenants beyond the CPU left idle: only that much can have been taken from them
    # (in a baseline with one CPU idle, contend's own sampler and probes run there and take nothing)
    others = np.maximum(busy - sum(mean[(t, "cpu")] for t in tenants) - np.maximum(cpus - busy - stolen, 0), 0)
    change = np.concatenate([stolen[1:] - stolen[0], others[1:] - others[0]])
    change = change[np.isfinite(change)]
    return float(change[np.argmax(np.abs(change))] / cpus) if len(change) else math.nan
