"""How well a mode protected the victim (pure: the tenants' own use counters in, numbers out).

From the study's readings of each tenant's cgroup every period (CPU-seconds, or bytes read and written: the
detect trial's `truth` samples), per trial:
- **isolation**: the victim's rate period by period over the attack (from the antagonist's first use to its end)
  against its rate in the calm before it (its solo level beside the bystander), each period at most 1 (resctl's
  per-second min(W / W_ref, 1): a load that catches up later, as fio's rate control does, does not undo a dip),
  averaged over the attack's time;
- **p05**: the 5th percentile of that ratio period by period, once the mode reacted (over the whole attack where
  it never did): how low it still fell while held;
- **reaction_s**: from the harm's start (the start of the victim's first period below RETAINED of its level) to the
  end of the first of two periods in a row with it back within RETAINED (0 where it never fell; nan where it
  never came back). A cache reader fills its pod's free memory before the victim loses a page: the harm starts
  seconds after the antagonist does, and a reaction to it is counted from it (the issue's "harm -> back");
- **back_s**: the same end from the antagonist's first use (the reaction as it was counted before 2026-12-07);
- **culprit_rate**: the antagonists' own rate over the attack (their work kept; the report divides it by no
  action's: work conservation).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...metrics.directions import DESCRIPTIVE, HIGHER, LOWER

RETAINED = 0.95
CALM_S = 6.0  # the victim's level: its rate over this long before the attack (after its own start)
START_S = 2.0  # a load's first seconds in a container are not its level


def rates(points: Sequence[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(starts, ends, rate) of each period between readings of a cumulative counter."""
    if len(points) < 2:
        return np.array([]), np.array([]), np.array([])
    t, v = np.asarray(points, dtype=float).T
    dt = np.diff(t)
    ok = dt > 0
    return t[:-1][ok], t[1:][ok], (np.diff(v)[ok] / dt[ok])


def mean_rate(points: Sequence[tuple[float, float]], t0: float, t1: float) -> float:
    """The counter's mean rate over the readings within [t0, t1]."""
    inside = [(t, v) for t, v in points if t0 <= t <= t1]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return math.nan
    return (inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def protection(victim: Sequence[tuple[float, float]], culprits: dict[str, Sequence[tuple[float, float]]],
               began: float, t_end: float) -> dict[str, float]:
    level = mean_rate(victim, max(START_S, began - CALM_S), began)
    starts, ends, r = rates(victim)
    during = (starts >= began - 1e-9) & (ends <= t_end + 1e-9)
    if not (math.isfinite(level) and level > 0) or not during.any():
        return {}
    ratio = r[during] / level
    spans = ends[during] - starts[during]
    ends = ends[during]
    low = np.flatnonzero(ratio < RETAINED)
    if not len(low):
        reaction = back_s = 0.0
        held = ratio
    else:
        back = [i for i in range(int(low[0]) + 1, len(ratio))
                if ratio[i] >= RETAINED and (i + 1 >= len(ratio) or ratio[i + 1] >= RETAINED)]
        harm = float(starts[during][low[0]])
        reaction = float(ends[back[0]] - harm) if back else math.nan
        back_s = float(ends[back[0]] - began) if back else math.nan
        held = ratio[back[0]:] if back else ratio
    work = [mean_rate(c, began, t_end) for c in culprits.values()]
    return {"isolation": float(np.sum(np.minimum(ratio, 1.0) * spans) / np.sum(spans)),
            "p05": min(1.0, float(np.percentile(held, 5))),
            "reaction_s": float(reaction), "back_s": back_s,
            "culprit_rate": float(sum(w for w in work if math.isfinite(w))) if work else math.nan,
            "victim_level": level}

DIRECTIONS = {"isolation": HIGHER, "p05": HIGHER, "reaction_s": LOWER, "back_s": LOWER, "culprit_rate": DESCRIPTIVE,
              "culprit_kept": HIGHER, "victim_level": DESCRIPTIVE, "actions": DESCRIPTIVE,
              "control_actions": LOWER, "settings_left": LOWER}
