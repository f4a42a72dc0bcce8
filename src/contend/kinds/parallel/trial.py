"""One cell of the parallel suite: a benchmark in N concurrent containers under one runtime (CoPTS).

N processes (threads here: each only waits on its runtime's commands) each launch `containers_per_process`
containers one after another, and each container runs the benchmark `runs_per_container` times. The first
containers of all processes start their runs together (a barrier), so N really run side by side.
Every run is recorded: the benchmark's own figures (guest view), the CPU time its container used and its
memory peak (host view, from the cgroup counters), its wall time. Measures, never computes a metric.
"""
from __future__ import annotations

import math
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ... import runtimes
from ...cgroups import CgroupHost, Limits
from ...failures import TRIAL_FAILURES, reason
from ...probes.base import Sample
from ...store import TrialRecord
from ...tenants import Tenants, TrialResult
from ...tools import failure
from .benchmarks import BENCHMARKS, BenchmarkError
from .cell import ParallelCell
from .metrics import scenario_of
from .spec import ParallelSpec

BARRIER_S = 600  # the longest the first containers wait for each other to be up


@dataclass
class RunRecord:
    """One benchmark run in one container."""

    process: int
    container: int
    run: int
    t_start: float  # trial seconds
    wall_s: float
    status: str  # ok | failed
    reason: str = ""
    figures: dict[str, float] = field(default_factory=dict)
    cpu_s: float = float("nan")  # CPU time the container used during the run (host view)
    mem_peak_bytes: float = float("nan")

    @property
    def tenant(self) -> str:
        return f"p{self.process}c{self.container}"


def run_samples(runs: list[RunRecord], launches: list[tuple[str, float, float]]) -> list[Sample]:
    """Each run as store samples (t = its end): figures as source "guest", the CPUs its container used and
    its memory peak as source "cgroup" (as the cgroup sampler names them), its wall time; each container's
    launch latency (tenant, t, seconds) as source "launch"."""
    out = [Sample(t, tenant, "launch", "start_s", s) for tenant, t, s in launches]
    for r in runs:
        t = r.t_start + r.wall_s
        out.append(Sample(t, r.tenant, "guest", "wall_s", r.wall_s))
        out += [Sample(t, r.tenant, "guest", k, v) for k, v in r.figures.items()]
        if r.wall_s > 0 and math.isfinite(r.cpu_s):
            out.append(Sample(t, r.tenant, "cgroup", "cpu", r.cpu_s / r.wall_s))
        if math.isfinite(r.mem_peak_bytes):
            out.append(Sample(t, r.tenant, "cgroup", "mem_peak_bytes", r.mem_peak_bytes))
    return out


def cell_id(runtime: str, benchmark: str, count: int) -> str:
    """A cell's trial id."""
    return f"{runtime}.{benchmark}.{scenario_of(count)}"


def cell_record(spec: ParallelSpec, runtime: str, benchmark: str, count: int, capacity: dict,
                facts: dict) -> TrialRecord:
    sizes = spec.sizes.of(benchmark)
    if sizes.get("mib_per_array") == "auto":  # STREAM's rule: each array at least 4 × the last-level cache
        sizes["mib_per_array"] = 4 * capacity["llc_mib"]
    params = {"containers_per_process": spec.containers_per_process,
              "runs_per_container": spec.runs_per_container, "sizes": sizes,
              "cpus": spec.limits.cpus, "memory_bytes": spec.limits.memory_bytes}
    return TrialRecord(trial_id=cell_id(runtime, benchmark, count), runtime=runtime, repetition=1,
                       cell=ParallelCell(benchmark, count, params), capacity=capacity, facts=facts)


class ParallelTrial:
    """Runs one cell; `stop` (an Event) ends it early: running benchmarks are killed, containers removed."""

    def __init__(self, spec: ParallelSpec, runtime: str, benchmark: str, count: int, tools: Path,
                 record: TrialRecord, host: CgroupHost | None = None, on_run=None):
        self.spec, self.count, self.tools = spec, count, tools
        self.rt = runtimes.get(runtime, host)
        self.bench = BENCHMARKS[benchmark]
        assert isinstance(record.cell, ParallelCell)
        self.argv = self.bench.argv(record.cell.params["sizes"])
        self.record = record
        self.runs: list[RunRecord] = []
        self.launches: list[tuple[str, float, float]] = []  # (tenant, t, seconds to running)
        self.events: list[tuple] = []  # (t, tenant, kind, detail)
        self.stop = threading.Event()
        self.on_run = on_run or (lambda runs_done: None)  # progress
        self.barrier = threading.Barrier(count)
        self.lock = threading.Lock()
        self.clock0 = time.monotonic()
        self.crash: BaseException | None = None  # what no run absorbs (a bug): the study ends with it

    def run(self) -> TrialResult:
        workers = [threading.Thread(target=self._process, args=(p,), name=f"copts-p{p}", daemon=True)
                   for p in range(self.count)]
        # its containers come and go in Tenants, as every kind's do: what a process leaves, leaving removes
        with Tenants(self.rt.name, {}, self.rt.host, userns=self.spec.userns) as self.tenants:
            for w in workers:
                w.start()
            try:
                for w in workers:
                    while w.is_alive():
                        w.join(0.2)
            except KeyboardInterrupt:
                self.stop.set()
                self.barrier.abort()
                for w in workers:
                    w.join()
                raise
            finally:
                self.record.ended_at = time.time()
        if self.crash is not None:
            raise self.crash
        self._conclude()
        return TrialResult(self.record, [], run_samples(self.runs, self.launches), self.events)

    def _conclude(self) -> None:
        rec, runs = self.record, self.runs
        bad = [r for r in runs if r.status != "ok"]
        planned = self.count * self.spec.containers_per_process * self.spec.runs_per_container
        if runs and len(bad) < len(runs):
            rec.status = "ok"
            if bad or len(runs) < planned:
                rec.reason = f"{len(runs) - len(bad)} of {planned} runs measured; {bad[0].reason if bad else ''}"
        else:
            rec.reason = bad[0].reason if bad else "no run started"

    def _now(self) -> float:
        return time.monotonic() - self.clock0

    def _process(self, p: int) -> None:
        """CoPTS's process p: its containers one after another. What fails a run is recorded with it; anything
        else stops every process and is raised again by run()."""
        try:
            for c in range(self.spec.containers_per_process):
                if self.stop.is_set():
                    return
                self._container(p, c)
        except BaseException as e:
            self.crash = self.crash or e
            self.stop.set()
            self.barrier.abort()

    def _container(self, p: int, c: int) -> None:
        tenant = f"p{p}c{c}"
        container = None
        try:
            try:
                shutil.copytree(self.tools, self.tenants.directory(tenant) / "tools")
                t0 = self._now()
                container = self.tenants.add(tenant, Limits(cpu=self.spec.limits.cpus,
                                                            memory=self.spec.limits.memory_bytes))
                self._note_launch(tenant, t0, self._now() - t0)
            except TRIAL_FAILURES as e:
                self._add(RunRecord(p, c, 0, self._now(), 0.0, "failed", f"container: {reason(e)}"))
            if c == 0:  # the first containers of every process start their runs together
                try:
                    self.barrier.wait(BARRIER_S)
                except threading.BrokenBarrierError:
                    pass  # stopping, or a process could not start: the others run on
            if container is None:
                return
            for r in range(self.spec.runs_per_container):
                if self.stop.is_set():
                    return
                self.on_run(self._add(self._run(container, p, c, r)))
        finally:
            self.tenants.remove(tenant)

    def _run(self, container, p: int, c: int, r: int) -> RunRecord:
        before = container.cgroup.stats()
        t0 = self._now()
        rec = RunRecord(p, c, r, t0, 0.0, "failed")
        proc = self.rt.exec(container, self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = self._wait(proc)
        rec.wall_s = self._now() - t0
        after = container.cgroup.stats()
        rec.cpu_s = (after.cpu_usage_ns - before.cpu_usage_ns) / 1e9
        rec.mem_peak_bytes = float(after.memory_peak)
        ooms = after.memory_events.get("oom_kill", 0) - before.memory_events.get("oom_kill", 0)
        if ooms > 0:
            self._event(rec.t_start + rec.wall_s, rec.tenant, "oom-kill", f"{ooms} process(es) killed")
        if self.stop.is_set():
            rec.reason = "stopped"
        elif proc.returncode is None:
            rec.reason = f"timed out after {self.spec.run_timeout_s:.0f} s"
        elif proc.returncode != 0:
            rec.reason = failure(f"{self.bench.name} in {rec.tenant}" + (" (OOM-killed)" if ooms > 0 else ""),
                                 Path(self.argv[0]).name, proc.returncode, err or out)
        else:
            try:
                rec.figures = self.bench.parse(out)
                rec.status = "ok"
            except BenchmarkError as e:
                rec.reason = f"{self.bench.name}: {e}"
        return rec

    def _wait(self, proc: subprocess.Popen) -> tuple[str, str]:
        """The benchmark's output; killed when the cell stops or the run times out (returncode None)."""
        deadline = time.monotonic() + self.spec.run_timeout_s
        while True:
            try:
                return proc.communicate(timeout=0.2)
            except subprocess.TimeoutExpired:
                if self.stop.is_set() or time.monotonic() > deadline:
                    proc.kill()
                    out, err = proc.communicate()
                    proc.returncode = None
                    return out, err

    def _add(self, run: RunRecord) -> int:
        """Record a run (a failed one also as an event at its end, the time its samples carry); returns how
        many are recorded now."""
        if run.status != "ok":
            self._event(run.t_start + run.wall_s, run.tenant, "run-failed", run.reason)
        with self.lock:
            self.runs.append(run)
            return len(self.runs)

    def _note_launch(self, tenant: str, t: float, seconds: float) -> None:
        with self.lock:
            self.launches.append((tenant, t + seconds, seconds))

    def _event(self, t: float, tenant: str, kind: str, detail: str) -> None:
        with self.lock:
            self.events.append((t, tenant, kind, detail))
