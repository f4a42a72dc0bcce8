"""Run-queue delay and preemptions per cgroup, and TCP round-trip times per network namespace, aggregated in
the kernel (bpftrace, sched and tcp tracepoints).

At sched_switch only the outgoing task is `current`, so only its cgroup is known there. A task's wait is
therefore measured when it is switched in (from its wakeup, or from the switch that preempted it) and charged
to its cgroup when it is next switched out; a preemption is counted the same way: the victim's cgroup is
remembered on the task that took its CPU, and the pair counted when that task leaves the CPU. User space
reads two small maps per period, never an event.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from ..probes.ebpf import BTF, BpftraceProbes, Probe  # BTF: the socket's namespace is read through it

# prev_state & 0xff == 0: the outgoing task was still runnable (preempted; 6.x reports TASK_REPORT_MAX then)
PROGRAM = (
    "tracepoint:sched:sched_wakeup, tracepoint:sched:sched_wakeup_new { @qt[args->pid] = nsecs; }"
    " tracepoint:sched:sched_switch { $prev = args->prev_pid; $next = args->next_pid;"
    " if (@wait[$prev]) { @rq_ns[cgroup] = sum(@wait[$prev]); delete(@wait[$prev]); }"
    " if (@victim[$prev]) { @pre[@victim[$prev], cgroup] = count(); delete(@victim[$prev]); }"
    " if ($prev != 0 && (args->prev_state & 0xff) == 0) {"
    " @qt[$prev] = nsecs; if ($next != 0) { @victim[$next] = cgroup; } }"
    " if ($next != 0 && @qt[$next]) { @wait[$next] = nsecs - @qt[$next]; delete(@qt[$next]); } }"
)
RUNQ = Probe("runq", "sched:sched_switch", {"rq_ns": "rq_delay", "pre": "preemptions"},
             {"rq_ns": 1e-9, "pre": 1.0}, PROGRAM)
# every segment an established TCP socket takes in: its smoothed round-trip time (µs), summed with a count per
# network namespace (the socket's, through BTF: the packet is handled in softirq, in no tenant's task). A
# flow behind a neighbour's flood waits in the shared link's queue: its RTT rises from tens of µs to the
# queue's length, on every ACK, where its retransmissions come in one burst and stop as TCP backs off. One
# segment in eight counts (the low bits of its time): what costs is the tracepoint being on at all (docs/watch.md)
TCP_RTT = Probe("tcp_rtt", "tcp:tcp_probe", {"rtt_us": "net_rtt_ms", "rtt_n": "acks"}, {"rtt_us": 1.0, "rtt_n": 1.0},
                "tracepoint:tcp:tcp_probe /(nsecs & 7) == 0/ {"
                " $ns = ((struct sock *)args->skaddr)->__sk_common.skc_net.net->ns.inum;"
                " @rtt_us[$ns] = sum(args->srtt); @rtt_n[$ns] = count(); }")


class RunqProbe(BpftraceProbes):
    """Totals since the last `take()`, by cgroup id (the inode of a unified cgroup) and by network namespace
    (its inode). Without BTF, or with net_rtt off, no RTT: the run queue alone."""

    def __init__(self, period: float = 0.25, net_rtt: bool = True):
        super().__init__([], period, wanted=("runq", "tcp_rtt"),
                         catalogue=(RUNQ, TCP_RTT) if net_rtt and BTF.exists() else (RUNQ,))
        self._lock = threading.Lock()
        self._rq: dict[str, float] = {}
        self._pre: dict[tuple[str, str], float] = {}
        self._rtt: dict[str, list[float]] = {}  # netns -> [sum of srtt µs, ACKs]
        self.start_cpu_s = 0.0  # what bpftrace spent starting (compiling, attaching): once, not per second

    def _read(self, probes: list[Probe], ready: threading.Event) -> None:
        assert self._proc and self._proc.stdout
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            if msg.get("type") == "attached_probes":
                self.attached, self.tracepoints = [p.name for p in probes], {p.name: p.tracepoint for p in probes}
                self.start_cpu_s = self.cpu_seconds()
                ready.set()
            elif msg.get("type") == "map" and isinstance(msg.get("data"), dict):
                with self._lock:
                    for name, by_key in msg["data"].items():
                        if not isinstance(by_key, dict):
                            continue
                        for key, v in by_key.items():
                            if name == "@rq_ns":
                                self._rq[str(key)] = self._rq.get(str(key), 0.0) + float(v)
                            elif name == "@pre":
                                victim, _, by = str(key).partition(",")
                                self._pre[(victim, by)] = self._pre.get((victim, by), 0.0) + float(v)
                            elif name in ("@rtt_us", "@rtt_n"):
                                self._rtt.setdefault(str(key), [0.0, 0.0])[name == "@rtt_n"] += float(v)

    def take(self) -> tuple[dict[str, float], dict[tuple[str, str], float], dict[str, float]]:
        """(waited seconds by cgroup id, preemptions by (victim id, preemptor id), mean smoothed TCP RTT in ms
        of the ACKs each network namespace took in) since the last take."""
        with self._lock:
            rq, pre, rtt = self._rq, self._pre, self._rtt
            self._rq, self._pre, self._rtt = {}, {}, {}
        return {k: v * 1e-9 for k, v in rq.items()}, pre, {k: s / n / 1e3 for k, (s, n) in rtt.items() if n > 0}

    def cpu_seconds(self) -> float:
        """CPU-seconds bpftrace has used so far (user + system, its own process: the kernel-side programs run
        in the traced tasks' context and are not in it)."""
        if self._proc is None:
            return 0.0
        try:
            f = Path(f"/proc/{self._proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None
