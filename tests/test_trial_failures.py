"""One trial lifecycle: in every kind of study, each exception that fails a trial (failures.TRIAL_FAILURES: contend's
own Failure, OSError, ValueError, SubprocessError) fails that trial with its reason while the study goes on and
leaves nothing behind; an exception no trial absorbs (a bug: RuntimeError) ends the study with its traceback, the
finished trials kept. The exceptions are raised for real inside the trials, with their containers up
(CONTEND_FAULT="containers@N=raise:NAME", src/contend/faults.py)."""
from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import pytest

from contend.failures import TRIAL_FAILURES, Failure, reason
from contend.faults import RAISES
from contend.store import Store

from .conftest import contend, find, needs_root, planned_trials, require, runtime_or_skip, tiny_spec

RAISED = ("Failure", "OSError", "ValueError", "SubprocessError")  # the four of TRIAL_FAILURES, by name

# each kind's smallest study of four trials or more (retries: 0, so each trial is one attempt), and how many
# containers it makes in all (the parallel suite's cells have one per process: 1 + 2 + 3 + 4)
SPECS = {
    "detect": ("kind: detect\nname: f\nruntimes: [runc]\ncases: [cpu]\nrepetitions: 4\nretries: 0\n", 4),
    "guard": ("kind: guard\nname: f\nruntime: runc\npolicies: [none, aridac]\nrepetitions: 2\nretries: 0\n"
              "workloads: [{name: workload2, burst_at_s: 3, burst_volume_s: 1.5, after: steady, tail_s: 2}]\n", 6),
    "parallel": ("kind: parallel\nname: f\nruntimes: [runc]\nbenchmarks: [noploop]\ncounts: [1, 2, 3, 4]\n"
                 "runs_per_container: 1\nretries: 0\nsizes: {noploop: {count: 1.0e+8}}\n", 10),
    "diskfill": ("kind: diskfill\nname: f\nruntimes: [runc]\nfiles: {fits-memory: 0.1, beyond-memory: null}\n"
                 "victim: {file: 64M, seconds: 3}\nrepetitions: 4\nretries: 0\n", 4),
    "oltp": ("kind: oltp\nname: f\nruntimes: [runc]\ndatabases: [mariadb, postgresql]\ndisruptors: [cpu-bomb]\n"
             "repetitions: {min: 2, max: 2}\nretries: 0\n", 4),
}


def faults(containers: int) -> str:
    """The k-th container of the study raises the k-th of the four (round and round)."""
    return ";".join(f"containers@{k}=raise:{name}"
                    for k, name in zip(range(1, containers + 1), itertools.cycle(RAISED)))


def test_the_four_are_what_fails_a_trial_and_each_names_its_reason():
    for name in RAISED:
        assert issubclass(RAISES[name], TRIAL_FAILURES)
    assert not issubclass(RuntimeError, TRIAL_FAILURES) and not issubclass(KeyError, TRIAL_FAILURES)
    assert reason(Failure("fio in victim: exit 1")) == "fio in victim: exit 1"
    assert reason(OSError(28, "No space left on device")) == "OSError: [Errno 28] No space left on device"
    from contend.network.link import NetworkError
    from contend.runtimes import RuntimeFailed
    from contend.tools import ToolFailed
    assert reason(NetworkError("`ip link` failed")) == "network: `ip link` failed"
    assert isinstance(RuntimeFailed("x"), Failure) and isinstance(ToolFailed("doing", "fio", "exit 1"), Failure)


def trials_of(out: Path) -> list[dict]:
    with Store(out, read_only=True) as store:
        return store.trials()


# oltp's repetitions depend on the earlier ones (it plans no list): its four are two databases × two repetitions
OLTP_TRIALS = {f"runc.{db}.r{r}" for db in ("mariadb", "postgresql") for r in (1, 2)}


def assert_each_failed_with_its_reason(out: Path, trials: list[dict], kind: str = "isolation") -> None:
    assert {t["trial_id"] for t in trials} == (OLTP_TRIALS if kind == "oltp" else planned_trials(out))
    for t in trials:
        assert t["status"] == "failed" and "CONTEND_FAULT:" in t["reason"], t
        assert t["ended_at"] is not None and t["ended_at"] >= t["started_at"], t
    # every one of the four reached a trial, each said in its own way
    said = " ".join(t["reason"] for t in trials)
    for name in RAISED:
        assert f"CONTEND_FAULT: {name} raised" in said, said
    assert "OSError: CONTEND_FAULT" in said and "ValueError: CONTEND_FAULT" in said


def isolation_run(tmp_path: Path, repetitions: int, fault: str) -> tuple[Path, subprocess.CompletedProcess]:
    """A tiny isolation study (runc, CPU harmony, one step) of `repetitions` trials run with CONTEND_FAULT."""
    require("stress-ng")
    runtime_or_skip("runc")
    spec = tiny_spec(tmp_path / "s.yaml", repetitions=repetitions, retries=0, baseline=1, steps=1, step_s=1)
    out = tmp_path / "out"
    return out, contend("run", str(spec), "--out", str(out), env={"CONTEND_FAULT": fault})


@needs_root
def test_an_isolation_trial_fails_on_each_of_the_four_and_the_study_goes_on(tmp_path):
    out, p = isolation_run(tmp_path, 4, faults(4))
    assert p.returncode == 1 and "4 of 4 trials failed" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    assert_each_failed_with_its_reason(out, trials_of(out))
    assert find() == []


@needs_root
@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_every_kinds_trial_fails_on_each_of_the_four_and_the_study_goes_on(kind, tmp_path):
    runtime_or_skip("runc")
    require("fio")
    require("stress-ng")
    text, containers = SPECS[kind]
    spec = tmp_path / "s.yaml"
    spec.write_text(text)
    out = tmp_path / "out"
    p = contend("run", str(spec), "--out", str(out), env={"CONTEND_FAULT": faults(containers)}, timeout=900)
    assert p.returncode == 1 and "failed" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    assert "Traceback" not in p.stderr
    assert_each_failed_with_its_reason(out, trials_of(out), kind)
    assert find() == []


@needs_root
def test_an_exception_no_trial_absorbs_ends_the_study_and_keeps_the_finished_trials(tmp_path):
    out, p = isolation_run(tmp_path, 3, "containers@2=raise:RuntimeError")
    assert p.returncode == 1 and "Traceback" in p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    assert "RuntimeError: CONTEND_FAULT: RuntimeError raised at containers@2" in p.stderr
    assert [(t["trial_id"], t["status"]) for t in trials_of(out)] == [("runc.harmony.cpu.r1", "ok")]
    assert find() == []
