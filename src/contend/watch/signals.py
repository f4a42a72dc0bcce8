"""What `contend watch` reads every period: one Frame of per-container signals, who preempted whom, and the
host's own. A Frame is plain data, written as one JSON line by --record and read back by --replay, so the
detector is a pure function of frames (DESIGN §9)."""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

# every per-container signal: name -> (unit, what it is). nan: not available on this host or for this container.
CONTAINER_SIGNALS: dict[str, tuple[str, str]] = {
    "cpu": ("CPUs", "CPU time used per second (cgroup cpuacct / cpu.stat)"),
    "cpu_quota": ("CPUs", "its own CFS quota (nan: none)"),
    "throttled": ("share", "share of its CFS periods in which its own quota stopped it (cpu.stat)"),
    "rq_delay": ("s/s", "time its tasks waited runnable on a run queue, per second (eBPF sched_switch)"),
    "cpu_psi": ("s/s", "CPU pressure, some: time some of its tasks waited for a CPU (PSI, unified cgroup)"),
    "mem": ("bytes", "memory charged to it now"),
    "mem_limit": ("bytes", "its own memory limit (nan: none)"),
    "mem_max": ("1/s", "times per second it hit its own memory limit (memory.events max / v1 failcnt)"),
    "mem_high": ("1/s", "times per second it went over its memory.high and was reclaimed (v2 memory.events high; "
                        "0 on v1)"),
    "oom_kill": ("1/s", "its processes OOM-killed per second"),
    "mem_psi": ("s/s", "memory pressure, some (PSI): time its tasks stalled on reclaim or refaults"),
    "majfault": ("1/s", "major page faults per second (pages read back from disk)"),
    "refault": ("1/s", "pages of its working set evicted and read back, per second (workingset refaults)"),
    "io_bytes": ("B/s", "bytes read and written per second on any disk (io.stat / blkio)"),
    "io_wbytes": ("B/s", "of which written"),
    "io_ios": ("1/s", "I/Os per second"),
    "io_limited": ("0/1", "1 while it runs at its own I/O throttle (io.max / blkio.throttle) on its busiest disk"),
    "io_psi": ("s/s", "I/O pressure, some (PSI): time its tasks waited for I/O"),
    "io_wait_ms": ("ms", "its I/O pressure per I/O it did (nan: under one I/O per second, or no PSI)"),
    "dirty": ("bytes", "its page cache dirty or under writeback (buffered writes not on the disk yet)"),
    "net_bytes": ("B/s", "bytes sent and received per second on its interfaces but lo (its network namespace's "
                         "/proc/net/dev; nan: it shares the host's)"),
    "net_drops": ("1/s", "packets its interfaces dropped per second"),
    "net_rtt_ms": ("ms", "the mean smoothed round-trip time of its TCP connections, over the ACKs they took in "
                         "(eBPF tcp_probe, by network namespace; nan: no ACK, no eBPF or no BTF)"),
    "net_retrans": ("share", "share of the TCP segments it sent that were retransmissions (its namespace's "
                             "/proc/net/snmp; nan: under 100 segments per second)"),
}
HOST_SIGNALS: dict[str, tuple[str, str]] = {
    "disk_latency_ms": ("ms", "mean time per I/O completed on the busiest watched disk (/sys/dev/block/*/stat)"),
    "disk_ios": ("1/s", "I/Os the busiest watched disk completed per second"),
    "unattributed_wbytes": ("B/s", "bytes the disks wrote that no watched container was charged for "
                                   "(kernel writeback on cgroup v1, other writers)"),
    "cpu_other": ("CPUs", "CPU time used outside every watched container (/proc/stat less theirs, less steal)"),
    "steal": ("CPUs", "CPU time the hypervisor ran something else while the host's CPUs had work (/proc/stat)"),
    "cpus": ("CPUs", "the host's CPUs (all of /proc/stat's ticks per second)"),
    "cpu_psi": ("s/s", "the host's CPU pressure, some (/proc/pressure)"),
    "mem_psi": ("s/s", "the host's memory pressure, some"),
    "io_psi": ("s/s", "the host's I/O pressure, some"),
}

HOST = "host"  # a preemptor outside every watched container (its use: host cpu_other)
WRITEBACK = "writeback"  # the disk's writes charged to no watched container
STEAL = "steal"  # the hypervisor, running something else on the host's CPUs (its use: host steal)


NOTHING: dict[str, float] = {}  # a container not in a frame: no signal (never written to)


@dataclass
class Frame:
    """One period: t is its end in seconds since the watch started, dt its length."""

    t: float
    dt: float
    containers: dict[str, dict[str, float]]
    preempt: dict[str, dict[str, float]] = field(default_factory=dict)  # victim -> preemptor -> per second
    host: dict[str, float] = field(default_factory=dict)
    # victim -> who ran -> seconds per second of its tasks' run-queue wait that one ran on their CPU (eBPF);
    # the victim itself: its own other tasks, `host`: tasks in no watched container
    taken: dict[str, dict[str, float]] = field(default_factory=dict)

    def get(self, name: str, signal: str) -> float:
        return self.containers.get(name, NOTHING).get(signal, math.nan)

    def renamed(self, name: Callable[[str], str]) -> "Frame":
        """The same frame with every container's name (as a victim, a preemptor or one that took) mapped."""
        def keys(d: dict) -> dict:
            return {name(k): (keys(v) if isinstance(v, dict) else v) for k, v in d.items()}
        return Frame(self.t, self.dt, {name(k): dict(v) for k, v in self.containers.items()}, keys(self.preempt),
                     dict(self.host), keys(self.taken))

    def to_json(self) -> str:
        def clean(d: dict) -> dict:  # JSON has no nan: a signal not there is left out
            return {k: (clean(v) if isinstance(v, dict) else round(v, 6)) for k, v in d.items()
                    if isinstance(v, dict) or math.isfinite(v)}
        return json.dumps({"t": round(self.t, 3), "dt": round(self.dt, 4), "containers": clean(self.containers),
                           "preempt": clean(self.preempt), "host": clean(self.host), "taken": clean(self.taken)},
                          sort_keys=True)

    @classmethod
    def from_json(cls, line: str) -> "Frame":
        d = json.loads(line)
        if not isinstance(d, dict) or not isinstance(d.get("containers"), dict):
            raise ValueError("not a frame (no containers)")

        def floats(m: object) -> dict[str, float]:
            if not isinstance(m, dict):
                raise ValueError(f"not a mapping of numbers: {m!r:.60}")
            return {str(k): float(v) for k, v in m.items()}
        return cls(float(d["t"]), float(d.get("dt", 1.0)),
                   {str(k): floats(v) for k, v in d["containers"].items()},
                   {str(k): floats(v) for k, v in d.get("preempt", {}).items()}, floats(d.get("host", {})),
                   {str(k): floats(v) for k, v in d.get("taken", {}).items()})
