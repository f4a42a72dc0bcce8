"""contend compare: the verdicts on cells with known answers (pure), and the command on results directories
written here (no root: compare reads only metrics.csv)."""
from __future__ import annotations

import json
import math
from functools import partial

import pytest

import contend.metrics.compare as comparing
from contend.kinds import KINDS, directions
from contend.metrics.compare import regressions, tally
from contend.store import read_metrics_csv, write_metrics_csv

from .conftest import contend

NAN = math.nan
compare = partial(comparing.compare, directions=directions())  # every kind's, as contend compare judges


def row(metric, value, lo=NAN, hi=NAN, n=3, runtime="runc", scenario="escape", resource="cpu", view="host"):
    return {"runtime": runtime, "scenario": scenario, "resource": resource, "view": view, "metric": metric,
            "value": value, "ci_low": lo, "ci_high": hi, "n": n}


def verdicts(a, b, **kw):
    return [c.verdict for c in compare(a, b, **kw)]


def test_intervals_apart_on_the_worse_side_are_worse_and_on_the_better_side_better():
    a = [row("I_plr", 0.90, 0.85, 0.95), row("escape", 1.00, 0.98, 1.02)]
    worse = [row("I_plr", 0.60, 0.55, 0.65), row("escape", 1.40, 1.30, 1.50)]  # escape: lower is better
    better = [row("I_plr", 1.00, 0.97, 1.03), row("escape", 0.80, 0.75, 0.85)]
    assert verdicts(a, worse) == ["worse", "worse"]
    assert verdicts(a, better) == ["better", "better"]
    c = compare(a, worse)[0]
    assert c.change == pytest.approx(-0.30) and c.overlap is False


def test_overlapping_intervals_or_a_tiny_change_are_the_same():
    a = [row("I_intFree", 0.50, 0.40, 0.60), row("S_I", 0.800, 0.799, 0.801)]
    b = [row("I_intFree", 0.45, 0.35, 0.55), row("S_I", 0.790, 0.789, 0.791)]  # apart, but by 0.01 < 0.05
    assert verdicts(a, b) == ["same", "same"]
    assert compare(a, b)[0].overlap is True and compare(a, b)[1].overlap is False
    assert verdicts(a, b, min_change=0.0) == ["same", "worse"]


def test_one_repetition_is_untested_descriptive_metrics_never_judged():
    a = [row("I_plr", 0.9, n=1), row("W_a_ref", 0.5, 0.4, 0.6)]
    b = [row("I_plr", 0.1, n=1), row("W_a_ref", 0.1, 0.05, 0.15)]
    assert verdicts(a, b) == ["untested", "descriptive"]
    assert regressions(compare(a, b)) == []


def test_unmeasured_and_one_sided_cells():
    a = [row("I_plr", NAN, n=0), row("I_plr", 0.9, 0.8, 1.0, runtime="crun")]
    b = [row("I_plr", 0.9, 0.8, 1.0), row("I_plr", 0.9, 0.8, 1.0, runtime="runsc")]
    got = {(c.runtime, c.verdict) for c in compare(a, b)}
    assert got == {("runc", "not measured"), ("crun", "only in A"), ("runsc", "only in B")}
    t = tally(compare(a, b))
    assert t["only in A"] == t["only in B"] == t["not measured"] == 1 and sum(t.values()) == 3


def test_json_of_a_comparison_has_no_nan():
    c = compare([row("I_plr", 0.9, n=1)], [row("I_plr", 0.8, n=1)])[0]
    text = json.dumps(c.as_dict(), allow_nan=False)
    assert json.loads(text)["a"]["ci_low"] is None


def test_metrics_csv_round_trip_and_clear_errors(tmp_path):
    rows = [row("I_plr", 0.9, 0.8, 1.0), row("escape", NAN, n=0)]
    write_metrics_csv(tmp_path / "metrics.csv", rows)
    back = read_metrics_csv(tmp_path / "metrics.csv")
    assert back[0]["value"] == 0.9 and back[0]["n"] == 3 and math.isnan(back[1]["value"])
    bad = tmp_path / "bad.csv"
    bad.write_text("runtime,scenario,resource,view,metric,value,ci_low,ci_high,n\nrunc,e,cpu,host,I_plr,abc,,,1\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: value: not a number"):
        read_metrics_csv(bad)
    bad.write_text("a,b\n")
    with pytest.raises(ValueError, match=r"bad.csv:1: not a contend metrics.csv"):
        read_metrics_csv(bad)


# ---------------------------------------------------------------- the command
def results(path, rows):
    path.mkdir()
    write_metrics_csv(path / "metrics.csv", rows)
    return path


def test_compare_gates_on_a_significantly_worse_metric(tmp_path):
    base = [row("I_plr", 0.90, 0.85, 0.95), row("I_intFree", 0.70, 0.60, 0.80, resource="disk")]
    a = results(tmp_path / "a", base)
    same = results(tmp_path / "b", [row("I_plr", 0.88, 0.83, 0.93), row("I_intFree", 0.72, 0.6, 0.84, resource="disk")])
    doctored = results(tmp_path / "c", [base[0], row("I_intFree", 0.30, 0.25, 0.35, resource="disk")])
    p = contend("compare", str(a), str(same))
    assert p.returncode == 0, p.stderr
    assert "nothing significantly worse" in p.stdout
    p = contend("compare", str(a), str(doctored))
    assert p.returncode == 1, p.stderr
    assert "1 significantly worse" in p.stdout and "I_intFree" in p.stdout
    p = contend("compare", str(a), str(doctored), "--json")
    assert p.returncode == 1
    doc = json.loads(p.stdout)
    assert doc["worse"] == 1 and doc["tally"]["same"] == 1
    (w,) = [c for c in doc["comparisons"] if c["verdict"] == "worse"]
    assert (w["resource"], w["metric"], w["overlap"]) == ("disk", "I_intFree", False)
    assert w["change"] == pytest.approx(-0.40)


def test_compare_prints_what_a_metrics_csv_says_as_text_never_as_markup(tmp_path):
    """Issue 52 L2: a `[/oops]` in metrics.csv was a Rich traceback; an escape sequence cleared the terminal."""
    evil = "[/oops][bold]x\x1b[2J"
    a = results(tmp_path / "a", [row("I_plr", 0.90, 0.85, 0.95, scenario=evil)])
    b = results(tmp_path / "b", [row("I_plr", 0.30, 0.25, 0.35, scenario=evil)])
    p = contend("compare", str(a), str(b))
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "[/oops][bold]x\\x1b[2J" in p.stdout and "\x1b[2J" not in p.stdout, p.stdout


def test_compare_bad_input_is_one_line_exit_2(tmp_path):
    a = results(tmp_path / "a", [row("I_plr", 0.9)])
    other = results(tmp_path / "o", [row("isol_mean", 0.9, runtime="runc", scenario="workload1/contend")])
    (tmp_path / "empty").mkdir()
    for args, msg in (((str(a), str(tmp_path / "nope")), "no such results directory"),
                      ((str(a), str(tmp_path / "empty")), "no metrics.csv"),
                      ((str(a), str(other)), "share no cell"),
                      ((str(a), str(a), "--min-change", "-1"), "")):
        p = contend("compare", *args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "Traceback" not in p.stderr and msg in p.stderr


# ---------------------------------------------------------------- every metric has a direction
SYNTHETIC_OUTPUT = {  # the least output each benchmark's parser takes
    "linpack": "MFLOPS: 100", "noploop": "GHz: 2.0\nseconds=1.0",
    "stream": "Copy: 1 MB/s\nScale: 1 MB/s\nAdd: 1 MB/s\nTriad: 1 MB/s",
    "sysbench-cpu": "total time: 1.0s\nevents per second: 10", "sysbench-memory": "MiB transferred (100.0 MiB/sec)",
    "pidigits": "seconds: 1.0", "fio": '{"jobs": [{"read": {"iops": 1}, "write": {"iops": 1}}]}',
}


def metric_names_of_every_kind() -> set[str]:
    """What each kind's own pure producers write into metrics.csv, from synthetic inputs."""
    import numpy as np

    from contend.kinds.detect.metrics import Truth, cell_figures, trial_metrics
    from contend.kinds.diskfill.metrics import DISKFILL_RULES
    from contend.kinds.guard.metrics import guest_metrics, protection_metrics
    from contend.kinds.isolation.rows import trial_rows
    from contend.kinds.oltp.metrics import OLTP_RULES
    from contend.kinds.parallel.benchmarks import BENCHMARKS
    from contend.kinds.parallel.metrics import Run, scaling_metrics
    from contend.load.fio import victim_figures
    from contend.metrics import Curve
    from contend.metrics.victim import Window, paired

    x = np.linspace(0, 1, 5)
    views = [Curve(v, x, x, 0.5 - 0.2 * x, np.arange(10.0), np.full(10, 0.4)) for v in ("host", "ebpf", "guest")]
    names = {m for _, m, _ in trial_rows("cpu", views, 0.5)}
    t = np.arange(0, 10, 0.1)
    names |= set(protection_metrics(t, np.ones_like(t), np.ones_like(t), 3, 6, 1.0, t, np.ones_like(t)))
    names |= set(guest_metrics(t, np.ones_like(t), t, np.ones_like(t), 3, 6))
    fio = {"jobs": [{"jobname": d, d: {"iops": 1, "clat_ns": {"mean": 1, "percentile": {"50.000000": 1,
                                                                                      "99.000000": 2}}}}
                    for d in ("read", "write")]}
    disk = {**victim_figures(fio), "read_iops_min": 1.0, "write_iops_min": 1.0}
    host = {"device_util": 1, "device_queue_depth": 1, "device_wbytes_s": 1, "attackers_charged_pct": 1,
            "victim_charged_pct": 1, "victim_cpu": 1, "oom_kills": 0}  # metrics/degradation._host_figures
    windows = [Window("runc", sc, "disk", 1, "guest", disk) for sc in ("base", "attack")]
    windows += [Window("runc", sc, "db:tpcb", 1, "guest", {"tps": 1.0, "lat_ms": 1.0}) for sc in ("base", "cpu")]
    windows += [Window("runc", sc, "disk", 1, "host", host) for sc in ("base", "attack")]
    names |= {r["metric"] for r in paired(windows, "base", {**DISKFILL_RULES, **OLTP_RULES})}
    runs = [Run("runc", n, b.name, f"p0c{i}", b.parse(SYNTHETIC_OUTPUT[b.name]), {"cpu": 1.0, "mem_peak_bytes": 1.0},
                (0.0, 1.0)) for b in BENCHMARKS.values() for n in (1, 2) for i in range(n)]
    names |= {r["metric"] for r in scaling_metrics(runs, {b.name: b.figure for b in BENCHMARKS.values()}, ["runc"])}
    blame = {"t": 6.0, "event": "blame", "victim": "victim", "resource": "cpu", "culprit": "noisy"}
    for antagonist in (True, False):
        m = trial_metrics([blame], Truth(antagonist, "cpu", 5.0, 10.0, 12.0))
        names |= set(m) | set(cell_figures([m], [12 / 3600]))
    names.add("watch_cpu_pct")  # kinds/detect/report.judged
    return names


def test_every_metric_that_metrics_csv_can_hold_has_a_direction():
    from contend.metrics.directions import FOLLOWS_HEADLINE, direction
    names = metric_names_of_every_kind()
    assert {"I_intFree", "lat_imp", "D", "normalized", "read_p99_x", "jain"} <= names  # every kind is in
    assert sorted(m for m in names if direction(m, directions(), headline=1) is None) == []
    assert set(directions()) | set(FOLLOWS_HEADLINE) >= names


def test_each_kind_names_its_own_directions_and_no_two_kinds_disagree_on_a_metric():
    """A kind's directions live in its folder (its metrics' DIRECTIONS, in its class line); a metric two kinds
    both write (the guard's isol_* and the isolation study's, a victim window's own figures) is judged one way."""
    seen: dict[str, tuple[str, int]] = {}
    for name, kind in KINDS.items():
        assert kind.directions, name
        assert kind.__module__.startswith(f"contend.kinds.{name}."), kind
        for metric, way in kind.directions.items():
            assert seen.setdefault(metric, (name, way))[1] == way, (metric, name, seen[metric])


@pytest.mark.parametrize("metric,a,b,verdict", [
    ("lat_imp", 0.10, 0.80, "worse"),  # latency impact up: a regression (it was "better" before)
    ("lat_imp", 0.80, 0.10, "better"),
    ("escape", 1.0, 1.5, "worse"), ("loss", 0.1, 0.5, "worse"), ("reaction_s", 1.0, 3.0, "worse"),
    ("I_intFree", 0.9, 0.4, "worse"), ("isol_p05", 0.9, 0.4, "worse"), ("work_conservation", 0.9, 0.4, "worse"),
    ("D", 5.0, 40.0, "worse"), ("read_lat_x", 1.0, 3.0, "worse"), ("tps", 400.0, 200.0, "worse"),
    ("W_a_ref", 0.5, 0.1, "descriptive"), ("tps_base", 400.0, 100.0, "descriptive"),
])
def test_each_metric_is_judged_in_its_own_direction(metric, a, b, verdict):
    assert verdicts([row(metric, a, a - 0.01, a + 0.01)], [row(metric, b, b - 0.01, b + 0.01)]) == [verdict]


def test_the_parallel_suites_ratios_follow_their_benchmarks_headline():
    a = [row("normalized", 1.0, 0.99, 1.01, resource=r) for r in ("sysbench-cpu", "linpack")]
    b = [row("normalized", 1.5, 1.49, 1.51, resource=r) for r in ("sysbench-cpu", "linpack")]
    # sysbench-cpu's headline is seconds (lower is better), linpack's MFLOPS (higher)
    assert verdicts(a, b, headlines={"sysbench-cpu": -1, "linpack": 1}) == ["worse", "better"]
    assert verdicts(a, b) == ["unknown", "unknown"]  # no headline known: never judged


def test_a_latency_regression_fails_the_gate(tmp_path):
    a = results(tmp_path / "a", [row("lat_imp", 0.10, 0.05, 0.15, view="guest", scenario="burst")])
    b = results(tmp_path / "b", [row("lat_imp", 0.90, 0.85, 0.95, view="guest", scenario="burst")])
    p = contend("compare", str(a), str(b))
    assert p.returncode == 1 and "lat_imp" in p.stdout
