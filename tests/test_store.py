"""The store: one DuckDB file; a trial and its data land in one transaction; metrics.csv columns."""
from __future__ import annotations

import csv
import math

import pytest

from contend.metrics import StepWindow
from contend.store import CSV_COLUMNS, Store, TrialRecord, write_metrics_csv


def record(tid="runc.harmony.cpu.r1", status="ok"):
    return TrialRecord(tid, "runc", "harmony", "cpu", 1, status, "", 1.7e9, 1.7e9 + 30,
                       {"l_d": 0.5}, {"cpus": 2}, {"cgroups": {"mode": "hybrid"}})


def test_trial_round_trip(tmp_path):
    steps = [StepWindow(0, "baseline", 0.0, 4.0, {"abiding": 0.5, "disruptive": 0.0}),
             StepWindow(1, "ramp", 4.0, 8.0, {"abiding": 0.5, "disruptive": 0.25})]
    samples = [(0.1 * i, "abiding", "cgroup", "cpu", 1.0) for i in range(80)]
    with Store(tmp_path) as s:
        s.add_trial(record(), steps, samples, [(5.0, "abiding", "oom-kill", "1 process(es) killed")])
    with Store(tmp_path, read_only=True) as s:
        (t,) = s.trials()
        assert t["status"] == "ok" and t["capacity"] == {"cpus": 2} and t["scenario_params"]["l_d"] == 0.5
        got = s.steps(t["trial_id"])
        assert [(w.step, w.phase, w.ideal) for w in got] == [(w.step, w.phase, w.ideal) for w in steps]
        smp = s.samples(t["trial_id"])
        assert len(smp.t) == 80 and smp.series("abiding", "cgroup", "cpu")[1].sum() == pytest.approx(80)
        assert s.events()[0]["kind"] == "oom-kill"


def test_rewriting_a_trial_replaces_it(tmp_path):
    with Store(tmp_path) as s:
        s.add_trial(record(), [], [(0.0, "a", "cgroup", "cpu", 1.0)], [])
        s.add_trial(record(), [], [(0.0, "a", "cgroup", "cpu", 2.0)] * 3, [])
        assert len(s.trials()) == 1 and len(s.samples("runc.harmony.cpu.r1").t) == 3


def test_a_failed_write_leaves_no_half_trial(tmp_path):
    with Store(tmp_path) as s:
        with pytest.raises(ValueError):  # the sample's value is not a number
            s.add_trial(record(), [], [(0.0, "a", "cgroup", "cpu", "not a number")], [])
        assert s.trials() == [] and len(s.samples("runc.harmony.cpu.r1").t) == 0


def test_read_only_store_of_a_non_results_directory(tmp_path):
    with pytest.raises(FileNotFoundError):
        Store(tmp_path, read_only=True)


def test_metrics_csv_has_the_design_columns_and_empty_cells_for_nan(tmp_path):
    rows = [{"runtime": "runc", "scenario": "harmony", "resource": "cpu", "view": "host", "metric": "I_plr",
             "value": 0.97, "ci_low": math.nan, "ci_high": math.nan, "n": 1}]
    write_metrics_csv(tmp_path / "m.csv", rows)
    with open(tmp_path / "m.csv") as f:
        r = list(csv.reader(f))
    assert tuple(r[0]) == CSV_COLUMNS == ("runtime", "scenario", "resource", "view", "metric", "value",
                                          "ci_low", "ci_high", "n")
    assert r[1] == ["runc", "harmony", "cpu", "host", "I_plr", "0.97", "", "", "1"]


def test_merge_takes_every_trial_with_its_data_and_replaces_same_ids(tmp_path):
    a, b, merged = tmp_path / "a", tmp_path / "b", tmp_path / "m"
    a.mkdir(), b.mkdir(), merged.mkdir()
    steps = [StepWindow(0, "baseline", 0.0, 4.0, {"abiding": 0.5})]
    with Store(a) as s:
        s.add_trial(record("runc.harmony.cpu.r1"), steps, [(0.0, "abiding", "cgroup", "cpu", 1.0)] * 5,
                    [(1.0, "abiding", "oom-kill", "x")])
    with Store(b) as s:
        s.add_trial(record("runsc.harmony.cpu.r1", "failed"), [], [], [])
    with Store(merged) as m:
        m.add_trial(record("runc.harmony.cpu.r1"), [], [(0.0, "abiding", "cgroup", "cpu", 9.0)], [])  # replaced
        assert m.merge(a) == ["runc.harmony.cpu.r1"] and m.merge(b) == ["runsc.harmony.cpu.r1"]
        assert sorted((t["trial_id"], t["status"]) for t in m.trials()) == [
            ("runc.harmony.cpu.r1", "ok"), ("runsc.harmony.cpu.r1", "failed")]
        smp = m.samples("runc.harmony.cpu.r1")
        assert len(smp.t) == 5 and set(smp.value) == {1.0}
        assert [w.ideal for w in m.steps("runc.harmony.cpu.r1")] == [{"abiding": 0.5}]
        assert [e["kind"] for e in m.events()] == ["oom-kill"]
        assert m.trials()[0]["capacity"] == {"cpus": 2}
