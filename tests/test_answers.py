"""Each kind's answer in words (issue 97), from metric rows with known answers: pure, no root."""
from __future__ import annotations

import math

import pytest


def row(rt, sc, res, view, metric, value, lo=math.nan, hi=math.nan, n=3):
    return {"runtime": rt, "scenario": sc, "resource": res, "view": view, "metric": metric, "value": value,
            "ci_low": lo, "ci_high": hi, "n": n}


def test_a_guard_policy_isolates_when_its_victim_keeps_its_level_and_its_worst_seconds():
    from contend.kinds.guard.report import answers
    rows = []
    for policy, isol, p05, wc in (("none", 0.40, 0.10, math.nan), ("static@capacity=1", 0.99, 0.97, 0.38),
                                  ("contend", 0.97, 0.85, 0.59), ("aridac", 0.96, 0.93, 0.8)):
        sc = f"workload1/{policy}"
        rows += [row("runc", sc, "disk", "host", "isol_mean", isol, isol - 0.02, isol + 0.02),
                 row("runc", sc, "disk", "host", "isol_p05", p05, p05 - 0.05, p05 + 0.05),
                 row("runc", sc, "disk", "host", "work_conservation", wc, wc - 0.05, wc + 0.05)]
    said = {a.subject: a for a in answers(rows)}
    assert [a.subject[1] for a in answers(rows)] == ["none", "static@capacity=1", "aridac", "contend"]
    assert said[("workload1", "none")].word == "NOT isolated"
    static = said[("workload1", "static@capacity=1")]
    assert static.word == "isolated" and static.number == ("isol 0.99 ± 0.02, n=3; p05 0.97; 0.38 of the spare to "
                                                           "the burst")
    contend = said[("workload1", "contend")]  # the mean holds, its worst seconds do not: not sure
    assert contend.word == "unsure" and "p05 0.85" in contend.why
    assert {a.card for a in said.values()} == {("workload1",)}


def test_detect_says_found_and_first_missed_or_quiet_per_case():
    from contend.kinds.detect.report import answers
    rows = [row("runc", "cpu", "cpu", "watch", "detected", 1.0), row("runc", "cpu", "cpu", "watch", "first_right", 1.0),
            row("runc", "cpu", "cpu", "watch", "latency_p50_s", 0.8),
            row("runc", "disk", "disk", "watch", "detected", 2 / 3), row("runc", "disk", "disk", "watch",
                                                                         "first_right", 2 / 3),
            row("runc", "cpu+cpu", "cpu", "watch", "detected", 1.0),
            row("runc", "cpu+cpu", "cpu", "watch", "first_right", 1 / 3),
            row("runc", "harmony", "cpu", "watch", "false_blames", 0.0),
            row("runc", "own-quota", "cpu", "watch", "false_blames", 1 / 3)]
    said = {a.subject[2]: a for a in answers(rows, ["runc"], ["cpu", "disk", "cpu+cpu", "harmony", "own-quota",
                                                                 "memory"])}
    assert (said["cpu"].word, said["cpu"].number) == ("found and first", "found in 3 of 3, first in 3, latency p50 "
                                                                         "0.80 s")
    assert said["disk"].word == "MISSED" and said["disk"].number.startswith("found in 2 of 3")
    assert said["cpu+cpu"].word == "found, not first" and said["cpu+cpu"].tone == "unsure"
    assert said["harmony"].word == "quiet" and said["own-quota"].word == "FALSE BLAME"
    assert said["memory"].word == "n/a"


def test_a_victim_kinds_answer_is_the_share_it_kept():
    from contend.kinds.diskfill.report import answers as diskfill
    from contend.kinds.oltp.report import answers as oltp
    rows = [row("runc", "large-file", "disk", "guest", "read_iops_drop_pct", 3.0, 1.0, 5.0),
            row("runc", "large-file", "disk", "guest", "write_iops_drop_pct", 40.0, 35.0, 45.0),
            row("runsc", "large-file", "disk", "guest", "read_iops_drop_pct", 1.0, 0.0, 2.0),
            row("runsc", "large-file", "disk", "guest", "write_iops_drop_pct", 2.0, 1.0, 3.0)]
    said = {a.subject[0]: a for a in diskfill(rows, ["runc", "runsc"], ["large-file"])}
    assert said["runc"].word == "NOT isolated" and said["runc"].number == "write IOPS kept 0.60 ± 0.05, n=3"
    assert said["runsc"].word == "isolated"
    rows = [row("runc", "cpu", "postgres:tpcb", "guest", "D", 2.0, 1.0, 3.0),
            row("runc", "memory", "postgres:tpcb", "guest", "D", 30.0, 10.0, 50.0),
            row("runc", "cpu", "mariadb:read", "guest", "D", 50.0, 40.0, 60.0)]  # a query type, not a transaction
    said = {a.subject: a for a in oltp(rows, ["runc"], ["cpu", "memory"])}
    assert set(said) == {("runc", "postgres:tpcb", "cpu"), ("runc", "postgres:tpcb", "memory")}
    assert said[("runc", "postgres:tpcb", "cpu")].word == "isolated"
    assert said[("runc", "postgres:tpcb", "memory")].word == "NOT isolated"
    assert said[("runc", "postgres:tpcb", "memory")].number == "TPS kept 0.70 ± 0.20, n=3"


def test_parallel_containers_share_fairly_or_not_at_their_most():
    from contend.kinds.parallel.report import answers
    rows = [row("runc", "parallel-2", "noploop", "guest", "jain", 0.99, n=2),
            row("runc", "parallel-4", "noploop", "guest", "jain", 0.97, n=4),
            row("runc", "parallel-4", "noploop", "guest", "normalized", 0.49),
            row("runsc", "parallel-4", "noploop", "guest", "jain", 0.70, n=4)]
    said = {a.subject[0]: a for a in answers(rows, ["runc", "runsc"])}
    assert said["runc"].subject == ("runc", "noploop", "parallel-4") and said["runc"].word == "fair"
    assert "0.49× the base runtime alone" in said["runc"].number
    assert said["runsc"].word == "NOT fair" and said["runsc"].tone == "bad"


@pytest.mark.parametrize("curve, points", [((), ""), (((0.0, 1.0), (0.5, 0.6), (1.0, 0.0)),
                                                      "0.0,5.7 60.0,17.0 120.0,34.0")])
def test_a_sparkline_draws_the_victims_level_against_the_neighbours(curve, points):
    from contend.report.answer import Answer, cards, spark_points
    assert spark_points(curve) == points
    (c,) = cards([Answer(("runc", "cpu", "escape"), "isolated", "good", "x", card=("runc", "cpu"), curve=curve)])
    assert c["title"] == "runc · cpu" and c["rows"][0]["label"] == "escape" and c["rows"][0]["spark"] == points
