"""Run-queue delay and preemptions per cgroup, and TCP round-trip times per network namespace, aggregated in
the kernel (bpftrace, sched and tcp tracepoints).

At sched_switch only the outgoing task is `current`, so only its cgroup is known there. A task's wait is
therefore measured when it is switched in (from its wakeup, or from the switch that preempted it) and charged
to its cgroup when it is next switched out; a preemption is counted the same way: the victim's cgroup is
remembered on the task that took its CPU, and the pair counted when that task leaves the CPU. User space
reads a few small maps per period, never an event.

The time taken (issue 51): while a task waits runnable on a CPU's run queue, whoever runs on that CPU takes
that time from the task's cgroup. Each CPU keeps a small table of the cgroups waiting on it and how many of
their tasks wait (a task enters at its wakeup on the CPU it targets, or when preempted; moves with it when
migrated; leaves when switched in); at every switch, the outgoing task's run since the last switch is charged
to each waiting cgroup, times its tasks waiting. A preemption count says how often a neighbour got in; this
says how long it stayed: a CPU hog that holds the CPU preempts a victim a few times a second and takes most
of its time, a writer that wakes often preempts it hundreds of times and takes little.
"""
from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from ..probes.ebpf import BTF, BpftraceProbes, Probe  # BTF: the socket's namespace is read through it

SLOTS = 8  # cgroups that can wait on one CPU at once, in its table; beyond: counted in @full, not charged


def _enqueue(cpu: str, cg: str, pid: str, mid: bool) -> str:
    """bpftrace: the task `pid` of cgroup `cg` waits on `cpu` from now (its cgroup's slot there, or a free one).
    `mid`: it enters while another task runs there (a wakeup, a migration), not at a switch: the part of that
    run before now is not its wait, and is kept in @sx to be taken off its slot's next charge. A task of the
    root cgroup (id 1: the host's own, never a watched container) is not kept: most of a host's tasks, and
    every pair they made was one more map entry for bpftrace to print four times a second."""
    late = " @sx[$c, $f] = @sx[$c, $f] + ((int64)nsecs - @t0[$c]);" if mid else ""
    return (f" $c = {cpu}; $g = {cg}; $f = -1; $i = 0;"
            f" while ($i < {SLOTS} && $g != 1) {{ if ($i >= @ns[$c]) {{ break; }}"
            " if (@sg[$c, $i] == $g) { $f = $i; break; }"
            " if ($f < 0 && @sn[$c, $i] <= 0) { $f = $i; } $i++; }"
            f" if ($f < 0 && @ns[$c] < {SLOTS} && $g != 1) {{ $f = @ns[$c]; @ns[$c] = $f + 1; }}"
            " if ($f >= 0) { if (@sg[$c, $f] != $g) { @sg[$c, $f] = $g; @sn[$c, $f] = 0; @sx[$c, $f] = 0; }"
            f" @sn[$c, $f] = @sn[$c, $f] + 1;{late} @qc[{pid}] = $c + 1; @qg[{pid}] = $g; }}"
            " else { if ($g != 1) { @full = count(); } }")


def _dequeue(pid: str) -> str:
    """bpftrace: the task `pid` waits no more (switched in, or moving to another CPU)."""
    return (f" if (@qc[{pid}]) {{ $c = @qc[{pid}] - 1; $g = @qg[{pid}]; $i = 0;"
            f" while ($i < {SLOTS}) {{ if ($i >= @ns[$c]) {{ break; }}"
            " if (@sg[$c, $i] == $g && @sn[$c, $i] > 0) { @sn[$c, $i] = @sn[$c, $i] - 1;"
            # the table's last slot emptied: the table is one shorter (every switch walks it)
            " if (@sn[$c, $i] == 0 && $i == @ns[$c] - 1) { @ns[$c] = $i; } break; } $i++; }"
            f" delete(@qc[{pid}]); delete(@qg[{pid}]); }}")


_I64 = "(int64)0"


def program(taken: bool = True) -> str:
    """The run queue's program: waits and preemptions, and with `taken` the time taken (off: what it was before
    issue 51, for bench/runq_cost.py to weigh the difference)."""
    # prev_state & 0xff == 0: the outgoing task was still runnable (preempted; 6.x reports TASK_REPORT_MAX then);
    # & 0x80: it is dead. A task can be woken while it still runs (it set itself to sleep, and was woken before
    # it left the CPU: sched_wakeup all the same): it is in no queue, so whatever it left in the table is taken
    # out as it leaves the CPU, before anyone is charged (such entries had a victim charge its own run to itself
    # many times over: 8 s/s of "time taken" while it waited 0.01). @cg: each task's cgroup when it last left a
    # CPU (a wakeup runs in the waker's context); a new task's is its parent's. BEGIN gives the tables their types
    # before any probe reads them. One block per tracepoint: bpftrace 0.17 loads a second block on the same
    # tracepoint as an unreachable program.
    wake = wake_new = migrate = switch = begin = ""
    if taken:
        begin = (f"BEGIN {{ @ns[{_I64}] = {_I64}; @sn[{_I64}, {_I64}] = {_I64}; @sg[{_I64}, {_I64}] = {_I64};"
                 f" @sx[{_I64}, {_I64}] = {_I64};"
                 f" @qc[{_I64}] = {_I64}; @qg[{_I64}] = {_I64}; @cg[{_I64}] = {_I64}; @t0[{_I64}] = {_I64}; }} ")
        wake = (" $p = (int64)args->pid;"
                " if (@cg[$p] && !@qc[$p]) {" + _enqueue("(int64)args->target_cpu", "@cg[$p]", "$p", True) + " }")
        wake_new = (" $p = (int64)args->pid;"
                    " if (!@qc[$p]) {" + _enqueue("(int64)args->target_cpu", "(int64)cgroup", "$p", True) + " }")
        migrate = (" tracepoint:sched:sched_migrate_task { $p = (int64)args->pid; if (@qc[$p]) { $g0 = @qg[$p];"
                   + _dequeue("$p") + _enqueue("(int64)args->dest_cpu", "$g0", "$p", True) + " } }")
        # the outgoing task's run, charged to each cgroup waiting on this CPU meanwhile
        switch = (" $now = (int64)nsecs; $k = (int64)cpu; $p = (int64)$prev; $me = (int64)cgroup;"
                  " if ($p != 0) {" + _dequeue("$p") + " }"
                  " if ($p != 0 && @t0[$k]) { $d = $now - @t0[$k]; $i = 0;"
                  f" while ($i < {SLOTS}) {{ if ($i >= @ns[$k]) {{ break; }} $n = @sn[$k, $i];"
                  " $x = @sx[$k, $i]; if ($n > 0 && $d * $n > $x) { @took[@sg[$k, $i], $me] = sum($d * $n - $x); }"
                  " if ($x != 0) { @sx[$k, $i] = 0; } $i++; } }"
                  " @t0[$k] = $now;"
                  " if ($p != 0) { if (args->prev_state & 0x80) { delete(@cg[$p]); }"
                  " else { if (@cg[$p] != $me) { @cg[$p] = $me; } } }"
                  " if ($p != 0 && (args->prev_state & 0xff) == 0) {" + _enqueue("$k", "$me", "$p", False) + " }"
                  " $q = (int64)$next; if ($q != 0) {" + _dequeue("$q") + " }")
    return (
        begin
        + "tracepoint:sched:sched_wakeup { @qt[args->pid] = nsecs;" + wake + " }"
        " tracepoint:sched:sched_wakeup_new { @qt[args->pid] = nsecs;" + wake_new + " }"
        + migrate
        + " tracepoint:sched:sched_switch { $prev = args->prev_pid; $next = args->next_pid;"
        " if (@wait[$prev]) { @rq_ns[cgroup] = sum(@wait[$prev]); delete(@wait[$prev]); }"
        " if (@victim[$prev]) { @pre[@victim[$prev], cgroup] = count(); delete(@victim[$prev]); }"
        " if ($prev != 0 && (args->prev_state & 0xff) == 0) {"
        " @qt[$prev] = nsecs; if ($next != 0) { @victim[$next] = cgroup; } }"
        " if ($next != 0 && @qt[$next]) { @wait[$next] = nsecs - @qt[$next]; delete(@qt[$next]); }"
        + switch + " }")


PROGRAM = program()
RUNQ = Probe("runq", "sched:sched_switch", {"rq_ns": "rq_delay", "pre": "preemptions", "took": "cpu_taken"},
             {"rq_ns": 1e-9, "pre": 1.0, "took": 1e-9}, PROGRAM)
# every segment an established TCP socket takes in: its smoothed round-trip time (µs), summed with a count per
# network namespace (the socket's, through BTF: the packet is handled in softirq, in no tenant's task). A
# flow behind a neighbour's flood waits in the shared link's queue: its RTT rises from tens of µs to the
# queue's length, on every ACK, where its retransmissions come in one burst and stop as TCP backs off. One
# segment in eight counts (the low bits of its time): what costs is the tracepoint being on at all (docs/watch.md)
TCP_RTT = Probe("tcp_rtt", "tcp:tcp_probe", {"rtt_us": "net_rtt_ms", "rtt_n": "acks"}, {"rtt_us": 1.0, "rtt_n": 1.0},
                "tracepoint:tcp:tcp_probe /(nsecs & 7) == 0/ {"
                " $ns = ((struct sock *)args->skaddr)->__sk_common.skc_net.net->ns.inum;"
                " @rtt_us[$ns] = sum(args->srtt); @rtt_n[$ns] = count(); }")


@dataclass(frozen=True)
class Taken:
    """One period's counts, by cgroup id (and network namespace for the RTT)."""

    waited: dict[str, float] = field(default_factory=dict)  # seconds its tasks waited runnable
    preemptions: dict[tuple[str, str], float] = field(default_factory=dict)  # (victim, preemptor) -> count
    took: dict[tuple[str, str], float] = field(default_factory=dict)  # (waiting, ran meanwhile) -> seconds
    rtt_ms: dict[str, float] = field(default_factory=dict)  # netns -> mean smoothed RTT of its ACKs
    span: float = 0.0  # seconds of the kernel's counting these totals cover (0: no tick printed since the last)

    def rate(self, seconds: float) -> float:
        """Seconds (of waiting, of CPU taken) counted in the span, per second of it (nan: no span)."""
        return seconds / self.span if self.span > 0 else math.nan


class RunqProbe(BpftraceProbes):
    """Totals since the last `take()`, by cgroup id (the inode of a unified cgroup) and by network namespace
    (its inode). Without BTF, or with net_rtt off, no RTT: the run queue alone."""

    def __init__(self, period: float = 0.25, net_rtt: bool = True):
        super().__init__([], period, wanted=("runq", "tcp_rtt"),
                         catalogue=(RUNQ, TCP_RTT) if net_rtt and BTF.exists() else (RUNQ,))
        self._lock = threading.Lock()
        self._rq: dict[str, float] = {}
        self._pre: dict[tuple[str, str], float] = {}
        self._took: dict[tuple[str, str], float] = {}  # (waiting cgroup, cgroup that ran) -> ns
        self._rtt: dict[str, list[float]] = {}  # netns -> [sum of srtt µs, ACKs]
        # a tick's maps, kept apart until its "end": totals are taken by whole ticks, so their span is known
        self._tick: tuple[int, list[tuple[str, str, float]]] | None = None  # (its nsecs, its (map, key, value))
        self._ticks: list[int] = []  # the nsecs of the whole ticks since the last take
        self._taken_ns: int | None = None  # the last tick taken (the start of the next span)
        self.tick_at: float | None = None  # the last whole tick, in time.monotonic() seconds (the kernel's clock)
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
            elif msg.get("type") == "printf":
                said = str(msg.get("data", "")).split()
                if said[:1] == ["tick"] and len(said) == 2:
                    self._tick = (int(said[1]), [])
                elif said == ["end"] and self._tick is not None:
                    self._add(*self._tick)
                    self._tick = None
            elif msg.get("type") == "map" and isinstance(msg.get("data"), dict) and self._tick is not None:
                for name, by_key in msg["data"].items():
                    if isinstance(by_key, dict):
                        self._tick[1].extend((name, str(key), float(v)) for key, v in by_key.items())

    def _add(self, ns: int, entries: list[tuple[str, str, float]]) -> None:
        """One whole tick's maps, added to the totals the next take() returns."""
        with self._lock:
            self._ticks.append(ns)
            self.tick_at = ns / 1e9
            for name, key, v in entries:
                if name == "@rq_ns":
                    self._rq[key] = self._rq.get(key, 0.0) + v
                elif name in ("@pre", "@took"):
                    pair = self._pre if name == "@pre" else self._took
                    victim, _, by = key.partition(",")
                    pair[(victim, by)] = pair.get((victim, by), 0.0) + v
                elif name in ("@rtt_us", "@rtt_n"):
                    self._rtt.setdefault(key, [0.0, 0.0])[name == "@rtt_n"] += v

    def take(self) -> "Taken":
        """What the kernel counted since the last take."""
        with self._lock:
            rq, pre, took, rtt, ticks = self._rq, self._pre, self._took, self._rtt, self._ticks
            self._rq, self._pre, self._took, self._rtt, self._ticks = {}, {}, {}, {}, []
        # the span from the last tick taken before to the last taken now, by the kernel's clock (the first
        # take: the ticks' number of periods); a frame shorter than a tick may take none
        span = 0.0
        if ticks:
            start = self._taken_ns
            span = (ticks[-1] - start) / 1e9 if start is not None and ticks[-1] > start else len(ticks) * self.period
            self._taken_ns = ticks[-1]
        return Taken({k: v * 1e-9 for k, v in rq.items()}, pre, {k: v * 1e-9 for k, v in took.items()},
                     {k: s / n / 1e3 for k, (s, n) in rtt.items() if n > 0}, span)

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
