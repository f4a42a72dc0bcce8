"""A detect trial judged against its known answer, and a cell's figures over its trials (pure).

An antagonist trial's answer is victim ← noisy via the case's resource, from the antagonist's start. A blame
(an event starting or changing a verdict to `blame`) is correct when it names noisy on that resource after
its start, whoever the victim (an antagonist hurts the bystander too); every other blame is false. A control
trial has no antagonist: every blame in it is false.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ANTAGONIST, VICTIM = "noisy", "victim"


@dataclass(frozen=True)
class Truth:
    antagonist: bool
    resource: str
    t_start: float  # the antagonist's (or the control change's) start, trial seconds
    t_end: float  # when it was stopped
    duration_s: float  # the time the watcher watched


def trial_metrics(events: list[dict], truth: Truth) -> dict[str, float]:
    """One trial's figures from its watch events (dicts with t, event, victim, resource, culprit)."""
    blames = sorted((e for e in events if e["event"] == "blame"), key=lambda e: e["t"])
    if not truth.antagonist:
        return {"false_blames": float(len(blames))}
    correct = [b for b in blames if b["culprit"] == ANTAGONIST and b["resource"] == truth.resource
               and b["t"] >= truth.t_start]
    mine = [b for b in blames if b["victim"] == VICTIM and b["resource"] == truth.resource
            and b["t"] >= truth.t_start]
    right = [b for b in mine if b["culprit"] == ANTAGONIST]
    return {"detected": 1.0 if right else 0.0,
            "first_right": 1.0 if mine and mine[0]["culprit"] == ANTAGONIST else 0.0,
            "latency_s": right[0]["t"] - truth.t_start if right else math.nan,
            "blames": float(len(blames)), "correct_blames": float(len(correct)),
            "false_blames": float(len(blames) - len(correct))}


def cell_figures(trials: list[dict[str, float]], hours: list[float]) -> dict[str, float]:
    """What a cell's trials say together that a mean of per-trial values would not: precision over all their
    blames, the median and 95th percentile of the detection latency, false blames per hour watched."""
    out: dict[str, float] = {}
    blames = sum(t.get("blames", 0.0) for t in trials)
    if any("correct_blames" in t for t in trials):
        out["precision"] = sum(t.get("correct_blames", 0.0) for t in trials) / blames if blames else math.nan
        lat = [t["latency_s"] for t in trials if math.isfinite(t.get("latency_s", math.nan))]
        if lat:
            out["latency_p50_s"] = float(np.percentile(lat, 50))
            out["latency_p95_s"] = float(np.percentile(lat, 95))
    elif sum(hours) > 0:
        out["false_per_h"] = sum(t.get("false_blames", 0.0) for t in trials) / sum(hours)
    return out
