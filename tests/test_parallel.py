"""The parallel suite (CoPTS): each benchmark's parser on the benchmark's real output, the normalisation on
known numbers, the spec's rules, and a small study end to end in real containers, including a benchmark
that fails inside its container while the rest of the matrix goes on."""
from __future__ import annotations

import csv
import json
import math
import subprocess
import sys

import duckdb
import pytest

from contend.kinds import parse
from contend.kinds.parallel.benchmarks import (
    BENCHMARKS,
    BenchmarkError,
    build_tools,
    last_level_cache_mib,
    parse_fio,
    parse_linpack,
    parse_noploop,
    parse_pidigits,
    parse_stream,
    parse_sysbench_cpu,
    parse_sysbench_memory,
)
from contend.kinds.parallel.metrics import Run, jain, scaling_metrics
from contend.spec import SpecError

from .conftest import find, needs_root, planned_trials, require


# ---------------------------------------------------------------- the benchmarks, on the host, real output
@pytest.fixture(scope="module")
def tools(tmp_path_factory, root):
    require("cc")
    return build_tools(tmp_path_factory.mktemp("tools"))


def run(argv: list[str]) -> str:
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_linpack_solves_and_reports_mflops(tools):
    out = run([str(tools / "linpack"), "200", "0.2"])
    assert float(out.split("max_error=")[1].split()[0]) < 1e-9  # x = 1 recovered: the solve is right
    fig = parse_linpack(out)
    assert 50 < fig["mflops"] < 1e6


def test_linpack_refuses_a_bad_size(tools):
    p = subprocess.run([str(tools / "linpack"), "1", "0"], capture_output=True, text=True)
    assert p.returncode == 2 and "N must be" in p.stderr


def test_noploop_clock_is_its_count_over_its_time(tools):
    out = run([str(tools / "noploop"), "3e8"])
    fig = parse_noploop(out)
    assert fig["ghz"] == pytest.approx(3e8 / fig["seconds"] / 1e9, rel=1e-3)
    assert 0.3 < fig["ghz"] < 8  # a clock, not the NOP retire rate (several per cycle)
    nop = parse_noploop(run([str(tools / "noploop"), "3e8", "nop"]))
    assert nop["ghz"] > fig["ghz"]  # plain NOPs retire faster than one per cycle: why the default is a chain


def test_stream_reports_four_validated_rates(tools):
    fig = parse_stream(run([str(tools / "stream"), "16", "3"]))
    assert set(fig) == {"copy_mb_s", "scale_mb_s", "add_mb_s", "triad_mb_s"}
    assert all(100 < v < 1e6 for v in fig.values())


def test_pidigits_digits_match_bc(tools):
    """The stand-in must compute pi, not just take time: its digits against bc's."""
    require("bc")
    sys.path.insert(0, str(tools))
    try:
        import pidigits
        mine = pidigits.pi(500)
    finally:
        sys.path.remove(str(tools))
    ref = subprocess.run(["bc", "-l"], input="scale=510; 4*a(1)\n", capture_output=True, text=True,
                         env={"BC_LINE_LENGTH": "0"}).stdout.strip()
    assert mine == ref[:502]
    fig = parse_pidigits(run(["python3", str(tools / "pidigits.py"), "2000"]))
    assert 0 < fig["seconds"] < 60


@needs_root
def test_sysbench_cpu_and_memory_parsers_on_real_output():
    require("sysbench")
    cpu = parse_sysbench_cpu(run(BENCHMARKS["sysbench-cpu"].argv({"max_prime": 10000, "events": 500})))
    assert cpu["seconds"] > 0 and cpu["events_s"] == pytest.approx(500 / cpu["seconds"], rel=0.1)
    mem = parse_sysbench_memory(run(BENCHMARKS["sysbench-memory"].argv({"block": "1K", "total": "256M"})))
    assert 100 < mem["mib_s"] < 1e6


@needs_root
def test_fio_parser_on_real_output(tmp_path):
    require("fio")
    argv = [a.replace("/data/", f"{tmp_path}/") for a in BENCHMARKS["fio"].argv({"size": "8M", "seconds": 1})]
    fig = parse_fio(run([a for a in argv if a != "--direct=1"]))  # tmpfs may refuse O_DIRECT
    assert fig["iops"] > 0 and fig["lat_mean_us"] > 0


@pytest.mark.parametrize("parser", [parse_linpack, parse_noploop, parse_stream, parse_sysbench_cpu,
                                    parse_sysbench_memory, parse_pidigits, parse_fio])
def test_output_without_the_figure_is_an_error_not_a_zero(parser):
    with pytest.raises(BenchmarkError):
        parser("Segmentation fault\n")


def test_last_level_cache_is_the_largest(tmp_path):
    for i, size in enumerate(("48K", "1024K", "32768K")):
        (tmp_path / f"index{i}").mkdir()
        (tmp_path / f"index{i}" / "size").write_text(size + "\n")
    assert last_level_cache_mib(tmp_path) == 32.0
    assert last_level_cache_mib(tmp_path / "none") == 32.0  # unknown: a safe guess


# ---------------------------------------------------------------- the metrics, pure, on known numbers
def runs_of(runtime: str, count: int, values: list[float], bench: str = "linpack", cpu: float = 1.0) -> list[Run]:
    return [Run(runtime, count, bench, f"p{i}c0", {"mflops": v}, {"cpu": cpu, "mem_peak_bytes": 2 ** 20})
            for i, v in enumerate(values)]


def metric(rows, rt, scenario, name, view="guest"):
    return next(r for r in rows if (r["runtime"], r["scenario"], r["metric"], r["view"]) == (rt, scenario, name, view))


def test_normalised_to_runc_isolated_and_loss_from_the_runtimes_own_isolated():
    runs = (runs_of("runc", 1, [100, 100]) + runs_of("runc", 4, [80, 80, 80, 80])
            + runs_of("runsc", 1, [90, 90]) + runs_of("runsc", 4, [60, 60, 60, 60]))
    rows = scaling_metrics(runs, {"linpack": "mflops"}, ["runsc", "runc"])
    assert metric(rows, "runc", "isolated", "normalized")["value"] == pytest.approx(1.0)
    assert metric(rows, "runsc", "isolated", "normalized")["value"] == pytest.approx(0.9)
    assert metric(rows, "runsc", "parallel-4", "normalized")["value"] == pytest.approx(0.6)
    assert metric(rows, "runc", "parallel-4", "loss_pct")["value"] == pytest.approx(-20)
    assert metric(rows, "runsc", "parallel-4", "loss_pct")["value"] == pytest.approx(-100 / 3)
    assert metric(rows, "runc", "parallel-4", "mflops")["n"] == 4
    assert metric(rows, "runc", "parallel-4", "jain")["value"] == pytest.approx(1.0)
    assert metric(rows, "runc", "parallel-4", "mem_peak_mib", "host")["value"] == pytest.approx(1.0)


def test_a_runtime_increase_is_positive_and_the_ci_scales_with_the_base():
    runs = [Run("runc", 1, "pidigits", "p0c0", {"seconds": s}, {}) for s in (9.0, 11.0)]
    runs += [Run("runc", 2, "pidigits", f"p{i}c0", {"seconds": 15.0}, {}) for i in range(2)]
    rows = scaling_metrics(runs, {"pidigits": "seconds"}, ["runc"])
    up = metric(rows, "runc", "parallel-2", "loss_pct")
    assert up["value"] == pytest.approx(50)
    iso = metric(rows, "runc", "isolated", "normalized")
    raw = metric(rows, "runc", "isolated", "seconds")
    assert iso["ci_high"] - iso["ci_low"] == pytest.approx((raw["ci_high"] - raw["ci_low"]) / 10)


def test_a_cells_interval_stays_within_its_figures_range_no_rate_time_or_peak_below_zero():
    """Two runs far apart (9 and 11 s; 0.1 and 5 MFLOPS): Student's t with n = 2 reaches below 0, which no time,
    rate, CPU use or memory peak can be: each interval stops at 0 (metrics/bounds)."""
    runs = [Run("runc", 1, "pidigits", f"p{i}c0", {"seconds": s}, {"cpu": c, "mem_peak_bytes": m})
            for i, (s, c, m) in enumerate([(9.0, 0.1, 2 ** 20), (11.0, 1.9, 99 * 2 ** 20)])]
    runs += runs_of("runc", 1, [0.1, 5.0])
    rows = scaling_metrics(runs, {"pidigits": "seconds", "linpack": "mflops"}, ["runc"])
    for bench, view, name in (("pidigits", "guest", "seconds"), ("pidigits", "host", "cpu"),
                              ("pidigits", "host", "mem_peak_mib"), ("linpack", "guest", "mflops"),
                              ("linpack", "guest", "normalized")):
        (cell,) = [r for r in rows if (r["resource"], r["view"], r["metric"]) == (bench, view, name)]
        assert cell["ci_low"] == 0.0 < cell["value"] < cell["ci_high"], cell


def test_without_runc_the_first_runtime_measured_isolated_is_the_base():
    runs = runs_of("crun", 1, [50]) + runs_of("runsc", 1, [25])
    rows = scaling_metrics(runs, {"linpack": "mflops"}, ["runsc", "crun"])
    assert metric(rows, "runsc", "isolated", "normalized")["value"] == pytest.approx(1.0)
    assert metric(rows, "crun", "isolated", "normalized")["value"] == pytest.approx(2.0)


def test_jain_index():
    assert jain([1, 1, 1, 1]) == pytest.approx(1)
    assert jain([1, 0, 0, 0]) == pytest.approx(0.25)
    assert jain([2, 1]) == pytest.approx(9 / 10)
    assert math.isnan(jain([]))


def test_concurrency_counts_the_runs_going_on_at_once():
    from contend.kinds.parallel.metrics import concurrency
    assert concurrency([(0, 10), (0, 10)]) == pytest.approx(2)
    assert concurrency([(0, 10), (10, 20)]) == pytest.approx(1)
    assert concurrency([(0, 10), (5, 15)]) == pytest.approx(1.5)
    runs = [Run("runc", 2, "linpack", f"p{i}c0", {"mflops": 1}, {}, span) for i, span in enumerate([(0, 4), (2, 6)])]
    rows = scaling_metrics(runs, {"linpack": "mflops"}, ["runc"])
    assert metric(rows, "runc", "parallel-2", "concurrency", "host")["value"] == pytest.approx(1.5)


def test_cpu_share_fairness_per_container():
    runs = [Run("runc", 2, "linpack", "p0c0", {"mflops": 1}, {"cpu": 1.5}),
            Run("runc", 2, "linpack", "p1c0", {"mflops": 1}, {"cpu": 0.5})]
    rows = scaling_metrics(runs + runs_of("runc", 1, [1]), {"linpack": "mflops"}, ["runc"])
    assert metric(rows, "runc", "parallel-2", "jain", "host")["value"] == pytest.approx(4 / 5)


# ---------------------------------------------------------------- the spec
BASE = "kind: parallel\nname: p\nruntimes: [runc]\nbenchmarks: [noploop]\n"


@pytest.mark.parametrize("extra, message", [
    ("counts: [2, 4]\n", "spec: counts: must include 1: the isolated run everything is normalised to"),
    ("counts: [1, 0]\n", "spec: counts[1]: must be between 1 and 1000 containers, got 0"),
    ("counts: [1, 2, 2]\n", "spec: counts[2]: count '2' given twice"),
    ("counts: [1]\nsizes: {stream: {mib_per_array: 0}}\n", "spec: sizes.stream.mib_per_array: must be auto or"),
    ("counts: [1]\nsizes: {sysbench-memory: {total: 10 GB}}\n", "spec: sizes.sysbench-memory.total: must match"),
    ("counts: [1]\nlimits: {cpus: 0}\n", "spec: limits.cpus: must be > 0"),
])
def test_bad_parallel_specs_get_one_line(extra, message):
    with pytest.raises(SpecError) as e:
        parse(BASE + extra)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_unknown_benchmark_is_named():
    with pytest.raises(SpecError, match=r"spec: benchmarks\[0\]: must be one of"):
        parse(BASE.replace("[noploop]", "[y-cruncher]") + "counts: [1]\n")


def test_preset_and_its_quick_pass():
    from pathlib import Path
    spec = parse(Path("presets/copts-middleware23.yaml").read_text())
    assert spec.counts == [1, 10, 20, 30, 40] and spec.limits.memory_bytes == 4 << 30
    q = spec.quickened()
    assert q.counts == [1, 2, 4] and q.name.endswith("-quick") and q.sizes.of("noploop")["count"] == 2e9


# ---------------------------------------------------------------- end to end, real containers
SMALL = """kind: parallel
name: small
runtimes: [runc, runsc]
benchmarks: [noploop, stream]
counts: [1, 2]
runs_per_container: 2
limits: {cpus: 2, memory: 96M}
sizes:
  noploop: {count: 2.0e+8}
  stream: {mib_per_array: %s, ntimes: 2}
"""


@pytest.fixture(scope="module")
def small_study(tmp_path_factory, root):
    """runc and runsc, noploop in 1 and 2 containers; stream with arrays larger than the memory limit,
    so it is OOM-killed in every container: its rows fail, noploop's stand."""
    d = tmp_path_factory.mktemp("parallel")
    (d / "spec.yaml").write_text(SMALL % 64)  # 3 × 64 MiB > 96 MiB
    p = subprocess.run([sys.executable, "-m", "contend.cli", "run", str(d / "spec.yaml"), "--out", str(d / "out"),
                        "--json"], capture_output=True, text=True, timeout=900)
    return d / "out", p


@needs_root
@pytest.mark.slow
def test_small_study_runs_concurrently_and_reports_every_cell(small_study):
    out, p = small_study
    assert p.returncode == 1, p.stdout + p.stderr  # stream failed: exit 1, the rest measured
    con = duckdb.connect(str(out / "contend.duckdb"), read_only=True)
    status = dict(con.execute("SELECT trial_id, status FROM trials").fetchall())
    assert status == {f"{rt}.{b}.{s}": ("ok" if b == "noploop" else "failed")
                      for rt in ("runc", "runsc") for b in ("noploop", "stream") for s in ("isolated", "parallel-2")}
    assert set(status) == planned_trials(out)  # the ids contend trial list gives are the ones recorded
    reason = con.execute("SELECT reason FROM trials WHERE trial_id = 'runc.stream.isolated'").fetchone()[0]
    assert "OOM" in reason or "exited" in reason
    con.close()
    from contend.kinds.parallel.report import load_runs
    from contend.store import Store
    with Store(out, read_only=True) as store:
        trial = next(t for t in store.trials() if t["trial_id"] == "runc.stream.isolated")
        failed = load_runs(store, trial)  # each failed run once, marked with its reason
    assert [(r.run, r.status) for r in failed] == [(0, "failed"), (1, "failed")] and reason in failed[0].reason
    con = duckdb.connect(str(out / "contend.duckdb"), read_only=True)
    # the two containers of parallel-2 ran side by side: their runs overlap in time
    spans = con.execute("SELECT tenant, t - value, t FROM samples WHERE trial_id = 'runc.noploop.parallel-2' "
                        "AND quantity = 'wall_s' ORDER BY t").fetchall()
    first = {tenant: (a, b) for tenant, a, b in reversed(spans)}
    (a0, b0), (a1, b1) = first["p0c0"], first["p1c0"]
    assert a0 < b1 and a1 < b0
    overlap = con.execute("SELECT value FROM metrics WHERE runtime = 'runc' AND scenario = 'parallel-2' "
                          "AND resource = 'noploop' AND metric = 'concurrency'").fetchone()[0]
    assert 1.3 < overlap <= 2.0
    printed = json.loads(p.stdout[p.stdout.index('\n{\n "answers"') + 1:])  # after the table, at the end
    rows = printed["metrics"]
    assert {a["subject"][0] for a in printed["answers"]} == {"runc", "runsc"}  # an answer per runtime at least
    norm = {(r["runtime"], r["scenario"]): r["value"] for r in rows
            if r["resource"] == "noploop" and r["metric"] == "normalized"}
    assert norm[("runc", "isolated")] == pytest.approx(1.0) and set(norm) == {
        (rt, s) for rt in ("runc", "runsc") for s in ("isolated", "parallel-2")}
    assert all(0.2 < v < 2 for v in norm.values())
    # CoPTS's x + 1 files: one per process and all.csv
    cell = out / "copts" / "noploop" / "runc" / "parallel-2"
    assert sorted(f.name for f in cell.iterdir()) == ["all.csv", "process-0.csv", "process-1.csv"]
    with open(cell / "all.csv") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == 4 and {ln["process"] for ln in lines} == {"0", "1"}
    assert all(float(ln["ghz"]) > 0 for ln in lines)
    assert not (out / "copts" / "stream").exists()  # no run measured, no CSV
    tables = (out / "copts-tables.md").read_text()
    assert "noploop (cpu): ghz normalised to runc isolated" in tables and "| failed (1) |" in tables
    assert (out / "figures" / "scaling-noploop.png").stat().st_size > 0
    html = (out / "report.html").read_text()
    assert "Cells with failures" in html and "runc.stream.isolated" in html


@needs_root
@pytest.mark.slow
@pytest.mark.usefixtures("small_study")
def test_no_container_or_data_dir_is_left():
    from contend import runtimes
    from contend.paths import DATA
    assert list(DATA.glob("contend-*")) == []
    for name in ("runc", "runsc"):
        assert runtimes.get(name).leftovers() == []


@needs_root
@pytest.mark.slow
def test_ctrl_c_in_a_parallel_cell_kills_the_runs_removes_every_container_and_keeps_finished_cells(tmp_path):
    import os
    import signal
    import time

    spec = tmp_path / "s.yaml"
    spec.write_text("kind: parallel\nname: intr\nruntimes: [runc]\nbenchmarks: [noploop]\ncounts: [1, 3]\n"
                    "sizes: {noploop: {count: 1.5e+10}}\n")  # a few seconds per run
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "contend.cli", "run", str(spec), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while len([x for x in find() if "container" in x.kind and "doctor" not in x.name]) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, "the three containers never came up"
        time.sleep(0.2)
    time.sleep(1)  # the three runs going
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout[-1500:] + stderr[-1500:]
    assert find() == [], "contend clean --dry-run would find leftovers"
    con = duckdb.connect(str(out / "contend.duckdb"), read_only=True)
    assert con.execute("SELECT trial_id, status FROM trials").fetchall() == [("runc.noploop.isolated", "ok")]
    assert (out / "report.html").exists()
