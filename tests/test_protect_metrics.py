"""The protect kind's figures on counters with known answers, its answers and its plan (pure: no root)."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from contend.kinds import load, study_for
from contend.kinds.protect.metrics import protection
from contend.kinds.protect.report import answers


def counter(rates: list[float], t0: float = 0.0) -> list[tuple[float, float]]:
    """A cumulative counter read every second, rising at each given rate in turn."""
    out, v = [(t0, 0.0)], 0.0
    for i, r in enumerate(rates):
        v += r
        out.append((t0 + i + 1, v))
    return out


def test_a_victim_halved_until_protect_reacts_then_whole():
    # calm at 2 CPUs for 10 s; the attack from 10 to 20: 1 CPU for 3 s, then 2 again
    victim = counter([2.0] * 10 + [1.0] * 3 + [2.0] * 7 + [2.0] * 3)
    culprit = counter([0.0] * 10 + [1.0] * 3 + [0.0] * 7 + [0.0] * 3)
    m = protection(victim, {"noisy": culprit}, 10.0, 20.0)
    assert m["isolation"] == pytest.approx((3 * 1 + 7 * 2) / 10 / 2)
    assert m["reaction_s"] == pytest.approx(4.0)  # back in the period ending at 14, and the next one too
    assert m["p05"] == pytest.approx(1.0)  # whole once it reacted
    assert m["culprit_rate"] == pytest.approx(0.3)


def test_the_reaction_counts_from_the_harms_start_not_from_the_antagonists():
    """The cache case's noisy fills the pod's free memory for ~2 s before the victim loses a page: the reaction is
    the issue's (harm -> victim back within 5 %), from the victim's first period below it; `back_s` is from the
    antagonist's first use, as the reaction was before 2026-12-07's fifth run."""
    victim = counter([2.0] * 10 + [2.0] * 2 + [1.0] * 3 + [2.0] * 8)
    m = protection(victim, {}, 10.0, 20.0)
    assert m["reaction_s"] == pytest.approx(4.0)  # harmed from 12, back in the periods ending at 16 and 17
    assert m["back_s"] == pytest.approx(6.0)
    calm = protection(counter([2.0] * 20), {}, 10.0, 20.0)
    assert calm["reaction_s"] == calm["back_s"] == 0.0


def test_never_harmed_reacts_in_zero_and_never_back_is_nan():
    calm = counter([2.0] * 20)
    assert protection(calm, {}, 10.0, 20.0)["reaction_s"] == 0.0
    hurt = protection(counter([2.0] * 10 + [0.5] * 10), {}, 10.0, 20.0)
    assert math.isnan(hurt["reaction_s"]) and hurt["isolation"] == pytest.approx(0.25) and hurt["p05"] == 0.25


def test_a_victim_that_catches_up_after_a_dip_is_not_whole():
    """fio's rate control catches up what a slump deferred (the cache case's victim read at 2x its rate once its
    pages were back): each period counts at most its level (resctl's per-second min(W / W_ref, 1)), so the dip
    stays in the figure."""
    m = protection(counter([2.0] * 10 + [0.0] * 2 + [4.0] * 2 + [2.0] * 6), {}, 10.0, 20.0)
    assert m["isolation"] == pytest.approx(0.8) and m["p05"] == 1.0


def test_isolation_is_never_above_one():
    m = protection(counter([1.0] * 10 + [1.5] * 10), {}, 10.0, 20.0)
    assert m["isolation"] == 1.0 and m["p05"] == 1.0


def test_a_cells_interval_stays_within_a_share_and_a_time_stays_non_negative():
    """Three network trials under no action with p05 0.0, 0.0, 0.9: Student t's ± 1.29 ran outside [0, 1] in the
    table of 2026-12-07; a cell's interval is clipped to its metric's range (metrics.bounds)."""
    from contend.metrics import aggregate
    rows = [{"runtime": "runc", "scenario": "network", "resource": "none", "view": "protect", "metric": metric,
             "value": v} for metric, vals in (("p05", (0.0, 0.0, 0.9)), ("isolation", (0.9, 1.0, 1.0)),
                                              ("culprit_kept", (0.2, 0.9, 1.0)), ("reaction_s", (0.5, 0.5, 6.0)))
            for v in vals]
    cells = {r["metric"]: r for r in aggregate(rows)}
    assert cells["p05"]["ci_low"] == 0.0 and 0.9 < cells["p05"]["ci_high"] <= 1.0
    assert cells["isolation"]["ci_high"] == cells["culprit_kept"]["ci_high"] == 1.0
    assert cells["reaction_s"]["ci_low"] == 0.0 and cells["reaction_s"]["ci_high"] > 6.0


def test_no_calm_level_no_figures():
    assert protection(counter([0.0] * 20), {}, 10.0, 20.0) == {}


def row(rt, case, mode, metric, value, n=3, lo=math.nan, hi=math.nan):
    return {"runtime": rt, "scenario": case, "resource": mode, "view": "protect", "metric": metric, "value": value,
            "ci_low": lo, "ci_high": hi, "n": n}


def test_answers_judge_protect_and_name_the_others_beside_it():
    rows = [row("runc", "cpu", "protect", "isolation", 0.97, lo=0.95, hi=0.99),
            row("runc", "cpu", "none", "isolation", 0.5), row("runc", "cpu", "fixed", "isolation", 0.75),
            row("runc", "idle", "protect", "control_actions", 0.0),
            row("runc", "harmony", "protect", "control_actions", 1.0)]
    said = {a.subject[-1]: a for a in answers(rows, ["runc"], ["cpu", "idle", "harmony", "disk"],
                                              ["none", "protect", "fixed"])}
    assert said["cpu"].word == "isolated" and "none 0.50" in said["cpu"].number and "fixed 0.75" in said["cpu"].number
    assert said["idle"].word == "quiet" and said["harmony"].word == "ACTED ON A CONTROL"
    assert said["disk"].word == "n/a"


def test_the_preset_plans_every_mode_of_a_case_paired_and_controls_under_protect_alone(tmp_path: Path):
    spec = load(Path(__file__).resolve().parent.parent / "presets" / "protect.yaml")
    study = study_for(spec, tmp_path, None)
    plan = study.plan()
    assert {m for _, c, m, _ in plan if c in ("harmony", "own-quota", "idle")} == {"protect"}
    first = [m for rt, c, m, r in plan if (rt, c, r) == ("runc", "cpu", 1)]
    second = [m for rt, c, m, r in plan if (rt, c, r) == ("runc", "cpu", 2)]
    assert sorted(first) == ["fixed", "none", "protect"] and first != second  # the order turns each repetition
    assert len({study.change_at(i) for i in plan if i[:2] == ("runc", "cpu") and i[3] == 1}) == 1  # paired times
    assert len({study.ident(i) for i in plan}) == len(plan)
