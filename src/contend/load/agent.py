"""The load agent (agent.c): one steady load per tenant for the whole trial, its level changed in place.

A trial's tenants each run one agent from before the baseline to the end. The host writes a level per
line on the agent's stdin and reads back when it took effect (`a` lines) and what the load did in every
report interval (`r` lines, the guest view). Times are the agent's own clock, mapped to the host's by the
smallest delay seen between a line's time and its arrival (a sandbox such as gVisor keeps a clock of its
own); so a report's time is where it was measured, not when a busy host got round to reading it.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import HOME, open_new
from ..runtimes import Container, Runtime, RuntimeFailed
from ..tools import exit_reason, last_line, run_tool

SOURCE = Path(__file__).parent / "agent.c"
IN_CONTAINER = "/data/contend-load"  # each tenant's copy, in its own /data
REPORT_MS = 100


class AgentError(RuntimeFailed):
    """The agent could not be built, started, or did not take a level (the message says which)."""


def agent_digest() -> str:
    """The version of the agent's source: its calibrated CPU unit is only good for this one."""
    return hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]


def build_agent(cache: Path = HOME / "tools") -> Path:
    """The agent, compiled once per version of its source (static: it runs in any rootfs)."""
    out = cache / f"contend-load-{agent_digest()}"
    if out.is_file():
        return out
    cc = shutil.which("cc") or shutil.which("gcc") or "cc"
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    run_tool([cc, "-O2", "-static", "-pthread", "-o", str(tmp), str(SOURCE), "-lm"], "building the load agent",
             timeout=300)
    tmp.rename(out)
    return out


@dataclass
class Report:
    t: float  # agent clock, seconds since it started
    arrived: float  # host clock (time.monotonic) when the line was read
    work: int
    extra: int


@dataclass
class Agent:
    """One running agent; `lines` fills from a reader thread."""

    proc: subprocess.Popen
    started: float  # host monotonic
    reports: list[Report] = field(default_factory=list)
    acks: list[tuple[float, float, float]] = field(default_factory=list)  # (agent t, arrived, level)
    error: str = ""
    ended: float | None = None  # host monotonic when its output ended
    _ack: threading.Condition = field(default_factory=threading.Condition)

    @classmethod
    def start(cls, argv: list[str], popen) -> "Agent":
        """`popen(argv, **kw)` starts argv (a runtime's exec, or a plain Popen on the host)."""
        proc = popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                     bufsize=1)
        a = cls(proc, time.monotonic())
        threading.Thread(target=a._read, daemon=True).start()
        return a

    def _read(self) -> None:
        assert self.proc.stdout is not None  # started with pipes (start)
        for line in self.proc.stdout:
            now = time.monotonic()
            parts = line.split()
            try:
                if parts[0] == "r":
                    self.reports.append(Report(float(parts[1]), now, int(parts[2]), int(parts[3])))
                elif parts[0] == "a":
                    with self._ack:
                        self.acks.append((float(parts[1]), now, float(parts[2])))
                        self._ack.notify_all()
                elif parts[0] == "e":
                    self.error = line[2:].strip()
            except (IndexError, ValueError):
                continue  # not a line of the protocol (a runtime's own message): ignored
        with self._ack:
            self.ended = time.monotonic()
            self._ack.notify_all()

    @property
    def running(self) -> bool:
        return self.ended is None and self.proc.poll() is None

    def set(self, value: float, timeout: float = 30) -> float:
        """Apply a level (in the agent's unit); returns the host time when it took effect (host monotonic)."""
        with self._ack:
            seen = len(self.acks)
            assert self.proc.stdin is not None
            try:
                self.proc.stdin.write(f"{value:.17g}\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                raise AgentError(self.why_stopped()) from None
            deadline = time.monotonic() + timeout
            while len(self.acks) == seen:
                left = deadline - time.monotonic()
                if self.ended is not None or left <= 0:
                    raise AgentError(self.why_stopped() if self.ended is not None
                                     else f"level {value:g} not in force after {timeout:g}s")
                self._ack.wait(left)
            t, arrived, _ = self.acks[seen]
        return self.host_time(t, default=arrived)

    def offset(self) -> float | None:
        """Host time minus agent time: the smallest delay seen (every line arrives after it was written)."""
        seen = [r.arrived - r.t for r in self.reports] + [a - t for t, a, _ in self.acks]
        return min(seen) if seen else None

    def host_time(self, t: float, default: float) -> float:
        off = self.offset()
        return t + off if off is not None else default

    def why_stopped(self) -> str:
        code = self.proc.poll()
        if code is None:  # its output ended or its input broke: the exec (runc's, say) exits a moment later
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.error:
            return f"load agent: {self.error}"
        if code is None:
            return "load agent: stopped answering"
        err = ""
        try:
            err = last_line(self.proc.stderr.read()) if self.proc.stderr is not None else ""
        except (OSError, ValueError):
            pass
        return f"load agent {exit_reason(code)}" + (f": {err}" if err else "")

    def stop(self, timeout: float = 10) -> None:
        """End of stdin ends the agent; a kill if it does not go."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        with self._ack:
            if self.ended is None:
                self._ack.wait(2)

    def intervals(self, clock0: float) -> list[tuple[float, float, int, int]]:
        """(t, seconds, work, extra) of every report interval, t on the trial's clock (its end)."""
        off = self.offset()
        out, prev = [], 0.0
        for r in self.reports:
            if off is not None:
                out.append((r.t + off - clock0, r.t - prev, r.work, r.extra))
            prev = r.t
        return out


def start_in(runtime: Runtime, c: Container, data_dir: Path, args: list[str],
             report_ms: int = REPORT_MS) -> Agent:
    """The agent in a tenant: copied into its /data, started with `args` (a mode and its arguments)."""
    dst = data_dir / Path(IN_CONTAINER).name
    if dst.is_symlink():  # the container's directory: a link it left there is not written through (issue 52 L3)
        dst.unlink()
    if not dst.exists():
        with open(build_agent(), "rb") as a, open_new(dst, "wb", perm=0o755) as b:
            shutil.copyfileobj(a, b)
    return Agent.start([IN_CONTAINER, "-i", str(report_ms), *args], lambda argv, **kw: runtime.exec(c, argv, **kw))
