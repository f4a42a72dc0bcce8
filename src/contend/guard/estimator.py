"""contend's capacity estimator (issue 99): one control loop on one congestion signal, its state a typed value.

Each period, three steps, all pure:
  1. `CapacityEstimator.read`: what every target did (a `Reading`): its lifeline, its claim, and whether it wants
     more, is pre-empted, takes, or is short of its cap; whether the disk is saturated.
  2. the congestion signal: a target pre-empted while the disk is saturated and somebody takes (or the disk slowed
     for everybody). The named filters of `FILTERS` explain some such dips as not the disk's limit; the first that
     fires is the reason nothing is lowered.
  3. `CapacityEstimator.step`: on the signal, a decrease to `backoff` × what the disk delivered and a hold; the caps
     handing out more than the disk delivers for `persist` periods with the latency up, a probe down to what it
     delivered; calm, a climb back towards the ceiling. The ceiling is the number told until the disk has shown its
     limit (`learnt`), and then a little above the most it delivered.

The allocator (guard/allocate.py) divides the estimate. Why each rule is there, and the runs that showed it:
docs/guard-policy.md.
"""
from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING

import numpy as np

from ..diskuse import PRESSES

if TYPE_CHECKING:
    from .inputs import PolicyInput, TargetView

# a lifeline below this share of the floor is an idle target's: its jitter is never a pre-emption (a latency-bound
# victim lives below the floor and is still hurt through the queue, so not the floor itself)
IDLE = 0.05
HOLD = 3  # periods after a decrease without another: the victim recovers first
FORGET = 1.002  # the level that hurt rises this much a period: forgotten slowly
NEAR = 0.1  # the climb's speed near the level that hurt, × its speed elsewhere


def mean_tail(u: np.ndarray, n: int) -> float:
    return float(np.mean(u[-n:])) if len(u) else 0.0


def lifeline(u: np.ndarray, window: int) -> float:
    """The median of the last `window` periods: a burst shorter than half of it does not raise it."""
    return float(np.median(u[-window:])) if len(u) else 0.0


def preempted(u: np.ndarray, life: float, floor: float, tolerance: float) -> bool:
    """The last two periods below (1 - tolerance) × its lifeline (two, not one: a bucket's jitter)."""
    return len(u) >= 3 and life > IDLE * floor and mean_tail(u, 2) < (1 - tolerance) * life


def stalled(targets: list[TargetView], lives: dict[str, float], floor: float, tolerance: float) -> tuple[bool, bool]:
    """(a stall, a slowdown): everybody below (1 - tolerance) × its lifeline at once in one of the last two periods
    but not in all of the last three (the disk stopped for all, then ran on); everybody low four periods running (it
    slowed down, with nobody taking)."""
    def low(k: int) -> bool:
        return all(len(t.usage) >= k and float(t.usage[-k]) < (1 - tolerance) * max(lives[t.name], IDLE * floor)
                   for t in targets)
    if len(targets) < 2:
        return False, False
    return (low(1) or low(2)) and not (low(1) and low(2) and low(3)), all(low(k) for k in (1, 2, 3, 4))


def overshooting(targets: list[TargetView], p: float) -> list[str]:
    """Targets that did more than (1 + p) × their cap in the last period: the throttle's slice at a burst's onset
    (a group below its limit dispatches a slice of budget at once), not the disk's limit."""
    return [t.name for t in targets if t.cap is not None and len(t.usage) and float(t.usage[-1]) > (1 + p) * t.cap]


@dataclass(frozen=True)
class Reading:
    """What the targets did this period, as the estimator and the allocator read it (names per class)."""

    now: float  # what the disk delivered to all of them in the last period
    lives: dict[str, float]  # each target's lifeline (those with a history)
    claims: dict[str, float]  # max(lifeline, recent use) × (1 + P); inf: wants more (at its cap)
    weights: dict[str, float]
    wanting: tuple[str, ...]  # at (almost) its whole cap, or no history yet
    surging: tuple[str, ...]  # wanting more while using more than it lives at
    preempted: tuple[str, ...]  # two periods below (1 - tolerance) × its lifeline
    own: tuple[str, ...]  # pre-empted while living at its own cap
    above: tuple[str, ...]  # taking: living at its cap, or using more than it lives at
    growing: tuple[str, ...]  # uncapped and using more than it lives at
    pushing: tuple[str, ...]  # using more than it lives at under a cap it does not reach
    short: tuple[str, ...]  # wanting more and given less than its cap
    taker: tuple[str, ...]  # short while its cap hands it more than its calm lifeline with its headroom
    handed: float  # Σ caps (inf: somebody uncapped)
    need: float  # Σ lifeline × (1 + P): what the targets live at
    slow: bool  # the device's latency `latency_factor` × its floor
    saturated: bool  # somebody wants more (or grows uncapped), the latency is up, or two are pre-empted
    taking: bool  # somebody takes: at its cap, living at it, above its lifeline or its calm one
    stall: bool  # everybody low at once for a period or two (stalled)
    slowed: bool  # everybody low four periods running
    shot: bool  # somebody overshot its cap (overshooting)
    delivered: float  # Σ each target's mean of the last two periods
    saturated_period: float  # the larger of the last two periods' Σ
    sustained: float  # Σ each target's mean of the last `persist` periods
    held: bool  # somebody wanting more has a cap

    @property
    def calm(self) -> bool:
        """Nobody pre-empted, at its cap or above its lifeline, the disk not saturated: lifelines to keep."""
        return not (self.saturated or self.preempted or self.above or self.surging)


class Mode(enum.Enum):
    """What the estimator did this period."""

    UNCAPPED = "uncapped"  # told nothing, no contention yet: no estimate, no caps
    DECREASED = "decreased"  # the signal: the estimate lowered to what the disk delivered
    PROBED = "probed"  # the caps handed out more than the disk delivered, `persist` periods: lowered to it
    HOLDING = "holding"  # in the hold after either: no further decrease, those who take get no more
    CLIMBING = "climbing"  # nobody pre-empted while saturated: back towards the ceiling
    STEADY = "steady"  # none of those (unsaturated, or a dip a filter explained)


@dataclass(frozen=True)
class EstimatorState:
    """Everything the estimator remembers between periods."""

    capacity: float  # the estimate the allocator divides (inf: told nothing, no contention yet)
    learnt: bool = False  # the disk showed its limit: the ceiling is what it delivered, not the number told
    hold: int = 0  # periods left without a further decrease
    gripped: bool = False  # a decrease or its hold this period: those who take get no more
    hurt_at: float = math.nan  # the level that hurt: climbed back to ten times slower (nan: none yet)
    peak: float = 0.0  # the most the disk delivered in a period
    unhurt: float = 0.0  # the most it delivered while every target wanting more got its whole cap
    since: int = 1 << 30  # periods since this contention's first decrease (none yet: long ago)
    reached: float = 0.0  # the most delivered in a period of this contention
    over: int = 0  # periods running the caps handed out more than the disk delivered, the latency up
    shot: bool = False  # somebody overshot its cap in the period before
    spared: int = 0  # periods running a decrease was waived at a burst's onset
    mode: Mode = Mode.STEADY
    why: str = ""  # the filter that explained this period's signal away ("": none, or no signal)


@dataclass(frozen=True)
class Filter:
    """A dip that is not the disk's limit: while `fires`, the signal lowers nothing."""

    name: str
    fires: Callable[[Reading, EstimatorState, CapacityEstimator], bool]
    why: str


FILTERS: tuple[Filter, ...] = (
    Filter("own-cap", lambda r, s, e: len(r.preempted) == 1 and r.preempted[0] in r.own,
           "the only target hurt lives at its own cap: its cap and its own jitter hold it, not the disk"),
    Filter("hold", lambda r, s, e: s.hold > 0,
           "the hold after a decrease: the victim recovers before the disk is read again"),
    Filter("stall", lambda r, s, e: r.stall,
           "everybody got less at once for a period or two: the disk stopped for all, nobody's taking did it"),
    Filter("onset", lambda r, s, e: not s.learnt and (r.shot or s.shot) and s.spared < e.spare,
           "a neighbour overshot its cap (the throttle's slice at a burst's onset), the limit not learnt yet: the cap "
           "holds it from the next period; at most `spare` periods running"),
)


def explained(r: Reading, s: EstimatorState, e: CapacityEstimator) -> str:
    """The first filter that explains this period's dip ("": none)."""
    return next((f.name for f in FILTERS if f.fires(r, s, e)), "")


@dataclass
class CapacityEstimator:
    window: int = 30
    p: float = 0.2
    tolerance: float = 0.1  # below (1 - tolerance) × lifeline counts as pre-empted
    backoff: float = 0.9  # a decrease goes to this × what the disk delivered (or the estimate, if lower)
    climb: float = 0.01  # growth per period, × the ceiling
    lowest: float = 0.5  # no calm lifelines kept, a decrease stops at this share of the ceiling
    latency_factor: float = 4.0  # device latency this many times its floor counts as saturated (0: ignore)
    probe: float = 0.02  # once learnt, the ceiling is this share above the most the disk delivered
    persist: int = 3  # periods the caps must hand out more than the disk delivers, latency up, to probe
    spare: int = 2  # periods running a decrease may be waived at a burst's onset

    def start(self, told: float) -> EstimatorState:
        """The state before the first period: the number told (inf: told nothing, learnt from the first contention)."""
        return EstimatorState(capacity=told, learnt=not math.isfinite(told),
                              mode=Mode.STEADY if math.isfinite(told) else Mode.UNCAPPED)

    def read(self, inp: PolicyInput, kept: dict[str, float]) -> Reading:
        """Each target's class this period; `kept` the lifelines of the last calm period."""
        p, floor = self.p, inp.floor
        claims: dict[str, float] = {}
        weights: dict[str, float] = {}
        lives: dict[str, float] = {}
        wanting: list[str] = []
        surging: list[str] = []
        pre: list[str] = []  # pre-empted
        own: list[str] = []
        above: list[str] = []
        growing: list[str] = []
        pushing: list[str] = []
        need = 0.0
        for t in inp.targets:
            u = t.usage
            life = lifeline(u, self.window)
            if len(u):
                lives[t.name] = life
            need += life * (1 + p)
            weights[t.name] = t.weight
            rising = len(u) >= 3 and mean_tail(u, 2) > (1 + p) * max(life, floor)  # using more than it lives at
            if not len(u) or (t.cap is not None and u[-1] >= PRESSES * t.cap):
                wanting.append(t.name)
                claims[t.name] = math.inf
                if rising:
                    surging.append(t.name)
                continue
            claims[t.name] = max(floor, life, mean_tail(u, 3)) * (1 + p)
            at_cap = t.cap is not None and life >= PRESSES * t.cap
            if at_cap:
                above.append(t.name)
            if preempted(u, life, floor, self.tolerance):
                pre.append(t.name)
                if at_cap:
                    own.append(t.name)
            elif rising:
                above.append(t.name)
                (growing if t.cap is None else pushing).append(t.name)
        lat = inp.latency
        slow = self.latency_factor > 0 and len(lat) > 3 and lat[-1] > self.latency_factor * float(np.min(lat))
        # a cap just raised may not be filled yet: only a quarter of the tolerance below it counts as short
        short = [t.name for t in inp.targets if t.name in wanting and t.cap is not None and len(t.usage)
                 and float(t.usage[-1]) < (1 - self.tolerance / 4) * t.cap]
        stall, slowed = stalled([t for t in inp.targets if t.name in lives], lives, floor, self.tolerance)
        return Reading(
            now=sum(float(t.usage[-1]) for t in inp.targets if len(t.usage)), lives=lives, claims=claims,
            weights=weights, wanting=tuple(wanting), surging=tuple(surging), preempted=tuple(pre), own=tuple(own),
            above=tuple(above), growing=tuple(growing), pushing=tuple(pushing), short=tuple(short),
            taker=tuple(t.name for t in inp.targets
                        if t.name in short and (t.cap or 0.0) > (1 + p) * kept.get(t.name, 0.0)),
            handed=sum(math.inf if t.cap is None else t.cap for t in inp.targets), need=need, slow=slow,
            saturated=bool(wanting) or bool(growing) or slow or len(pre) >= 2,
            taking=bool(wanting) or bool(above) or any(
                t.name in kept and t.name not in pre and mean_tail(t.usage, 2) > (1 + p) * max(kept[t.name], floor)
                for t in inp.targets),
            stall=stall, slowed=slowed, shot=bool(overshooting(inp.targets, p)),
            delivered=sum(mean_tail(t.usage, 2) for t in inp.targets),
            saturated_period=max(sum(float(t.usage[-k]) for t in inp.targets if len(t.usage) >= k) for k in (1, 2)),
            sustained=sum(mean_tail(t.usage, self.persist) for t in inp.targets),
            held=any(t.name in wanting and t.cap is not None and len(t.usage) for t in inp.targets))

    def _past_told(self, r: Reading, s: EstimatorState, told: float) -> tuple[EstimatorState, str]:
        """A number told is a starting point: past it, a target wanting more that gets less than its cap shows the
        disk's limit (the estimate goes back to the unhurt level, learnt); until then the most delivered while
        every target wanting more got its whole cap and nobody was hurt is the unhurt level."""
        if s.learnt:
            return s, ""
        if r.short and s.capacity > told:
            est = max(told, min(s.capacity, s.unhurt))
            return replace(s, capacity=est, learnt=True), (
                f"{', '.join(r.short)} got less than its cap: the disk delivers {r.now / 1e6:.0f} MB/s, "
                f"estimate {est / 1e6:.0f} MB/s")
        if not (r.preempted or r.slow) and r.held and not r.short and math.isfinite(s.capacity):
            return replace(s, unhurt=max(s.unhurt, r.now)), ""
        return s, ""

    def _hurt_level(self, s: EstimatorState, since: int, level: float, reached: float) -> tuple[float, float, int]:
        """The level that hurt, the most delivered in this contention and the periods since it began, at a decrease
        reading the disk at `level`. Within `window` periods of its first decrease a contention is the same one, its
        level the most the disk delivered in any period of it; after that, or a new one, the level is read afresh."""
        if since < self.window:
            return max(min(s.capacity, level), reached), reached, since
        return min(s.capacity, level), level, 0

    def _ceiling(self, told: float, s: EstimatorState) -> float:
        """What the estimate climbs back to: the number told (or the unhurt level, if higher); once learnt, no more
        than `probe` above the most the disk delivered (told nothing: that alone)."""
        told = max(told, s.unhurt)
        return min(told, (1 + self.probe) * s.peak) if s.learnt else max(told, s.capacity)

    def step(self, r: Reading, s: EstimatorState, told: float, kept: dict[str, float]) -> tuple[EstimatorState, str]:
        """The next state and what to say of the disk ("": nothing new)."""
        s = replace(s, peak=max(s.peak, r.now), learnt=s.learnt or not math.isfinite(told), mode=Mode.STEADY, why="",
                    gripped=s.hold > 0)
        # the disk shows its limit when somebody wants more than it is given: at caps that handed out the estimate,
        # or surging, or growing uncapped (one at its claim and no more shows none)
        handing = r.handed >= (1 - self.tolerance) * s.capacity  # the caps hand out (about) the estimate
        shown = bool(r.growing) or bool(r.surging) or (bool(r.wanting) and handing)
        s, said = self._past_told(r, s, told)
        # short of caps handing out the estimate (as it stands past the number told), the latency up: periods running
        over = s.over + 1 if r.slow and r.taker and r.handed >= (1 - self.tolerance) * s.capacity else 0
        ceiling = self._ceiling(told, s)
        s = replace(s, hurt_at=ceiling if math.isnan(s.hurt_at) else s.hurt_at, over=over,
                    reached=max(s.reached, r.now), since=min(self.window, s.since + 1))
        signal = bool(r.preempted) and r.saturated and (r.taking or r.slowed)
        why = explained(r, s, self) if signal else ""
        s = replace(s, why=why, spared=s.spared + 1 if why == "onset" else 0)
        if signal and not why:
            return self._decrease(r, s, shown, ceiling, kept, said)
        s = replace(s, hold=max(0, s.hold - 1))
        if over >= self.persist and not s.hold and math.isfinite(s.capacity):
            return self._probe(r, s, min(ceiling, (1 + self.probe) * s.peak))
        if r.saturated and not r.preempted and math.isfinite(s.capacity):
            near = s.capacity >= self.backoff * s.hurt_at
            est = min(ceiling, s.capacity + self.climb * ceiling * (NEAR if near else 1.0))
            s = replace(s, capacity=est, hurt_at=min(ceiling, s.hurt_at * FORGET), mode=Mode.CLIMBING)
        elif not math.isfinite(s.capacity):
            s = replace(s, mode=Mode.UNCAPPED)
        elif s.hold:
            s = replace(s, mode=Mode.HOLDING)
        return replace(s, shot=r.shot), said

    def _decrease(self, r: Reading, s: EstimatorState, shown: bool, ceiling: float, kept: dict[str, float],
                  said: str) -> tuple[EstimatorState, str]:
        """The signal: below what the disk delivered to everybody while it hurt, in one step, then `HOLD` periods.
        Never below the lifelines kept from the last calm period with the headroom of those not wanting more (the
        disk delivered them together, unhurt), or with none kept, `lowest` × the ceiling."""
        hurt_at, reached, since = self._hurt_level(s, s.since, max(r.delivered, r.saturated_period), s.reached)
        learnt = s.learnt
        floored = s.capacity <= (1 + self.tolerance) * self.lowest * ceiling
        # a target under a cap the disk does not let it reach, latency up, the estimate at its floor: the disk holds it
        if shown or (r.slow and r.pushing and floored):
            learnt, ceiling = True, min(ceiling, (1 + self.probe) * s.peak)
        lived = sum(min(r.claims[k], (1 + self.p) * v) if math.isfinite(r.claims[k]) else v
                    for k, v in kept.items() if k in r.claims)
        low = min(ceiling, lived) if lived > 0 else self.lowest * ceiling
        est = max(low, self.backoff * min(s.capacity, r.delivered))
        if est < s.capacity:  # said when it changes: at its floor already, a pre-emption moves nothing
            said = (f"{', '.join(r.preempted)} pre-empted while the disk delivered {r.delivered / 1e6:.0f} MB/s: "
                    f"estimate {est / 1e6:.0f} MB/s")
        return replace(s, capacity=est, learnt=learnt, hold=HOLD, gripped=True, hurt_at=hurt_at, reached=reached,
                       since=since, shot=r.shot, mode=Mode.DECREASED), said

    def _probe(self, r: Reading, s: EstimatorState, ceiling: float) -> tuple[EstimatorState, str]:
        """The caps handed out more than the disk delivered for `persist` periods, the latency up: the estimate goes
        `probe` above what it delivered, not below `lowest` × the most it ever delivered, unless it delivered less
        than that: then it slowed for good, and what it delivers now is the most."""
        delivered, peak = r.sustained, s.peak
        if (1 + self.probe) * delivered < self.lowest * ceiling:
            peak, ceiling = delivered, (1 + self.probe) * delivered
        est = max(self.lowest * ceiling, min(s.capacity, (1 + self.probe) * delivered))
        said = "" if est >= s.capacity else (f"{', '.join(r.taker)} got less than its cap for {self.persist} periods, "
                                             f"the device's latency up: the disk delivers {delivered / 1e6:.0f} MB/s, "
                                             f"estimate {est / 1e6:.0f} MB/s")
        return replace(s, capacity=est, learnt=True, hold=HOLD, gripped=True, over=0, peak=peak,
                       hurt_at=min(s.hurt_at, delivered), shot=r.shot, mode=Mode.PROBED), said


# the estimator's settings: ContendPolicy passes it its fields of these names
SETTINGS = tuple(f.name for f in fields(CapacityEstimator))
