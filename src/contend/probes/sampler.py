"""Polls each tenant's cgroup counters every bucket and turns differences into rates."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ..cgroups import Stats
from ..network import counter
from .base import Sample, Target


def rates(prev: Stats, cur: Stats, dt: float) -> dict[str, float]:
    """Per-second rates and levels between two snapshots (pure)."""
    out = {
        "cpu": (cur.cpu_usage_ns - prev.cpu_usage_ns) / 1e9 / dt,  # CPUs used
        "cpu_throttled_s": (cur.throttled_ns - prev.throttled_ns) / 1e9 / dt,
        "mem_bytes": float(cur.memory_current),
        "mem_peak_bytes": float(cur.memory_peak),
        "oom_kill": float(cur.memory_events.get("oom_kill", 0) - prev.memory_events.get("oom_kill", 0)),
    }
    for key in ("rbytes", "wbytes", "rios", "wios"):
        total_cur = sum(getattr(c, key) for c in cur.io.values())
        total_prev = sum(getattr(c, key) for c in prev.io.values())
        out[f"io_{key}_s"] = (total_cur - total_prev) / dt
    if cur.net_bytes is not None and prev.net_bytes is not None:
        out["net_bytes_s"] = (cur.net_bytes - prev.net_bytes) / dt
    for key, total in cur.pressure.items():  # PSI: share of the time some / all tasks stalled
        res, kind, field = key.split(".")
        if field == "total_us" and key in prev.pressure:
            out[f"psi_{res}_{kind}"] = (total - prev.pressure[key]) / 1e6 / dt
    return out


def oom_events(samples: list[Sample]) -> list[tuple]:
    """The OOM kills the cgroup counters saw, as store events (t, tenant, "oom-kill", detail)."""
    return [(s.t, s.tenant, "oom-kill", f"{int(s.value)} process(es) killed") for s in samples
            if s.quantity == "oom_kill" and s.value > 0]


class PeriodicSampler:
    """A thread that reads counters every `period` s into samples (t since clock0); a subclass's `_loop`
    reads until `_stop` is set."""

    source = ""

    def __init__(self, period: float = 0.1, clock0: float | None = None):
        self.period = period
        self.clock0 = time.monotonic() if clock0 is None else clock0
        self.samples: list[Sample] = []
        self.problems: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"{self.source}-sampler", daemon=True)

    def _loop(self) -> None:
        raise NotImplementedError

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> list[Sample]:
        self._stop.set()
        self._thread.join(timeout=5)
        return self.samples


class CgroupSampler(PeriodicSampler):
    """A thread that reads the kernel's own counters: cheap enough for 100 ms buckets (DESIGN §5)."""

    source = "cgroup"

    def __init__(self, targets: list[Target], period: float = 0.1, clock0: float | None = None):
        super().__init__(period, clock0)
        self.targets = targets
        self.attached = [self.source]  # the kernel's counters are always there

    @staticmethod
    def snapshot(t: Target) -> Stats:
        s = t.cgroup.stats()
        if not s.pressure and t.tracking is not None:
            s.pressure = t.tracking.pressure()  # hybrid host: PSI lives in the unified tree
        if t.netdev:
            s.net_bytes = counter(t.netdev)  # what arrives at the host side of its veth is what it sent
        return s

    def _loop(self) -> None:
        prev = {t.tenant: (time.monotonic(), self.snapshot(t)) for t in self.targets}
        next_at = time.monotonic() + self.period
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            # a late bucket does not make the next one short: a rate over a few ms of a counter that the
            # kernel updates per tick read 0 CPUs for a busy tenant (seen in a runc trial's baseline), and one
            # over half a period of a tenant under a CFS quota reads anything from 0 to 1 (half a CFS period)
            next_at = max(next_at + self.period, time.monotonic() + self.period)
            for t in self.targets:
                if t.sync is not None:
                    try:
                        t.sync()
                    except OSError as e:  # keep sampling the rest
                        self.problems.append(f"{t.tenant}: tracking sync: {e}")
                then, old = prev[t.tenant]
                if time.monotonic() - then < 0.8 * self.period:
                    continue  # too short to be a rate: this tenant's next bucket covers it
                now, cur = time.monotonic(), self.snapshot(t)
                prev[t.tenant] = (now, cur)
                stamp = (now + then) / 2 - self.clock0  # the middle of the interval measured
                for q, v in rates(old, cur, now - then).items():
                    self.samples.append(Sample(stamp, t.tenant, self.source, q, v))


HOST = "host"  # the tenant and source name of what the host as a whole did


def host_cpu_ticks(stat: Path = Path("/proc/stat")) -> dict[str, tuple[int, int, int]]:
    """Per CPU ("cpu0", …), (busy, idle, stolen) clock ticks since boot: busy is user, nice, system, irq and
    softirq (a guest's time is inside user); idle counts iowait too; stolen is the time a hypervisor ran
    something else while the CPU wanted to run."""
    out: dict[str, tuple[int, int, int]] = {}
    with open(stat) as f:
        for line in f:
            name, *rest = line.split()
            if not name.startswith("cpu") or name == "cpu":
                if out:
                    break
                continue
            user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in rest[:8])
            out[name] = (user + nice + system + irq + softirq, idle + iowait, steal)
    return out


def host_rates(prev: dict, cur: dict, ticks: float) -> tuple[float, float]:
    """(busy CPUs, stolen CPUs where work was running) between two host_cpu_ticks snapshots over `ticks`
    clock ticks (pure). A CPU's steal is weighted by how busy the CPU was: an idle vCPU that a timer wakes
    waits for the hypervisor too, and that wait is counted as steal though no work of a tenant was held up
    (on this VM the host's steal fell from 0.12 to 0.04 CPU as a trial's load filled its idle CPU)."""
    busy = stolen = 0.0
    for name, (b, i, st) in cur.items():
        b0, i0, st0 = prev.get(name, (b, i, st))
        db, di, dst = b - b0, i - i0, st - st0
        busy += db / ticks
        if db + di > 0:
            stolen += dst / ticks * db / (db + di)
    return busy, stolen


class HostCpuSampler(PeriodicSampler):
    """The whole host's CPUs every bucket: busy (everyone's, tenants' included) and stolen by a hypervisor
    from running work, in CPUs. With the tenants' own use it tells what happened outside them (metrics:
    host_outside)."""

    source = HOST

    def __init__(self, period: float = 0.1, clock0: float | None = None):
        super().__init__(period, clock0)
        self.attached = [self.source]
        self.hz = os.sysconf("SC_CLK_TCK")

    def _loop(self) -> None:
        then, prev = time.monotonic(), host_cpu_ticks()
        while not self._stop.wait(self.period):
            now, cur = time.monotonic(), host_cpu_ticks()
            if now - then < 0.8 * self.period:
                continue
            busy, stolen = host_rates(prev, cur, (now - then) * self.hz)
            stamp = (now + then) / 2 - self.clock0
            self.samples += [Sample(stamp, HOST, HOST, "cpu_busy", busy),
                             Sample(stamp, HOST, HOST, "cpu_steal", stolen)]
            then, prev = now, cur
