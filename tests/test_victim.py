"""The victim studies: the disk-fill attack (WISA 2025) and the database victim (PDP 2015).

Pure parts (sizes, the disk-safety rule, D and its pairing, the repetition rule, parsers' error paths)
without root; the databases, the attack and both studies end to end against real containers."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from contend.cgroups import Limits, detect
from contend.kinds import parse
from contend.kinds.diskfill.metrics import DISKFILL_RULES
from contend.kinds.diskfill.study import attack_sizes, space_problem
from contend.kinds.oltp.metrics import OLTP_RULES, converged
from contend.kinds.oltp.study import bomb
from contend.load.database import DATABASES, DatabaseError, parse_pgbench, parse_sysbench
from contend.load.fio import iops_log, victim_argv, victim_figures
from contend.metrics.victim import Window, paired
from contend.probes.device import device_rates
from contend.spec import SpecError

from .conftest import find, needs_root, planned_trials, runtime_or_skip

GiB = 1 << 30
DISKFILL = "kind: diskfill\nname: d\nruntimes: [runc]\n"
OLTP = "kind: oltp\nname: o\nruntimes: [runc]\ndatabases: [mariadb]\ndisruptors: [cpu-bomb]\n"


# ---------------------------------------------------------------- sizes and the disk-safety rule
def test_attack_sizes_share_a_multiple_of_memory_among_the_attackers():
    assert attack_sizes(24 * GiB, {"fits-memory": 0.5, "beyond-memory": 1.5}, 3) == {
        "fits-memory": 4 * GiB, "beyond-memory": 12 * GiB}
    # whole MiB (dd's blocks), never 0
    assert attack_sizes(1000 * (1 << 20) + 7, {"x": 0.001}, 3) == {"x": 1 << 20}


def test_an_attack_that_would_leave_less_than_the_margin_is_refused():
    assert space_problem(70 * GiB, 36 * GiB, 25 * GiB, "/d") == ""
    why = space_problem(70 * GiB, 36 * GiB, 40 * GiB, "/d")
    assert why == ("/d: the largest attack writes 36.0 GiB and would leave 34.0 GiB of 70.0 GiB free, below the "
                   "safety margin of 40.0 GiB (lower files.beyond-memory, or free_margin)")
    assert "leave 0.0 GiB" in space_problem(10 * GiB, 36 * GiB, 1 * GiB, "/d")


def test_free_margin_is_a_share_of_the_file_system_or_a_size():
    assert parse(DISKFILL).margin_bytes(100 * GiB) == 10 * GiB
    assert parse(DISKFILL + "free_margin: 20G\n").margin_bytes(100 * GiB) == 20 * GiB
    assert parse(DISKFILL + "free_margin: 2.5%\n").margin_bytes(1000) == 25


@pytest.mark.parametrize("doc, message", [
    (DISKFILL + "files: {fits-memory: 1.5}\n", "spec: files.fits-memory: must be < 1"),
    (DISKFILL + "files: {beyond-memory: 0.5}\n", "spec: files.beyond-memory: must be > 1"),
    (DISKFILL + "files: {fits-memory: null, beyond-memory: null}\n",
     "spec: files: at least one of fits-memory and beyond-memory"),
    (DISKFILL + "free_margin: 10 percent\n", "spec: free_margin: must match"),
    (DISKFILL + "free_margin: 0%\n", "spec: free_margin: must leave some space free"),
    (DISKFILL + "free_margin: '0'\n", "spec: free_margin: must leave some space free"),
    (DISKFILL + "attackers: 0\n", "spec: attackers: must be >= 1"),
    (DISKFILL + "victim: {seconds: 0}\n", "spec: victim.seconds: must be > 0"),
    (OLTP.replace("[mariadb]", "[oracle]"), "spec: databases[0]: must be one of"),
    (OLTP.replace("[cpu-bomb]", "[cpu-bomb, cpu-bomb]"), "spec: disruptors[1]: disruptor 'cpu-bomb' given twice"),
    (OLTP.replace("[cpu-bomb]", "[io-bomb]"), "spec: disruptors[0]: must be one of"),
    (OLTP + "repetitions: {min: 5, max: 3}\n", "spec: repetitions: max (3) must be >= min (5)"),
    (OLTP + "share: 0\n", "spec: share: must be > 0"),
    (OLTP + "load: {rate: 1.5}\n", "spec: load.rate: must be <= 1"),
])
def test_bad_victim_specs_get_one_line(doc, message):
    with pytest.raises(SpecError) as e:
        parse(doc)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)


def test_presets_and_their_quick_passes():
    d = parse(Path("presets/wisa25-diskfill.yaml").read_text())
    assert d.files.multiples() == {"fits-memory": 0.5, "beyond-memory": 1.5} and d.limits.memory_bytes == GiB
    assert d.quickened().repetitions == 1 and d.quickened().name == "wisa25-diskfill-quick"
    o = parse(Path("presets/xavier-pdp15-oltp.yaml").read_text())
    assert o.share == 0.5 and o.repetitions.ci_pct == 2 and o.disruptors == ["cpu-bomb", "memory-bomb", "disk-bomb"]
    assert o.repeated(4).repetitions.min == o.repeated(4).repetitions.max == 4
    assert o.quickened().load.seconds < o.load.seconds


# ---------------------------------------------------------------- the metrics
def test_d_and_the_iops_drop_pair_each_repetition_with_its_own_base():
    w = [Window("runc", "baseline", "disk", 1, figures={"read_iops": 1000, "read_lat_us": 50}),
         Window("runc", "fits-memory", "disk", 1, figures={"read_iops": 400, "read_lat_us": 100, "read_iops_min": 10}),
         Window("runc", "baseline", "disk", 2, figures={"read_iops": 2000, "read_lat_us": 50}),
         Window("runc", "fits-memory", "disk", 2, figures={"read_iops": 2000, "read_lat_us": 25}),
         Window("runsc", "fits-memory", "disk", 1, figures={"read_iops": 10})]  # no base: nothing paired
    rows = {(r["runtime"], r["repetition"], r["metric"]): r["value"] for r in paired(w, "baseline", DISKFILL_RULES)
            if r["scenario"] == "fits-memory"}
    assert rows[("runc", 1, "read_iops_drop_pct")] == pytest.approx(60.0)
    assert rows[("runc", 1, "read_lat_x")] == pytest.approx(2.0)
    assert rows[("runc", 1, "read_iops_worst_drop_pct")] == pytest.approx(99.0)  # its worst 500 ms vs the base mean
    assert rows[("runc", 2, "read_iops_drop_pct")] == pytest.approx(0.0)
    assert rows[("runc", 2, "read_lat_x")] == pytest.approx(0.5)
    assert ("runsc", 1, "read_iops_drop_pct") not in rows and rows[("runsc", 1, "read_iops")] == 10


def test_d_of_a_database_follows_pdp_eq1():
    w = [Window("lxc", "base", "mariadb:oltp_read_write", 1, figures={"tps": 200.0, "lat_ms": 2.0}),
         Window("lxc", "memory-bomb", "mariadb:oltp_read_write", 1, figures={"tps": 150.0, "lat_ms": 5.0})]
    w.append(Window("lxc", "calibration", "mariadb:oltp_read_write", 1, figures={"tps": 300.0}))
    rows = paired(w, "base", OLTP_RULES, alone=("calibration",))
    got = {r["metric"]: r["value"] for r in rows if r["scenario"] == "memory-bomb"}
    assert got == {"tps": 150.0, "lat_ms": 5.0, "D": pytest.approx(25.0), "tps_base": 200.0, "tps_disturbed": 150.0,
                   "lat_x": pytest.approx(2.5)}
    assert [r["metric"] for r in rows if r["scenario"] == "calibration"] == ["tps"]  # kept, compared with nothing


def test_windows_reduce_a_trials_samples_to_guest_and_host_figures():
    import numpy as np

    from contend.metrics import Samples, StepWindow
    from contend.metrics.victim import measured_windows
    rows = [  # (t, tenant, source, quantity, value)
        (1.0, "d", "guest", "read_iops", 900.0), (0.5, "d", "guest", "read_iops_t", 1000.0),
        (1.5, "d", "guest", "read_iops_t", 40.0),  # the worst 500 ms
        (1.0, "d", "guest", "pg:tpcb/tps", 80.0), (1.2, "d", "guest", "pg/tps_t", 79.0),  # a series: left out
        (0.5, "device", "device", "util", 0.8), (1.5, "device", "device", "util", 1.0),
        (1.0, "device", "device", "wbytes_s", 1000.0),
        (1.0, "a", "cgroup", "io_wbytes_s", 100.0), (1.0, "b", "cgroup", "io_wbytes_s", 100.0),
        (1.0, "d", "cgroup", "io_wbytes_s", 50.0), (1.0, "d", "cgroup", "cpu", 0.5),
        (1.0, "a", "cgroup", "oom_kill", 2.0),
        (9.0, "d", "guest", "read_iops", 1.0)]  # outside the window
    s = Samples(*(np.array(c) for c in zip(*rows)))
    w = measured_windows(s, [StepWindow(1, "attack", 0.0, 2.0, {"d": 1.0})], "runc", "disk", 3)
    by = {(x.resource, x.view): x for x in w}
    assert set(by) == {("disk", "guest"), ("pg:tpcb", "guest"), ("disk", "host")}
    assert by[("disk", "guest")].figures == {"read_iops": 900.0, "read_iops_min": 40.0}
    assert by[("pg:tpcb", "guest")].figures == {"tps": 80.0} and by[("disk", "guest")].scenario == "attack"
    assert by[("disk", "host")].figures == pytest.approx({
        "device_util": 0.9, "device_wbytes_s": 1000.0, "attackers_charged_pct": 20.0, "victim_charged_pct": 5.0,
        "victim_cpu": 0.5, "oom_kills": 2.0})


def test_the_repetition_rule_wants_the_interval_within_the_share_of_the_mean():
    assert converged([100.0, 100.5, 99.5], 2)
    assert not converged([100.0, 150.0, 50.0], 2)
    assert not converged([100.0], 2)  # one value has no interval
    assert converged([100.0, 100.0], 2)


def test_oltp_cell_settles_only_when_every_tps_converged(tmp_path):
    from rich.console import Console

    from contend.kinds.oltp.study import OltpStudy
    study = OltpStudy(parse(OLTP), tmp_path, Console())
    study.seen = {("runc", "mariadb"): [{("base", "t"): 100.0, ("cpu-bomb", "t"): 50.0},
                                        {("base", "t"): 100.1, ("cpu-bomb", "t"): 80.0}]}
    assert not study.settled("runc", "mariadb")  # the disturbed TPS still scatters
    study.seen[("runc", "mariadb")][1][("cpu-bomb", "t")] = 50.05  # n = 2: t = 12.7
    assert study.settled("runc", "mariadb")


def test_device_rates_are_utilisation_queue_depth_and_throughput():
    prev = dict.fromkeys(("read_ios", "read_merges", "read_sectors", "read_ticks", "write_ios", "write_merges",
                          "write_sectors", "write_ticks", "in_flight", "io_ticks", "time_in_queue"), 0)
    cur = {**prev, "read_ios": 100, "write_sectors": 2048, "io_ticks": 50, "time_in_queue": 400}
    r = device_rates(prev, cur, 0.1)
    assert r["util"] == pytest.approx(0.5) and r["queue_depth"] == pytest.approx(4.0)
    assert r["rios_s"] == pytest.approx(1000) and r["wbytes_s"] == pytest.approx(2048 * 512 / 0.1)


# ---------------------------------------------------------------- parsers and commands
def test_client_output_without_its_figures_is_an_error_not_a_zero():
    with pytest.raises(DatabaseError):
        parse_pgbench("pgbench: error: connection to server failed\n")
    with pytest.raises(DatabaseError):
        parse_sysbench("FATAL: unable to connect to MySQL server\n")


def test_fio_victim_reads_and_writes_side_by_side_on_real_output(tmp_path):
    argv = victim_argv("16M", "4k", 1, 1.0, str(tmp_path / "v"))
    argv = [a.replace("/data/", f"{tmp_path}/") for a in argv]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    fig = victim_figures(json.loads(out))
    assert fig["read_iops"] > 0 and fig["write_iops"] > 0 and 0 < fig["read_p50_us"] <= fig["read_p99_us"]
    points = iops_log((tmp_path / "v_iops.1.log").read_text())
    assert points and all(v > 0 for _, v in points) and points[0][0] <= 1.0


def test_bombs():
    assert bomb("cpu-bomb", 10, 0)[:3] == ["stress-ng", "--cpu", "0"]  # 0: every CPU it sees
    mem = bomb("memory-bomb", 10, 1000)
    assert mem[mem.index("--vm-bytes") + 1] == "1250"  # past its limit: OOM-killed, restarted by stress-ng
    disk = bomb("disk-bomb", 10, 0)
    assert "--rw=write" in disk and "--rw=randwrite" in disk and "--direct=1" in disk
    with pytest.raises(ValueError):
        bomb("io-bomb", 1, 0)


# ---------------------------------------------------------------- real databases in real containers
@needs_root
@pytest.mark.parametrize("runtime", ["runc", pytest.param("runsc", marks=pytest.mark.slow)])
@pytest.mark.parametrize("db", ["postgresql", pytest.param("mariadb", marks=pytest.mark.slow)])
def test_database_starts_serves_and_stops_inside_a_container(runtime, db):
    from contend.kinds.oltp.spec import OltpScale
    from contend.tenants import Tenants
    runtime_or_skip(runtime)
    server = DATABASES[db](OltpScale(pgbench_scale=1, sysbench_tables=1, sysbench_table_size=1000))
    with Tenants(runtime, {"victim": Limits(cpu=1, memory=GiB)}, caps={"victim": server.caps}) as t:
        server.start(t, "victim")
        data = t.data["victim"]
        p = t.run("victim", server.client(2, 0, 2), timeout=120)
        res = server.parse(p.stdout + p.stderr)
        main = "tpcb-like" if db == "postgresql" else "oltp_read_write"
        assert res.types[main]["tps"] > 0 and res.types[main]["lat_ms"] > 0 and len(res.per_second) >= 1
        if db == "postgresql":
            assert set(res.types) == {"tpcb-like", "select-only", "simple-update"}
        else:
            assert {"read", "write", "other"} <= set(res.types)
        # a fixed rate holds: half of what it reached unthrottled
        rate = res.types[main]["tps"] / 2
        p = t.run("victim", server.client(2, rate * (3 if db == "postgresql" else 1), 2), timeout=120)
        got = server.parse(p.stdout + p.stderr).types[main]["tps"]
        assert got == pytest.approx(rate, rel=0.35)
        server.stop(t, "victim")
        assert server.proc.returncode == 0
        assert data.is_dir() and any(data.iterdir())  # its data lived on the experiment device
    assert not data.exists()


# ---------------------------------------------------------------- the studies end to end
def _run(spec: Path, out: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "contend.cli", "run", str(spec), "--out", str(out)],
                          capture_output=True, text=True, timeout=timeout)


@needs_root
def test_an_attack_that_would_fill_the_disk_exits_2_before_anything_starts(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("kind: diskfill\nname: big\nruntimes: [runc]\nfiles: {beyond-memory: 99}\n")
    p = _run(spec, tmp_path / "out")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "below the safety margin" in p.stderr and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def fill_study(tmp_path_factory, root):
    d = tmp_path_factory.mktemp("diskfill")
    (d / "s.yaml").write_text("kind: diskfill\nname: fill\nruntimes: [runc]\nfiles: {fits-memory: 0.1, "
                              "beyond-memory: null}\nvictim: {file: 64M, seconds: 3}\nrepetitions: 2\n")
    return d / "out", _run(d / "s.yaml", d / "out")


@needs_root
@pytest.mark.slow
def test_diskfill_measures_the_victim_before_and_during_the_attack(fill_study):
    out, p = fill_study
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    con = duckdb.connect(str(out / "contend.duckdb"), read_only=True)
    assert con.execute("SELECT trial_id, status FROM trials ORDER BY 1").fetchall() == [
        ("runc.diskfill.r1", "ok"), ("runc.diskfill.r2", "ok")]
    assert planned_trials(out) == {"runc.diskfill.r1", "runc.diskfill.r2"}
    phases = con.execute("SELECT DISTINCT phase FROM steps ORDER BY 1").fetchall()
    assert phases == [("baseline",), ("fits-memory",)]
    done = con.execute("SELECT count(*) FROM events WHERE kind = 'attack-done'").fetchone()[0]
    assert done == 2 * 3  # three attackers wrote their file, in each repetition
    dev = con.execute("SELECT max(value) FROM samples WHERE source = 'device' AND quantity = 'wbytes_s'").fetchone()[0]
    assert dev > 50e6  # the disk saw the attack
    con.close()
    rows = {(r["scenario"], r["view"], r["metric"]): r for r in _csv(out / "metrics.csv")}
    drop = rows[("fits-memory", "guest", "read_iops_drop_pct")]
    assert drop["n"] == "2" and -100 < float(drop["value"]) < 100
    assert float(rows[("baseline", "guest", "read_iops")]["value"]) > 100
    assert 0 <= float(rows[("fits-memory", "host", "device_util")]["value"]) <= 1
    # who the disk's writes were charged to: on v2 the attackers' cgroups are charged for their buffered writes
    # as the flusher writes them back; on v1 and hybrid hosts the flusher's writes are charged to no container
    charged = float(rows[("fits-memory", "host", "attackers_charged_pct")]["value"])
    if detect().mode == "v2":
        assert charged > 50, f"{charged:.0f} % of the disk's writes charged to the attackers on cgroup v2"
    else:
        assert charged < 10, \
            f"{charged:.0f} % of the disk's writes charged to the attackers without cgroup v2's writeback"
    tables = (out / "victim-tables.md").read_text()
    assert "## baseline" in tables and "## fits-memory" in tables and "| runc |" in tables
    assert (out / "figures" / "diskfill-bars.png").stat().st_size > 0
    assert (out / "figures" / "timeline-runc.diskfill.r1.png").stat().st_size > 0


@needs_root
@pytest.mark.slow
@pytest.mark.usefixtures("fill_study")
def test_the_attack_files_and_containers_are_gone():
    from contend.paths import DATA
    assert list(DATA.glob("contend-*")) == [] and find() == []


@needs_root
@pytest.mark.slow
def test_ctrl_c_during_an_attack_removes_its_files_and_containers(tmp_path):
    from contend.paths import DATA
    spec = tmp_path / "s.yaml"
    spec.write_text("kind: diskfill\nname: intr\nruntimes: [runc]\nfiles: {fits-memory: 0.5, beyond-memory: null}\n"
                    "victim: {file: 64M, seconds: 20}\n")
    out = tmp_path / "res"
    proc = subprocess.Popen([sys.executable, "-m", "contend.cli", "run", str(spec), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(DATA.glob("contend-*-a/fill")):
        assert proc.poll() is None and time.monotonic() < deadline, "the attack never started"
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 130, stdout[-1500:] + stderr[-1500:]
    assert list(DATA.glob("contend-*")) == [] and find() == []
    assert "interrupted" in stdout  # in the first trial: none finished, so no empty report either
    assert "no trial finished" in stdout and not (out / "report.html").exists()


@needs_root
@pytest.mark.slow
def test_oltp_study_measures_d_and_marks_the_oom_kills(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("kind: oltp\nname: db\nruntimes: [runc]\ndatabases: [postgresql]\ndisruptors: [memory-bomb]\n"
                    "memory_pool: 1G\nload: {seconds: 4, warmup_s: 2, pause_s: 1, calibrate_s: 2}\n"
                    "scale: {pgbench_scale: 1}\nrepetitions: {min: 1, max: 1}\n")
    out = tmp_path / "out"
    p = _run(spec, out)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = {(r["scenario"], r["resource"], r["metric"]): r for r in _csv(out / "metrics.csv")}
    d = rows[("memory-bomb", "postgresql:tpcb-like", "D")]
    base = float(rows[("base", "postgresql:tpcb-like", "tps")]["value"])
    dist = float(rows[("memory-bomb", "postgresql:tpcb-like", "tps_disturbed")]["value"])
    assert float(d["value"]) == pytest.approx((1 - dist / base) * 100, abs=1e-3)  # metrics.csv keeps 6 digits
    assert float(rows[("memory-bomb", "postgresql", "oom_kills")]["value"]) >= 1  # the bomb passed its limit
    con = duckdb.connect(str(out / "contend.duckdb"), read_only=True)
    kinds = dict(con.execute("SELECT kind, count(*) FROM events GROUP BY kind").fetchall())
    params = json.loads(con.execute("SELECT params FROM cells_oltp").fetchone()[0])
    con.close()
    assert kinds.get("oom-kill", 0) >= 1 and kinds.get("rate") == 1
    assert params["rate_tps"] > 0  # the fixed rate, from the calibration
    assert "postgresql:tpcb-like" in (out / "victim-tables.md").read_text()
    assert (out / "figures" / "timeline-runc.postgresql.r1.png").stat().st_size > 0
    assert "oom-kill" in (out / "report.html").read_text()


def _csv(path: Path) -> list[dict]:
    import csv
    with open(path) as f:
        return list(csv.DictReader(f))
