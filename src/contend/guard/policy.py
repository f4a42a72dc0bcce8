"""Guard policies: pure functions from what was seen (usage history, current caps, capacity) to caps.

Every quantity is bytes/s of one disk (reads + writes). A policy never reads a file or a clock; the
daemon hands it a `PolicyInput` each period and applies the `Decision`. What a policy must remember
between periods (contend's capacity estimate) travels in `Decision.state` and comes back next period,
so the policy itself stays a function.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np


@dataclass(frozen=True)
class TargetView:
    """One target on one disk: its usage per period (bytes/s, oldest first) and the cap now set."""

    name: str
    usage: np.ndarray
    cap: float | None = None  # None: no cap set
    weight: float = 1.0


@dataclass(frozen=True)
class PolicyInput:
    targets: list[TargetView]
    capacity: float  # bytes/s the disk is told to deliver (configured or calibrated); inf: told nothing
    floor: float  # no cap goes below this
    latency: np.ndarray = field(default_factory=lambda: np.array([]))  # device ms per I/O per period
    state: dict = field(default_factory=dict)  # what the policy returned last period


@dataclass
class Decision:
    caps: dict[str, float | None]  # per target; None = no cap
    alert: str = ""  # non-empty: overload (the caps the targets need exceed the capacity)
    capacity: float = math.nan  # the capacity the policy divided (contend: its probed estimate)
    state: dict = field(default_factory=dict)
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


def _mean_tail(u: np.ndarray, n: int) -> float:
    return float(np.mean(u[-n:])) if len(u) else 0.0


# a lifeline below this share of the floor is an idle target's: its jitter is never a pre-emption. Not the floor
# itself: a latency-bound victim (4 KiB random I/O one at a time, 13 MB/s) lives below a floor of 2 % of a fast
# disk, and a burst hurts it through the queue, not through any cap (issue 55: it kept 0.20 of its rate, never
# counted pre-empted)
IDLE = 0.05


def _preempted(u: np.ndarray, life: float, floor: float, tolerance: float) -> bool:
    """The last two periods below (1 - tolerance) × its lifeline (two, not one: a bucket's jitter)."""
    return len(u) >= 3 and life > IDLE * floor and _mean_tail(u, 2) < (1 - tolerance) * life


def _stalled(targets: list[TargetView], lives: dict[str, float], floor: float, tolerance: float) -> tuple[bool, bool]:
    """Everybody got less than (1 - tolerance) × its lifeline at once in one of the last two periods, but not in all of
    the last three: a moment the disk stopped for all, then ran on. Nobody's taking caused it, and a neighbour
    catching up after it is not taking either (guard-caps' workload2 told 2 x: a stall 3 s before the burst, the
    neighbour back at its cap a period before the victim, and the estimate fell from 1,673 to its floor of 375 cost
    MB/s for the rest of the run: the burst got 0.24 of the spare, docs/results/archive.md 2026-12-02, evening). Three
    such
    periods running are a disk that slowed down, met as ever; four are one that slowed with nobody taking (the second
    answer): a stall with nobody taking lasted three (guard-shapes' iops-neighbour, 2026-11-28)."""
    def low(k: int) -> bool:
        return all(len(t.usage) >= k and float(t.usage[-k]) < (1 - tolerance) * max(lives[t.name], IDLE * floor)
                   for t in targets)
    if len(targets) < 2:
        return False, False
    return (low(1) or low(2)) and not (low(1) and low(2) and low(3)), all(low(k) for k in (1, 2, 3, 4))


def _overshooting(targets: list[TargetView], p: float) -> list[str]:
    """Targets that did more than (1 + p) × their cap in the last period: not the disk's limit but the
    throttle's, which lets a group that ran below its limit dispatch a slice (100 ms) of budget at once, and
    lets what it had queued before a new cap through (a burst's onset: 766-879 MB/s under a cap of 574)."""
    return [t.name for t in targets if t.cap is not None and len(t.usage) and float(t.usage[-1]) > (1 + p) * t.cap]


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


def waterfill(claims: dict[str, float], weights: dict[str, float], capacity: float) -> dict[str, float]:
    """Weighted max-min fair shares of capacity: nobody gets more than it claims; what a modest claim
    leaves is shared by the others in proportion to their weights (claims may be inf)."""
    shares = {k: 0.0 for k in claims}
    left = dict(claims)
    room = max(0.0, capacity)
    while left and room > 1e-9:
        wsum = sum(weights[k] for k in left)
        level = room / wsum  # per unit of weight
        capped = {k: c for k, c in left.items() if c <= level * weights[k]}
        if not capped:
            for k in left:
                shares[k] += level * weights[k]
            return shares
        for k, c in capped.items():
            shares[k] += c
            room -= c
            del left[k]
    return shares


def lifelines_first(claims: dict[str, float], kept: dict[str, float], weights: dict[str, float],
                    capacity: float, headroom: float = 0.0) -> dict[str, float]:
    """Each target first gets what it is kept (at most its claim); then each target with a bounded claim its
    headroom over that, up to `headroom` × what it is kept; what is left of the capacity is water-filled over what
    each claims beyond that. Where the kept amounts do not fit, they are water-filled themselves."""
    base = {k: min(claims[k], kept.get(k, 0.0)) for k in claims}
    if sum(base.values()) >= capacity:
        return waterfill(base, weights, capacity)
    # a victim's headroom before a burst's more: shared equally with a target that wants more, a latency-bound
    # victim's cap sat within 10 % of its lifeline, and its own jitter held it there (guard-shapes' iops-neighbour)
    head = {k: min(claims[k], (1 + headroom) * base[k]) - base[k] if math.isfinite(claims[k]) else 0.0
            for k in claims}
    first = waterfill(head, weights, capacity - sum(base.values()))
    base = {k: base[k] + first[k] for k in claims}
    extra = waterfill({k: claims[k] - base[k] for k in claims}, weights, capacity - sum(base.values()))
    return {k: base[k] + extra[k] for k in claims}


@dataclass
class ContendPolicy(Policy):
    """contend's policy: protect each target's lifeline, hand the rest to whoever wants it.

    - lifeline: the median of the last `window` periods, so a burst shorter than half of it does not
      raise it and a victim squeezed for a moment does not lose it;
    - claim: lifeline or recent use (mean of the last 3 periods), whichever is higher, × (1 + P); a target
      using (almost) its whole cap wants more: its claim is unbounded; one that filled its cap in one of the last
      `keep` periods and did nothing since (large I/Os under a low cap) claims that cap at least;
    - caps: weighted max-min fair shares of the capacity estimate over the claims (work-conserving: all of
      the estimate is handed out as soon as somebody wants it, within a period or two), after each target's
      lifeline from the last calm period (nobody pre-empted, at its cap or above its lifeline, the latency down)
      is kept, and then the headroom (P × it) of each target not wanting more: a victim whose lifeline is more
      than an equal share of a low estimate keeps it, where equal shares held it below it by its own cap (a 4 KiB
      writer at depth 1 costs the disk 23 × its bytes here);
    - capacity estimate (probed, Aridac's future work): when a target not at its cap falls below its
      lifeline while the disk is saturated (somebody at its cap, the device latency well above its floor,
      or everybody below their lifelines at once), the disk delivers less than the caps promise: the
      estimate drops to `backoff` × what the disk delivered to all of them in the last two periods (or ×
      the estimate, if that is lower; not below the lifelines kept from the last calm period with the headroom of
      those not wanting more, or with none kept, below `lowest`), then holds three periods while the victim
      recovers. A dip in which everybody got less at once for a period or two is the disk's stall, and lowers nothing
      (three such periods running are a disk that slowed down, four with nobody taking). While nobody
      is pre-empted it climbs back towards the configured capacity, ten times slower near the level that
      hurt last time: the most the disk delivered in a period of that contention (a pre-emption within `window`
      periods of its first is the same contention, and lowers the estimate but not that level). Somebody takes when
      it is at its cap, lives at it, or does more than (1 + P) × its lifeline or its calm one. A disk that slows
      down (Aridac Fig. 8) lowers the estimate instead of squeezing the victim.
    - once a pre-emption showed the disk's limit, what the estimate climbs back to is the configured capacity
      or a little (`probe`) above the most the disk was seen to deliver in a period, whichever is lower (issue 55);
      with the estimate at its floor, a target above its lifeline but below its cap while the latency is up
      shows that limit too (the disk holds it, not its cap); so does a target wanting more that gets less than its
      cap, given more than its calm lifeline with its headroom, while the caps hand out the estimate and the latency
      is up, `persist` periods in a row: the estimate goes `probe` above what the disk delivered (below the floor,
      too, when that is under half the most it delivered);
    - a decrease, and the three periods of its hold, raise no cap of a target using more than its lifeline with its
      headroom: the decrease takes from those who take, and the victim recovers before they get more; until the disk
      showed its limit, such a cap, and the cap of one at it, rises at most `ramp` (50 %) a period, so a number told
      too high shows as a squeeze;
      and until then a victim hurt while a target overshoots its cap (the throttle's slice at a burst's onset), in
      that period or the next, lowers nothing, for at most `spare` periods running;
    - told nothing (capacity inf): no caps at all until the first contention (a target pre-empted while an
      uncapped one grows past its lifeline, or the latency is up), which sets the estimate as above; from then
      on it climbs back to `probe` above the most the disk delivered, so it follows the disk up as well as down.
    """

    # a cap moved less than 5 % is left as written: the neighbour's 100 ms buckets over 1.2 x its cap fell in all six
    # bandwidth cells of two interleaved studies (3.2-8.1 % against 3.8-19.1 %), the victim's isolation and the
    # spare within the noise (presets/guard-studies/guard-hysteresis*.yaml, n = 3, docs/results/archive.md 2026-12-04
    # second section)
    hysteresis = 0.05
    window: int = 30
    p: float = 0.2
    tolerance: float = 0.1  # below (1 - tolerance) × lifeline counts as pre-empted
    backoff: float = 0.9  # the estimate after pre-emption, × what it was
    climb: float = 0.01  # growth per period, × the configured capacity
    lowest: float = 0.5  # with no calm lifelines kept, a pre-emption drops the estimate no lower than this share of
    # the configured capacity (or the most delivered, once learnt): a disk that slowed further is not helped by
    # squeezing everybody (the overload alert says it instead); with them kept, they are that floor
    latency_factor: float = 4.0  # device latency this many times its floor counts as saturated (0: ignore)
    probe: float = 0.02  # told nothing: the ceiling, this share above the most the disk delivered in a period
    persist: int = 3  # periods a disk must deliver less than the caps hand out, the latency up, to lower the estimate
    # until the disk showed its limit, a taker's cap rises at most this share a period: a number told is not handed
    # out at once (told 2 x, the victim 0.85-0.94 -> 0.96-1.00 over 6 runs interleaved; docs/results/archive.md
    # 2026-12-02).
    # 25 % until 2026-12-03, when one at its cap counted too: at 50 % the victim as kept, and the neighbour's share
    # told 2 x no lower than when some runs leapt (interleaved, docs/results/archive.md 2026-12-03, third section)
    ramp: float = 0.5
    spare: int = 2  # periods running a decrease may wait out at a burst's onset (a neighbour past its cap)
    keep: int = 4  # periods a target that filled its cap keeps it, whatever it uses (large I/Os under a low cap)
    name = "contend"

    def _past_told(self, inp: PolicyInput, wanting: list[str], short: list[str], clean: bool, est: float,
                   learnt: bool) -> tuple[float, bool, str, dict]:
        """A number told is a starting point (issue 55): the most the disk delivered while every target wanting
        more got its whole cap and nobody was hurt (`unhurt`) overrides a lower one. Past the number, a target
        wanting more that gets less than its cap shows the disk's limit: the estimate goes back to the unhurt
        level, and it is learnt. (A squeeze smaller than the tolerance is never a pre-emption: an estimate 10 %
        above the disk held the victim 5 % below its rate for good, on the simulated disk.)"""
        unhurt = float(inp.state.get("unhurt", 0.0))
        if learnt:
            return est, learnt, "", {"unhurt": unhurt}
        now = sum(float(t.usage[-1]) for t in inp.targets if len(t.usage))
        held = [t for t in inp.targets if t.name in wanting and t.cap is not None and len(t.usage)]
        if short and est > inp.capacity:
            est = max(inp.capacity, min(est, unhurt))
            return est, True, (f"{', '.join(short)} got less than its cap: the disk delivers {now / 1e6:.0f} MB/s, "
                               f"estimate {est / 1e6:.0f} MB/s"), {"unhurt": unhurt}
        if clean and held and not short and math.isfinite(est):
            unhurt = max(unhurt, now)  # it served all it was asked: the unhurt level is what it delivered
        return est, learnt, "", {"unhurt": unhurt}

    def _short_of_caps(self, inp: PolicyInput, short: list[str], est: float, peak: float, cap_max: float,
                       bad: float) -> tuple[float, float, float, str]:
        """The disk delivered less than the caps hand out for `persist` periods, the latency up: the estimate goes to
        `probe` above what it delivered, not below half the most it ever delivered (`lowest`), unless it delivered less
        than that: then it slowed for good (a cloud volume out of burst credits), and the most it delivered is what it
        delivers now. Returns the estimate, the peak, the level that hurt and what to say."""
        delivered = sum(_mean_tail(t.usage, self.persist) for t in inp.targets)
        if (1 + self.probe) * delivered < self.lowest * cap_max:
            peak, cap_max = delivered, (1 + self.probe) * delivered
        new = max(self.lowest * cap_max, min(est, (1 + self.probe) * delivered))
        said = "" if new >= est else (f"{', '.join(short)} got less than its cap for {self.persist} periods, the "
                                      f"device's latency up: the disk delivers {delivered / 1e6:.0f} MB/s, estimate "
                                      f"{new / 1e6:.0f} MB/s")
        return new, peak, min(bad, delivered), said

    def _no_leap(self, targets: list[TargetView], shares: dict[str, float], floor: float, gripped: bool,
                 learnt: bool) -> dict[str, float]:
        """A decrease, and the hold after it, raise no cap of a target that takes (using more than its lifeline with
        its headroom); before the disk showed its limit, such a cap rises at most `ramp` a period. A decrease that
        lowered the estimate to half a number told 2 x handed the neighbour, wanting more and not yet past its
        lifeline by two periods, 1736 MB/s of it, 3 x its cap, and the victim got 0-94 MB/s until the next decrease
        (guard-told-mixed's workload2, docs/results/archive.md 2026-12-02); the IOPS-bound neighbour, at 33 MB/s under
        a cap
        of 283 cost MB/s, was handed 4,188 of the 4,785 told at once, and the victim fell from 51 to 15 MB/s."""
        if learnt and not gripped:
            return shares
        rise = 0.0 if gripped else self.ramp
        out = dict(shares)
        for t in targets:
            u = t.usage
            if t.cap is None or t.name not in out or not len(u):
                continue
            # before the limit showed, one at its cap takes too: a cap at its claim, (1 + P) × its lifeline, lets no
            # more through than that test asks, and a burst's first period read at 200 under a cap of 203 (lifeline
            # 168) handed it the rest of the number at once, 7 x, in 5 of 16 runs told 1 and 2 x; the victim fell
            # to 86 MB/s (guard-told-mixed's workload2, docs/results/archive.md 2026-12-03). In a hold, as ever: only
            # takers
            taking = float(u[-1]) > (1 + self.p) * max(float(np.median(u[-self.window:])), floor)
            if taking or (not gripped and float(u[-1]) >= 0.9 * t.cap):
                out[t.name] = min(out[t.name], (1 + rise) * t.cap)
        return out

    def _hurt_level(self, since: int, est: float, level: float, reached: float) -> tuple[float, float, int]:
        """The level that hurt, the most delivered in this contention and the periods since it began, at a decrease
        reading the disk at `level`. A decrease within `window` periods of the contention's first is the same
        contention: the neighbour's queue, dispatched
        before its cap, paying back, a victim still catching up. Its reading is the caps' own, and the level that hurt
        stays the most the disk delivered in any period of it (told nothing, a second pre-emption 0.4 s after the
        first set that level from 1,447 to 850 MB/s on a disk delivering 1.8 GB/s, and from 458 to 373 while the
        neighbour's dump showed 1,000 between them: the estimate climbed ten times slower from there for the whole
        burst, which took 0.15-0.54 of the spare; guard-caps, docs/results/archive.md 2026-12-03). A new contention
        reads
        the level afresh, and so does one `window` periods after a contention began: a disk that slowed down for good
        is not approached at full speed for longer."""
        if since < self.window:
            return max(min(est, level), reached), reached, since
        return min(est, level), level, 0

    def _climb(self, est: float, cap_max: float, bad: float) -> tuple[float, float]:
        """One period's climb back towards `cap_max`, ten times slower near the level that hurt (`bad`), which is
        forgotten slowly; returns the estimate and that level."""
        near = est >= self.backoff * bad
        est = min(cap_max, est + self.climb * cap_max * (0.1 if near else 1.0))
        return est, min(cap_max, bad * 1.002)

    def _filled(self, inp: PolicyInput, wanting: list[str], claims: dict[str, float], gripped: bool) -> dict[str, int]:
        """Periods since each target last filled its cap (0: this one). One that filled it in one of the last `keep`
        periods and did nothing since claims that cap at least (`claims` is raised in place): a writer of large I/Os
        under a low cap completes one every few periods, and a cap taken back to the claim in between never climbed
        (the v2 guest's dd, 1 MiB writes told 20 MB/s: caps of 1.3-6.2 MB/s for the whole write, CI 2026-12-02). Not
        in a decrease or its hold: that takes from those who take."""
        filled = {t.name: 0 if t.name in wanting else inp.state.get("filled", {}).get(t.name, self.keep) + 1
                  for t in inp.targets}
        for t in inp.targets:
            n = filled[t.name]
            if not gripped and t.cap is not None and 0 < n < self.keep and all(u < IDLE * t.cap for u in t.usage[-n:]):
                claims[t.name] = max(claims[t.name], t.cap)
        return filled

    def decide(self, inp: PolicyInput) -> Decision:
        now = sum(float(t.usage[-1]) for t in inp.targets if len(t.usage))
        peak = max(float(inp.state.get("peak", 0.0)), now)  # the most the disk was seen to deliver
        learnt = bool(inp.state.get("learnt")) or not math.isfinite(inp.capacity)
        # what the estimate climbs back to: the capacity told (or the disk's unhurt delivery, if higher), and once
        # the disk showed its limit (a pre-emption) no more than a little above the most it delivered (told nothing:
        # that alone). Told too high, climbing back to the number squeezed everybody a little and the victim's
        # lifeline followed it down, never counted pre-empted (bench/guard_told.py: isolation 0.92 and 0.90 told
        # 1.5 and 2 × a steady disk, now 0.999).
        est = float(inp.state.get("capacity", inp.capacity))
        hold = int(inp.state.get("hold", 0))  # periods left without a further decrease
        gripped = hold > 0  # in the hold after a decrease: those who take get no more
        claims, weights = {}, {}
        wanting, growing, preempted, above, surging, pushing = [], [], [], [], [], []
        own = []  # pre-empted while living at its cap: held by it as much as by the disk
        need = 0.0  # Σ lifeline × (1 + P): what the targets live at
        for t in inp.targets:
            u = t.usage
            life = float(np.median(u[-self.window:])) if len(u) else 0.0
            need += life * (1 + self.p)
            weights[t.name] = t.weight
            if not len(u) or (t.cap is not None and u[-1] >= 0.9 * t.cap):
                wanting.append(t.name)
                claims[t.name] = math.inf
                if len(u) >= 3 and _mean_tail(u, 2) > (1 + self.p) * max(life, inp.floor):
                    surging.append(t.name)  # wanting more while using more than it lives at
                continue
            claims[t.name] = max(inp.floor, life, _mean_tail(u, 3)) * (1 + self.p)
            at_cap = t.cap is not None and life >= 0.9 * t.cap
            if at_cap:
                above.append(t.name)  # it lives at its cap: held back by it, taking all it is given
            if _preempted(u, life, inp.floor, self.tolerance):
                preempted.append(t.name)
                if at_cap:
                    own.append(t.name)
            elif len(u) >= 3 and _mean_tail(u, 2) > (1 + self.p) * max(life, inp.floor):
                above.append(t.name)  # using more than it lives at: taking, capped or not
                if t.cap is None:
                    growing.append(t.name)  # uncapped (told nothing yet): growing is its wanting more
                else:
                    pushing.append(t.name)  # more than it lives at, under a cap it does not reach
        # the disk shows its limit when somebody wants more than it is given: at a cap that handed out the
        # estimate, or at its own claim while using more than it lives at (a burst), or growing uncapped. A target
        # at its claim and no more shows none (guard-iops, issue 55: a victim at its claim in a slow minute, beside
        # a neighbour restarting for its burst, taught a ceiling of 2 % above its own peak; the estimate fell to
        # 0.15 of the disk's and the victim, held by its own cap, kept 0.58 of its rate)
        handed = sum(math.inf if t.cap is None else t.cap for t in inp.targets)
        limit_shown = bool(growing) or bool(surging) or (bool(wanting) and handed >= (1 - self.tolerance) * est)
        # the disk is saturated: somebody wants more than its cap (or grows, uncapped), the device's latency
        # is up, or everybody got less at once (the disk slowed down)
        lat = inp.latency
        slow = self.latency_factor > 0 and len(lat) > 3 and lat[-1] > self.latency_factor * float(np.min(lat))
        saturated = bool(wanting) or bool(growing) or slow or len(preempted) >= 2
        # wanting more and given less than its cap: the disk delivers less than the caps hand out (or the target
        # has not filled a cap that just rose)
        short = [t.name for t in inp.targets if t.name in wanting and t.cap is not None and len(t.usage)
                 and float(t.usage[-1]) < (1 - self.tolerance / 4) * t.cap]
        est, learnt, said, told_state = self._past_told(inp, wanting, short, not (preempted or slow), est, learnt)
        # so, the caps handing out the estimate and the device's latency up, counted over consecutive periods: a
        # stall shows it for a period or two, a disk past its limit for as long as the estimate stays above it. Only
        # a target given more than its calm lifeline with its headroom: one held at about its claim shows no limit
        # (guard-shapes' iops-neighbour: a 4 KiB victim at depth 1 ran at 0.9-0.97 of a cap of its own claim, the
        # latency 6 x its floor beside the 32-deep neighbour, and the rule fired on it in 4 runs of 9)
        kept_before = inp.state.get("kept", {})
        taker = [t.name for t in inp.targets
                 if t.name in short and (t.cap or 0.0) > (1 + self.p) * kept_before.get(t.name, 0.0)]
        over = int(inp.state.get("over", 0)) + 1 if slow and taker and handed >= (1 - self.tolerance) * est else 0
        # the most the disk delivered while somebody wanted more and nobody was hurt: a number told below it was
        # too low, and is a starting point only (told 0.5 ×, the neighbour got 0.26-0.30 of the spare for good,
        # less than static's equal split of the same number: docs/results/archive.md 2026-11-29)
        told = max(inp.capacity, told_state["unhurt"])
        cap_max = min(told, (1 + self.probe) * peak) if learnt else max(told, est)
        bad = float(inp.state.get("hurt_at", cap_max))
        # periods since this contention's first decrease, and the most the disk delivered in a period of it
        since = min(self.window, int(inp.state.get("since", self.window)) + 1)
        reached = max(float(inp.state.get("reached", 0.0)), now)
        # somebody is taking: at its cap, living at it, or above its lifeline. A disk that stalls while nobody
        # takes (everybody below their lifelines at once) shows no limit, and there is nobody to take from:
        # lowering the estimate then only squeezed everybody by their own caps (guard-shapes' iops-neighbour: a
        # stall at 59 MB/s before the burst set the estimate to 53 MB/s; the burst got 0.13 of the spare, the
        # victim 0.57)
        # So is one doing more than (1 + P) × its calm lifeline, not hurt itself: a burst is taking for as long as it
        # lasts, though its lifeline follows it after half a window and a disk that fades holds it below its cap
        # (bench/guard_told.py --queue --jitter 0.15, fades: nobody counted as taking, the victim kept 0.75 of its rate)
        taking = bool(wanting) or bool(above) or any(
            t.name in kept_before and t.name not in preempted
            and _mean_tail(t.usage, 2) > (1 + self.p) * max(kept_before[t.name], inp.floor) for t in inp.targets)
        # told a number, before the disk showed its limit: a victim hurt while a neighbour overshoots its cap, in
        # this period or the one before (each against the cap of its own period), was hurt by the throttle's slice,
        # not by the disk; the cap holds it from the next period, and lowering the estimate for it learnt a limit the
        # disk never had (told 0.5 ×, a burst's onset set the estimate to 0.9 of 1.1 GB/s on a disk giving 2.3; told
        # 2 ×, to its floor, judged the period after the overshoot, and the burst got 0.22-0.26 of the spare where
        # static took 0.87-0.97: docs/results/archive.md 2026-12-02). At most `spare` such periods running: a victim
        # hurt
        # longer is hurt by the disk. Once learnt (told nothing: always), such dips lower it as ever
        shot = bool(_overshooting(inp.targets, self.p))
        spared = int(inp.state.get("spared", 0))
        onset = not learnt and (shot or bool(inp.state.get("shot"))) and spared < self.spare
        # a target living at its cap that dips alone shows its cap and its own jitter, not the disk's limit: counted, it
        # lowered the estimate, so its cap, so its lifeline, and again (guard-shapes' iops-neighbour told 0.5 x: a 4 KiB
        # writer at depth 1 held at 0.62 of its rate, the estimate at its floor; docs/results/archive.md 2026-12-01).
        # With
        # somebody else pre-empted too, everybody got less at once: the disk slowed down
        hurt = preempted if len(preempted) >= 2 else [k for k in preempted if k not in own]
        lives = {t.name: float(np.median(t.usage[-self.window:])) for t in inp.targets if len(t.usage)}
        # a disk that slowed down (everybody low four periods running) needs no taker: it delivers less than the
        # caps hand out, and a neighbour held by it below its cap was not counted as taking, so nothing lowered the
        # estimate and the victim kept 0.75 of its rate for good (bench/guard_told.py --queue --jitter 0.15, fades)
        stall, slowed = _stalled([t for t in inp.targets if t.name in lives], lives, inp.floor, self.tolerance)
        eligible = saturated and hurt and (taking or slowed) and not hold and not stall
        spared = spared + 1 if eligible and onset else 0
        if eligible and not onset:
            # decrease to below what the disk delivered to everybody while it hurt (the measured capacity of
            # this moment: one step, where a fixed factor needs several from a stale calibration), then
            # three periods for the victim to recover; that level is the one to approach slowly again
            # (the mean of both periods, though at a burst's start the first predates it and the mean reads the
            # disk low: reading the saturated one instead gave the neighbour 0.05 more of the spare and delayed
            # the victim's recovery from ~0.95 s to 1.0-4.9 s, interleaved A/B, docs/results/archive.md 2026-11-27)
            delivered = sum(_mean_tail(t.usage, 2) for t in inp.targets)
            # the level that hurt is what the disk delivered in the saturated period, the later or the larger of
            # the two: the mean reads a burst's first pre-emption low (a period before the burst in it), and the
            # estimate then sat just above the level it treats as the limit, climbing ten times slower from
            # 0.63 C on a simulated disk delivering C (told nothing: work conservation 0.58 over a 10 s burst;
            # 0.56 on this VM's disk). The estimate itself still drops below the mean: the victim first
            saturated_period = max(sum(float(t.usage[-k]) for t in inp.targets if len(t.usage) >= k) for k in (1, 2))
            bad, reached, since = self._hurt_level(since, est, max(delivered, saturated_period), reached)
            # the limit shown now: no floor at half a number told too high (its first drop stopped at 1.3 GB/s
            # told 2.6, the disk delivering 1.0: the victim waited 2 s more, docs/results/archive.md). Only when
            # somebody
            # wanted more than it got: a steady neighbour catching up after a stall is above its lifeline, not
            # at a limit, and learning then set a ceiling of 2 % above what nobody had asked more than (the
            # estimate 102 MB/s before any burst, the burst then 0.05 of the spare: guard-shapes, 2026-11-28)
            # so does a target using more than it lives at under a cap the disk does not let it reach, the device's
            # latency up, the estimate already at its floor: the disk holds it, not its cap (told 2 x a disk giving
            # 0.75 x its calibration, the estimate at half the number, a 32-deep burst at 1.3-1.7 GB/s under caps of
            # 1.7-2.3, the device at 20 ms, the victim at 0 for 3 s: guard-caps' workload2, docs/results/archive.md
            # 2026-12-02). Above its floor a stall shows the same for a moment, a neighbour catching up on it (a
            # ceiling learnt there left the burst 0.13 of the spare: guard-shapes, 2026-11-28)
            floored = est <= (1 + self.tolerance) * self.lowest * cap_max
            if limit_shown or (slow and pushing and floored):
                learnt, cap_max = True, min(cap_max, (1 + self.probe) * peak)
            # never below what the targets lived at in the last calm period, with the headroom of those not wanting
            # more: the disk delivered those lifelines together, unhurt, and below their sum the water-fill takes
            # from the largest lifeline, the victim's as often as not (guard-shapes' iops-neighbour told nothing: a
            # 4 KiB writer costing 10 x its bytes lived at 450 cost MB/s beside a neighbour at 240; the estimate fell
            # to 567, the victim's cap to 331, and it kept 0.81 of its rate while the neighbour kept its whole
            # lifeline). A target whose claim fell below its lifeline counts at its claim: a victim crushed for longer
            # than half a window loses its lifeline, and a floor counting it anyway handed its part to the neighbour
            # while the disk stalled
            lived = sum(min(claims[k], (1 + self.p) * v) if math.isfinite(claims[k]) else v
                        for k, v in inp.state.get("kept", {}).items() if k in claims)
            # where calm lifelines are kept they are the floor, not `lowest`: below their sum nobody is squeezed but a
            # target taking more than it lived at (lifelines_first), and that is what a queue-bound victim needs.
            # Half the most the disk delivered held the IOPS-bound neighbour at 2-2.5 x its calm rate, the 4 KiB
            # victim at 0.88-0.94 of its own (told 1 and 2 x; told nothing, with no such floor, 1.00: guard-told-mixed,
            # docs/results/archive.md 2026-12-02)
            low = min(cap_max, lived) if lived > 0 else self.lowest * cap_max
            was, est = est, max(low, self.backoff * min(est, delivered))
            hold, gripped = 3, True
            if est < was:  # said when it changes: at `lowest` already, a pre-emption moves nothing
                said = (f"{', '.join(hurt)} pre-empted while the disk delivered {delivered / 1e6:.0f} MB/s: "
                        f"estimate {est / 1e6:.0f} MB/s")
        else:
            hold = max(0, hold - 1)
            if over >= self.persist and not hold and math.isfinite(est):
                learnt, hold, over, gripped = True, 3, 0, True
                ceiling = min(cap_max, (1 + self.probe) * peak)  # learnt now
                est, peak, bad, said = self._short_of_caps(inp, taker, est, peak, ceiling, bad)
            elif saturated and not preempted and math.isfinite(est):
                est, bad = self._climb(est, cap_max, bad)
        # each target's lifeline when all was calm: what contention must not take from it (a lifeline learnt during
        # the contention is the burst's own after half a window, and is not kept)
        calm = not (saturated or preempted or above or surging)
        kept = lives if calm else {k: v for k, v in kept_before.items() if k in claims}
        filled = self._filled(inp, wanting, claims, gripped)
        if math.isfinite(est):
            shares = lifelines_first(claims, kept, weights, est, headroom=self.p)
            shares = self._no_leap(inp.targets, shares, inp.floor, gripped, learnt)
            caps: dict[str, float | None] = {k: max(inp.floor, v) for k, v in shares.items()}
        else:
            caps = {t.name: None for t in inp.targets}
        alert = (f"lifelines {need / 1e6:.0f} MB/s exceed capacity {est / 1e6:.0f} MB/s"
                 if need > est else "")
        return Decision(caps, alert, est, {"capacity": est, "hurt_at": bad, "hold": hold, "peak": peak,
                                           "learnt": learnt, "kept": kept, "over": over, "shot": shot, "spared": spared,
                                           "filled": filled, "since": since, "reached": reached, **told_state},
                        said=said)


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
        d = inner.decide(PolicyInput(inp.targets, inp.capacity, inp.floor, inp.latency, inp.state.get("contend", {})))
        pressing, growing, preempted = set(), set(), set()
        for t in inp.targets:
            u = t.usage
            if len(u) < 3:
                continue
            life, recent = float(np.median(u[-self.window:])), _mean_tail(u, 2)
            if t.cap is not None and u[-1] >= 0.9 * t.cap:
                pressing.add(t.name)
            elif recent > (1 + self.p) * life:
                growing.add(t.name)
            elif _preempted(u, life, inp.floor, inner.tolerance):
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
