"""What contend made on this host, recorded as it makes it: `contend clean` removes only what a dead run
recorded, and never what a running one did.

Every process that makes something (a study, `contend doctor`, a cluster trial pod, a test) is a *run*: a
random id, a directory RUNS/<id>/ holding `run.json` (its pid, the kernel's start time of that pid, its
command line) and `lock`, an flock the run holds while it lives. The kernel drops the lock however the run
dies, in whatever PID namespace it ran, so liveness never rests on a PID (reused, or PID 1 of every pod).
An object is recorded by an empty file RUNS/<id>/<kind>:<name> *before* it is made, and the file goes once
the object is gone: a run killed between the two leaves a record of something that may not exist, never an
object without a record. RUNS is below HOME, not the tmpfs STATE: data directories outlive a reboot.
"""
from __future__ import annotations

import atexit
import fcntl
import json
import os
import re
import shutil
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .hostlock import held
from .paths import DATA, HOME

RUNS = HOME / "runs"
KINDS = ("container", "directory", "netns", "link")
NAME = re.compile(r"^[\w.@-]{1,200}$")  # what contend names its objects; a record is a file name
RUN_ID = re.compile(r"^[0-9a-f]{32}$")

Key = tuple[str, str]  # (kind, name)


@dataclass(frozen=True)
class Owner:
    run: str
    pid: int
    alive: bool
    mine: bool  # recorded by this very process

    def __str__(self) -> str:
        return f"run {self.run[:8]}, pid {self.pid}"


class _Run:
    """This process's run, made at its first record (a process that makes nothing leaves no trace)."""

    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.pid = os.getpid()
        self.dir = RUNS / self.id
        self.dir.mkdir(parents=True, mode=0o700)
        # O_CLOEXEC (Python's default): a tool contend execs must not keep its run alive
        self.lock = os.open(self.dir / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        doc = {"pid": self.pid, "start": _start_time(self.pid), "argv": sys.argv[:8], "since": time.time()}
        (self.dir / "run.json").write_text(json.dumps(doc))



_run: _Run | None = None


def _this_run() -> _Run:
    global _run
    if _run is None or _run.pid != os.getpid():  # a forked child records under a run of its own
        _run = _Run()
    return _run


@atexit.register  # at import, so after the exit sweeps of modules that import this one (atexit is LIFO)
def _end() -> None:
    """At exit: this run's directory goes if nothing it recorded is left; else `clean` finds it dead."""
    if _run is None or _run.pid != os.getpid():
        return  # nothing recorded, or a forked child exiting: the run is its parent's
    if not _records(_run.dir):
        shutil.rmtree(_run.dir, ignore_errors=True)


def _start_time(pid: int) -> int:
    """The kernel's start time of pid (clock ticks since boot): with the pid, names one process for good."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def _key_file(kind: str, name: str) -> str:
    if kind not in KINDS or not NAME.match(name):
        raise ValueError(f"not a name contend gives its objects: {kind} {name!r}")
    return f"{kind}:{name}"


def record(kind: str, name: str) -> None:
    """Note that this run is about to make `name`; call before making it."""
    (_this_run().dir / _key_file(kind, name)).touch()


def forget(kind: str, name: str) -> None:
    """This run removed `name` (only this run's record: a dead run's goes when `prune` finds it gone)."""
    if _run is not None and _run.pid == os.getpid():
        (_run.dir / _key_file(kind, name)).unlink(missing_ok=True)


def data_dir(uid: str, tenant: str) -> Path:
    """A tenant's data directory (bind-mounted at /data), recorded before it is made."""
    name = f"contend-{uid}-{tenant}"
    record("directory", name)
    return DATA / name


def remove_data_dir(d: Path) -> None:
    shutil.rmtree(d, ignore_errors=True)
    if not d.exists():
        forget("directory", d.name)


def _records(run_dir: Path) -> list[Key]:
    out = []
    try:
        entries = list(run_dir.iterdir())
    except OSError:
        return []
    for f in entries:
        kind, _, name = f.name.partition(":")
        if kind in KINDS and NAME.match(name) and not f.is_symlink():
            out.append((kind, name))
    return out


def _runs() -> list[Path]:
    try:
        return [d for d in RUNS.iterdir() if RUN_ID.match(d.name) and d.is_dir() and not d.is_symlink()]
    except OSError:
        return []


def _pid(run_dir: Path) -> int:
    try:
        return int(json.loads((run_dir / "run.json").read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def owners() -> dict[Key, Owner]:
    """Who recorded each object (a live run's record wins over a dead one's: the name is in use)."""
    mine = _run.id if _run is not None and _run.pid == os.getpid() else ""
    out: dict[Key, Owner] = {}
    for d in _runs():
        owner = Owner(d.name, _pid(d), d.name == mine or held(d / "lock"), d.name == mine)
        for key in _records(d):
            if key not in out or owner.alive:
                out[key] = owner
    return out


def prune(existing: set[Key]) -> None:
    """Forget what dead runs recorded and is no longer there; a dead run with nothing left goes."""
    for d in _runs():
        if held(d / "lock") or (_run is not None and d.name == _run.id):
            continue
        gone = [k for k in _records(d) if k not in existing]
        for kind, name in gone:
            (d / f"{kind}:{name}").unlink(missing_ok=True)
        if not _records(d):
            shutil.rmtree(d, ignore_errors=True)
