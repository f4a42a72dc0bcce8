"""contend's capacity estimator: the congestion signal's named filters, one test each, and the modes (pure)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from contend.guard.estimator import FILTERS, Mode
from contend.guard.policy import ContendPolicy, Decision, PolicyInput, TargetView

C = 1000.0


def decide(victim: list[float], vcap: float | None, other: list[float], ocap: float | None, told: float = C,
           state: object = None) -> Decision:
    views = [TargetView("victim", np.array(victim), vcap), TargetView("other", np.array(other), ocap)]
    return ContendPolicy().decide(PolicyInput(views, told, 10.0, state=state))


def test_a_victim_hurt_while_a_neighbour_takes_lowers_the_estimate_then_holds():
    d = decide([200.0] * 30 + [100.0] * 2, 240.0, [800.0] * 32, 800.0)
    assert d.state.estimate.mode is Mode.DECREASED and d.state.estimate.why == ""
    assert d.capacity == pytest.approx(0.9 * (100 + 800))
    again = decide([200.0] * 30 + [100.0] * 3, 240.0, [800.0] * 33, 800.0, state=d.state)
    assert again.state.estimate.why == "hold" and again.capacity == d.capacity  # the victim recovers first


def test_own_cap_a_target_dipping_alone_at_its_own_cap_lowers_nothing():
    """It lives at its cap (lifeline 540, cap 560): its cap and its jitter hold it, not the disk."""
    d = decide([540.0] * 30 + [400.0] * 2, 560.0, [400.0] * 32, 400.0)
    assert d.state.estimate.why == "own-cap" and d.capacity == C


def test_stall_everybody_low_for_one_period_is_the_disks_stall():
    d = decide([200.0] * 31 + [100.0], 240.0, [300.0] * 31 + [100.0], 300.0)
    assert d.state.estimate.why == "stall" and d.capacity == C


def test_onset_a_neighbour_past_its_cap_spares_the_estimate_at_most_two_periods():
    victim, other = [200.0] * 30 + [100.0] * 2, [200.0] * 31 + [700.0]  # 700 > 1.2 × its cap of 500
    d = decide(victim, 240.0, other, 500.0)
    assert d.state.estimate.why == "onset" and d.capacity == C and not d.state.estimate.learnt
    d = decide(victim + [100.0], 240.0, other + [500.0], 500.0, state=d.state)  # the period after, too
    assert d.state.estimate.why == "onset" and d.capacity == C
    d = decide(victim + [100.0] * 2, 240.0, other + [500.0] * 2, 500.0, state=d.state)  # the third: the disk
    assert d.state.estimate.mode is Mode.DECREASED and d.capacity < C


def test_each_filter_is_named_in_the_manual():
    manual = (Path(__file__).resolve().parent.parent / "docs/guard-policy.md").read_text()
    assert [f.name for f in FILTERS] == ["own-cap", "hold", "stall", "onset"]
    for f in FILTERS:
        assert re.search(rf"`{f.name}`", manual), f.name


def test_told_nothing_it_caps_nobody_until_the_first_contention_then_climbs():
    d = decide([200.0] * 32, None, [300.0] * 32, None, told=math.inf)
    assert d.state.estimate.mode is Mode.UNCAPPED and set(d.caps.values()) == {None}
    hurt = decide([200.0] * 30 + [100.0] * 2, None, [300.0] * 30 + [900.0] * 2, None, told=math.inf, state=d.state)
    assert hurt.state.estimate.mode is Mode.DECREASED and hurt.state.estimate.learnt and math.isfinite(hurt.capacity)
    state, vcap, ocap = hurt.state, hurt.caps["victim"], hurt.caps["other"]
    for k in range(1, 5):  # the victim back (its two periods' mean too from the second), the neighbour at its cap:
        # the hold forbids a decrease, not a climb
        d = decide([200.0] * 30 + [100.0] * 2 + [200.0] * k, vcap, [300.0] * 30 + [900.0] * 2 + [ocap] * k, ocap,
                   told=math.inf, state=state)
        state = d.state
        assert state.estimate.mode is (Mode.HOLDING if k == 1 else Mode.CLIMBING), k
        assert state.estimate.hold == max(0, 3 - k)
    assert state.estimate.capacity > hurt.capacity
