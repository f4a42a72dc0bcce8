"""The CLI end to end, as a user runs it: real containers, real probes, interrupted and not."""
from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import time
import uuid

import pytest

from contend.store import Store

from .conftest import CONTEND, contend, find, needs_root, not_before, require, run_that_made, runtime_or_skip, tiny_spec

pytestmark = [needs_root, pytest.mark.root]


def test_run_writes_the_results_directory_and_report_rebuilds_it(tmp_path):
    require("stress-ng")
    runtime_or_skip("runc")
    out = tmp_path / "res"
    p = contend("run", str(tiny_spec(tmp_path / "s.yaml")), "--out", str(out), "--json")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    for name in ("spec.yaml", "host.json", "contend.duckdb", "metrics.csv", "report.html"):
        assert (out / name).exists(), name
    assert any((out / "figures").glob("isolation-runc-harmony-cpu-host.png"))
    assert any((out / "figures").glob("timeline-runc.harmony.cpu.r1.png"))
    with open(out / "metrics.csv") as f:
        rows = list(csv.DictReader(f))
    got = {(r["view"], r["metric"]): r for r in rows}
    for metric in ("I_plr", "loss", "I_intFree", "S_I", "escape", "isol_p50"):
        assert got[("host", metric)]["value"] != "", metric
        assert got[("host", metric)]["n"] == "1"
    # harmony on 2 CPUs with each tenant at half: the abiding tenant keeps most of its CPU
    assert 0.6 < float(got[("host", "I_plr")]["value"]) < 1.3
    assert float(got[("host", "escape")]["value"]) < 1.1  # the quota held
    # and the load ran: a shared host's steal time can take half of it (0.499 in a CI run on 2026-11-28; a
    # tenant whose load never started reads 0)
    assert float(got[("host", "escape")]["value"]) > 0.25
    assert {r["view"] for r in rows} >= {"host", "guest"}
    assert "ebpf" in {r["view"] for r in rows}, "bpftrace attributed CPU on this host"
    html = (out / "report.html").read_text()
    assert "data:image/png;base64," in html and "http://" not in html and "https://" not in html
    assert "I_intFree" in p.stdout
    said = json.loads(p.stdout[p.stdout.index('{\n "answers"'):])
    assert any(r["metric"] == "I_plr" for r in said["metrics"])
    assert said["answers"][0]["subject"] == ["runc", "cpu", "harmony"]
    assert said["answers"][0]["answer"] in ("isolated", "NOT isolated", "unsure")
    assert p.stdout.index("the answer") < p.stdout.index("isolation metrics: cpu")  # the answer first
    # the report is rebuilt from the store alone
    (out / "report.html").unlink()
    (out / "metrics.csv").unlink()
    r = contend("report", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "report.html").exists()
    with open(out / "metrics.csv") as f:
        again = {(x["view"], x["metric"]): x["value"] for x in csv.DictReader(f)}
    assert again[("host", "I_plr")] == got[("host", "I_plr")]["value"]
    assert find() == []


@needs_root
@pytest.mark.slow  # a whole study per runtime to check one property of it
@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_the_abiding_load_never_idles_in_a_real_trial(tmp_path, runtime):
    """One load agent per tenant for the whole trial: the abiding tenant's CPU never reads 0 between the
    baseline's start and the last step's end (the old per-step restarts left idle tails there), the step
    windows are contiguous (each from when its level took effect), and the guest view is a series."""
    runtime_or_skip(runtime)
    out = tmp_path / "res"
    p = contend("run", str(tiny_spec(tmp_path / "s.yaml", runtimes=(runtime,), scenarios=("escape",), steps=3)),
                "--out", str(out))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    with Store(out, read_only=True) as store:
        (trial,) = store.trials("ok")
        steps = store.steps(trial["trial_id"])
        samples = store.samples(trial["trial_id"])
        events = store.events(trial["trial_id"])
    assert [s.step for s in steps] == [0, 1, 2, 3]
    for a, b in zip(steps, steps[1:]):
        assert a.t_end == pytest.approx(b.t_start) and b.t_end - b.t_start >= 2.0
    t, cpu = samples.series("abiding", "cgroup", "cpu")
    running = (t > steps[0].t_start + 0.2) & (t <= steps[-1].t_end)
    assert running.sum() >= 70 and (cpu[running] > 0).all(), f"idle buckets at {t[running][cpu[running] <= 0]}"
    tg, ops = samples.series("abiding", "load", "ops_s")
    reported = (tg > steps[0].t_start + 0.2) & (tg <= steps[-1].t_end)
    assert reported.sum() >= 70 and (ops[reported] > 0).all()
    assert [e for e in events if e["kind"].startswith("load-")] == []


@needs_root
@pytest.mark.slow  # a whole study to see one flag
def test_cpu_taken_by_a_process_outside_the_tenants_is_flagged(tmp_path):
    """A process on the host, outside both tenants, spins a CPU from the end of the baseline on: the abiding
    tenant loses CPU as if to a neighbour. The host's CPUs are sampled beside the tenants' (busy and stolen),
    so the trial's host_outside says 0.3-0.5 of the CPUs were taken outside, and every view of the cell is
    flagged with the reason in the terminal's table."""
    runtime_or_skip("runc")
    out = tmp_path / "res"
    spec = tiny_spec(tmp_path / "s.yaml", baseline=3, steps=2, step_s=3)
    run = subprocess.Popen([*CONTEND, "run", str(spec), "--out", str(out)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"})
    try:
        deadline = time.monotonic() + 120
        while subprocess.run(["pgrep", "-f", "contend-load"], capture_output=True).returncode != 0:
            assert time.monotonic() < deadline and run.poll() is None, "no load agent started"
            time.sleep(0.05)
        time.sleep(3.5)  # the baseline (3 s) is over
        spinner = subprocess.Popen(["timeout", "6", "sh", "-c", "while :; do :; done"])
        stdout, stderr = run.communicate(timeout=300)
        spinner.wait()
    finally:
        run.kill()
    assert run.returncode == 0, stdout[-2000:] + stderr[-2000:]
    with open(out / "metrics.csv") as f:
        outside = {r["view"]: float(r["value"]) for r in csv.DictReader(f) if r["metric"] == "host_outside"}
    assert set(outside) == {"host", "ebpf", "guest"} and 0.25 < outside["host"] <= 0.55, outside
    text = " ".join(stdout.split())
    # the terminal says the reason in one phrase beside the cell; the report and table4-*.md say all of it
    assert "the host's own load moved" in text and "rerun" in text, stdout
    whole = " ".join(" ".join(f.read_text() for f in out.glob("table4-*.md")).split())
    assert "what ran outside the two tenants" in whole and "more in some step" in whole


@pytest.mark.slow  # the whole matrix of resources; make test runs one study of CPU
def test_every_resource_end_to_end_with_table_4(tmp_path):
    """The scenario engine's matrix in small: runc × escape × the four resources, plus memory overcommit
    (not run, as in the paper) and kata (not installed here): Table 4 with n/a reasons, every view."""
    for tool in ("stress-ng", "fio"):
        require(tool)
    runtime_or_skip("runc")
    out = tmp_path / "res"
    spec = tiny_spec(tmp_path / "s.yaml", runtimes=("runc", "kata"), scenarios=("escape", "overcommit"), steps=3,
                     resources=("cpu", "memory", "disk", "network"),
                     capacity={"memory_bytes": 256 << 20, "network_bps": 200e6})
    p = contend("run", str(spec), "--out", str(out), timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    for res in ("cpu", "memory", "disk", "network"):
        assert res in p.stdout
    assert "memory overcommit is not run" in p.stdout and "kata" in p.stdout
    with open(out / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["runtime"] == "runc"]
    got = {(r["scenario"], r["resource"], r["view"], r["metric"]): r["value"] for r in rows}
    for res in ("cpu", "memory", "disk", "network"):
        for view in ("host", "ebpf", "guest"):
            assert got.get(("escape", res, view, "I_intFree"), "") != "", (res, view)
    assert got[("overcommit", "memory", "host", "I_plr")] == ""  # n/a
    # the physics: CPU and network limits hold under an escape, memory's is enforced by the OOM killer
    assert float(got[("escape", "cpu", "host", "escape")]) < 1.1
    assert float(got[("escape", "network", "host", "escape")]) < 1.1
    # one repetition of a 3-step trial on this shared 2-CPU host: 0.68, 0.74, 0.77 in three runs within the
    # hour on 2026-11-23 (a 0.7 bound failed a CI run); a quota that did not hold gives far less
    assert float(got[("escape", "cpu", "host", "I_intFree")]) > 0.5
    db_events = (out / "report.html").read_text()
    assert "oom-kill" in db_events, "the disruptive tenant asking 1.5 × its memory limit is OOM-killed"
    for view in ("ebpf", "host", "guest"):
        assert (out / f"table4-{view}.md").read_text().count("| runc |") == 2
    assert find() == []


@pytest.mark.slow
def test_start_engines_runs_a_docker_study_and_stops_the_engine_after(tmp_path):
    """Without an engine, docker's cells say how to start one; `--start-engines` starts dockerd for the study
    and stops it when the study ends. (Before the session's docker_engine fixture starts one.)"""
    require("stress-ng"), require("dockerd"), require("docker")
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        pytest.skip("a docker engine already runs here: --start-engines has nothing to start")
    spec = tiny_spec(tmp_path / "s.yaml", runtimes=("docker",))
    p = contend("run", str(spec), "--out", str(tmp_path / "without"))
    assert p.returncode == 0 and "contend run --start-engines" in " ".join(p.stdout.split())  # n/a, saying how
    p = contend("run", str(spec), "--out", str(tmp_path / "with"), "--start-engines")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "started dockerd for this study" in p.stdout
    with open(tmp_path / "with" / "metrics.csv") as f:
        assert any(r["runtime"] == "docker" and r["metric"] == "I_plr" and r["value"] for r in csv.DictReader(f))
    assert subprocess.run(["docker", "info"], capture_output=True).returncode != 0  # stopped again
    assert find() == []


@pytest.mark.slow
def test_run_on_a_docker_engine(tmp_path, docker_engine):
    require("stress-ng")
    runtime_or_skip("docker")
    out = tmp_path / "res"
    p = contend("run", str(tiny_spec(tmp_path / "s.yaml", runtimes=("docker",))), "--out", str(out))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    with open(out / "metrics.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["view"] == "host" and r["metric"] == "I_plr"]
    assert rows and rows[0]["runtime"] == "docker" and rows[0]["value"] != ""
    assert find() == []


def test_report_of_a_directory_that_is_not_results(tmp_path):
    p = contend("report", str(tmp_path))
    assert p.returncode == 2 and "no contend.duckdb" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_results_directory_in_use_is_refused(tmp_path):
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "x").write_text("")
    p = contend("run", str(tiny_spec(tmp_path / "s.yaml")), "--out", str(tmp_path / "res"))
    assert p.returncode == 2 and "exists and is not empty" in p.stderr


def wait_for_trial(proc: subprocess.Popen, timeout=60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any("container" in x.kind and "doctor" not in x.name for x in find()):
            return  # a trial's container (not doctor's look at the runtimes at the start)
        assert proc.poll() is None, "contend exited before its containers were up"
        time.sleep(0.2)
    raise AssertionError("no container appeared")


@pytest.mark.parametrize("sig,runtime", [(signal.SIGINT, "runc"),
                                         pytest.param(signal.SIGTERM, "runsc", marks=pytest.mark.slow),
                                         pytest.param(signal.SIGINT, "lxc", marks=pytest.mark.slow)])
def test_interrupt_mid_trial_leaves_nothing_behind(tmp_path, sig, runtime):
    require("stress-ng")
    runtime_or_skip(runtime)
    out = tmp_path / "res"
    proc = subprocess.Popen([*CONTEND, "run", str(tiny_spec(tmp_path / "s.yaml", runtimes=(runtime,),
                                                            steps=10, step_s=3)), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own process group, as a terminal gives it
    wait_for_trial(proc)
    time.sleep(2)  # into the trial: probes on, load running
    os.killpg(proc.pid, sig)  # Ctrl-C reaches the whole foreground group
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout[-1500:] + stderr[-1500:]
    assert "interrupted" in stdout
    assert find() == [], "contend clean --dry-run would find leftovers"
    assert (out / "contend.duckdb").exists()  # no trial finished: no empty table or report
    assert not (out / "report.html").exists() and "no trial finished" in stdout


def test_clean_finds_and_removes_what_a_killed_run_left(tmp_path):
    rt = runtime_or_skip("runc")
    make = f"name = runtimes.get('runc').create(runtimes.ContainerSpec('leak-{uuid.uuid4().hex[:6]}')).name"
    _, name = run_that_made(make)  # a contend SIGKILLed with a container up
    cgroup, _ = rt.cgroups_for(name)
    p = contend("clean", "--dry-run")
    assert p.returncode == 0
    assert f"would remove runc container {name}" in p.stdout
    assert f"would remove cgroup contend/{name}" in p.stdout
    assert cgroup.exists(), "dry run removed nothing"
    p = contend("clean")
    assert p.returncode == 0 and f"removing runc container {name}" in p.stdout
    assert not_before(contend("clean", "--dry-run").stdout) == ""
    assert not cgroup.exists()


def test_doctor_json_reports_this_host():
    p = contend("doctor", "--json", timeout=120)
    assert p.returncode == 0, p.stderr
    f = json.loads(p.stdout)
    names = {r["name"]: r for r in f["runtimes"]}
    assert set(names) == {"runc", "crun", "runsc", "lxc", "kata", "docker", "podman", "runc@1.5.2",
                          "runsc@20260905", "runsc@20260905-ptrace", "youki@0.7.0"}
    assert not names["kata"]["runs"] and names["kata"]["reason"].startswith("detected only")  # never run
    for r in names.values():
        assert r["runs"] or r["reason"], f"{r['name']}: a runtime that does not run says why"
    assert f["cgroups"]["mode"] in ("v1", "hybrid", "v2")
    assert f["disks"] and all(":" in d["dev"] for d in f["disks"])
    assert "tracepoint" in f["ebpf"]["probe_types"]
    assert find() == []


@pytest.mark.slow  # 25 s of fio and stress-ng; every study calibrates what it lacks the same way
def test_doctor_calibrate_measures_and_saves(tmp_path):
    require("stress-ng")
    require("fio")
    env = {**os.environ, "CONTEND_HOME": str(tmp_path)}  # not the host's saved calibration
    p = subprocess.run([*CONTEND, "doctor", "--calibrate", "--json"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    cap = json.loads((tmp_path / "capacity.json").read_text())
    assert json.loads(p.stdout)["capacity"] == cap
    assert cap["cpus"] == os.cpu_count() and cap["cpu_bogo_ops_s_per_cpu"] > 10
    assert cap["cpu_agent_ops_s_per_cpu"] > 1000  # the load agent's unit, measured by the agent itself
    assert cap["disk_read_iops"] > 100 and cap["disk_write_iops"] > 100 and cap["disk_write_bw_bytes_s"] > 1e6
    assert cap["disk_device"].count(":") == 1 and cap["memory_bytes"] > 0
    assert not list((tmp_path / "data").glob("*")), "the calibration file was removed"


def test_doctor_table_and_help():
    p = contend("doctor", timeout=120)
    assert p.returncode == 0 and "runtimes" in p.stdout and "cgroups" in p.stdout
    h = contend("--help")
    for cmd in ("doctor", "run", "report", "clean"):
        assert cmd in h.stdout


@pytest.mark.parametrize("delay", [0.4, 1.0, 1.6, 2.2, 2.8])
def test_interrupt_at_any_early_moment_leaves_nothing_behind(tmp_path, delay):
    """Ctrl-C while Python starts, while doctor tries each runtime, while containers are made."""
    require("stress-ng")
    runtime_or_skip("runsc")
    proc = subprocess.Popen([*CONTEND, "run", str(tiny_spec(tmp_path / "s.yaml", runtimes=("runsc",))),
                             "--out", str(tmp_path / "res")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(delay)
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode != 0
    assert find() == [], f"interrupted after {delay}s, leftovers remain"
