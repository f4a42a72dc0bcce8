"""contend protect's control model: one for every resource (pure: verdicts and readings in, levels out).

A *hold* is how hard one culprit is held back on one resource: its level, from 0 (untouched) to 1 (the
strongest setting its actuator may make, the operator's floor). Every period, per (resource, culprit):

1. **Blame.** The watch's blames that name it give its share now: the largest over its victims. A blame counts
   where the verdict is of kind `blame` and the culprit's *part* of the harm is a harm the watch would count on
   its own: its share (at least MIN_SHARE) times the victim's symptom over that symptom's floor (`severity`:
   0.42 s/s of run-queue wait over CPU's 0.1 is 4.2) at least MIN_PART. A culprit with a fifth of a small harm
   is not held for it. Never a control: `self` and `unattributed` verdicts name no culprit to hold, and `host`,
   `writeback`, `steal` and nothing are never held.
2. **Latch** (one rule for every resource, and `watch --guard`'s): engaged from the moment a blame has lasted
   `confirm_s` (to the nearest frame: frames come with jitter), kept while such a blame holds and, after it,
   while the held culprit presses against what it was left (its actuator says: it waits for CPU, it sits at its
   memory limit, it uses almost all of its disk cap or rate: it would hurt again without the hold), until
   `release_s` have passed with neither.
3. **Level.** While engaged and a victim's symptom is not back at its baseline (above the detector's threshold or
   half-way there: `Detector.unsettled`, whether its verdict still stands or cleared under the threshold), the
   level rises by `gain` × share: held back in proportion to the blame, until the symptom is back. A held
   culprit's victims whose symptoms are *coming back* (each fell to `coming` of the period before's, or
   below: `Detector.severity`) do not raise it that period: a tightening is judged once its effect shows, not
   on a period whose signal still carries the harm it is lifting (a round trip coming down, a run queue
   draining); nor, on a resource whose effect shows late (`settle_s`: the network's), within that time of its
   last tightening. Released, it
   falls by `give` each period (given back step by step; a harm that returns pauses it and, once it lasted, is
   gripped again from the level reached), and at 0 the actuator puts back what was there.
4. **No cycle.** A container protected on a resource (a victim some hold on it serves) is never held on it,
   and a held container is not protected on that resource: the harm its hold brings it is the hold's point.
5. **A victim class** (the operator's, where given: `--victims`, a label or a pod's QoS class): only its members
   are protected, and they are never held; everyone else may be held, never protected.

An actuator maps a level to its settings (protect/actuators.py); the model never sees a cgroup.
"""
from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

NEVER_HELD = frozenset({"host", "writeback", "steal", ""})  # the watch's names for what is no container
MIN_SHARE = 0.1  # a culprit with less of a victim's harm is not held for it
MIN_PART = 1.0  # nor one whose share of it is less than one floor of the symptom (its share × severity)
EPS = 1e-6


@dataclass(frozen=True)
class Blame:
    """What the model reads of one of the watch's verdicts."""

    victim: str
    resource: str
    kind: str  # blame | self | unattributed
    culprits: tuple[tuple[str, float], ...]
    suffering: bool = True  # its symptom not back at its baseline this frame (the verdict may stand longer, or not)
    severity: float = math.inf  # its symptom over that symptom's floor this frame (inf: not read)


@dataclass
class Latch:
    """Engage on a blame that lasted confirm_s; hold while it does, or while the held presses; release after
    release_s with neither."""

    confirm_s: float = 1.0
    release_s: float = 10.0
    first: float | None = None  # when the blame standing now was first seen
    until: float = -math.inf
    slack: float = 0.0  # how much short of confirm_s still counts: frames come with jitter (set by step)

    def step(self, t: float, blamed: bool, presses: bool, slack: float = 0.0) -> bool:
        """slack: half the last frames' interval (the model's), never half of confirm_s or more: a blame lasts
        confirm_s to the nearest frame (9.351 to 9.850 is 0.5 s at 0.5 s periods), one frame alone never does."""
        self.slack = min(slack, self.confirm_s / 2)
        if not blamed:
            self.first = None
        elif self.first is None:
            self.first = t
        if self.confirmed(t) or (self.engaged(t - EPS) and presses):
            self.until = t + self.release_s
        return self.engaged(t)

    def confirmed(self, t: float) -> bool:
        return self.first is not None and t - self.first >= self.confirm_s - max(self.slack, EPS)

    def engaged(self, t: float) -> bool:
        return t < self.until


@dataclass
class Hold:
    resource: str
    culprit: str
    latch: Latch
    level: float = 0.0
    share: float = 0.0  # its share of the harm when last blamed
    victims: tuple[str, ...] = ()  # whom it was last held for
    tightened: float = -math.inf  # when it was last tightened


@dataclass(frozen=True)
class Change:
    """A hold's level moved this period, and why (the log line and the live view say it)."""

    resource: str
    culprit: str
    before: float
    after: float
    why: str  # tighten | give-back | released
    share: float
    victims: tuple[str, ...]


@dataclass
class ProtectModel:
    confirm_s: float = 1.0
    release_s: float = 10.0
    gain: float = 0.25  # level per period at a share of 1 while a victim suffers
    give: float = 0.1  # level given back per period once released
    coming: float = 2 / 3  # a victim's symptom at this share of the period before's, or below: coming back
    # s after a tightening before a hold on the resource is judged again: how long its effect takes to show
    # (a shaping in a victim's round trips 0.5-0.75 s later: TCP's queue drains, its smoothed round trip follows)
    settle_s: Mapping[str, float] = field(default_factory=lambda: {"network": 1.0})
    resources: tuple[str, ...] = ("cpu", "memory", "disk", "network")
    holds: dict[tuple[str, str], Hold] = field(default_factory=dict)
    severity: dict[tuple[str, str], float] = field(default_factory=dict)  # the period before's, per (victim, resource)
    last_t: float | None = None  # the frame before's time

    def protected(self, resource: str) -> set[str]:
        """The victims the holds on a resource serve now."""
        return {v for (r, _), h in self.holds.items() if r == resource and h.level > 0 for v in h.victims}

    def blamed(self, blames: Iterable[Blame], victims: Collection[str] | None = None) \
            -> dict[tuple[str, str], tuple[float, bool, tuple[str, ...]]]:
        """(resource, culprit) -> (its largest share, whether a victim suffers now, its victims), from the blames
        the model may act on: never a control's, never a held container's own (rule 4), with a victim class only
        its members' against the others (rule 5)."""
        out: dict[tuple[str, str], tuple[float, bool, tuple[str, ...]]] = {}
        for b in blames:
            outside = victims is not None and b.victim not in victims
            if b.kind != "blame" or b.resource not in self.resources or outside:
                continue
            held = self.holds.get((b.resource, b.victim))
            if held is not None and held.level > 0:
                continue  # the harm a hold brings its culprit is not a blame to act on
            for c, share in b.culprits:
                if c in NEVER_HELD or c == b.victim or share < MIN_SHARE or share * b.severity < MIN_PART or \
                        (victims is not None and c in victims):
                    continue
                was = out.get((b.resource, c), (0.0, False, ()))
                out[(b.resource, c)] = (max(was[0], share), was[1] or b.suffering, (*was[2], b.victim))
        return out

    def coming_back(self, h: Hold, severity: Mapping[tuple[str, str], float]) -> bool:
        """Every victim the hold serves has its symptom falling fast: the hold's last change is still showing."""
        fell = [severity[(v, h.resource)] <= self.coming * self.severity[(v, h.resource)]
                for v in h.victims if (v, h.resource) in severity and (v, h.resource) in self.severity]
        return h.level > 0 and bool(fell) and all(fell)

    def step(self, t: float, blames: Iterable[Blame], presses: dict[tuple[str, str], bool],
             unsettled: Collection[tuple[str, str]] = (),
             severity: Mapping[tuple[str, str], float] | None = None,
             victims: Collection[str] | None = None) -> list[Change]:
        """One period: every hold's latch and level moved; the changes, in order. unsettled: the (victim, resource)
        whose symptom is not back at its baseline this frame (a hold whose blame cleared still tightens for them);
        severity: how far each (victim, resource)'s symptom is above its floor this frame (none: never coming back);
        victims: the victim class (None: none given)."""
        severity = severity if severity is not None else {}
        now = self.blamed(blames, victims)
        slack = (t - self.last_t) / 2 if self.last_t is not None else 0.0
        self.last_t = t
        changes = []
        for key in sorted(set(now) | set(self.holds)):
            res, culprit = key
            share, suffering, victims = now.get(key, (0.0, False, ()))
            h = self.holds.get(key)
            if h is None:
                h = self.holds[key] = Hold(res, culprit, Latch(self.confirm_s, self.release_s))
            protected = culprit in self.protected(res)
            engaged = h.latch.step(t, share > 0 and not protected, presses.get(key, False), slack)
            before, why = h.level, ""
            # its blame cleared (under the detector's threshold) while a victim it was held for is not back yet
            still = h.level > 0 and not share and any((v, res) in unsettled for v in h.victims)
            settle = self.settle_s.get(res, 0.0)
            settling = t - h.tightened < settle - min(slack, settle / 2)  # to the nearest frame, as the latch
            if engaged and ((h.latch.confirmed(t) and suffering) or still) and not settling and \
                    not self.coming_back(h, severity):
                h.level = min(1.0, h.level + self.gain * (share or h.share))
                h.tightened = t
                if share:
                    h.share, h.victims = share, victims
                why = "tighten"
            elif not engaged and h.latch.first is None:  # a blame seen again, not yet lasting: the give-back waits
                h.level = max(0.0, h.level - self.give)
                why = "released" if h.level <= EPS else "give-back"
            if h.level <= EPS:
                h.level = 0.0
            if h.level != before:
                changes.append(Change(res, culprit, round(before, 4), round(h.level, 4), why, round(h.share, 3),
                                      h.victims))
            if h.level == 0.0 and not engaged and h.latch.first is None:
                del self.holds[key]
        self.severity = dict(severity)
        return changes

    def levels(self) -> dict[tuple[str, str], float]:
        return {k: h.level for k, h in self.holds.items() if h.level > 0}
