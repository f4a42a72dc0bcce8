"""Who hurts whom: a pure function of frames (DESIGN §9). Tested on frames with known answers; the same code
runs live and on a recording (--replay).

Per container and resource, a symptom (CPU: run-queue delay, else CPU pressure; memory: memory pressure, else
major faults, and beside either its working set read back (refaults); disk: its I/O pressure per I/O, else the
disk's latency, while it does I/O; a reader that waits for each I/O is stalled most of the time whatever the
disk's speed, so its pressure alone says little; network: its TCP round-trip time, and beside it the share
of its TCP segments sent again and its interfaces' drops) is compared with the container's own baseline (its recent
frames without a symptom on any resource and not unusual: above half-way to the threshold, until that level has
lasted `renormal` frames). Above max(floor, (1 + rel) × median, median + k robust SDs) (on CPU, with `witness` robust
SDs for k when eBPF saw those whose use rose take a major share of its wait: a second witness), the container
suffers, if it was in the frame before too or is twice that high (an OOM kill is a symptom by itself). Then,
in order:
1. its own limit explains it (CPU quota throttling, its memory limit, its own I/O throttle): `self`, and no
   neighbour is blamed (a container held by its own quota also waits on the run queue: Netflix 2024);
2. the suspects: every container whose use rose above its own baseline at least by the resource's `use_floor`
   (on CPU also `host`, the CPU used outside every watched container; on disk also `writeback`, the writes no
   container was charged for), ranked on CPU by the time each ran on the victim's CPUs while its tasks
   waited there (eBPF: the time taken, `Frame.taken`; a recording without it: how often each preempted it;
   the time its own other tasks took, its use not risen, is crowding, shared among the suspects by their
   rise), or else by how far its use rose; the victim itself is a suspect of its own: its own use rising more than
   anyone else's is `self` (a container that starts working on a busy host waits for the others);
3. none rose, or on CPU those who did took under `MAJOR` of its wait together: `unattributed` (a symptom nobody
   here explains).
A verdict names its culprits in order with their shares of the harm (`culprits`: on CPU, of the time the
victim waited; else of the rises; what no suspect explains is left out, so they sum to at most 1). It
changes when its kind or the order of the culprits holding at least `MAJOR` of the harm changes, not when a
small share moves; it lasts while the symptom does, and ends after `clear_after` frames without it.
"""
from __future__ import annotations

import math
import statistics
from collections import deque
from dataclasses import dataclass, field

from .signals import HOST, NOTHING, STEAL, WRITEBACK, Frame

RESOURCES = ("cpu", "memory", "disk", "network")
MAJOR = 0.2  # a culprit with this share of the harm or more: a change in their order is a new verdict
SETTLED = 0.25  # a container's own use moving by less than this share of it (or the use floor): settled
STAY = 0.15  # a major culprit stays major down to this share (a share near MAJOR does not flap the verdict)
ENDS = ("cleared", "gone")  # a verdict's end: its symptom gone for clear_after frames, or its victim gone
Reading = tuple[tuple[str, str, str], float, deque, bool]  # (container, resource, signal), value, its baseline, unusual


@dataclass(frozen=True)
class Rule:
    """How one resource is read: its symptom signals (the first one a frame has is used), each with an
    absolute floor; the rise over the baseline that counts; the suspects' use signal and its least rise."""

    symptoms: tuple[tuple[str, float], ...]
    rel: float
    use: str
    use_floor: float
    events: tuple[str, ...] = ()  # signals any positive value of which is a symptom by itself
    also: tuple[tuple[str, float], ...] = ()  # symptoms read beside the first of `symptoms`, each on its own


RULES = {
    "cpu": Rule((("rq_delay", 0.1), ("cpu_psi", 0.1)), 0.5, "cpu", 0.15),
    # a neighbour's memory takes a container's page cache: a stall while reclaim runs (pressure), then its
    # working set read back from disk for as long as the neighbour holds the memory (refaults; 250 pages/s is
    # 1 MiB/s)
    "memory": Rule((("mem_psi", 0.02), ("majfault", 50.0)), 0.5, "mem", float(64 << 20), ("oom_kill",),
                   (("refault", 250.0),)),
    "disk": Rule((("io_wait_ms", 1.0), ("disk_latency_ms", 1.0)), 1.0, "io_bytes", 5e6),
    # a neighbour floods a shared link: a container's TCP round trips wait in the link's queue (tens of µs
    # calm, its length when full: 20 ms on contend's link; 2 ms is ten times any calm frame seen), and as the
    # queue overflows, its segments are lost and sent again (half a percent of them: none in a calm frame) in
    # a burst TCP backs off from; a neighbour whose traffic rose by 1 MB/s or more is a suspect
    "network": Rule((("net_rtt_ms", 2.0),), 1.0, "net_bytes", 1e6,
                    also=(("net_retrans", 0.005), ("net_drops", 10.0))),
}


@dataclass
class Verdict:
    victim: str
    resource: str
    kind: str  # blame | self | unattributed
    culprit: str  # the suspect ranked first ("" when unattributed; the victim itself or its limit when self)
    confidence: float  # the culprit's share of the evidence, in [0, 1]
    since: float
    why: str
    suspects: list[tuple[str, float]] = field(default_factory=list)  # ranked, with their evidence shares
    evidence: dict[str, float] = field(default_factory=dict)
    culprits: list[tuple[str, float]] = field(default_factory=list)  # ranked, with their shares of the harm
    held: tuple[str, ...] = ()  # its major culprits in order, as the detector holds them (key)

    def key(self, before: "Verdict | None" = None) -> tuple[str, ...]:
        """Its major culprits in order (its first alone when none is): those with MAJOR of the harm, or STAY
        for those major in the verdict `before` it."""
        was = set(before.held) if before is not None else set()
        major = tuple(c for c, x in self.culprits if x >= MAJOR or (c in was and x >= STAY))
        return major or (self.culprit,)

    def same(self, other: "Verdict | None") -> bool:
        """The verdict `other` goes on: the same kind, and the same major culprits in the same order."""
        return other is not None and self.kind == other.kind and self.key(other) == other.held

    def event(self, t: float, name: str) -> dict:
        return {"t": round(t, 3), "event": name, "victim": self.victim, "resource": self.resource,
                "kind": self.kind, "culprit": self.culprit, "confidence": round(self.confidence, 3),
                "since": round(self.since, 3), "why": self.why,
                "suspects": [[s, round(x, 3)] for s, x in self.suspects],
                "culprits": [[s, round(x, 3)] for s, x in self.culprits],
                "evidence": {k: round(v, 4) for k, v in self.evidence.items() if math.isfinite(v)}}


def spread(base: list[float]) -> tuple[float, float]:
    """(median, robust SD) of a baseline's values (statistics.median: a few dozen values, every container and
    resource every period; numpy's costs ten times more here)."""
    med = statistics.median(base)
    return med, 1.4826 * statistics.median(abs(x - med) for x in base)


def bar(med: float, sd: float, floor: float, rel: float, k: float) -> float:
    """The level a symptom must exceed: max(floor, (1 + rel) × median, median + k robust SDs)."""
    return max(floor, (1 + rel) * med, med + k * sd)


class Detector:
    def __init__(self, baseline: int = 30, warmup: int = 3, clear_after: int = 3, window: int = 3,
                 k: float = 4.0, rules: dict[str, Rule] = RULES, renormal: int = 10, witness: float | None = 1.0):
        self.rules = rules
        self.k, self.warmup, self.clear_after = k, warmup, clear_after
        self._nbase = baseline
        self.base: dict[tuple[str, str, str], deque] = {}  # (container, resource, signal) -> symptom values
        self.use_base: dict[tuple[str, str], deque] = {}  # (suspect, resource) -> use values
        self.recent: deque[Frame] = deque(maxlen=window)
        self.active: dict[tuple[str, str], Verdict] = {}
        self.quiet: dict[tuple[str, str], int] = {}
        self.above: dict[tuple[str, str, str], bool] = {}  # (container, resource, signal) above its threshold
        self.rose: set[tuple[str, str]] = set()  # (container, resource) above a threshold, unconfirmed, this frame
        self.unusual: dict[tuple[str, str, str], int] = {}  # (container, resource, signal) -> unusual frames in a row
        self.renormal = renormal
        self.witness = witness
        self.jumped: set[tuple[str, str]] = set()  # (container, resource) whose use jumped this frame
        # (container, resource) whose symptom is not back at its baseline this frame: above its threshold, or
        # half-way there (contend protect holds a culprit back until its victim's symptom is back)
        self.unsettled: set[tuple[str, str]] = set()
        # (container, resource) -> its worst symptom this frame over that symptom's floor (contend protect reads
        # whether a victim's is coming back)
        self.severity: dict[tuple[str, str], float] = {}

    # -- reading a frame
    def symptoms(self, f: Frame, name: str, res: str,
                 sigs: dict[str, float] | None = None) -> list[tuple[str, float, float]]:
        """(signal, value, floor) of a container's symptoms on a resource this frame: the first of the rule's
        chain it has, and each of its `also` it has (`sigs`: its signals in the frame, if looked up already)."""
        if sigs is None:
            sigs = f.containers.get(name, NOTHING)
        rule = self.rules[res]
        out = []
        for sig, floor in rule.symptoms:
            if sig == "disk_latency_ms":  # the disk's latency is a container's symptom only while it does I/O
                v = f.host.get(sig, math.nan) if sigs.get("io_ios", math.nan) > 0 else math.nan
            else:
                v = sigs.get(sig, math.nan)
            if math.isfinite(v) or sig == "disk_latency_ms":
                if math.isfinite(v):
                    out.append((sig, v, floor))
                break
        if rule.also:
            out += [(sig, v, floor) for sig, floor in rule.also if math.isfinite(v := sigs.get(sig, math.nan))]
        return out

    def use(self, f: Frame, suspect: str, res: str) -> float:
        if suspect == WRITEBACK:
            return f.host.get("unattributed_wbytes", math.nan)
        if suspect == HOST:
            return f.host.get("cpu_other", math.nan)
        if suspect == STEAL:
            return f.host.get("steal", math.nan)
        return f.get(suspect, self.rules[res].use)

    def rise(self, suspect: str, res: str) -> float:
        """How far a suspect's use rose over its baseline: the higher of its last two frames (an antagonist
        winding down is still the one that was there)."""
        base = self.use_base.get((suspect, res))
        now = [u for u in (self.use(fr, suspect, res) for fr in list(self.recent)[-2:]) if math.isfinite(u)]
        if not base or not now:
            return math.nan
        return max(now) - statistics.median(base)

    @staticmethod
    def own_limit(f: Frame, name: str, res: str) -> str:
        """Why a container's own limit explains its symptom ('' when it does not)."""
        if res == "cpu" and f.get(name, "throttled") >= 0.1:
            return f"its own CPU quota ({f.get(name, 'cpu_quota'):.2g} CPUs): throttled in " \
                   f"{f.get(name, 'throttled'):.0%} of its periods"
        if res == "memory":
            lim, mem = f.get(name, "mem_limit"), f.get(name, "mem")
            if f.get(name, "mem_max") > 0 or (lim > 0 and mem >= 0.9 * lim):
                return (f"its own memory limit ({mem / 2**20:.0f} of {lim / 2**20:.0f} MiB, hit "
                        f"{f.get(name, 'mem_max'):.0f}/s, {max(0.0, f.get(name, 'oom_kill')):.0f} OOM kills/s)")
        if res == "disk" and f.get(name, "io_limited") >= 1:
            return "its own I/O throttle"
        return ""

    # -- judging
    def judge(self, f: Frame, victim: str, res: str, sig: str, value: float, med: float, thr: float) -> Verdict:
        ev = {"symptom": value, "baseline": med, "threshold": thr}
        why_self = self.own_limit(f, victim, res)
        if why_self:
            return Verdict(victim, res, "self", victim, 1.0, f.t, f"{sig} {value:.3g}: {why_self}", evidence=ev)
        rule = self.rules[res]
        names = list(f.containers) + ([WRITEBACK] if res == "disk" else []) + ([HOST, STEAL] if res == "cpu" else [])
        rises = {s: self.rise(s, res) for s in names}
        eligible = {s for s, r in rises.items() if r >= rule.use_floor}
        taken = self._summed(victim, "taken") if res == "cpu" else {}
        preempt = self._summed(victim, "preempt") if res == "cpu" else {}
        if preempt:
            ev["preemptions_s"] = sum(preempt.values()) / max(len(self.recent), 1)
        # the time each took from the victim (else how often it got in first), of those whose use rose
        # (itself included); when none of them did (it waited only for others, or eBPF missed them), the
        # kernel's view says nothing: rank by the rise
        how_ranked = "taken" if taken else "preempted"
        per = taken or preempt
        score = {s: per.get(s, 0.0) for s in eligible if per.get(s, 0.0) > 0}
        crowd = taken.get(victim, 0.0)
        risers = {s: rises[s] for s in eligible if s != victim and rises[s] > 0}
        if crowd > 0 and risers and victim not in eligible:
            # its tasks waited for its own other tasks, its use not risen: crowded onto the CPUs the others
            # left it (a two-worker victim beside a hog on one of two CPUs waited for itself in 99 % of its
            # wait), a wait each riser caused by as much as it took of the CPUs
            for s, r in risers.items():
                score[s] = score.get(s, 0.0) + crowd * r / sum(risers.values())
            ev["crowded_s"] = crowd / max(len(self.recent), 1)
        if not score:
            how_ranked, score = "rise", {s: rises[s] for s in eligible}
        for s in sorted(eligible, key=lambda s: -rises[s])[:3]:
            ev[f"rise:{s}"] = rises[s]
        total = sum(score.values())
        if res == "disk" and how_ranked == "rise":  # on a disk: by the bytes each moved while the victim waited
            moved = {s: self._moved(s) for s in score}
            if all(math.isfinite(b) for b in moved.values()) and sum(moved.values()) > 0:
                how_ranked, score, total = "bytes", moved, sum(moved.values())
        # shares of the harm: of the time the victim waited (what no suspect took stays unknown), of every byte
        # the disks moved, else of the evidence
        harm = total
        if how_ranked == "bytes":
            every = [self._moved(c) for c in f.containers] + [self._moved(WRITEBACK)]
            harm = max(total, sum(b for b in every if math.isfinite(b)))
            ev["disk_bytes_s"] = harm / max(len(self.recent), 1)
        if how_ranked == "taken":
            waited = sum(fr.get(victim, "rq_delay") for fr in self.recent if math.isfinite(fr.get(victim, "rq_delay")))
            harm = max(sum(taken.values()), waited)
            ev["taken_s"] = sum(taken.values()) / max(len(self.recent), 1)
            stolen = self._stolen()
            if STEAL in eligible and stolen > 0:
                # the kernel counts a stolen stretch as time the CPU's current task ran: of every task's time
                # taken, the stolen share was the hypervisor's (its share of all the CPUs' time, these frames)
                score = {s: x * (1 - stolen) for s, x in score.items()}
                score[STEAL] = harm * stolen
                total = sum(score.values())
                ev["steal"] = stolen
        culprits = sorted(((s, x / harm) for s, x in score.items()), key=lambda p: -p[1]) if harm > 0 else []
        # its own use rose, and more than anyone else's (nobody else's, or it arrived on a busy host): its doing
        if victim in eligible and (total <= 0 or rises[victim] >= max(rises[s] for s in eligible)):
            return Verdict(victim, res, "self", victim, 1.0, f.t, f"{sig} {value:.3g}: its own {rule.use} rose "
                           "most", [(victim, 1.0)], ev, [(victim, 1.0)])
        # on CPU, those whose use rose may have run on its CPUs for a sliver of its wait, the rest taken by those
        # whose did not rise (ten light bystanders started together wake together: each waited 0.4 s/s for the
        # others, and a riser that took 5 % of it was blamed): nobody here explains it either
        explained = sum(x for _, x in culprits) if how_ranked == "taken" else 1.0
        if total <= 0 or explained < MAJOR:
            return Verdict(victim, res, "unattributed", "", 0.0, f.t, f"{sig} {value:.3g} above its baseline {med:.3g}"
                           + (f", and no neighbour's {rule.use} rose" if total <= 0 else
                              f"; those whose {rule.use} rose ran on its CPUs for {explained:.0%} of the time its "
                              "tasks waited"), evidence=ev)
        ranked = sorted(((s, x / total) for s, x in score.items()), key=lambda p: -p[1])
        top, share = culprits[0]
        if top == victim:
            return Verdict(victim, res, "self", victim, share, f.t, f"{sig} {value:.3g}: its own load rose",
                           ranked, ev, culprits)
        crowded = " (or crowded its tasks onto fewer)" if "crowded_s" in ev else ""
        how = {"taken": (f"the hypervisor ran something else on its CPUs for {share:.0%} of the time its tasks "
                         "waited") if top == STEAL else
               f"{top} ran on its CPUs{crowded} for {share:.0%} of the time its tasks waited",
               "bytes": f"{top} moved {share:.0%} of the disks' bytes while its I/O waited",
               "preempted": f"{top} took its CPU in {share:.0%} of its preemptions by those whose use rose",
               "rise": f"{top}'s {rule.use} rose most"}[how_ranked]
        return Verdict(victim, res, "blame", top, share, f.t, f"{sig} {value:.3g} above its baseline {med:.3g}; {how}",
                       ranked, ev, culprits)

    def _stolen(self) -> float:
        """The share of the CPUs' time the hypervisor took over the recent frames (0 where unknown)."""
        steal = sum(fr.host.get("steal", 0.0) for fr in self.recent)
        cpus = sum(fr.host.get("cpus", 0.0) for fr in self.recent)
        return min(1.0, steal / cpus) if cpus > 0 else 0.0

    def _moved(self, who: str) -> float:
        """Bytes per second a container (or `writeback`) moved on the disks, summed over the recent frames."""
        return sum(self.use(fr, who, "disk") for fr in self.recent)

    def _summed(self, victim: str, what: str) -> dict[str, float]:
        """A victim's per-second counts by the other (`taken` or `preempt`) summed over the recent frames."""
        out: dict[str, float] = {}
        for fr in self.recent:
            for s, n in getattr(fr, what).get(victim, {}).items():
                out[s] = out.get(s, 0.0) + n
        return out

    def _worst(self, f: Frame, name: str, res: str, readings: list[Reading],
               sigs: dict[str, float]) -> tuple[str, float, float, float] | None:
        """(signal, value, baseline median, threshold) of the symptom furthest above its threshold that counts
        this frame; None: the container does not suffer on this resource. Each reading goes to `readings`."""
        events = self.rules[res].events
        hard = bool(events) and any(sigs.get(e, math.nan) > 0 for e in events)  # an OOM kill, say
        worst: tuple[float, str, float, float, float] | None = None  # (value / threshold, …)
        for sig, value, floor in self.symptoms(f, name, res, sigs):
            if value / floor > self.severity.get((name, res), 0.0):
                self.severity[(name, res)] = value / floor
            base = self.base.get((name, res, sig))
            if base is None:  # made once (setdefault would build a deque every container, resource and frame)
                base = self.base[(name, res, sig)] = deque(maxlen=self._nbase)
            key = (name, res, sig)
            if len(base) < self.warmup and not hard:
                readings.append((key, value, base, False))
                continue
            if value <= floor and not hard:  # under any threshold (none is below the floor): no median needed,
                self.above[key] = False  # and most of a node's containers are here most of the time
                readings.append((key, value, base, False))
                continue
            med, sd = spread(list(base)) if base else (0.0, 0.0)
            rel = self.rules[res].rel
            thr = bar(med, sd, floor, rel, self.k)
            # unusual: half-way there in each term; not learnt (below)
            readings.append((key, value, base, value > bar(med, sd, floor, rel / 2, self.k / 2)))
            if self.witness is not None and value <= thr and value > (low := bar(med, sd, floor, rel, self.witness)) \
                    and self._witnessed(f, name, res, value):
                thr = low  # a second witness lowers the bar
            above, self.above[key] = self.above.get(key, False), value > thr
            # one frame above the threshold is a blip unless it is far above (twice): evidence accumulates
            if not hard and (value <= thr or not (above or value > 2 * thr or (name, res) in self.active)):
                if value > thr:
                    self.rose.add((name, res))
                continue
            if worst is None or value / thr > worst[0]:
                worst = (value / thr, sig, value, med, thr)
        return worst[1:] if worst is not None else None

    def _witnessed(self, f: Frame, name: str, res: str, value: float) -> bool:
        """Whether the kernel saw a neighbour cause a wait: on CPU, those whose use rose by the use floor ran on the
        container's CPUs for `MAJOR` or more of the time its tasks waited this frame (eBPF), or crowded its tasks
        onto fewer CPUs (its own tasks took that much, its own use not risen). Beside 100 bystanders a victim's
        calm wait swings between 0.1 and 0.6 s/s as they wake, its threshold with it (1.0-1.7 s/s), and the wait
        a CPU antagonist brought (0.9-1.5) crossed it late or never; what the antagonist took did not swing."""
        if res != "cpu" or not (taken := f.taken.get(name)):
            return False
        floor = self.rules[res].use_floor
        took = sum(x for s, x in taken.items() if s != name and self.rise(s, res) >= floor)
        if took >= MAJOR * value:
            return True
        # crowded: its own tasks took the rest while a neighbour's use rose and its own did not (only then: the
        # rises of a node's every container are read when its own tasks took a major share)
        own = taken.get(name, 0.0)
        return took + own >= MAJOR * value and not self.rise(name, res) >= floor and \
            any(self.rise(s, res) >= floor for s in f.containers if s != name)

    def step(self, f: Frame) -> list[dict]:
        """The events this frame brings: blame / self / unattributed when a verdict starts or changes,
        cleared when it ends, gone when its victim left (a container removed, a pod deleted)."""
        self.recent.append(f)
        self.rose = set()
        self.severity = {}
        self._arrivals()
        events: list[dict] = []
        suffering: dict[str, set[str]] = {r: set() for r in self.rules}
        readings: list[Reading] = []
        for name, sigs in f.containers.items():
            for res in self.rules:
                worst = self._worst(f, name, res, readings, sigs)
                if worst is None:
                    continue
                sig, value, med, thr = worst
                suffering[res].add(name)
                v = self.judge(f, name, res, sig, value, med, thr)
                old = self.active.get((name, res))
                v.held = v.key(old)
                self.quiet[(name, res)] = 0
                if v.same(old):
                    assert old is not None
                    v.since = old.since
                    self.active[(name, res)] = v
                    continue
                self.active[(name, res)] = v
                events.append(v.event(f.t, v.kind))
        for key in [k for k in self.active if k[0] not in suffering[k[1]]]:
            self.quiet[key] = self.quiet.get(key, 0) + 1
            if key[0] not in f.containers:
                events.append(self.active.pop(key).event(f.t, "gone"))
                self.quiet.pop(key, None)
            elif self.quiet[key] >= self.clear_after:
                events.append(self.active.pop(key).event(f.t, "cleared"))
                self.quiet.pop(key, None)
        self._learn(f, readings, suffering)
        self.unsettled = {(k[0], k[1]) for k, _, _, unusual in readings if unusual}
        self.unsettled.update((n, r) for r, names in suffering.items() for n in names)
        self._departures()
        self.jumped = self._jumps()
        return events

    def _departures(self) -> None:
        """What it kept on a container that left (a pod deleted) is forgotten: on a node whose pods come and go, a
        month of them would hold hundreds of MiB of baselines."""
        left = self.recent[-2].containers.keys() - self.recent[-1].containers.keys() if len(self.recent) > 1 else ()
        if not left:
            return
        kept: list[dict] = [self.base, self.above, self.unusual, self.use_base]  # each keyed (container, …)
        for m in kept:
            for key in [k for k in m if k[0] in left]:
                del m[key]

    def _learn(self, f: Frame, readings: list[Reading], suffering: dict[str, set[str]]) -> None:
        """Baselines learn from calm frames only: a victim's while it does not suffer and its own use has settled
        (a load starting up waits for its own CPUs and pages: its start is not its normal), the suspects' use
        while nobody suffers on that resource (an antagonist that runs for minutes must not become normal)."""
        settled: dict[tuple[str, str], bool] = {}  # a container's memory has two symptoms: judged settled once
        # a container a neighbour hurts on one resource is calm on none: a reader held up on the disk barely runs,
        # its CPU wait near 0 (learnt, its normal wait read as harm once the disk let it go). Its own limit is no
        # such harm: a container always at its own CPU quota learns its memory and disk as ever
        troubled = {n for (n, _), v in self.active.items() if v.kind != "self"} | {n for n, _ in self.rose}
        for key, value, base, unusual in readings:
            name, res, _ = key
            # a frame above the threshold unconfirmed is no calm frame either: learnt, an onset's first frames
            # raise the threshold as fast as the symptom rises (a victim's wait 1.06 then 1.13 s/s, never blamed)
            if name in troubled or name in suffering[res] or (name, res) in self.active:
                continue
            # nor is one unusual, below the threshold but half-way there, until it has lasted `renormal` frames
            # (a new normal): learnt, a harm rising slowly lifts the bar ahead of itself (beside 100 bystanders a
            # victim's wait rose 1.0 → 1.4 s/s over 6 s and its threshold 1.0 → 3.4, never blamed)
            if unusual:
                run = self.unusual[key] = self.unusual.get(key, 0) + 1
                if run < self.renormal:
                    continue
            elif key in self.unusual:
                del self.unusual[key]
            if (calm := settled.get((name, res))) is None:
                calm = settled[name, res] = self._settled(name, res)
            if calm:
                base.append(value)
        for res, rule in self.rules.items():
            if suffering[res] or any(k[1] == res for k in self.active):
                continue
            uses = [(s, sigs.get(rule.use, math.nan)) for s, sigs in f.containers.items()]
            uses += [(s, self.use(f, s, res)) for s in ((WRITEBACK,) if res == "disk" else (HOST, STEAL)
                                                        if res == "cpu" else ())]
            for s, u in uses:
                if math.isfinite(u):
                    kept = self.use_base.get((s, res))
                    if kept is None:  # made once, not at every frame (setdefault would make one each time)
                        kept = self.use_base[(s, res)] = deque(maxlen=self._nbase)
                    kept.append(u)

    def _arrivals(self) -> None:
        """A container that came while watched (a pod scheduled here, a container started) used nothing before
        it: all it uses is a rise (a new pod is the commonest noisy neighbour on a node)."""
        if len(self.recent) < 2:
            return
        before = self.recent[-2].containers
        for name in (n for n in self.recent[-1].containers if n not in before):
            for res in self.rules:
                self.use_base.setdefault((name, res), deque([0.0], maxlen=self._nbase))

    def _settled(self, name: str, res: str) -> bool:
        """Its own use moved since the frame before by less than the resource's use_floor or a quarter of it
        (a steady reader's bytes move by a fifth from second to second: 100-135 MB/s in a detect trial here;
        unknown use: settled; its first frame: not)."""
        if len(self.recent) < 2:
            return False
        before, now = self.use(self.recent[-2], name, res), self.use(self.recent[-1], name, res)
        if not (math.isfinite(before) and math.isfinite(now)):
            return True
        return abs(now - before) < max(self.rules[res].use_floor, SETTLED * max(abs(now), abs(before)))

    def pending(self) -> bool:
        """Whether the last frame calls for a second look sooner than a period: a symptom rose above its threshold
        without a verdict yet (one frame is a blip until a second confirms it), or a container's use jumped (a
        load starting: the harm it brings shows whole in a short frame, where in the period it began it was
        diluted by the calm part: a 4k reader's wait per I/O read 0.2 ms there, 14 ms in the next)."""
        return bool(self.jumped) or any(key not in self.active for key in self.rose)

    def _jumps(self) -> set[tuple[str, str]]:
        """(container, resource) whose use rose by the resource's use_floor or more since the frame before
        (one comparison each: cheap on a node of 250 pods)."""
        if len(self.recent) < 2:
            return set()
        before, now = self.recent[-2].containers, self.recent[-1].containers
        out = set()
        for name, sigs in now.items():
            was = before.get(name)
            if was is None:
                continue
            for res, rule in self.rules.items():
                if sigs.get(rule.use, math.nan) - was.get(rule.use, math.nan) >= rule.use_floor:  # nan: False
                    out.add((name, res))
        return out

    def baselined(self, name: str, res: str) -> int:
        """How many calm periods a container's baseline on a resource holds (its best-learnt symptom's): fewer
        than `warmup` and no symptom of it can be judged yet."""
        return max((len(b) for (n, r, _), b in list(self.base.items()) if n == name and r == res), default=0)

    def verdicts(self) -> list[Verdict]:
        return sorted(self.active.values(), key=lambda v: (v.victim, v.resource))


def replay(frames: list[Frame], detector: Detector | None = None) -> list[dict]:
    """Every event a detector gives over recorded frames, in order."""
    d = detector or Detector()
    return [e for f in frames for e in d.step(f)]
