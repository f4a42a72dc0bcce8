"""A guard study: Aridac's workloads on this host's disk, each under every policy, side by side.

One run = two containers (victim, neighbour) writing with fio, the guard (in a thread) guarding both,
the cgroup sampler watching (host view) and fio logging its own throughput and latency (guest view).
It measures and records; protection metrics are computed by report/ from the store.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import threading
import time
import warnings
from pathlib import Path
from typing import TextIO

import numpy as np

from ...cgroups import CgroupHost, Limits, detect
from ...guard.config import GuardConfig
from ...guard.daemon import Guard
from ...guard.settings import POLICY_OWN
from ...load.fio import layout
from ...measured import StepWindow
from ...paths import check_name, open_existing, open_under
from ...probes import Sample
from ...runtimes import Container, RuntimeFailed, signals_deferred
from ...store import TrialRecord
from ...tenants import Tenants, TrialResult, recorded, reset_host, stop
from ...tools import failure
from .cell import GuardCell
from .spec import GuardSpec, Variant, Workload

TENANTS = ("victim", "neighbour")
SIZE = "1G"  # each tenant's file; fio wraps around it
# fio stamps its logs with the wall clock, which the trial's clock is read against (wall_zero): its jobs start
# 0.3-0.45 s after the exec that launches it, and a log on fio's own clock put the victim's stall 0.44 s early
# beside the host's counters (issue 55: the two views' per-second windows then split a dip from its catch-up
# differently, 0.92 against 1.00; docs/results/archive.md 2026-12-03, fourth section)
WALL_CLOCK = "--log_unix_epoch=1"
# the neighbour's second job's per-I/O log: when its burst really began is its first I/O's issue (completion less
# latency). Not a bandwidth log: its first entry waits for the first completion, 0.1-0.7 s into a burst the disk
# stalls at
BURST_LOG = "burst_lat.2.log"


def fio_common(tenant: str, block: str, iodepth: int, io: str = "direct", pattern: str = "write") -> list[str]:
    """Options every job of a tenant shares (before the first --name: fio's global section). Buffered: into
    the page cache with plain writes (an iodepth means nothing there), each job ending with an fsync."""
    how = (["--direct=1", "--ioengine=libaio", f"--iodepth={iodepth}"] if io == "direct"
           else ["--direct=0", "--ioengine=psync", "--end_fsync=1"])
    return [f"--filename=/data/{tenant}.dat", f"--size={SIZE}", *how, f"--rw={pattern}", f"--bs={block}"]


def victim_argv(w: Workload, capacity: float) -> list[str]:
    """Steady I/O at its rate, logging every I/O's latency (its throughput per bucket and its tail latency come
    from the same log), until stopped (or max_s)."""
    return ["fio", *fio_common("victim", w.victim_block, w.victim_depth, pattern=w.victim_pattern),
            "--name=victim", f"--rate={max(1, int(w.victim * capacity))}", "--time_based", WALL_CLOCK,
            f"--runtime={int(w.max_s)}", "--write_lat_log=/data/victim", "--disable_clat=1", "--disable_slat=1",
            "--output-format=json", "--output=/data/victim.json"]


def neighbour_argv(w: Workload, capacity: float) -> list[str]:
    """Three jobs in one fio run: steady at its rate until the burst; the burst's fixed amount of I/O at
    burst × its rate (more than the disk gives), forked at the start and held back by startdelay, so it
    starts on time; for workload 2, steady again once the burst is done (wait_for)."""
    rate = max(1, int(w.neighbour * capacity))
    argv = ["fio", "--output-format=json", "--output=/data/neighbour.json",
            *fio_common("neighbour", w.neighbour_block, w.neighbour_depth, w.neighbour_io, w.neighbour_pattern),
            "--name=steady", f"--rate={rate}", "--time_based", f"--runtime={int(w.burst_at_s * 1000)}ms",
            "--name=burst", f"--startdelay={int(w.burst_at_s * 1000)}ms", f"--rate={int(rate * w.burst)}",
            f"--io_size={int(w.burst_volume_s * capacity)}", "--write_lat_log=/data/burst", "--disable_clat=1",
            "--disable_slat=1", WALL_CLOCK]
    if w.after == "steady":
        argv += ["--name=after", "--wait_for=burst", f"--rate={rate}", "--time_based",
                 f"--runtime={int(w.tail_s * 1000)}ms"]
    return argv


VICTIM_LOG = "victim_lat.1.log"
BUCKET_S = 0.1  # the guest view's buckets, as the host sampler's


def read_io_log(path: Path) -> np.ndarray:
    """A fio per-I/O log (ms: since the job started, or since the epoch with WALL_CLOCK; latency ns, direction,
    block size, ...) as rows of (seconds, latency ms, bytes); empty if missing."""
    try:  # in a directory the container owns: never through a link it left there (issue 52 L3)
        with open_existing(path) as f, warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # an empty log is no I/O, not a warning for the terminal
            rows = np.loadtxt(f, delimiter=",", usecols=(0, 1, 3), ndmin=2)
    except (OSError, ValueError):
        return np.empty((0, 3))
    return np.column_stack([rows[:, 0] / 1000, rows[:, 1] / 1e6, rows[:, 2]]) if len(rows) else np.empty((0, 3))


def io_buckets(ios: np.ndarray, width: float = BUCKET_S) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per bucket (multiples of `width`) from the first I/O's to the last's: its start, bytes/s completed (0 where
    none), mean latency ms (nan where none)."""
    if not len(ios):
        e = np.array([])
        return e, e, e
    k = np.floor(ios[:, 0] / width).astype(int)
    k0 = int(k.min())
    k -= k0
    n = k.max() + 1
    count = np.bincount(k, minlength=n)
    done = np.bincount(k, weights=ios[:, 2], minlength=n) / width
    lat = np.bincount(k, weights=ios[:, 1], minlength=n) / np.maximum(count, 1)
    lat[count == 0] = np.nan
    return (k0 + np.arange(n)) * width, done, lat


def io_on(ios: np.ndarray, stamps: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As io_buckets, on another view's buckets: each stamped at its interval's middle (the host sampler's), from the
    one holding the first I/O to the one holding the last. The two views of a second then count the same 100 ms;
    on buckets of their own a catch-up on a second's edge fell in it in one view and out of it in the other (0.90
    against 1.00: docs/results/archive.md 2026-12-03, fourth section)."""
    if len(stamps) < 2 or not len(ios):
        return io_buckets(ios)
    mids = (stamps[1:] + stamps[:-1]) / 2
    edges = np.concatenate([[2 * stamps[0] - mids[0]], mids, [2 * stamps[-1] - mids[-1]]])
    inside = (ios[:, 0] >= edges[0]) & (ios[:, 0] < edges[-1])
    k = np.searchsorted(edges, ios[inside, 0], side="right") - 1
    n = len(stamps)
    count = np.bincount(k, minlength=n)
    done = np.bincount(k, weights=ios[inside, 2], minlength=n) / np.diff(edges)
    lat = np.bincount(k, weights=ios[inside, 1], minlength=n) / np.maximum(count, 1)
    lat[count == 0] = np.nan
    lo, hi = (int(k.min()), int(k.max()) + 1) if len(k) else (0, 0)
    return stamps[lo:hi], done[lo:hi], lat[lo:hi]


def wall_zero(t: Tenants) -> float:
    """The wall clock (seconds since the epoch) at the trial's t = 0: what fio's WALL_CLOCK logs are put on the
    trial's clock with."""
    return time.time() - t.now()


def burst_began(log: Path, wall0: float) -> float:
    """When the neighbour's burst issued its first I/O, on the trial's clock (nan: no log, or an empty one)."""
    ios = read_io_log(log)
    return float(np.min(ios[:, 0] - ios[:, 1] / 1000)) - wall0 if len(ios) else math.nan


def phases(report: Path) -> dict[str, float]:
    """Seconds each neighbour job ran, by name."""
    try:
        jobs = json.loads(report.read_text()).get("jobs", [])
    except (OSError, json.JSONDecodeError):
        return {}
    return {j["jobname"]: j.get("job_runtime", 0) / 1000 for j in jobs}


def interrupt_fio(c: Container) -> None:
    """SIGINT to the fio processes in a container: fio ends its jobs and writes its report and logs."""
    for pid in c.cgroup.procs():
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "fio":
                os.kill(pid, signal.SIGINT)
        except (OSError, ProcessLookupError):
            pass


def run_id(workload: str, policy: str, rep: int, after: str = "") -> str:
    """A run's trial id; a `none` reference that follows a policy's run carries that policy's name."""
    return f"{workload}.{policy}.r{rep}" + (f".after-{after}" if after else "")


class GuardUnderTest:
    """The guard being evaluated, on a thread of its own from start(); whatever happens, stopped with its caps
    removed and its log closed, before the containers go."""

    def __init__(self, cfg: GuardConfig, capacities: dict[str, float], host: CgroupHost, log: TextIO, clock0: float):
        try:
            self.guard = Guard(cfg, capacities, host, log=log, record=True, clock0=clock0)
        except BaseException:
            log.close()
            raise
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.died: BaseException | None = None  # what ended the guard's loop before it was stopped
        self._started = self.died_after = math.nan

    def __enter__(self) -> "GuardUnderTest":
        return self

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="guard", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.guard.run(self._stop)
        except BaseException as e:  # any end of the loop is the run's failure, said by stop()
            self.died = e
            self.died_after = time.monotonic() - self._started

    def stop(self) -> None:
        """The guard stopped; a guard that died before is this run's failure: its figures would be an unguarded
        run's under the policy's name (issue 55: a policy's error killed the guard's thread at the burst's start,
        silently, and the run was reported as the policy's with the victim at 0.17)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.died is not None:
            e, self.died = self.died, None
            raise RuntimeFailed(f"the guard died {self.died_after:.1f} s into the run: {type(e).__name__}: {e}")

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            self.stop()
            self.guard.close()  # caps off (a no-op if the thread did it)
            if self.guard.log_stream is not None:
                self.guard.log_stream.close()


def guard_settings(study: GuardSpec, v: Variant, calibrated: float) -> tuple[dict, float]:
    """The guard's settings for a variant (the study's `guard:` with its swept points on top) and the disk
    capacity it is told: the calibration × the study's `capacity:`, or × the point swept."""
    swept = dict(v.settings)
    scale = swept.pop("capacity", study.capacity)
    return {**study.guard.model_dump(), **swept}, calibrated * scale if scale else math.inf  # 0: told nothing


GUARD_LOGS = "guard-logs"  # the guard's JSON-lines log of each run, guard-logs/TRIAL.jsonl in the results


def run_guard_trial(study: GuardSpec, w: Workload, policy: str, rep: int, capacity: dict, facts: dict,
                    results: Path, host: CgroupHost | None = None, after: str = "") -> TrialResult:
    """One run; the guard's JSON-lines log goes to guard-logs/TRIAL.jsonl below `results` (no link followed).
    `after`: the policy whose run a `none` reference follows (paired evaluation, study.plan)."""
    host = host or detect()
    C = float(capacity["disk_write_bw_bytes_s"])
    v = study.variant(policy)  # `policy` is a label: the policy, at a point of the sweep if there is one
    settings, told = guard_settings(study, v, C)
    result = TrialResult(TrialRecord(
        trial_id=run_id(w.name, policy, rep, after), runtime=study.runtime, repetition=rep,
        cell=GuardCell(w.name, policy, {**w.model_dump(), "policy": v.policy, "swept": v.settings,
                                             "after": after, "guard": settings}),
        capacity=capacity, facts=facts))
    rec = result.record
    with recorded(rec):
        reset_host("disk")
        with Tenants(study.runtime, {t: Limits() for t in TENANTS}, host, userns=study.userns) as t:
            for name in TENANTS:  # lay the files out before the clock starts
                t.run(name, layout(f"/data/{name}.dat", SIZE), timeout=300, what="fio layout")
            t.start_sampling(restart_clock=True)
            rel = {t.c[name].cgroup.relpath: name for name in TENANTS}
            # io.latency protects by role, read from the weights: the victim weighs 2 under it (the others read
            # the study's equal weights)
            cfg = GuardConfig(policy=v.policy, metrics="off", **settings, targets=[
                {"target": f"cgroup:{r}", "weight": 2 if v.policy == "iolatency" and n == "victim" else 1}
                for r, n in rel.items()])
            log = open_under(results, GUARD_LOGS, check_name(rec.trial_id, "trial id") + ".jsonl")
            with GuardUnderTest(cfg, {capacity["disk_device"]: told}, host, log, t.clock0) as g:
                # the settings in force (a policy's own period, P, backoff and climb where the study left them)
                own = {k: getattr(g.guard.policy, k, None) for k in POLICY_OWN}
                assert isinstance(rec.cell, GuardCell)
                rec.cell.params["guard"] = {**settings, "period_ms": g.guard.period_ms,
                                            "hysteresis": g.guard.hysteresis, **own,
                                            "direct_view": g.guard.direct_view[capacity["disk_device"]],
                                            "capacity_told_bytes_s": told if math.isfinite(told) else None}
                g.guard.scan(strict=True)
                starts = _write(t, w, C, g, result)
                t_end = t.now()
                g.stop()
                result.samples += t.stop_sampling()
                _guard_record(result, g.guard, rel)
            _phases(result, t, w, C, starts, t_end)
        rec.status = "ok"
    return result


def _write(t: Tenants, w: Workload, C: float, g: GuardUnderTest, result: TrialResult) -> dict[str, float]:
    """Both tenants write (the guard joining once they write steadily) until the burst is done and the tail
    written; returns when each started, on the trial's clock."""
    starts, procs = {}, {}
    try:
        for name, argv in (("victim", victim_argv(w, C)), ("neighbour", neighbour_argv(w, C))):
            starts[name] = t.now()
            procs[name] = t.exec(name, argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # the guard starts once both write steadily: every policy begins from a history of real use, not
        # from the caps of two idle containers (fio would then catch up on its rate for seconds)
        time.sleep(min(1.0, w.burst_at_s / 4))
        g.start()
        deadline = time.monotonic() + w.max_s
        n = procs["neighbour"]
        while n.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if n.poll() is None:
            interrupt_fio(t.c["neighbour"])
            result.events.append((t.now(), "neighbour", "timeout",
                                  f"the burst did not finish within max_s={w.max_s:g}s"))
        if w.after == "stop":
            time.sleep(w.tail_s)  # the victim alone again: what the burst left behind
        interrupt_fio(t.c["victim"])
        for name, p in procs.items():
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            # the victim is stopped with SIGINT: fio then ends its jobs, writes its logs and exits 128 or so
            if p.returncode != 0 and not (name == "victim" and (t.data[name] / VICTIM_LOG).exists()):
                raise RuntimeFailed(failure(f"the {name}'s load", "fio", p.returncode, err))
    finally:
        stop(list(procs.values()))
    return starts


def _phases(result: TrialResult, t: Tenants, w: Workload, C: float, starts: dict[str, float], t_end: float) -> None:
    """The run's steps (steady, burst, after) from the neighbour's own report, and the victim's guest view."""
    ran = phases(t.data["neighbour"] / "neighbour.json")
    if "burst" not in ran:
        raise RuntimeFailed("neighbour: fio wrote no report of its burst")
    wall0 = wall_zero(t)
    burst_start = burst_began(t.data["neighbour"] / BURST_LOG, wall0)
    if not math.isfinite(burst_start):  # the phase as planned: fio's start-up (0.3-0.45 s) not in it
        burst_start = starts["neighbour"] + w.burst_at_s
        result.events.append((burst_start, "neighbour", "no-burst-log",
                              f"fio's {BURST_LOG} held nothing: the burst's window is its startdelay after the exec"))
    burst_end = burst_start + ran["burst"]
    _guest(result, t.data["victim"], starts["victim"], wall0)
    if said := unseen(result.samples):
        raise RuntimeFailed(said)
    result.steps += [
        StepWindow(0, "steady", 0.0, burst_start, {"victim": w.victim, "neighbour": w.neighbour}),
        StepWindow(1, "burst", burst_start, burst_end, {"victim": w.victim, "neighbour": w.neighbour * w.burst}),
        StepWindow(2, "after", burst_end, t_end,
                   {"victim": w.victim, "neighbour": w.neighbour if w.after == "steady" else 0.0})]
    result.events += [(burst_start, "neighbour", "burst-start", f"{w.burst:g} × {w.neighbour * C / 1e6:.0f} MB/s"),
                      (burst_end, "neighbour", "burst-end", f"{w.burst_volume_s * C / 1e9:.1f} GB written")]
    result.events += t.events


def unseen(samples: list[Sample], share: float = 0.5) -> str:
    """Why the host view cannot be trusted, or "": the victim's cgroup counted less than `share` of the bytes its own
    load generator logged (a v1 host's disk counters off: a study's first three runs on a fresh machine read 0 MB/s
    for a victim writing 127, docs/results/archive.md 2026-12-02). Both are sums over the run; the host's are rates per
    bucket, times the bucket's width (the guest's buckets are all BUCKET_S)."""
    guest = sum(s.value for s in samples if s.tenant == "victim" and s.source == "load" and s.quantity == "bytes_s")
    host = sorted((s.t, s.value) for s in samples if s.tenant == "victim" and s.source == "cgroup"
                  and s.quantity in ("io_rbytes_s", "io_wbytes_s"))
    seen = sum(v for _, v in host) * float(np.median(np.diff(sorted({t for t, _ in host})))) if len(host) > 2 else 0.0
    wrote = guest * BUCKET_S
    if wrote > 0 and seen < share * wrote:
        return (f"the host view saw {seen / 1e6:.0f} MB of the {wrote / 1e6:.0f} MB the victim's load logged: its "
                "cgroup's disk counters did not count it")
    return ""


def _guest(result: TrialResult, victim_dir: Path, t0: float, wall0: float) -> None:
    """The victim's own view from fio's per-I/O log, on the trial's clock: throughput and mean latency on the host
    view's buckets of the victim (io_on), and every I/O's latency (what its tail latency is computed from)."""
    ios = read_io_log(victim_dir / VICTIM_LOG)
    if not len(ios):  # the run keeps its host view; the table says its guest figures are over fewer runs
        result.events.append((t0, "victim", "no-guest-view", f"fio's {VICTIM_LOG} held no I/O"))
    ios[:, 0] -= wall0
    host = np.array(sorted(s.t for s in result.samples if s.tenant == "victim" and s.source == "cgroup"
                           and s.quantity == "io_wbytes_s"))
    t, done, lat = io_on(ios, host)
    if len(host) < 2:  # no host view to share buckets with: its own, stamped at their middle as the host's
        t = t + BUCKET_S / 2
    result.samples += [Sample(a, "victim", "load", "bytes_s", float(b)) for a, b in zip(t, done)]
    result.samples += [Sample(a, "victim", "load", "lat_ms", float(b)) for a, b in zip(t, lat) if not math.isnan(b)]
    result.samples += [Sample(a, "victim", "load", "io_lat_ms", float(b)) for a, b in ios[:, :2]]


def _guard_record(result: TrialResult, guard: Guard, rel: dict[str, str]) -> None:
    """What the guard saw and set, period by period (source "guard")."""
    alert = ""
    escaping: tuple[str, ...] = ()
    for r in guard.records or []:
        for target, usage in r.usage.items():
            result.samples.append(Sample(r.t, rel[target], "guard", "usage_bytes_s", usage))
        result.samples += [Sample(r.t, rel[target], "guard", "cap_bytes_s", cap)
                           for target, cap in r.caps.items() if cap is not None]
        if math.isfinite(r.capacity):  # none while a guard told nothing has not learnt the disk yet
            result.samples.append(Sample(r.t, "", "guard", "capacity_bytes_s", r.capacity))
        if not math.isnan(r.latency_ms):
            result.samples.append(Sample(r.t, "", "guard", "device_lat_ms", r.latency_ms))
        if r.alert != alert:
            result.events.append((r.t, "", "alert" if r.alert else "alert-cleared", r.alert or alert))
            alert = r.alert
        if not math.isnan(r.unattributed_bytes_s):  # written to the disk, charged to neither tenant
            result.samples.append(Sample(r.t, "", "guard", "unattributed_bytes_s", r.unattributed_bytes_s))
        if r.escaping != escaping:
            who = ", ".join(rel[n] for n in (r.escaping or escaping))
            result.events.append((r.t, "", "escape" if r.escaping else "escape-cleared",
                                  f"{who}: buffered writes written back by the kernel, charged to no cgroup"))
            escaping = r.escaping
