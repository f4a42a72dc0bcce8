"""Tests run real containers as root; a test that needs what the host lacks skips with the reason."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contend import runtimes
from contend.runtimes.engine import docker_session

CONTEND = [sys.executable, "-m", "contend.cli"]
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not IS_ROOT, reason="needs root (real containers, cgroups, eBPF)")
ALL_RUNTIMES = ("runc", "crun", "runsc", "lxc", "docker", "runc@1.5.2", "runsc@20260905",
                "youki@0.7.0")


def runtime_or_skip(name: str) -> runtimes.Runtime:
    if not IS_ROOT:
        pytest.skip("needs root")
    rt = runtimes.get(name)
    if name in runtimes.BUILDS and not runtimes.built(runtimes.BUILDS[name]):
        pytest.skip(f"{name}: {runtimes.why_not_built(runtimes.BUILDS[name])}")  # make setup builds it
    if not rt.found():
        pytest.skip(f"{name} not installed on this host")
    if isinstance(rt, runtimes.Engine):
        ok, why = rt.engine_running()
        if not ok:
            pytest.skip(why)
    return rt


@pytest.fixture(scope="session")
def docker_engine():
    """A docker engine for the session: the host's if it runs, else Debian's dockerd started here and
    stopped afterwards (None: the docker tests skip, saying the engine is not running)."""
    with docker_session() as engine:
        yield engine


def run_that_made(code: str, then: str = "die", prefix: tuple[str, ...] = ()) -> tuple[subprocess.Popen, str]:
    """Another run of contend: a process that runs `code` (which records or makes something and binds `name`),
    prints `name`, then dies by SIGKILL (then="die": a killed contend) or sleeps (then="live", killed by the
    caller). Returns the process and the name it printed."""
    after = "os.kill(os.getpid(), signal.SIGKILL)" if then == "die" else "time.sleep(120)"
    script = (f"import os, signal, sys, time\nfrom contend import owned, runtimes\n{code}\n"
              f"print(name, flush=True)\n{after}\n")
    p = subprocess.Popen([*prefix, sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                         start_new_session=True)
    name = p.stdout.readline().strip()
    if then == "die":
        p.wait(timeout=60)
    assert name, "the other run printed nothing"
    return p, name


def require(binary: str) -> None:
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} not installed on this host")


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """After the whole suite, `contend clean --dry-run` must find nothing."""
    yield
    if IS_ROOT:
        from contend.clean import find
        left = [str(x) for x in find()]
        assert not left, f"the test suite leaked: {left}"


def planned_trials(results) -> set[str]:
    """The trial ids the study of a results directory plans (contend trial list): a cluster runs exactly these."""
    from contend.kinds import load, study_for
    return {tid for tid, _ in study_for(load(results / "spec.yaml"), results, None).trials()}


def contend(*args, env: dict | None = None, timeout: float = 300, cwd=None) -> subprocess.CompletedProcess:
    """contend as a user runs it, in a wide terminal (no line of its output wrapped); env adds to this one's."""
    return subprocess.run([*CONTEND, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def one_line_exit_2(p: subprocess.CompletedProcess, *words: str) -> None:
    """Bad input: exit 2, one line on stderr, no traceback, saying each of `words`."""
    assert p.returncode == 2, p.stdout[-2000:] + p.stderr[-2000:]
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr


def tiny_spec(path: Path, runtimes=("runc",), scenarios=("harmony",), baseline=2, steps=2, step_s=2,
              resources=("cpu",), **more) -> Path:
    """A small isolation study, written to path."""
    path.write_text(yaml.safe_dump({
        "name": "tiny", "runtimes": list(runtimes), "scenarios": list(scenarios), "resources": list(resources),
        "trial": {"baseline_s": baseline, "steps": steps, "step_s": step_s}, **more}))
    return path
