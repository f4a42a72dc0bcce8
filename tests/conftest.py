"""Tests run real containers as root; a test that needs what the host lacks skips with the reason.

Each test is in exactly one tier, derived here from what it asks for (never by hand):
- `unit` (make test-unit): asks for nothing of the host; runs without root, apt or runtimes.
- `host` (make test, with the unit tier): asks for the `root` fixture (directly, through `needs_root`, a
  module's `pytestmark`, or a fixture that asks for it) or is marked `root`: real containers, cgroups, probes,
  the tools make setup installs.
- `all` (make test-all): a whole study's long tail or a matrix's (markers `slow`, `faults`, `exhaustive`),
  the cgroup v2 guest's boots (fixture `guest`) and what only runs inside it (marker `cgroup2`).
A test that reaches for a runtime or a host tool (`runtime_or_skip`, `require`) without asking for `root` fails,
saying so: its tier would be wrong.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from contend import runtimes
from contend.runtimes.engine import docker_session

CONTEND = [sys.executable, "-m", "contend.cli"]
IS_ROOT = os.geteuid() == 0
LONG_MARKS = {"slow", "faults", "exhaustive", "cgroup2"}  # the tier `all`, with the guest's boots
TIERS = ("unit", "host", "all")


@pytest.fixture(scope="session")
def root():
    """The host itself: real containers, cgroups, eBPF, the tools make setup installs (tier `host`)."""
    if not IS_ROOT:
        pytest.skip("needs root (real containers, cgroups, eBPF)")


@pytest.fixture
def guest(root):
    """A boot of the cgroup v2 guest (tier `all`): minutes under qemu's TCG."""


needs_root = pytest.mark.usefixtures("root")


def tier(item: pytest.Item) -> str:
    """The one tier a test belongs to, from its markers and the fixtures it asks for (transitively)."""
    names = set(getattr(item, "fixturenames", ()))
    if "guest" in names or {m.name for m in item.iter_markers()} & LONG_MARKS:
        return "all"
    return "host" if "root" in names or item.get_closest_marker("root") else "unit"


# A real-machinery test (host or all tier) that fails is run once more before it counts as failed: they measure
# real CPU, disk and timing on a shared 2-CPU VM whose steal time can take half a CPU for a second (a CI run
# failed on a spinner's bucket reading 0.27 CPU against a bound of 0.3), and one such flake used to throw away
# a whole submission. A rerun is said in the summary ("1 rerun"); a real defect fails twice. The pure tests
# (unit) are never rerun. `PYTEST_ARGS="-p no:rerunfailures"` runs everything once.
RERUNS = 1


def pytest_collection_modifyitems(config, items):
    reruns = config.pluginmanager.hasplugin("rerunfailures")
    for item in items:
        item.add_marker(tier(item))
        if reruns and tier(item) != "unit" and not item.get_closest_marker("flaky"):
            item.add_marker(pytest.mark.flaky(reruns=RERUNS))


def pytest_configure(config):
    # a suite started in the background (a shell's `&`, nohup, CI without a terminal) may inherit SIGINT
    # ignored, and every child would inherit that too, so a test's Ctrl-C would never reach the contend it
    # starts: the runner takes Python's default handler, and its children (exec resets a handler) the default
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_RUNNING: list[pytest.Item] = []


def pytest_runtest_setup(item):
    _RUNNING[:] = [item]


def _asks_for_root(what: str) -> None:
    """A test reaching for the host must be in the host tier (or `all`): fail one that is not."""
    if _RUNNING and tier(_RUNNING[0]) == "unit":
        pytest.fail(f"{_RUNNING[0].nodeid} uses {what} but does not ask for the root fixture (needs_root): "
                    "it would run in the unit tier, without root", pytrace=False)
ALL_RUNTIMES = ("runc", "crun", "runsc", "lxc", "docker", "runc@1.5.2", "runsc@20260905",
                "youki@0.7.0")


def runtime_or_skip(name: str) -> runtimes.Runtime:
    _asks_for_root(f"the runtime {name}")
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
def docker_engine(root):
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
    _asks_for_root(f"the host's {binary}")
    if shutil.which(binary) is None:
        pytest.skip(f"{binary} not installed on this host")


# what `contend clean --dry-run` found before the suite began (another run's, a crashed one's): not the suite's,
# so the tests' "nothing left behind" is measured against it; said in the header, never removed by the suite
BEFORE: set[str] = set()


def pytest_sessionstart(session):
    if IS_ROOT:
        from contend import clean
        BEFORE.update(str(x) for x in clean.find())


def pytest_report_header(config):
    if BEFORE:
        return [f"contend leftovers from before this suite (not counted as the suite's): {sorted(BEFORE)}"]
    return None


def find(host=None) -> list:
    """contend clean's leftovers (on `host`, else this one's), less those there before the suite began (BEFORE)."""
    from contend import clean
    return [x for x in clean.find(host) if str(x) not in BEFORE]


def not_before(text: str) -> str:
    """`contend clean` output without its lines about what was there before the suite began."""
    return "\n".join(line for line in text.splitlines()
                     if not any(b.split(" ", 1)[-1] in line for b in BEFORE)).strip()


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind():
    """After the whole suite, `contend clean --dry-run` must find nothing the suite made."""
    yield
    if IS_ROOT:
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


@contextlib.contextmanager
def loop_disk(img: Path, n: int):
    """/dev/loopN added (LOOP_CTL_ADD) over the file img, detached and removed after."""
    ctl = os.open("/dev/loop-control", os.O_RDWR)
    try:
        fcntl.ioctl(ctl, 0x4C80, n)  # LOOP_CTL_ADD
        dev = f"/dev/loop{n}"
        subprocess.run(["losetup", dev, str(img)], check=True, timeout=30)
        try:
            yield dev, Path(f"/sys/block/loop{n}/dev").read_text().strip()
        finally:
            subprocess.run(["losetup", "-d", dev], timeout=30)
            for _ in range(50):  # the device goes once the kernel has let go of it
                try:
                    fcntl.ioctl(ctl, 0x4C81, n)  # LOOP_CTL_REMOVE
                    break
                except OSError:
                    time.sleep(0.1)
    finally:
        os.close(ctl)


def unused_loop() -> int:
    return next(n for n in random.sample(range(100, 1000), 50) if not Path(f"/sys/block/loop{n}").exists())


@pytest.fixture
def fresh_disk(tmp_path):
    """A loop device that did not exist before (an unused number; removed after): no throttle rule was ever set on
    it, as on every disk of a freshly booted machine. Yields its path and MAJ:MIN; its image is tmp_path/disk.img."""
    require("losetup")
    img = tmp_path / "disk.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    with loop_disk(img, unused_loop()) as disk:
        yield disk


def written_on(blkio: Path, mm: str) -> int:
    """The bytes a v1 blkio cgroup was counted writing to the disk MAJ:MIN `mm`."""
    for line in (blkio / "blkio.throttle.io_service_bytes_recursive").read_text().splitlines():
        if line.startswith(f"{mm} Write "):
            return int(line.split()[2])
    return 0
