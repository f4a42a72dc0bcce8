"""Long experiments survive: a study interrupted at 23 points by SIGINT, SIGTERM and SIGKILL leaves nothing that
`contend run` or `contend clean` does not remove, and `--resume` completes it with exactly the trials of an
uninterrupted run; the store survives a SIGKILL inside its write; host faults (a runtime or bpftrace missing, a
nearly full disk, a tenant killed from outside) give a clear message and a study that degrades or retries.

The moment of each interruption is chosen with CONTEND_FAULT (src/contend/faults.py): contend signals itself
when it reaches the named checkpoint, so each point is hit exactly, not by a timer's luck. The 23-point matrix
is `make test-faults` (marker faults); the rest is in `make test`."""
from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import time
from functools import partial
from pathlib import Path

import pytest

from contend.paths import DATA
from contend.store import Store

from .conftest import (
    CONTEND,
    contend,
    find,
    needs_root,
    one_line_exit_2,
    planned_trials,
    require,
    runtime_or_skip,
    tiny_spec,
)

pytestmark = [needs_root, pytest.mark.slow]  # studies interrupted and resumed: make test-all
PLANNED = {"runc.harmony.cpu.r1", "runc.escape.cpu.r1"}
# two trials of a baseline and two ramp steps each: 3 steps per trial, 6 in the study
tiny = partial(tiny_spec, scenarios=("harmony", "escape"), baseline=1, steps=2, step_s=1)


def metric_keys(results: Path) -> set[tuple]:
    with open(results / "metrics.csv") as f:
        return {(r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"]) for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    require("stress-ng")
    runtime_or_skip("runc")
    d = tmp_path_factory.mktemp("whole")
    p = contend("run", str(tiny(d / "s.yaml")), "--out", str(d / "out"))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    return d / "out"


# (checkpoint[@n], signal): 23 moments across setup, baseline, ramp, teardown, store write and report
POINTS = [("start", "INT"), ("start", "KILL"), ("host-facts", "TERM"), ("host-facts", "KILL"),
          ("trial", "INT"), ("trial@2", "TERM"), ("trial@2", "KILL"), ("containers", "INT"),
          ("containers@2", "KILL"), ("probes", "TERM"), ("probes", "KILL"), ("step", "INT"), ("step@2", "KILL"),
          ("step@3", "TERM"), ("step@5", "INT"), ("step@6", "KILL"), ("teardown", "INT"), ("teardown@2", "KILL"),
          ("store-write", "INT"), ("store-write", "KILL"), ("store-write@2", "TERM"), ("report", "INT"),
          ("report", "KILL")]
# the points that stand for the rest in CI (one per phase, each signal three times or more); the others are
# marked exhaustive: make test-faults runs all 23
STANDING = {("start", "KILL"), ("host-facts", "TERM"), ("trial@2", "KILL"), ("containers", "INT"),
            ("probes", "TERM"), ("step@3", "TERM"), ("teardown@2", "KILL"), ("store-write", "KILL"),
            ("report", "INT")}
assert STANDING <= set(POINTS)


@pytest.mark.faults
@pytest.mark.parametrize("point,sig", [pytest.param(p, s, id=f"{p}-{s}",
                                                    marks=() if (p, s) in STANDING else pytest.mark.exhaustive)
                                       for p, s in POINTS])
def test_interrupted_anywhere_then_resumed_is_the_whole_study(point, sig, uninterrupted, tmp_path):
    spec, out = tiny(tmp_path / "s.yaml"), tmp_path / "out"
    p = contend("run", str(spec), "--out", str(out), env={"CONTEND_FAULT": f"{point}={sig}"})
    if sig == "KILL":
        assert p.returncode == -signal.SIGKILL, p.stdout[-1500:] + p.stderr[-1500:]
    else:
        assert p.returncode == 130, p.stdout[-1500:] + p.stderr[-1500:]
        assert f"contend run --resume {out}" in p.stdout  # the hint, on every interruption
        assert find() == [], "an interrupted run left something behind"
    with Store(out, read_only=True) as s:  # readable, whatever the moment (a SIGKILL mid-write included)
        kept = {t["trial_id"]: len(s.samples(t["trial_id"]).t) for t in s.trials()}
    assert set(kept) <= PLANNED and all(n > 0 for n in kept.values())  # no half trial
    if point.startswith("store-write"):
        assert len(kept) == int(point.partition("@")[2] or 1) - 1  # the trials before the one being written
    r = contend("run", "--resume", str(out))  # after a SIGKILL it removes what the killed run left first
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert find() == [], "contend clean --dry-run would find something"
    if kept:
        assert f"resumed: {len(kept)} finished trials kept" in r.stdout
    with Store(out, read_only=True) as s:
        trials = s.trials()
        assert {t["trial_id"] for t in trials} == PLANNED == planned_trials(out)
        assert all(t["status"] == "ok" for t in trials)
        for tid, n in kept.items():  # finished trials were kept, not run again
            assert len(s.samples(tid).t) == n
    assert metric_keys(out) == metric_keys(uninterrupted)
    assert (out / "report.html").exists()


KILLED_IN = [("runc", "network"), ("runc", "disk"), ("runsc", "cpu"), ("lxc", "memory")]


@pytest.mark.faults
@pytest.mark.parametrize("runtime,resource", KILLED_IN, ids=[f"{r}-{res}" for r, res in KILLED_IN])
def test_killed_mid_ramp_the_next_run_removes_every_kind_of_leftover(runtime, resource, tmp_path):
    """SIGKILL in the middle of a trial leaves what only a killed process leaves: containers of that runtime,
    their cgroups and data files, a network trial's namespaces, bridge, veths and tc qdiscs. The resumed run
    removes all of it before it starts, then finishes the study."""
    runtime_or_skip(runtime)
    spec = tiny(tmp_path / "s.yaml", runtimes=[runtime], scenarios=["harmony"], resources=[resource])
    out = tmp_path / "out"
    p = contend("run", str(spec), "--out", str(out), env={"CONTEND_FAULT": "step@2=KILL"})
    assert p.returncode == -signal.SIGKILL, p.stdout[-1500:] + p.stderr[-1500:]
    left = {x.kind for x in find()}
    assert f"{runtime} container" in left and "cgroup" in left  # the kill really left them
    if resource == "network":
        assert {"network namespace", "link"} <= left
    r = contend("run", "--resume", str(out))
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "removing what an earlier contend study left on this host" in r.stdout
    assert find() == []
    with Store(out, read_only=True) as s:
        assert [(t["trial_id"], t["status"]) for t in s.trials()] == [(f"{runtime}.harmony.{resource}.r1", "ok")]


def test_resume_refuses_another_study_and_what_is_not_a_results_directory(uninterrupted, tmp_path):
    spec = tiny(tmp_path / "s.yaml", step_s=2)
    p = contend("run", str(spec), "--resume", str(uninterrupted))
    one_line_exit_2(p, "not the study in", "trial.step_s: 1.0 → 2.0")
    one_line_exit_2(contend("run", "--resume", str(tmp_path)), "not a results directory")
    one_line_exit_2(contend("run", "--resume", str(uninterrupted), "--quick"), "--quick and -n apply to a SPEC")
    p = contend("run", "--resume", str(uninterrupted))  # all done: the report again, nothing run
    assert p.returncode == 0 and "resumed: 2 finished trials kept, 0 to run" in p.stdout


def test_a_second_study_waits_for_the_first(tmp_path):
    require("stress-ng")
    spec = tiny(tmp_path / "s.yaml")
    first = subprocess.Popen([*CONTEND, "run", str(spec), "--out", str(tmp_path / "a")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not any("container" in x.kind for x in find()):
            assert time.monotonic() < deadline and first.poll() is None
            time.sleep(0.2)
        one_line_exit_2(contend("run", str(spec), "--out", str(tmp_path / "b")),
                        "another contend study is running on this host (pid")
        assert not (tmp_path / "b").exists()
    finally:
        first.communicate(timeout=120)
    assert first.returncode == 0 and find() == []


def without(binary: str, tmp_path: Path) -> dict:
    """An environment whose PATH has every program of this one's except `binary`."""
    bindir = tmp_path / f"no-{binary}"
    bindir.mkdir()
    for d in os.environ["PATH"].split(":"):
        for f in Path(d).glob("*") if Path(d).is_dir() else []:
            if f.name != binary and not (bindir / f.name).exists() and os.access(f, os.X_OK):
                (bindir / f.name).symlink_to(f)
    return {"PATH": str(bindir)}


def test_a_missing_runtime_binary_makes_its_cells_n_a_and_the_rest_run(tmp_path):
    runtime_or_skip("runsc")
    env = without("runsc", tmp_path)
    spec = tiny(tmp_path / "s.yaml", runtimes=["runc", "runsc"], scenarios=["harmony"])
    p = contend("run", str(spec), "--out", str(tmp_path / "out"), env=env)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    with Store(tmp_path / "out", read_only=True) as s:
        status = {t["trial_id"]: (t["status"], t["reason"]) for t in s.trials()}
    assert status["runc.harmony.cpu.r1"][0] == "ok"
    assert status["runsc.harmony.cpu.r1"][0] == "n/a" and "runsc not available" in status["runsc.harmony.cpu.r1"][1]
    assert "n/a" in p.stdout and find() == []


def test_bpftrace_missing_leaves_out_the_ebpf_view_and_says_why(tmp_path):
    p = contend("run", str(tiny(tmp_path / "s.yaml", scenarios=["harmony"])), "--out", str(tmp_path / "out"),
                env=without("bpftrace", tmp_path))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    views = {k[3] for k in metric_keys(tmp_path / "out")}
    assert "host" in views and "guest" in views and "ebpf" not in views
    with Store(tmp_path / "out", read_only=True) as s:
        missing = [e["detail"] for e in s.events() if e["kind"] == "probe-missing"]
    assert missing and all("bpftrace" in m for m in missing)
    assert find() == []


def test_a_nearly_full_disk_is_refused_before_anything_starts(tmp_path):
    require("fio")
    DATA.mkdir(parents=True, exist_ok=True)
    filler = DATA.parent / "contend-faults-filler"  # not below DATA: clean must not take it for a tenant's
    free = shutil.disk_usage(DATA).free
    subprocess.run(["fallocate", "-l", str(free - 300 * 2**20), str(filler)], check=True)  # 300 MiB stay free
    try:
        spec = tiny(tmp_path / "s.yaml", scenarios=["harmony"], resources=["disk"])
        p = contend("run", str(spec), "--out", str(tmp_path / "out"))
    finally:
        filler.unlink()
    one_line_exit_2(p, "disk trials write 2 × 256M there and only", "MiB needed")
    assert not (tmp_path / "out").exists() and find() == []


def test_a_tenant_killed_from_outside_fails_its_attempt_and_the_retry_measures(tmp_path):
    """The abiding tenant's processes killed mid-ramp (as an operator's kill -9 would): that attempt fails with
    its reason, the trial is run again (retries: 1) and recorded ok, the failed attempt as an event."""
    require("stress-ng")
    spec = tiny(tmp_path / "s.yaml", scenarios=["harmony"], baseline=2, steps=3, step_s=2)
    proc = subprocess.Popen([*CONTEND, "run", str(spec), "--out", str(tmp_path / "out")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        from contend.cgroups import detect
        host = detect()
        deadline = time.monotonic() + 60
        procs: list[int] = []
        while not procs:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
            cgs = [x.name for x in find(host) if x.kind == "cgroup" and x.name.endswith("-abiding")]
            if cgs:
                procs = host.cgroup(cgs[0]).procs()
        time.sleep(3)  # into the ramp
        for pid in host.cgroup(cgs[0]).procs():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stdout[-2000:] + stderr[-2000:]
    assert "trying again (1 of 1)" in " ".join(stdout.split())  # rich wraps the line at 80 columns
    with Store(tmp_path / "out", read_only=True) as s:
        (t,) = s.trials()
        attempts = [e["detail"] for e in s.events() if e["kind"] == "attempt-failed"]
    assert t["status"] == "ok" and len(attempts) == 1 and attempts[0].startswith("attempt 1: ")
    assert find() == []


def test_an_interrupt_python_swallowed_still_stops_the_study(tmp_path):
    """Python prints and ignores a KeyboardInterrupt raised in an at-fork hook (subprocess runs them): the
    handler's note in INTERRUPTED stops the study before its next trial, and its retry, all the same."""
    from rich.console import Console

    from contend.interrupts import INTERRUPTED
    from contend.kinds import load
    from contend.kinds.isolation.study import IsolationStudy as Study
    study = Study(load(tiny_spec(tmp_path / "s.yaml")), tmp_path / "res", Console(quiet=True))
    ran = []
    INTERRUPTED.set()
    try:
        with pytest.raises(KeyboardInterrupt):
            study._attempts("t1", lambda share, detail: None, lambda item, advance: ran.append(item), "t1")
    finally:
        INTERRUPTED.clear()
    assert ran == []
