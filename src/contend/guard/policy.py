"""Guard policies: pure functions from what was seen (usage history, current caps, capacity) to caps.

Every quantity is bytes/s of one disk (reads + writes). A policy never reads a file or a clock; the
daemon hands it a `PolicyInput` each period and applies the `Decision`. What a policy must remember
between periods (contend's capacity estimate) travels in `Decision.state` and comes back next period,
so the policy itself stays a function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..diskuse import PRESSES
from .allocate import keep_filled, lifelines_first, no_leap
from .estimator import SETTINGS as ESTIMATOR_SETTINGS
from .estimator import CapacityEstimator, EstimatorState, lifeline, mean_tail
from .estimator import preempted as is_preempted
from .inputs import PolicyInput, TargetView


@dataclass
class Decision:
    caps: dict[str, float | None]  # per target; None = no cap
    alert: str = ""  # non-empty: overload (the caps the targets need exceed the capacity)
    capacity: float = math.nan  # the capacity the policy divided (contend: its probed estimate)
    state: Any = field(default_factory=dict)
    # per target, its BFQ or io.cost weight, or its io.latency target in µs; {}: none set
    weights: dict[str, int] = field(default_factory=dict)
    said: str = ""  # non-empty: what the policy now believes of the disk, and why (the guard logs it)


class Policy:
    name = ""
    period_ms = 100  # the period the policy is meant to run at (the guard's default for it)
    # its caps are written again only when they move by more than this share (the guard's default for it): every
    # write of a throttle restarts the group's slice in the kernel, and a writer whose queue is all at the disk
    # then has its last slice's debt forgiven (bench/cap_rewrites.py)
    hysteresis = 0.0
    scheduler = ""  # the disk scheduler the policy needs (its weights are BFQ's); "": whatever the disk has
    # what its Decision.weights are for: "bfq" (io.bfq.weight), "cost" (io.weight under io.cost) or "latency"
    # (io.latency targets, µs)
    weighs = ""
    tunables: dict[str, int] = {}  # that scheduler's tunables (queue/iosched/), set where the guard switched it
    needs_capacity = False  # it divides the capacity it is told (static, aridac); the others learn it or need none

    def decide(self, inp: PolicyInput) -> Decision:  # pragma: no cover - interface
        raise NotImplementedError


class NoPolicy(Policy):
    """No caps at all: the kernel's default answer."""

    name = "none"

    def decide(self, inp: PolicyInput) -> Decision:
        return Decision({t.name: None for t in inp.targets}, capacity=inp.capacity)


class StaticPolicy(Policy):
    """Static caps by weight: capacity × weight / Σ weights each, whatever the load (io.max set once)."""

    name = "static"
    needs_capacity = True

    def decide(self, inp: PolicyInput) -> Decision:
        total = sum(t.weight for t in inp.targets) or 1.0
        return Decision({t.name: max(inp.floor, inp.capacity * t.weight / total) for t in inp.targets},
                        capacity=inp.capacity)


# a target with no cap counts as this limit in Aridac's accounting: its authors started every container with
# `--device-write-bps ...:1000000mb` (launch_fio_docker.sh), so idle capacity is negative until each has a
# lifeline and was scaled down to it
UNCAPPED = 1e12


@dataclass
class AridacPolicy(Policy):
    """Aridac (Yue, Peng, Wang) as its authors' code runs it (Project/src/stats.py and policy.py).

    Each period every target's rate enters its queue as a share of the capacity: a zero repeats the last
    share (an idle target keeps its lifeline), a share above 1 is dropped, the queue keeps the last N. With
    two shares or more, the lifeline is the queue's mean × capacity, the desire lifeline × (1 + P), and in
    the targets' order, with idle = capacity − Σ caps:
      - desire above the cap and idle > 0: cap = min(desire, lifeline + idle) (growth only into idle
        capacity, and bounded by it); idle shrinks by what the cap grew;
      - desire below cap × (1 − P): cap = desire (scale down), idle grows by what it gave back;
      - otherwise the cap stays; with idle ≤ 0 the code prints "No idle bandwidth" (the alert here).
    A target with fewer than two shares keeps the cap it has (none: uncapped, counted as UNCAPPED). The
    alert is also raised when Σ desires exceeds the capacity (the paper's text: the caps sum past 1).
    Defaults are the code's (ELASTIC = 0.35, about one sample a second: `period_ms`); the paper's text
    says P = 0.2 (`--p 0.2`). Reads and writes are one quantity here (the code keeps one queue each).
    """

    window: int = 30  # N: the queue's length (stats.py)
    p: float = 0.35
    name = "aridac"
    period_ms = 1000
    needs_capacity = True

    def queues(self, inp: PolicyInput) -> dict[str, list[float]]:
        """Each target's queue of shares after this period's sample (gone targets forgotten)."""
        old = inp.state.get("queues", {})
        out = {}
        for t in inp.targets:
            q = list(old.get(t.name, []))
            if len(t.usage):
                r = float(t.usage[-1]) / inp.capacity
                if r == 0.0 and q:
                    q.append(q[-1])
                elif 0.0 < r <= 1.0:
                    q.append(r)
            out[t.name] = q[-self.window:]
        return out

    def decide(self, inp: PolicyInput) -> Decision:
        queues = self.queues(inp)
        limit = {t.name: UNCAPPED if t.cap is None else t.cap for t in inp.targets}
        idle = inp.capacity - sum(limit.values())
        life = {k: inp.capacity * float(np.mean(q)) for k, q in queues.items() if len(q) > 1}
        caps: dict[str, float | None] = {t.name: t.cap for t in inp.targets}
        starved = []
        for k, d in life.items():
            desire = max(inp.floor, d * (1 + self.p))
            if desire == limit[k]:
                continue
            if desire > limit[k] and idle > 0:
                new = max(inp.floor, min(desire, d + idle))
                idle -= new - limit[k]
            elif desire < limit[k] * (1 - self.p):
                idle += limit[k] - desire
                new = desire
            else:
                if idle <= 0:
                    starved.append(k)
                continue
            caps[k] = limit[k] = new
        need = sum(life.values()) * (1 + self.p)
        alert = ""
        if need > inp.capacity:
            alert = f"caps {need / 1e6:.0f} MB/s exceed capacity {inp.capacity / 1e6:.0f} MB/s"
        elif starved:
            alert = f"no idle bandwidth (capacity {inp.capacity / 1e6:.0f} MB/s) for {', '.join(starved)}"
        return Decision(caps, alert, inp.capacity, {"queues": queues})


@dataclass(frozen=True)
class ContendState:
    """What contend's policy remembers between periods: its estimator's state, the lifelines of the last calm period
    (what contention must not take from each target) and the periods since each target last filled its cap."""

    estimate: EstimatorState | None = None  # None: before the first period
    kept: dict[str, float] = field(default_factory=dict)
    filled: dict[str, int] = field(default_factory=dict)


@dataclass
class ContendPolicy(Policy):
    """contend's policy: protect each target's lifeline, hand the rest of the disk to whoever wants it.

    Three pure stages each period (docs/guard-policy.md says each rule's why):
      - read (guard/estimator.py): each target's lifeline (the median of the last `window` periods), its claim
        (max(lifeline, mean of the last 3) × (1 + P), unbounded at its cap), and its class: wanting more,
        pre-empted (two periods 10 % below its lifeline), taking, short of its cap;
      - estimate (guard/estimator.py): the capacity the caps hand out, lowered to `backoff` × what the disk
        delivered when a target is hurt while the disk is saturated and somebody takes (unless a named filter
        explains the dip: the target's own cap, the hold, the disk's stall, a burst's onset), probed down when the
        caps hand out more than the disk delivers with the latency up, climbing `climb` a period back otherwise.
        Told a number, that number is where it starts and climbs back to until the disk shows its limit; told
        nothing, no caps until the first contention;
      - allocate (guard/allocate.py): each target's calm lifeline first, then the headroom of those not wanting
        more, then weighted max-min fair shares of the rest over the claims (work-conserving), no taker's cap
        raised in a decrease or its hold, and no cap raised more than `ramp` a period before the limit showed.
    """

    # a cap moved less than 5 % is left as written: every write restarts the group's throttle slice
    # (docs/results/archive.md 2026-12-04, second section)
    hysteresis = 0.05
    window: int = 30
    p: float = 0.2
    tolerance: float = 0.1  # below (1 - tolerance) × lifeline counts as pre-empted
    backoff: float = 0.9  # the estimate after pre-emption, × what the disk delivered
    climb: float = 0.01  # growth per period, × the ceiling
    lowest: float = 0.5  # with no calm lifelines kept, a decrease stops at this share of the ceiling
    latency_factor: float = 4.0  # device latency this many times its floor counts as saturated (0: ignore)
    probe: float = 0.02  # once learnt, the ceiling is this share above the most the disk delivered in a period
    persist: int = 3  # periods the caps must hand out more than the disk delivers, the latency up, to probe
    ramp: float = 0.5  # until the disk showed its limit, a taker's cap rises at most this share a period
    spare: int = 2  # periods running a decrease may be waived at a burst's onset (a neighbour past its cap)
    keep: int = 4  # periods a target that filled its cap keeps it, whatever it uses (large I/Os under a low cap)
    estimator: CapacityEstimator = field(init=False, repr=False)
    name = "contend"

    def __post_init__(self) -> None:
        self.estimator = CapacityEstimator(**{k: getattr(self, k) for k in ESTIMATOR_SETTINGS})

    def decide(self, inp: PolicyInput) -> Decision:
        st = inp.state if isinstance(inp.state, ContendState) else ContendState()
        e = self.estimator
        r = e.read(inp, st.kept)
        est, said = e.step(r, st.estimate or e.start(inp.capacity), inp.capacity, st.kept)
        kept = r.lives if r.calm else {k: v for k, v in st.kept.items() if k in r.claims}
        claims = dict(r.claims)
        filled = keep_filled(inp.targets, r.wanting, claims, st.filled, est.gripped, self.keep)
        caps: dict[str, float | None] = {t.name: None for t in inp.targets}
        if math.isfinite(est.capacity):
            shares = lifelines_first(claims, kept, r.weights, est.capacity, headroom=self.p)
            shares = no_leap(inp.targets, shares, inp.floor, est.gripped, est.learnt, self.p, self.window, self.ramp)
            caps = {k: max(inp.floor, v) for k, v in shares.items()}
        alert = (f"lifelines {r.need / 1e6:.0f} MB/s exceed capacity {est.capacity / 1e6:.0f} MB/s"
                 if r.need > est.capacity else "")
        return Decision(caps, alert, est.capacity, ContendState(est, kept, filled), said=said)


def bfq_weights(targets: list[TargetView], top: int = 1000) -> dict[str, int]:
    """A target's weight (1 by default) on the kernel's scale (100 by default; BFQ's up to 1000, io.weight's
    up to 10000)."""
    return {t.name: min(top, max(1, round(100 * t.weight))) for t in targets}


class BfqPolicy(Policy):
    """The kernel's proportional share: the disk's scheduler switched to BFQ, each target weighted by its weight,
    no caps. BFQ serves the backlogged targets in proportion to their weights and idles briefly for a target
    whose queue just emptied (slice_idle), which is what protects a light, steady victim, and what costs the
    neighbour throughput on a fast disk (docs/guard.md: bench/bfq_share.py)."""

    name = "bfq"
    period_ms = 1000  # nothing to decide but the weights of targets that came
    scheduler = "bfq"
    weighs = "bfq"

    def decide(self, inp: PolicyInput) -> Decision:
        return Decision({t.name: None for t in inp.targets}, capacity=inp.capacity, weights=bfq_weights(inp.targets))


@dataclass
class HybridPolicy(Policy):
    """contend's hybrid: BFQ's weights for the steady state, contend's caps only while a target is pre-empted.

    Every period contend's policy decides (so its lifelines and capacity estimate are always learnt). Its caps
    are put in force when a target falls below (1 − tolerance) × its lifeline for two periods while another
    grows past its own lifeline × (1 + P) or presses its cap (a neighbour taking the disk; a neighbour that
    only stopped, or a disk that slowed for everybody, is not a reason to cap anybody). They stay while a
    capped target presses its cap and come off after `calm` periods without either. In between nobody is
    capped: the neighbour may use whatever the victim leaves (work-conserving), and BFQ shares by weight what
    both keep queued. BFQ runs without idling (slice_idle 0): its idling is what protects a light victim and
    what costs a fast disk's throughput (bench/bfq_share.py: work conservation 0.35 with it, 0.87 without);
    here the caps protect instead.
    """

    window: int = 30
    p: float = 0.2
    backoff: float = ContendPolicy.backoff  # its contend policy's capacity estimate
    climb: float = ContendPolicy.climb
    calm: int = 10  # periods without a reason before the caps come off
    inner: ContendPolicy = field(init=False, repr=False)  # the contend policy it runs, with its settings
    name = "hybrid"
    scheduler = "bfq"
    weighs = "bfq"
    tunables = {"slice_idle": 0}  # noqa: RUF012 - a class constant, never mutated

    def __post_init__(self) -> None:
        self.inner = ContendPolicy(window=self.window, p=self.p, backoff=self.backoff, climb=self.climb)

    def decide(self, inp: PolicyInput) -> Decision:
        inner = self.inner
        d = inner.decide(PolicyInput(inp.targets, inp.capacity, inp.floor, inp.latency, inp.state.get("contend")))
        pressing, growing, preempted = set(), set(), set()
        for t in inp.targets:
            u = t.usage
            if len(u) < 3:
                continue
            life, recent = lifeline(u, self.window), mean_tail(u, 2)
            if t.cap is not None and u[-1] >= PRESSES * t.cap:
                pressing.add(t.name)
            elif recent > (1 + self.p) * life:
                growing.add(t.name)
            elif is_preempted(u, life, inp.floor, inner.tolerance):
                preempted.add(t.name)
        engaged = int(inp.state.get("calm", self.calm)) < self.calm
        hurt = bool(preempted) and bool(pressing | growing)
        calm = 0 if hurt or (engaged and pressing) else int(inp.state.get("calm", self.calm)) + 1
        caps: dict[str, float | None] = d.caps if calm < self.calm else {t.name: None for t in inp.targets}
        return Decision(caps, d.alert, d.capacity, {"contend": d.state, "calm": min(calm, self.calm)},
                        bfq_weights(inp.targets))


class IoCostPolicy(Policy):
    """The kernel's io.cost (cgroup v2): the guard turns it on for each guarded disk (root io.cost.qos, the
    kernel's own cost model and QoS: ctrl=auto) and gives each target weight × 100 as its io.weight (1-10000);
    no caps. io.cost shares the device's estimated capacity in proportion to the weights of the cgroups
    using it, and lends what one leaves unused to the others (work-conserving); resctl-bench tunes its QoS
    (vrate) per device, the guard keeps the kernel's defaults (docs/guard.md)."""

    name = "iocost"
    period_ms = 1000
    weighs = "cost"

    def decide(self, inp: PolicyInput) -> Decision:
        return Decision({t.name: None for t in inp.targets}, capacity=inp.capacity,
                        weights=bfq_weights(inp.targets, 10000))


@dataclass
class IoLatencyPolicy(Policy):
    """The kernel's io.latency (cgroup v2): a latency target protects a cgroup by throttling its siblings'
    queue depth while it misses the target (on an SSD: while more than a few of its I/Os in a window take
    longer), and costs nothing while it meets it (work-conserving). It protects by role, and the guard's
    targets have weights, not roles: the heaviest targets (weight above the lightest's) get `latency_ms` as
    their target, the others none; equal weights protect nobody. No caps."""

    latency_ms: float = 5.0  # the kernel's documentation's example; set it 10-15 % above the victim's own
    name = "iolatency"
    period_ms = 1000  # nothing to decide but the targets of the targets that came
    weighs = "latency"

    def decide(self, inp: PolicyInput) -> Decision:
        weights = [t.weight for t in inp.targets]
        top = max(weights, default=0.0)
        us = max(1, round(self.latency_ms * 1000))
        protected = {t.name: us for t in inp.targets if t.weight == top > min(weights)}
        return Decision({t.name: None for t in inp.targets}, capacity=inp.capacity, weights=protected)


POLICIES = {"none": NoPolicy, "static": StaticPolicy, "aridac": AridacPolicy, "contend": ContendPolicy,
            "bfq": BfqPolicy, "hybrid": HybridPolicy, "iocost": IoCostPolicy, "iolatency": IoLatencyPolicy}


PolicyName = Literal["none", "static", "aridac", "contend", "bfq", "hybrid", "iocost", "iolatency"]


def make(name: str, **settings: object) -> Policy:
    """A policy by name with the settings it reads (settings.policy_args: those not None that its constructor
    takes; the others are its class's own defaults)."""
    from .settings import policy_args
    return POLICIES[name](**policy_args(name, settings))  # type: ignore[arg-type]


def default_period_ms(name: str) -> int:
    return POLICIES[name].period_ms


def default_hysteresis(name: str) -> float:
    return POLICIES[name].hysteresis
