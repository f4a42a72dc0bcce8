"""One small interface for every container runtime contend drives."""
from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from .. import owned
from ..cgroups import PREFIX, Cgroup, CgroupHost, Limits, V2Cgroup, detect, mirror
from ..failures import Failure
from ..paths import STATE  # noqa: F401  (re-exported: runtimes keep their state below it)
from ..tools import failure, last_line  # noqa: F401  (re-exported: the runtimes, the load and the kinds use them)
from .security import DEFAULT_CAPS

NAME_PREFIX = "contend-"


@contextlib.contextmanager
def signals_deferred():
    """Teardown must finish even if Ctrl-C or SIGTERM arrives meanwhile: the signal is noted and delivered
    after. (Swapping the Python handlers, not the signal mask: a signal already taken by Python's C handler
    would still raise mid-teardown, and children would inherit a blocked mask.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted: list[signal.Signals] = []
    old = {s: signal.signal(s, lambda signum, frame: noted.append(signal.Signals(signum)))
           for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if noted:
            handler = old[noted[0]]
            if callable(handler):
                handler(noted[0], None)  # e.g. default_int_handler: raises KeyboardInterrupt
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), noted[0])


# Containers this process made and has not removed yet, swept at exit: covers the instant between an
# interrupt and the start of a deferred teardown.
LIVE: dict[str, "Runtime"] = {}


def sweep() -> None:
    with signals_deferred():
        for name, rt in list(LIVE.items()):
            rt.remove_leftover(name)


atexit.register(sweep)


class RuntimeFailed(Failure):
    """A runtime refused or failed; the message says which command and why."""


@dataclass
class ContainerSpec:
    name: str
    limits: Limits = field(default_factory=Limits)
    data_dir: Path | None = None  # host directory mounted read-write at /data
    command: list[str] = field(default_factory=lambda: ["/usr/bin/sleep", "infinity"])
    netns: Path | None = None  # a network namespace to join (network trials); None: an empty one, lo only
    caps: tuple[str, ...] = DEFAULT_CAPS  # runc spec's; a load that needs more names them (security.py)
    userns: bool = True  # its root an unprivileged host uid, where the runtime does user namespaces (security.py)

    def __post_init__(self):
        # a runtime's container id takes word characters, dots and dashes only (runc@1.5.2 makes an @)
        self.name = re.sub(r"[^\w.-]", "-", self.name)
        if not self.name.startswith(NAME_PREFIX):
            self.name = NAME_PREFIX + self.name


@dataclass
class Container:
    name: str
    cgroup: Cgroup
    tracking: V2Cgroup | None


@dataclass
class Availability:
    name: str
    found: bool
    version: str = ""
    runs: bool | None = None  # None: not tried
    reason: str = ""


class Runtime(ABC):
    name: str = ""
    binary: str = ""
    no_netns: str = ""  # why this runtime cannot join a network namespace contend made ("" = it can)
    does_userns = False  # does it put a container whose spec asks in a user namespace (ContainerSpec.userns)

    def __init__(self, host: CgroupHost | None = None):
        self.host = host or detect()

    # -- facts
    def found(self) -> bool:
        return shutil.which(self.binary) is not None

    @abstractmethod
    def version(self) -> str: ...

    # -- lifecycle: what each runtime implements
    @abstractmethod
    def _start(self, spec: ContainerSpec) -> Container:
        """Create and start the container; its init process runs spec.command."""

    @abstractmethod
    def exec_argv(self, c: Container, argv: list[str]) -> list[str]:
        """The host command that runs argv inside the container."""

    @abstractmethod
    def _remove(self, name: str) -> None:
        """Kill and remove a container of this runtime by name, and everything it made. Idempotent."""

    @abstractmethod
    def leftovers(self) -> list[str]:
        """Names of containers of this runtime that contend created and that still exist."""

    # -- lifecycle: shared by all runtimes
    def create(self, spec: ContainerSpec) -> Container:
        """Create and start a container; on any failure (Ctrl-C included) nothing of it is left."""
        owned.record("container", spec.name)  # before anything of it exists: a crash leaves a record, not an orphan
        LIVE[spec.name] = self
        try:
            return self._start(spec)
        except BaseException:
            with signals_deferred():
                self.remove_leftover(spec.name)
            raise

    def exec(self, c: Container, argv: list[str], **popen) -> subprocess.Popen:
        """Start argv inside the container; returns the host-side client process."""
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("start_new_session", True)  # contend, not the terminal, ends what it started
        if c.tracking is not None and c.tracking.dir not in c.cgroup.dirs() and c.tracking.dir.exists():
            # hybrid host: the exec'd process starts in the tracking cgroup, so eBPF attributes it from its
            # first event (the sampler's re-sync comes up to a bucket late: a fast allocator is done by then)
            procs = str(c.tracking.dir / "cgroup.procs")
            popen.setdefault("preexec_fn", lambda: _join(procs))
        return subprocess.Popen(self.exec_argv(c, argv), **popen)

    def delete(self, c: Container) -> None:
        self.remove_leftover(c.name)

    def remove_leftover(self, name: str) -> None:
        self._remove(name)
        LIVE.pop(name, None)
        owned.forget("container", name)

    # -- shared helpers
    def run(self, c: Container, argv: list[str], timeout: float | None = 60) -> subprocess.CompletedProcess:
        p = self.exec(c, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            raise RuntimeFailed(f"{self.name}: {' '.join(argv)} timed out after {timeout}s") from None
        return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def pids(self, c: Container) -> list[int]:
        return c.cgroup.procs()

    def cgroups_for(self, name: str) -> tuple[Cgroup, V2Cgroup | None]:
        rel = f"{PREFIX}/{name}"
        return self.host.cgroup(rel), self.host.tracking(rel)

    def track(self, c: Container) -> None:
        """Mirror the container's processes into its tracking cgroup (hybrid host: the v2 id for eBPF).

        Called after create and again by the sampler, since exec'd processes land in the runtime's
        v1 cgroups only. Processes move with their future children; already-forked ones move here.
        """
        if c.tracking is not None:
            mirror(c.cgroup, c.tracking)

    def forget_cgroups(self, name: str) -> None:
        """Remove a container's cgroups in every hierarchy (also when the runtime already did: contend's
        parent directories go with the last of its containers)."""
        for cg in self.cgroups_for(name):
            if cg is not None:
                cg.remove()


def remember_netns(state: Path, netns: Path | None) -> None:
    """Note the network namespace a container was started in, in its state directory."""
    if netns is not None:
        state.mkdir(parents=True, exist_ok=True)
        (state / "netns").write_text(str(netns))


def in_netns(state: Path) -> list[str]:
    """The prefix that runs a command in the container's network namespace, [] if it has none (or it is
    gone). runsc and lxc talk to their containers over abstract unix sockets, which belong to a network
    namespace: every command for a container started inside one must run there too."""
    try:
        netns = (state / "netns").read_text()
    except OSError:
        return []
    return ["nsenter", f"--net={netns}"] if Path(netns).exists() else []


def _join(procs: str) -> None:
    try:
        with open(procs, "w") as f:
            f.write("0")
    except OSError:
        pass  # gone meanwhile: the sampler's sync still catches the process


def entries(d: Path) -> list[Path]:
    """What d holds, [] if it is not there (or vanishes while listed: a runtime finishing its teardown)."""
    try:
        return sorted(d.iterdir())
    except OSError:
        return []


def run_atomic(cmd: list[str], timeout: float = 60, input=None, **kw) -> subprocess.CompletedProcess:
    """Run a runtime command to its end even if Ctrl-C or SIGTERM arrives meanwhile (raised afterwards).

    A container half made by a killed `runsc create` finishes starting after our cleanup has run; so the
    command runs in its own session (the terminal's Ctrl-C reaches contend only) and is waited for.
    """
    try:
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
    except FileNotFoundError:
        raise RuntimeFailed(f"{cmd[0]} not found") from None
    interrupt: BaseException | None = None
    while True:
        try:
            out, err = p.communicate(input, timeout=timeout)
            break
        except KeyboardInterrupt as e:
            interrupt, input = e, None
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            raise RuntimeFailed(f"`{' '.join(cmd)}` timed out after {timeout}s") from None
    if interrupt is not None:
        raise interrupt
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def check(cmd: list[str], what: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """Run a runtime CLI command (atomically); raise RuntimeFailed with its stderr on failure."""
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    kw.setdefault("text", "input" not in kw or isinstance(kw.get("input"), str))
    try:
        p = run_atomic(cmd, timeout, **kw)
    except RuntimeFailed as e:
        raise RuntimeFailed(f"{what}: {e}") from None
    if p.returncode != 0:
        raise RuntimeFailed(failure(f"{what}: `{' '.join(cmd)}`", os.path.basename(cmd[0]), p.returncode,
                                    p.stderr or p.stdout))
    return p
