"""A detect trial judged against its known answer, and a cell's figures over its trials (pure).

An antagonist trial's answer is victim ← noisy via the case's resource, from the antagonist's start (in a
multi-antagonist case, noisy or noisy2). A blame (an event starting or changing a verdict to `blame`) is correct
when it names an antagonist on that resource after its start, whoever the victim (an antagonist hurts the
bystander too); every other blame is false. A control trial has no antagonist: every blame in it is false.

Over the whole harm, not its first second (issue 51): `coverage`, the share of the periods in which a verdict
stood on the victim whose blame ranked first the one who really took most (the cgroups' own CPU time or disk
bytes in that period, read by the study), and `share_error`, how far the shares it named were from the true ones.

The detection latency counts from when noisy began to use its resource, as the host's counters saw it (its
cgroup read every 20 ms from contend's request on: first_use). Between the request and that moment are the
runtime's exec and the tool's own start, which no detector can see harm from (0.1-1 s here, most under lxc and
docker); the latency from the request is reported beside it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...metrics.directions import DESCRIPTIVE, HIGHER, LOWER

# which way is better (contend compare): contend watch against a known answer
DIRECTIONS = {
    "detected": HIGHER, "first_right": HIGHER, "precision": HIGHER, "latency_s": LOWER, "latency_p50_s": LOWER,
    "latency_p95_s": LOWER, "false_blames": LOWER, "false_per_h": LOWER, "watch_cpu_pct": LOWER,
    "blames": DESCRIPTIVE, "correct_blames": DESCRIPTIVE, "latency_request_s": LOWER, "request_p50_s": LOWER,
    "request_p95_s": LOWER, "start_delay_s": DESCRIPTIVE,
}

ANTAGONIST, VICTIM = "noisy", "victim"
WARMUP = 3  # the detector's: calm periods a baseline needs before a symptom is judged (watch.detector)
STEP = "verdict-step"  # the event kind of the verdict standing on the victim after a watch period
FRAME = "watch-frame"  # the event kind of one of the watcher's frames, whole (Frame.to_json, tenants' names)


USES = ("cpu", "disk")  # the resources whose truth readings are a use to share out (coverage)
# when a resource's counter says the antagonist began to use it: (the rise that counts, within how many seconds
# of the reading before it moved); cpu in CPU-seconds (half a CPU over 100 ms), disk in bytes (10 MB/s over
# 100 ms), memory in bytes (the detector's own least rise of memory use, within a second)
USE_STEP = {"cpu": (0.05, 0.1), "disk": (float(1 << 20), 0.1), "memory": (float(64 << 20), 1.0)}


def first_use(points: list[tuple[float, float]], resource: str) -> float:
    """When an antagonist began to use its resource, from (t, counter) readings of its cgroup taken from its
    start's request on (cpu: CPU-seconds used, disk: bytes, both cumulative; memory: bytes held): the reading
    before the first move of the counter that went on to rise by the resource's step within its window (the
    earlier bound of the moment, so a latency from it is never flattered). nan where it never did, or where the
    resource has no step (network: contend's own agents start sending as they are told)."""
    if resource not in USE_STEP:
        return math.nan
    step, window = USE_STEP[resource]
    for k in range(1, len(points)):
        t0, v0 = points[k - 1]
        if points[k][1] <= v0:
            continue
        for t, v in points[k:]:
            if t - t0 > window:
                break
            if v - v0 >= step:
                return t0
    return math.nan


@dataclass(frozen=True)
class Truth:
    antagonist: bool
    resource: str
    t_start: float  # contend's request to start the antagonist's (or the control change's) load, trial seconds
    t_end: float  # when it was stopped
    duration_s: float  # the time the watcher watched
    t_use: float = math.nan  # when the antagonist began to use its resource (first_use); nan: not measured
    antagonists: tuple[str, ...] = (ANTAGONIST,)
    baseline_periods: int | None = None  # the victim's calm periods learnt when the change began (None: unknown)


def trial_metrics(events: list[dict], truth: Truth) -> dict[str, float]:
    """One trial's figures from its watch events (dicts with t, event, victim, resource, culprit)."""
    blames = sorted((e for e in events if e["event"] == "blame"), key=lambda e: e["t"])
    if not truth.antagonist:
        return {"false_blames": float(len(blames))}
    culprits = set(truth.antagonists)
    correct = [b for b in blames if b["culprit"] in culprits and b["resource"] == truth.resource
               and b["t"] >= truth.t_start]
    known = {} if truth.baseline_periods is None else {"no_baseline": 0.0}
    if truth.baseline_periods is not None and truth.baseline_periods < WARMUP:
        # its victim had no baseline yet (its own start-up still moving): no detector could have judged it, so
        # it is said, not scored as a miss (issue 51)
        return {"no_baseline": 1.0, "blames": float(len(blames)), "correct_blames": float(len(correct)),
                "false_blames": float(len(blames) - len(correct))}
    mine = [b for b in blames if b["victim"] == VICTIM and b["resource"] == truth.resource
            and b["t"] >= truth.t_start]
    right = [b for b in mine if b["culprit"] in culprits]
    began = truth.t_use if math.isfinite(truth.t_use) else truth.t_start
    named = {c for b in mine for c, _ in b.get("culprits", [])}  # every culprit a victim's verdict named
    return {"detected": 1.0 if right else 0.0,
            "first_right": 1.0 if mine and mine[0]["culprit"] in culprits else 0.0,
            **({"all_named": float(culprits <= named)} if len(culprits) > 1 else {}),
            "latency_s": right[0]["t"] - began if right else math.nan,
            "latency_request_s": right[0]["t"] - truth.t_start if right else math.nan,
            "start_delay_s": truth.t_use - truth.t_start,  # the exec and the tool's start (nan: not measured)
            "blames": float(len(blames)), "correct_blames": float(len(correct)),
            "false_blames": float(len(blames) - len(correct)), **known}


def true_use(truth: dict[str, list[tuple[float, float]]], victim: str) -> dict[float, dict[str, float]]:
    """Per reading time after the first, what each tenant but the victim used since the reading before, from
    cumulative (t, counter) readings per name taken at the same moments. A `host` series (the host's busy CPU
    time) becomes what the host used besides every tenant, the victim too (never below 0)."""
    series = {n: dict(pts) for n, pts in truth.items()}
    times = sorted(series.get(victim, {}))
    out: dict[float, dict[str, float]] = {}
    for a, b in zip(times, times[1:]):
        moved = {n: s[b] - s[a] for n, s in series.items() if a in s and b in s}
        if "host" in moved:
            moved["host"] = max(0.0, moved["host"] - sum(v for n, v in moved.items() if n != "host"))
        moved.pop(victim, None)
        out[b] = moved
    return out


def coverage(steps: list[tuple[float, str, list]], truth: dict[str, list[tuple[float, float]]], victim: str,
             antagonists: tuple[str, ...], t0: float, t1: float) -> dict[str, float]:
    """How well a watcher's verdicts on the victim followed the harm: `steps` are (t, kind, [[culprit, share],
    …]) of the verdict that stood on the victim after each watch period; `truth` the cumulative use readings
    true_use takes, at the same times. Over the periods ending in (t0, t1] with a verdict (the victim harmed: its
    symptom above the detector's threshold) and someone's use to compare: `coverage`, the share whose verdict
    was a blame ranking first who used most of the resource among everyone but the victim; `share_error`, the
    mean over those periods and the antagonists of |named share − true share| (a true share: one's use over
    everyone's but the victim's); `harmed_periods`, how many periods; with several antagonists `all_named`,
    whether each was named in one of those periods (a verdict's events show only its major culprits). nan where
    no period counts."""
    used = true_use(truth, victim)
    hits, errors, n, ever = 0, [], 0, set()
    for t, kind, culprits in steps:
        moved = used.get(t, {})
        total = sum(moved.values())
        if not t0 < t <= t1 or total <= 0:
            continue
        n += 1
        named = dict((c, x) for c, x in culprits) if kind == "blame" else {}
        ever |= set(named)
        most = max(moved, key=lambda k: moved[k])
        hits += bool(culprits) and kind == "blame" and culprits[0][0] == most
        errors += [abs(named.get(a, 0.0) - moved.get(a, 0.0) / total) for a in antagonists]
    return {"coverage": hits / n if n else math.nan,
            "share_error": float(np.mean(errors)) if errors else math.nan, "harmed_periods": float(n),
            **({"all_named": float(set(antagonists) <= ever)} if len(antagonists) > 1 else {})}


def cell_figures(trials: list[dict[str, float]], hours: list[float]) -> dict[str, float]:
    """What a cell's trials say together that a mean of per-trial values would not: precision over all their
    blames, the median and 95th percentile of the detection latency (from the antagonist's first use, and from
    contend's request to start it), false blames per hour watched."""
    out: dict[str, float] = {}
    blames = sum(t.get("blames", 0.0) for t in trials)
    if any("correct_blames" in t for t in trials):
        out["precision"] = sum(t.get("correct_blames", 0.0) for t in trials) / blames if blames else math.nan
        for key, name in (("latency_s", "latency"), ("latency_request_s", "request")):
            lat = [t[key] for t in trials if math.isfinite(t.get(key, math.nan))]
            if lat:
                out[f"{name}_p50_s"] = float(np.percentile(lat, 50))
                out[f"{name}_p95_s"] = float(np.percentile(lat, 95))
    elif sum(hours) > 0:
        out["false_per_h"] = sum(t.get("false_blames", 0.0) for t in trials) / sum(hours)
    return out
