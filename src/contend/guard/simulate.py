"""A policy on a simulated disk: pure, for the policy's tests and bench/guard_told.py.

The disk delivers `real(k)` bytes/s in period k and shares it in proportion to what each target asks for
(its demand, held to its cap), as a saturated queue does; the policy is told `told` (inf: nothing) and sees
each period's usage, as the guard's collector reports it. No latency: saturation is seen only from the usage.
With `lag`, a target's first cap takes effect that many periods late: what it had queued uncapped goes on (this
VM's disk: a burst's neighbour wrote at 2.5 GB/s for 100 ms under its first cap of 0.76 GB/s, docs/results/archive.md).
With `queue`, the policy also sees the device's latency: 0.1 ms a period while the disk delivers all it is asked
(held to the caps), and ten times that × asked / delivered while it does not, as a saturated queue's wait grows
(this VM's disk: 0.5 ms calm, 20 ms under a 32-deep burst, docs/results/archive.md 2026-12-02).
With `depth`, the targets named are writers of a fixed queue depth (a database's log, fio at iodepth 1): what one
asks in a period is its demand × the calm latency over the last period's (queue), as its rate falls with the wait.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .policy import Decision, Policy, PolicyInput, TargetView

CALM_MS = 0.1  # the simulated device's latency while it delivers all it is asked
Trace = list[tuple[dict[str, float], dict[str, float | None], Decision]]  # per period: got, caps, decision


def simulate(policy: Policy, demand: Callable[[int], dict[str, float]], periods: int, told: float,
             real: Callable[[int], float], floor: float = 10.0, lag: int = 0, queue: bool = False,
             depth: frozenset[str] = frozenset()) -> Trace:
    """Per period: what each target got, the caps the policy set after it, and its decision."""
    names = list(demand(0))
    usage: dict[str, list[float]] = {n: [] for n in names}
    latency: list[float] = []
    caps: dict[str, float | None] = {n: None for n in names}
    state: object = {}
    trace: Trace = []
    first: dict[str, int] = {}  # the period from which a target's first cap is in force
    for k in range(periods):
        held = {n: None if k < first.get(n, 0) else c for n, c in caps.items()}
        slowed = CALM_MS / latency[-1] if latency else 1.0  # a fixed-depth writer's rate over its calm one
        asks = {n: d * slowed if n in depth else d for n, d in demand(k).items()}
        want = {n: d if (cap := held[n]) is None else min(d, cap) for n, d in asks.items()}
        total = sum(want.values())
        got = {n: w * min(1.0, real(k) / total) if total else 0.0 for n, w in want.items()}
        for n in names:
            usage[n].append(got[n])
        if queue:
            latency.append(CALM_MS if total <= real(k) else 10 * CALM_MS * total / real(k))
        d = policy.decide(PolicyInput([TargetView(n, np.array(usage[n]), caps[n]) for n in names], told, floor,
                                      latency=np.array(latency), state=state))
        first |= {n: k + 1 + lag for n, c in d.caps.items() if c is not None and n not in first}
        caps, state = dict(d.caps), d.state
        trace.append((got, dict(caps), d))
    return trace
