"""The store: one DuckDB file; a trial and its data land in one transaction; metrics.csv columns."""
from __future__ import annotations

import csv
import datetime
import json
import math

import duckdb
import pytest

from contend.kinds.diskfill.cell import DiskFillCell
from contend.kinds.guard.cell import GuardCell
from contend.kinds.isolation.cell import IsolationCell
from contend.kinds.oltp.cell import OltpCell
from contend.kinds.parallel.cell import ParallelCell
from contend.metrics import StepWindow
from contend.store import CSV_COLUMNS, DB, Store, TrialRecord, write_metrics_csv


def record(tid="runc.harmony.cpu.r1", status="ok"):
    return TrialRecord(trial_id=tid, runtime="runc", repetition=1, cell=IsolationCell("harmony", "cpu", {"l_d": 0.5}),
                       capacity={"cpus": 2}, facts={"cgroups": {"mode": "hybrid"}}, status=status,
                       started_at=1.7e9, ended_at=1.7e9 + 30)


def test_trial_round_trip(tmp_path):
    steps = [StepWindow(0, "baseline", 0.0, 4.0, {"abiding": 0.5, "disruptive": 0.0}),
             StepWindow(1, "ramp", 4.0, 8.0, {"abiding": 0.5, "disruptive": 0.25})]
    samples = [(0.1 * i, "abiding", "cgroup", "cpu", 1.0) for i in range(80)]
    with Store(tmp_path) as s:
        s.add_trial(record(), steps, samples, [(5.0, "abiding", "oom-kill", "1 process(es) killed")])
    with Store(tmp_path, read_only=True, cell=IsolationCell) as s:
        (t,) = s.trials()
        assert t["status"] == "ok" and t["capacity"] == {"cpus": 2} and t["scenario_params"]["l_d"] == 0.5
        assert t["cell"] == record().cell
        assert (t["kind"], t["scenario"], t["resource"]) == ("isolation", "harmony", "cpu")
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
    with Store(merged, cell=IsolationCell) as m:
        m.add_trial(record("runc.harmony.cpu.r1"), [], [(0.0, "abiding", "cgroup", "cpu", 9.0)], [])  # replaced
        assert m.merge(a) == ["runc.harmony.cpu.r1"] and m.merge(b) == ["runsc.harmony.cpu.r1"]
        assert sorted((t["trial_id"], t["status"]) for t in m.trials()) == [
            ("runc.harmony.cpu.r1", "ok"), ("runsc.harmony.cpu.r1", "failed")]
        smp = m.samples("runc.harmony.cpu.r1")
        assert len(smp.t) == 5 and set(smp.value) == {1.0}
        assert [w.ideal for w in m.steps("runc.harmony.cpu.r1")] == [{"abiding": 0.5}]
        assert [e["kind"] for e in m.events()] == ["oom-kill"]
        assert m.trials()[0]["capacity"] == {"cpus": 2}


# ---------------------------------------------------------------- each kind's cell, typed, in a table of its own
CELLS = [IsolationCell("escape", "disk", {"l_d": 0.25}), ParallelCell("stream", 4, {"runs_per_container": 2}),
         GuardCell("workload2", "aridac", {"victim": 0.2}), DiskFillCell({"attackers": 3}),
         OltpCell("postgresql", {"share": 0.5})]
LABELS = [("escape", "disk"), ("parallel-4", "stream"), ("workload2/aridac", "disk"), ("diskfill", "disk"),
          ("oltp", "postgresql")]


@pytest.mark.parametrize("cell,labels", list(zip(CELLS, LABELS)), ids=[c.kind for c in CELLS])
def test_each_kind_keeps_its_cell_in_typed_columns_of_its_own(tmp_path, cell, labels):
    rec = TrialRecord(trial_id="t1", runtime="crun", repetition=2, cell=cell, status="ok")
    with Store(tmp_path) as s:
        s.add_trial(rec, [], [], [])
        cols = dict(s.con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = ?", [cell.table()]).fetchall())
        common = [r[0] for r in s.con.execute("SELECT column_name FROM information_schema.columns "
                                                "WHERE table_name = 'trials'").fetchall()]
    assert "scenario" not in common and "resource" not in common  # no kind bends its data into another's
    if isinstance(cell, ParallelCell):
        assert cols["count"] == "BIGINT" and cols["benchmark"] == "VARCHAR"  # a count is a number
    with Store(tmp_path, read_only=True, cell=type(cell)) as s:
        (t,) = s.trials()
    assert t["cell"] == cell and (t["scenario"], t["resource"]) == labels and t["kind"] == cell.kind
    assert (t["runtime"], t["repetition"], t["status"]) == ("crun", 2, "ok")
    with Store(tmp_path, read_only=True) as s:  # without its kind: what every trial has
        (t,) = s.trials()
    assert t["trial_id"] == "t1" and "scenario" not in t


def test_merge_refuses_another_kinds_trials(tmp_path):
    a, m = tmp_path / "a", tmp_path / "m"
    a.mkdir(), m.mkdir()
    with Store(a) as s:
        s.add_trial(TrialRecord(trial_id="t1", runtime="runc", repetition=1, cell=CELLS[1]), [], [], [])
    with Store(m, cell=IsolationCell) as s, pytest.raises(ValueError, match="holds parallel trials, not isolation"):
        s.merge(a)


# The trials table as contend wrote it before each kind had a cell table (009df28 and earlier).
BEFORE_CELLS = """
CREATE TABLE trials (
    trial_id VARCHAR PRIMARY KEY, runtime VARCHAR, scenario VARCHAR, resource VARCHAR, repetition INTEGER,
    status VARCHAR, reason VARCHAR, started_at TIMESTAMP, ended_at TIMESTAMP,
    scenario_params JSON, capacity JSON, facts JSON);
CREATE TABLE trial_metrics (trial_id VARCHAR, view VARCHAR, metric VARCHAR, value DOUBLE);
"""
OLD_ROWS = {  # kind: (scenario, resource, scenario_params) as each kind stored them, and the cell it becomes
    "parallel": (("parallel-4", "stream", {"count": 4, "runs_per_container": 2}),
                 ParallelCell("stream", 4, {"runs_per_container": 2})),
    "guard": (("workload2/aridac", "disk", {"victim": 0.2, "policy": "aridac"}),
              GuardCell("workload2", "aridac", {"victim": 0.2, "policy": "aridac"})),
    "oltp": (("oltp", "mariadb", {"share": 0.5}), OltpCell("mariadb", {"share": 0.5})),
    "diskfill": (("diskfill", "disk", {"attackers": 3}), DiskFillCell({"attackers": 3})),
    "isolation": (("steal", "memory", {"l_d": 0.5}), IsolationCell("steal", "memory", {"l_d": 0.5})),
}


@pytest.mark.parametrize("kind", OLD_ROWS)
def test_a_directory_written_before_cells_is_converted_when_its_kind_opens_it(tmp_path, kind):
    (scenario, resource, params), cell = OLD_ROWS[kind]
    con = duckdb.connect(str(tmp_path / DB))
    con.execute(BEFORE_CELLS)
    con.execute("INSERT INTO trials VALUES ('t1', 'runc', ?, ?, 1, 'ok', '', to_timestamp(1.7e9), "
                "to_timestamp(1.7e9 + 9), ?, '{\"cpus\": 2}', '{}')", [scenario, resource, json.dumps(params)])
    con.execute("INSERT INTO trial_metrics VALUES ('t1', 'host', 'x', 0.5)")
    con.close()
    with Store(tmp_path, read_only=True) as s:  # read as it is: what resume and collect need
        (t,) = s.trials()
        assert (t["trial_id"], t["status"], t["scenario"]) == ("t1", "ok", scenario)
        with pytest.raises(ValueError, match=f"written by an older contend; `contend report {tmp_path}` converts"):
            s.bind(type(cell))
    with Store(tmp_path, cell=type(cell)) as s:  # converted
        (t,) = s.trials()
        assert t["cell"] == cell and (t["scenario"], t["resource"]) == (scenario, resource)
        assert t["capacity"] == {"cpus": 2} and t["ended_at"] - t["started_at"] == datetime.timedelta(seconds=9)
        assert s.trial_metric_rows()[0] | {"trial_id": None} == {
            "runtime": "runc", "scenario": scenario, "resource": resource, "view": "host", "metric": "x",
            "value": 0.5, "trial_id": None}
    with Store(tmp_path, read_only=True, cell=type(cell)) as s:  # and stays so
        assert s.trials()[0]["cell"] == cell
