"""One detect trial: three tenants in containers of one runtime, contend watch live beside them (in a thread,
its own clock the trial's), the victim's and bystander's loads from the start, the change (an antagonist, or
a control's) at a drawn time. It measures and records: the watcher's events and frames, when the change ran,
what the watcher cost; the judging is metrics.py's, from the store."""
from __future__ import annotations

import json
import math
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import nullcontext

from ... import runtimes
from ...cgroups import Cgroup, CgroupHost, Limits, Stats, detect
from ...load.agent import Agent, start_in
from ...load.fio import layout, warm
from ...network import SINK_IP, Link
from ...probes import Sample
from ...runtimes import RuntimeFailed, signals_deferred
from ...store import TrialRecord
from ...tenants import Tenants, TrialResult, recorded, reset_host, stop
from ...tools import failure
from ...watch.collector import busy_cpu_s
from ...watch.daemon import WatchConfig, Watcher
from ...watch.signals import Frame
from .cases import CASES, AgentLoad, Case, Load, bystanders
from .cell import DetectCell
from .metrics import ANTAGONIST, FRAME, STEP, USE_STEP, VICTIM, first_use
from .spec import DetectSpec

# the signals kept as samples (source "watch"), for the report's timelines
KEPT = ("cpu", "rq_delay", "cpu_psi", "throttled", "mem", "mem_psi", "refault", "io_bytes", "io_wait_ms", "net_bytes",
        "net_retrans", "net_rtt_ms")


def trial_id(runtime: str, case: str, rep: int) -> str:
    return f"{runtime}.{case}.r{rep}"


class ReadBytes:
    """The bytes a cgroup's processes had read() (their /proc/PID/io rchar: from the page cache or the disk
    alike), cumulative: a memory case's work (a page-cache reader's reads are what its memory serves; its
    cgroup counts no read the cache answered). A process that ended keeps what it had last read."""

    def __init__(self, cgroup: Cgroup):
        self.cgroup = cgroup
        self.last: dict[int, int] = {}

    def __call__(self) -> float:
        for pid in self.cgroup.procs():
            try:
                with open(f"/proc/{pid}/io") as f:
                    self.last[pid] = int(next(line for line in f if line.startswith("rchar:")).split()[1])
            except (OSError, StopIteration, ValueError):
                continue  # ended between the listing and the read: its last reading stands
        return float(sum(self.last.values()))


class StepLog:
    """After each watch period: the verdict standing on the victim on the case's resource (its kind, its
    culprits' shares) and every tenant's own counter of that resource read by the study from its cgroup, with
    the host's busy CPU time for cpu: the known answer period by period (metrics.coverage). For memory, the
    bytes each tenant's processes read (ReadBytes): the work that kinds/protect judges, not a use to share out
    (coverage reads those of metrics.USES)."""

    RESOURCES = ("cpu", "disk", "memory")

    def __init__(self, t: Tenants, case: Case, rel: dict[str, str]):
        self.resource, self.name = case.resource, rel
        self.cgroups = {n: t.c[n].cgroup for n in case.tenants}
        self.victim = next(r for r, n in rel.items() if n == VICTIM)
        self.steps: list[tuple[float, str, list]] = []
        self.truth: list[Sample] = []
        self.reads = {n: ReadBytes(cg) for n, cg in self.cgroups.items()} if self.resource == "memory" else {}

    def __call__(self, w: Watcher) -> None:
        assert w.last is not None  # called after a step: its frame
        t = round(w.last.t, 3)  # as the stored step's (metrics.coverage matches the two by it)
        for v in w.detector.verdicts():
            if v.victim == self.victim and v.resource == self.resource:
                self.steps.append((t, v.kind, [[self.name.get(c, c), x] for c, x in v.culprits]))
        for n, cg in self.cgroups.items():
            try:
                value = self.reads[n]() if n in self.reads else use_counter(cg.stats(), self.resource)
                self.truth.append(Sample(t, n, "truth", self.resource, value))
            except OSError:
                continue  # a container gone: its later periods have no answer
        if self.resource == "cpu" and (busy := busy_cpu_s()) is not None:
            self.truth.append(Sample(t, "host", "truth", "cpu", busy))


class WatcherThread:
    """The watcher under test on a thread of its own; stopped (its probe gone) whatever happens."""

    def __init__(self, w: Watcher, also: Callable[[Watcher], None] | None = None):
        self.w = w
        self.frames: list[Frame] = []
        self._stop = threading.Event()

        def after(x: Watcher) -> None:
            assert x.last is not None  # after a step: its frame
            self.frames.append(x.last)
            if also is not None:
                also(x)
        self._thread = threading.Thread(target=w.run, args=(self._stop,), name="watch", daemon=True,
                                        kwargs={"after_step": after})

    def __enter__(self) -> "WatcherThread":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            self._stop.set()
            self._thread.join(timeout=15)
            self.w.close()


# what a kind running detect's trials does beside the watcher (kinds/protect: protect, or a fixed policy): called
# with the watcher, the tenants and their cgroups' names before the watch starts; what it returns is called once the
# watch stopped, and gives what it measured (kept in the cell's params)
Arm = Callable[[Watcher, Tenants, dict[str, str]], Callable[[], dict]]


def run_detect_trial(study: DetectSpec, runtime: str, case_name: str, rep: int, t_change: float, facts: dict,
                     host: CgroupHost | None = None, cell: DetectCell | None = None, ident: str | None = None,
                     arm: Arm | None = None) -> TrialResult:
    host = host or detect()
    case, tr = CASES[case_name], study.trial
    params = {"trial": tr.model_dump(), "t_change_planned": t_change, "ebpf": study.ebpf, "net_rtt": study.net_rtt,
              "bystanders": study.bystanders}
    if cell is not None:
        cell.params.update(params)
    result = TrialResult(TrialRecord(
        trial_id=ident or trial_id(runtime, case_name, rep), runtime=runtime, repetition=rep,
        cell=cell or DetectCell(case_name, case.resource, params), facts=facts))
    rec = result.record
    link = Link(uuid.uuid4().hex[:8], case.link_bps, {name: None for name in case.tenants}) if case.link_bps else None
    if link is not None and (why := runtimes.get(runtime, host).no_netns):
        rec.status, rec.reason, rec.ended_at = "n/a", why, time.time()
        return result
    with recorded(rec):
        reset_host(case.resource)
        extra = bystanders(study.bystanders)
        with Tenants(runtime, {**case.tenant_limits(), **{n: Limits() for n in extra}}, host, userns=study.userns,
                     shared=case.shared, link=link) as t:
            for name, size in case.files.items():  # before the watcher: a layout is not the trial's I/O
                t.run(name, layout(f"/data/{name}.dat", size), timeout=300, what="fio layout")
            for name in case.warm:  # after every layout (fio's goes through the page cache: a pod's would evict it)
                t.run(name, warm(f"/data/{name}.dat", case.files[name]), timeout=300, what="fio warm")
            rel = {t.c[n].cgroup.relpath: n for n in t.c}
            events: list[dict] = []
            w = Watcher(WatchConfig([f"cgroup:{r}" for r in rel], period=tr.period_s, ebpf=study.ebpf,
                                    net_rtt=study.net_rtt, metrics="off"), host, events=events.append)
            if w.problems:
                result.events.append((0.0, "", "watch-problem", "; ".join(w.problems)))
            t.clock0 = w.collector.clock0  # one clock: the watcher's frames and the trial's events
            log = StepLog(t, case, rel) if (case.antagonist or arm is not None) and \
                case.resource in StepLog.RESOURCES else None
            victim = next(r for r, n in rel.items() if n == VICTIM)
            armed = arm(w, t, rel) if arm is not None else None
            with WatcherThread(w, log) as wt:
                ran = _loads(t, case, t_change, tr.attack_s, tr.tail_s, result,
                             baseline=lambda: w.detector.baselined(victim, case.resource),
                             also={n: load for n, load in extra.items() if load is not None})
            _record(result, rel, events, wt.frames, w, ran, log)
            if armed is not None:
                rec.cell.params.update(armed())  # type: ignore[attr-defined]
        rec.status = "ok"
    return result


def use_counter(st: Stats, resource: str) -> float:
    """The counter first_use reads: CPU-seconds used, bytes read and written (both cumulative), bytes held."""
    if resource == "cpu":
        return st.cpu_usage_ns * 1e-9
    if resource == "disk":
        return float(sum(c.rbytes + c.wbytes for c in st.io.values()))
    return float(st.memory_current)


class UseReadings:
    """The antagonist's cgroup read every 20 ms from just before contend asks for its load, until its first use
    of the resource is seen (metrics.first_use) or `seconds` pass, on a thread of its own: when it began, as
    the host saw it (a runtime's exec and the tool's start come first)."""

    PERIOD = 0.02

    def __init__(self, cgroup: Cgroup, resource: str, clock: Callable[[], float], seconds: float):
        self.cgroup, self.resource, self.clock, self.seconds = cgroup, resource, clock, seconds
        self.points: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="first-use", daemon=True)

    def _read(self) -> None:
        self.points.append((self.clock(), use_counter(self.cgroup.stats(), self.resource)))

    def _run(self) -> None:
        t0 = self.points[0][0]
        while not self._stop.wait(self.PERIOD) and self.clock() - t0 < self.seconds:
            try:
                self._read()
            except OSError:
                return  # the container went: what was read is what there is
            if len(self.points) % 5 == 0 and math.isfinite(first_use(self.points, self.resource)):
                return

    def __enter__(self) -> "UseReadings":
        self._read()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def never_moved(self) -> bool:
        """Read to the end of its window and the counter never rose by the resource's step (a runtime's exec
        moves it a little): the load ran, its use was not seen."""
        return len(self.points) >= 2 and self.points[-1][0] - self.points[0][0] >= 0.9 * self.seconds and \
            max(v for _, v in self.points) - self.points[0][1] < USE_STEP[self.resource][0]

    def t_use(self) -> float | None:
        """When it began (None where it never did: the latency then counts from the request)."""
        t = first_use(self.points, self.resource)
        return t if math.isfinite(t) else None


def _wait_until(t: Tenants, at: float) -> None:
    while t.now() < at:
        time.sleep(min(0.1, at - t.now()))


class Loads:
    """A case's loads in the tenants, each started on the trial's clock: a command (stress-ng, fio) or load
    agents (a network case's paced TCP senders); stopped whatever happens."""

    # s between the network's known-answer readings (the others' are the watch's periods): protect's preset
    # period, so a reaction reads to it (at a second apart, the network's read a second late at worst)
    EVERY = 0.5

    def __init__(self, t: Tenants):
        self.t = t
        self.procs: dict[str, tuple[subprocess.Popen, str]] = {}  # key -> (process, its tool)
        self.agents: dict[str, list[Agent]] = {}
        self.sent: dict[str, list[tuple[float, int]]] = {}  # tenant -> (t, bytes) its stopped agents sent

    def _stopped(self, key: str, agents: list[Agent]) -> None:
        for a in agents:
            a.stop()
            sent = self.sent.setdefault(key.split(":")[0], [])
            sent += [(t, work) for t, _, work, _ in a.intervals(self.t.clock0)]

    def truth(self) -> list[Sample]:
        """What each tenant's agents sent, cumulative, as the network's known answer (what TCP let it send: a
        sender held back by a flood, or by a token bucket, sends less; the host's counters would count what a
        bucket drops too)."""
        out = []
        for tenant, points in self.sent.items():
            total, last = 0, None
            for t, work in sorted(points):
                total += work
                if last is None or t - last >= self.EVERY - 0.05:  # reported every 0.1 s: kept EVERY apart
                    out.append(Sample(round(t, 3), tenant, "truth", "network", float(total)))
                    last = t
        return out

    def start(self, key: str, tenant: str, load: Load, seconds: float) -> None:
        if isinstance(load, AgentLoad):
            assert self.t.link is not None, "an agent load needs the case's link"
            port = self.t.link.ports[tenant]
            for _ in range(load.connections):
                a = start_in(self.t.rt, self.t.c[tenant], self.t.data[tenant], ["net", SINK_IP, str(port.server_port)])
                self.agents.setdefault(key, []).append(a)
                a.set(load.bps / 8)
            return
        argv = load(seconds)
        self.procs[key] = (self.t.exec(tenant, argv, stdout=subprocess.DEVNULL), argv[0])

    def end(self, keys: list[str], wait_s: float) -> None:
        """The change's loads: the commands given wait_s to end by themselves, the agents stopped."""
        for key in keys:
            if key in self.procs:
                try:
                    self.procs[key][0].wait(timeout=wait_s)
                except subprocess.TimeoutExpired:
                    pass
            self._stopped(key, self.agents.pop(key, []))

    def check(self, case: Case) -> None:
        """A load that failed fails the trial (an OOM kill is the own-memory case's point, not a failure)."""
        for key, (p, tool) in self.procs.items():
            if p.poll() is not None and p.returncode not in (0, None) and case.name != "own-memory":
                err = p.stderr.read() if p.stderr else ""
                raise RuntimeFailed(failure(f"{case.name} case, {key.split(':')[0]}", tool, p.returncode, err))
        for key, agents in self.agents.items():
            for a in agents:
                if not a.running:
                    raise RuntimeFailed(f"{key.split(':')[0]}: {a.why_stopped()}")

    def stop(self) -> None:
        stop([p for p, _ in self.procs.values()])
        for key, agents in self.agents.items():
            self._stopped(key, agents)
        self.agents.clear()


def _loads(t: Tenants, case: Case, t_change: float, attack_s: float, tail_s: float,
           result: TrialResult, baseline: Callable[[], int] = lambda: 0, also: dict[str, Load] | None = None) -> dict:
    """The case's loads on the trial's clock (and `also`'s, the extra bystanders', from the start); when the
    change really started and ended, and how many calm periods the victim's baseline held as it started (a quick
    trial's may hold none: issue 51)."""
    total = t_change + attack_s + tail_s
    loads = Loads(t)
    try:
        for name, load in {**case.at_start, **(also or {})}.items():
            loads.start(name, name, load, total)
        _wait_until(t, t_change)
        use = UseReadings(t.c[ANTAGONIST].cgroup, case.resource, t.now, attack_s) \
            if case.antagonist and case.resource in USE_STEP else None
        with use or nullcontext():
            start, base = t.now(), baseline()
            joined = {}
            for name in sorted(case.at_change, key=lambda n: case.joins.get(n, 0.0)):  # a later antagonist joins
                at = case.joins.get(name, 0.0) * attack_s
                _wait_until(t, start + at)
                joined[name] = round(t.now(), 3)
                loads.start(f"{name}:change", name, case.at_change[name], attack_s - at)
            result.events.append((start, ANTAGONIST if case.antagonist else "", "change-start",
                                  f"{case.name}: {', '.join(case.at_change) or 'nothing'} started"))
            _wait_until(t, start + attack_s)
        loads.end([f"{name}:change" for name in case.at_change], max(5.0, attack_s))
        end = t.now()
        result.events.append((end, "", "change-end", f"{case.name}: its loads ended"))
        _wait_until(t, end + tail_s)
        loads.check(case)
        if use is not None and use.never_moved():  # a counter that cannot see the load: no miss to score
            raise RuntimeFailed(f"{case.name} case: noisy's load ran {attack_s:g} s and its cgroup's {case.resource} "
                                f"counter never moved ({len(use.points)} readings): its use could not be seen")
        return {"t_start": start, "t_use": use.t_use() if use is not None else None, "t_end": end,
                "duration_s": t.now(), "joined": joined, "baseline_periods": base}
    finally:
        loads.stop()
        result.samples += loads.truth()


def _record(result: TrialResult, rel: dict[str, str], events: list[dict], frames: list[Frame], w: Watcher,
            ran: dict, log: StepLog | None) -> None:
    """The watcher's events (names as the tenants'), its frames' main signals, the verdict on the victim and the
    tenants' own use period by period, when the change ran, and what the watcher cost (its loop's CPU and
    bpftrace's)."""
    def name(x: str) -> str:
        return rel.get(x, x)
    longest = sorted(rel, key=len, reverse=True)  # noisy2's cgroup path begins with noisy's

    def named(why: str) -> str:
        for r in longest:
            why = why.replace(r, rel[r])
        return why
    for e in events:
        e = {**e, "victim": name(e["victim"]), "culprit": name(e["culprit"]), "why": named(e["why"]),
             "suspects": [[name(s), x] for s, x in e["suspects"]],
             "culprits": [[name(s), x] for s, x in e.get("culprits", [])]}
        result.events.append((e["t"], e["victim"], e["event"], json.dumps(e)))
    if log is not None:
        for t, kind, culprits in log.steps:
            result.events.append((t, VICTIM, STEP, json.dumps({"t": t, "resource": log.resource,
                                                                "kind": kind, "culprits": culprits})))
        result.samples += log.truth
    for f in frames:
        for c, sig in f.containers.items():
            result.samples += [Sample(f.t, name(c), "watch", k, v) for k, v in sig.items() if k in KEPT]
        # the whole frame too, so a miss can be replayed through the detector (`contend watch --replay`)
        result.events.append((f.t, "", FRAME, f.renamed(name).to_json()))
    assert isinstance(result.record.cell, DetectCell)
    result.record.cell.params.update(ran, watch_cpu_s=w.cpu_s, probe_cpu_s=w.collector.probe_cpu_s,
                                     frames=len(frames))
