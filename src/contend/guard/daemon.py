"""The guard daemon: every period, collector → policy (per disk) → limiter; targets rescanned as they come
and go; structured logs (JSON lines), Prometheus metrics, alerts with an optional command hook.

On exit (normal, Ctrl-C, SIGTERM) every cap it set is removed and what was there before restored.
"""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TextIO

import numpy as np
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from ..cgroups import PREFIX, CgroupHost, V2Cgroup, detect
from ..cgroups.host import kernel_option
from ..diskuse import MIN_CAP, Escape, escaping, io_bytes, queued_use, stale_carry
from ..hooks import Hooks
from ..runtimes import signals_deferred
from .collector import Collector
from .config import AUTO, GuardConfig, cap_floor, sees_direct
from .limiter import Limiter
from .policy import PolicyInput, TargetView, default_hysteresis, default_period_ms, make
from .settings import POLICY_ARGS, POLICY_OWN
from .targets import Resolved, TargetError, TargetPending, resolve

# a target's pages under writeback are taken for writes queued behind its cap on the disks it wrote to in the
# last WRITEBACK_S (a v1 throttle at the floor lets one 8 MiB bio through every few seconds)
WRITEBACK_S = 10.0


@dataclass(frozen=True)
class Period:
    """One disk in one period: what the guard saw and set (its record, for evaluations)."""

    t: float
    device: str
    capacity: float  # the capacity the policy divided
    latency_ms: float  # the disk's mean ms per I/O (nan: no I/O)
    alert: str
    usage: dict[str, float]  # per target, bytes/s
    caps: dict[str, float | None]  # per target, set for the next period (None: no cap)
    unattributed_bytes_s: float = math.nan  # written to the disk, charged to no target (diskuse.escaping)
    escaping: tuple[str, ...] = ()  # the targets whose buffered writes escaped their caps


class Metrics:
    """The Prometheus endpoint (its own registry, so several guards in one process do not clash)."""

    def __init__(self, listen: str):
        self.registry = CollectorRegistry()
        r = self.registry
        self.usage = Gauge("contend_guard_usage_bytes_per_second", "Disk bytes/s a target used in the last period",
                           ["target", "device"], registry=r)
        self.cap = Gauge("contend_guard_cap_bytes_per_second", "The cap set on a target (absent: none)",
                         ["target", "device"], registry=r)
        self.capacity = Gauge("contend_guard_capacity_bytes_per_second",
                              "The capacity the policy divides (contend: probed)", ["device"], registry=r)
        self.latency = Gauge("contend_guard_device_latency_seconds", "Mean time per I/O on the disk", ["device"],
                             registry=r)
        self.alert = Gauge("contend_guard_alert", "1 while the disk is overloaded (caps needed exceed capacity)",
                           ["device"], registry=r)
        self.targets = Gauge("contend_guard_targets", "Targets guarded", registry=r)
        self.unattributed = Gauge("contend_guard_unattributed_write_bytes_per_second",
                                  "Bytes/s the disk wrote that no guarded cgroup was charged for", ["device"],
                                  registry=r)
        self.escaping = Gauge("contend_guard_escaping", "1 while a target's buffered writes escape its caps "
                              "(written back by the kernel, charged to no cgroup: cgroup v1)", ["target", "device"],
                              registry=r)
        self.server = None
        if listen != "off":
            host, _, port = listen.rpartition(":")
            self.server, _ = start_http_server(int(port), host or "127.0.0.1", registry=r)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def drop(self, target: str, device: str) -> None:
        for g in (self.usage, self.cap, self.escaping):
            try:
                g.remove(target, device)
            except KeyError:
                pass


HOOK_INTERVAL_S = 5.0  # the alert hook runs at most this often
HOOK_TIMEOUT_S = 30.0  # and is killed (its whole process group) after this long


def iolatency_missing(host: CgroupHost) -> str:
    """Why this host cannot take io.latency targets ("" if it can, or cannot tell): it needs cgroup v2 and a
    kernel built with it (CONFIG_BLK_CGROUP_IOLATENCY: Debian's kernels and this VM's are not). The kernel's own
    config says so where it can be read; else a cgroup under the root with the io controller on shows io.latency
    beside io.max where the kernel has it, and where none is there yet (a fresh host), a cgroup of contend's
    own, made and removed here, does."""
    if host.mode != "v2" or host.unified is None:
        return f"io.latency needs a cgroup v2 host (this host: {host.mode}); bfq weights work on v1"
    built, config = kernel_option("BLK_CGROUP_IOLATENCY")
    if built is not None:
        return "" if built else _no_iolatency(config)

    def shown(d: Path) -> str | None:
        return None if not (d / "io.max").exists() else (
            "" if (d / "io.latency").exists() else _no_iolatency(f"{d} has io.max but no io.latency"))

    for d in sorted(p for p in host.unified.iterdir() if p.is_dir()):
        if (said := shown(d)) is not None:
            return said
    probe = V2Cgroup(f"{PREFIX}/probe-iolatency-{os.getpid()}", host.unified)
    try:
        probe.create()
        return shown(probe.dir) or ""
    except OSError:
        return ""  # not root (a dry run's check): the guard's own start says it
    finally:
        probe.remove()


def _no_iolatency(evidence: str) -> str:
    return (f"io.latency: this kernel ({os.uname().release}) has none (built without CONFIG_BLK_CGROUP_IOLATENCY: "
            f"{evidence})")


class Guard:
    # the targets as somebody else resolved them (contend watch --guard: the watch's own, so the guard caps by the
    # same identity the watch blames by; issue 95 M2); None: the guard resolves cfg.targets itself
    source: Callable[[], dict[str, Resolved]] | None = None
    on_log: Callable[[str, dict], None] | None = None  # told every event the log is told (from the first)

    def __init__(self, cfg: GuardConfig, disks: dict[str, float], host: CgroupHost | None = None,
                 log: TextIO | None = sys.stderr, record: bool = False, clock0: float | None = None):
        self.cfg = cfg
        self.disks = disks  # MAJ:MIN -> configured capacity, bytes/s
        from ..doctor.calibrate import load_capacity
        calibrated = load_capacity()
        # per disk, what an I/O costs beside its bytes: the policies see usage as bytes + IOs × this, and a cap
        # bounds IOs/s too (a neighbour of 4 KiB random writes fills the disk at a fifth of its bandwidth)
        self.io_bytes = {d: io_bytes(d, cfg.io_bytes, calibrated) for d in disks}
        self.direct_view = {d: sees_direct(cfg.direct_view, c) for d, c in disks.items()}  # diskuse.settle
        self.host = host or detect()
        self.policy = make(cfg.policy, **cfg.model_dump(include=set(POLICY_ARGS)))
        self.period_ms = cfg.period_ms or default_period_ms(cfg.policy)
        self.collector = Collector(list(disks))
        self.hysteresis = default_hysteresis(cfg.policy) if cfg.hysteresis is None else cfg.hysteresis
        self.limiter = Limiter(self.host, cfg.dry_run, hysteresis=self.hysteresis)
        self.log_stream = log
        try:  # BFQ's weights: the disks switched to it now; io.cost turned on; both put back by close()
            if self.policy.scheduler:
                for dev in disks:
                    tuned = self.limiter.use_scheduler(dev, self.policy.scheduler, self.policy.tunables)
                    if self.policy.tunables and not tuned and not cfg.dry_run:
                        self.log("scheduler-kept", device=dev, scheduler=self.policy.scheduler,
                                 message=f"the disk was already on {self.policy.scheduler}: its own tunables "
                                         f"stay (the policy's: {self.policy.tunables})")
            if self.policy.weighs == "cost":  # io.weight needs io.cost on the disk
                for dev in disks:
                    self.limiter.use_iocost(dev)
            if self.policy.weighs == "latency":
                why = iolatency_missing(self.host)
                if why:
                    raise ValueError(why)
        except (OSError, ValueError):
            self.limiter.release_all()  # what it changed before the disk that refused
            raise
        self.clock0 = time.monotonic() if clock0 is None else clock0
        if not cfg.dry_run and (said := self.host.count_disks(f"guard-{self.limiter.instance[:12]}")):
            self.log("uncounted", message=said)  # told nothing, a guard reading 0 everywhere never learns the disk
        self.targets: dict[str, Resolved] = {}
        self._keep = max(cfg.window, 3) + 1  # periods of usage history a policy sees
        self.usage: dict[tuple[str, str], deque] = {}
        self.latency: dict[str, deque] = {d: deque(maxlen=max(self._keep, 50)) for d in disks}
        self.state: dict[str, object] = {d: {} for d in disks}  # each disk's policy state (its own type)
        self.believed: dict[str, float] = {}  # per disk, the capacity the policy divided last period
        self.alerts: dict[str, str] = {d: "" for d in disks}
        self.caps: dict[tuple[str, str], float | None] = {}
        self.records: list[Period] | None = [] if record else None
        try:
            self.metrics = Metrics(cfg.metrics)
        except OSError:  # the port taken: nothing of this guard may stay behind
            self.limiter.release_all()
            raise
        self.hooks = Hooks(cfg.alert_cmd, HOOK_TIMEOUT_S)
        self._hook_due: dict[str, tuple[str, str]] = {}  # device -> (state, message) not yet told to the hook
        self._hook_told: dict[str, str] = {}  # device -> the state the hook was last told
        self._last_hook = -math.inf
        self._last_scan = -math.inf
        self.scanned_at = -math.inf  # when the last scan() began resolving the targets (monotonic)
        self._logged_caps: dict[tuple[str, str], float | None] = {}
        self.escapes: dict[str, tuple[str, ...]] = {d: () for d in disks}  # per disk, the targets escaping now
        self.credit: dict[str, dict[str, float]] = {d: {} for d in disks}  # per disk, charges not written yet
        self.last_write: dict[tuple[str, str], float] = {}  # (target, disk): when it last wrote there
        self.last_held: dict[tuple[str, str], float] = {}  # (target, disk): when it last held dirty pages
        self.recent_unattributed: dict[str, deque] = {d: deque(maxlen=100) for d in disks}  # per disk, (s, bytes)
        # caps on a disk only while gate(disk) says so (contend watch --guard: while it blames a container for a
        # disk); otherwise none, and the policy goes on learning everybody's lifeline
        self.gate: Callable[[str], bool] | None = None
        # a target's caps scaled by this share (contend protect's disk holds: its policy's cap, squeezed further
        # while the victim it is held for is not back)
        self.squeeze: dict[str, float] = {}
        self._closed = False
        self._logged_weights: dict[tuple[str, str], int | None] = {}

    # -- logs and alerts
    def log(self, event: str, **fields) -> None:
        if self.on_log is not None:
            self.on_log(event, fields)
        if self.log_stream is None:
            return
        line = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), "event": event, **fields}
        print(json.dumps(line), file=self.log_stream, flush=True)

    def _alert(self, device: str, message: str) -> None:
        before = self.alerts[device]
        self.alerts[device] = message
        self.metrics.alert.labels(device).set(1 if message else 0)
        if bool(before) == bool(message):
            return
        state = "raised" if message else "cleared"
        self.log("alert" if message else "alert-cleared", device=device, message=message or before)
        if self.cfg.alert_cmd:
            self._hook_due[device] = (state, message or before)
            self._run_hooks()

    def _run_hooks(self) -> None:
        """The alert hook, at most once per HOOK_INTERVAL_S (a flapping alert is told its latest state, and
        not at all if it is back where the hook last saw it); a hook running past HOOK_TIMEOUT_S is killed."""
        now = time.monotonic()
        for pid, after in self.hooks.reap():
            self.log("alert-hook-killed", pid=pid, after_s=round(after, 1))
        for dev in [d for d, (state, _) in self._hook_due.items() if self._hook_told.get(d, "cleared") == state]:
            del self._hook_due[dev]
        if not self._hook_due or now - self._last_hook < HOOK_INTERVAL_S:
            return
        self._last_hook = now
        for dev, (state, message) in self._hook_due.items():
            self.hooks.run({"CONTEND_ALERT_STATE": state, "CONTEND_ALERT_DEVICE": dev,
                            "CONTEND_ALERT_MESSAGE": message})
            self._hook_told[dev] = state
        self._hook_due.clear()

    # -- targets
    def scan(self, strict: bool = False) -> None:
        """Resolve every selector again: new targets start being watched, gone ones lose their caps.
        strict (at start): a selector that names nothing is an error (TargetError)."""
        began = time.monotonic()
        found: dict[str, Resolved] = dict(self.source()) if self.source is not None else {}
        for sel in self.cfg.targets if self.source is None else ():
            try:
                for r in resolve(self.host, sel.target, sel.weight):
                    found.setdefault(r.name, r)
            except TargetError:
                if strict:
                    raise
        for name in [n for n in self.targets if n not in found or not self.host.cgroup(found[n].relpath).exists()]:
            gone = self.targets.pop(name)
            self.log("target-gone", target=name, cgroup=gone.relpath)
            try:
                self.limiter.release_target(gone.relpath)
            except OSError:
                pass
            self.collector.forget(name)
            for d in self.disks:
                self.usage.pop((name, d), None)
                self.caps.pop((name, d), None)
                self.last_write.pop((name, d), None)
                self.last_held.pop((name, d), None)
                self._logged_caps.pop((name, d), None)  # pods come and go for months: nothing kept for the gone
                self._logged_weights.pop((name, d), None)
                self.metrics.drop(name, d)
        for name, r in found.items():
            if name not in self.targets:
                self.targets[name] = r
                self.log("target-added", target=name, cgroup=r.relpath, weight=r.weight)
        self.metrics.targets.set(len(self.targets))
        self.scanned_at = began

    def wait_for_targets(self, stop: threading.Event | None = None) -> None:
        """scan(strict=True), waiting up to cfg.wait_s for a named target that does not exist yet (a guard
        started before the containers it protects), with a log line; then TargetError."""
        stop = stop or threading.Event()
        deadline = time.monotonic() + self.cfg.wait_s
        told: set[str] = set()
        while True:
            try:
                return self.scan(strict=True)
            except TargetPending as e:
                if time.monotonic() >= deadline or stop.is_set():
                    raise TargetError(f"{e} (waited {self.cfg.wait_s:g} s)") from None
                if str(e) not in told:
                    told.add(str(e))
                    self.log("target-waiting", message=str(e), wait_s=self.cfg.wait_s)
                stop.wait(min(0.5, max(0.0, deadline - time.monotonic())))

    def _squeezed(self, name: str, cap: float | None, used: float) -> float | None:
        """The policy's cap on a target, squeezed by contend protect's hold on it (from what it uses, where the
        policy left it uncapped)."""
        if cap is None or name not in self.squeeze:
            return cap
        return max(MIN_CAP, min(cap, max(used, MIN_CAP)) * self.squeeze[name])

    # -- one period
    def step(self) -> None:
        now = time.monotonic()
        if self._hook_due or self.hooks.running:
            self._run_hooks()
        if now - self._last_scan >= self.cfg.rescan_s:
            self._last_scan = now
            self.scan()
        t = now - self.clock0
        seen: dict[str, dict] = {}
        for name, r in list(self.targets.items()):
            try:
                u = self.collector.usage(name, self.host.cgroup(r.relpath))
            except OSError:
                continue
            if u is not None:
                seen[name] = u
        lat = self.collector.latency()
        for dev, capacity in self.disks.items():
            if not math.isnan(lat[dev]):
                self.latency[dev].append(lat[dev])
                self.metrics.latency.labels(dev).set(lat[dev] / 1e3)
            if not seen:
                continue
            esc = self._escape(dev, seen)
            used, wants = self._used(dev, t, seen, esc)
            views = []
            for name in seen:
                h = self.usage.setdefault((name, dev), deque(maxlen=self._keep))
                h.append(wants[name])
                self.metrics.usage.labels(name, dev).set(used[name])
                views.append(TargetView(name, np.array(h), self.caps.get((name, dev)), self.targets[name].weight))
            d = self.policy.decide(PolicyInput(views, capacity, self._floor(dev, capacity),
                                               np.array(self.latency[dev]), self.state[dev]))
            self.state[dev] = d.state
            self.believed[dev] = d.capacity
            self.metrics.capacity.labels(dev).set(d.capacity)
            if d.said:
                self.log("capacity", device=dev, why=d.said,
                         capacity_bytes_s=round(d.capacity) if math.isfinite(d.capacity) else None)
            gated = self.gate is not None and not self.gate(dev)
            in_force = dict(d.caps)
            for name, cap in d.caps.items():
                cap = None if gated else self._squeezed(name, cap, used[name])
                self.caps[(name, dev)] = cap
                try:
                    # the cap in force, which the policy sees next period and the records keep: with a
                    # hysteresis, the one written before a small move
                    cap = in_force[name] = self.caps[(name, dev)] = self.limiter.apply(
                        self.targets[name].relpath, dev, cap, self.io_bytes[dev])
                except OSError as e:  # the cgroup went away between scan and now
                    self.log("cap-failed", target=name, device=dev, error=str(e))
                    continue
                self.metrics.cap.labels(name, dev).set(math.nan if cap is None else cap)
                self._log_cap(name, dev, cap, used[name])
            for name, w in d.weights.items():
                self._weigh(name, dev, None if gated else w)
            if self.records is not None:
                self.records.append(Period(t, dev, d.capacity, lat[dev], d.alert,
                                           used, in_force,
                                           esc.unattributed_bytes_s, esc.targets))
            self._alert(dev, d.alert)

    def _floor(self, dev: str, told: float) -> float:
        return cap_floor(self.cfg.floor, told, self.believed.get(dev, math.inf))

    def _used(self, dev: str, t: float, seen: dict[str, dict],
              esc: Escape) -> tuple[dict[str, float], dict[str, float]]:
        """Per target, its bytes/s on dev: as the disk wrote them, not as they were charged at submission
        (diskuse.settle; the metrics and the records), and as the policy sees them: their cost (bytes + IOs ×
        io_bytes), at least its cap while writes are queued behind it (diskuse.queued_use)."""
        dt = self.collector.seconds.get(dev, math.nan)
        used, wants = {}, {}
        for n, u in seen.items():
            delivered = esc.delivered.get(n, u[dev].wbytes_s)
            if u[dev].wbytes_s > 0 or delivered > 0:
                self.last_write[(n, dev)] = t
            if u[dev].dirty > 0:
                self.last_held[(n, dev)] = t
            quiet = t - max(self.last_write.get((n, dev), t), self.last_held.get((n, dev), -math.inf))
            if stale_carry(esc.credit.get(n, 0.0), self.caps.get((n, dev)), quiet):
                esc.credit.pop(n, None)  # forgotten: no queue, nor cover for a later escape
            # its pages under writeback (memory.stat knows no disk) count on the disks it wrote to lately
            wb = u[dev].writeback if t - self.last_write.get((n, dev), -math.inf) <= WRITEBACK_S else 0
            used[n] = u[dev].rbytes_s + delivered
            cost = used[n] + u[dev].ios_s * self.io_bytes[dev]
            # a direct writer's carry is the disk's lag behind its charges, not writes queued behind its cap
            carry = 0.0 if n in esc.direct else esc.credit.get(n, 0.0)
            queued = queued_use(delivered, carry, self.caps.get((n, dev)), dt if math.isfinite(dt) else 1.0, wb)
            wants[n] = cost if queued == delivered else max(cost, u[dev].rbytes_s + queued)
        return used, wants

    def _escape(self, dev: str, seen: dict[str, dict]) -> Escape:
        """What the disk wrote that no target was charged for, and whose buffered writes it likely was: in the
        metrics every period, in the log when the escaping targets change."""
        esc = escaping(self.collector.written.get(dev, math.nan), {n: u[dev] for n, u in seen.items()},
                       {n: self.collector.dirty_before(n) for n in seen}, self.collector.seconds.get(dev, 1.0),
                       self.credit[dev], list(self.recent_unattributed[dev]),
                       {n: self.caps.get((n, dev)) for n in seen}, self.direct_view[dev], self.io_bytes[dev])
        self.credit[dev] = esc.credit
        if math.isfinite(esc.unattributed_bytes_s):
            dt = self.collector.seconds[dev]
            self.recent_unattributed[dev].append((dt, esc.unattributed_bytes_s * dt))
        if math.isfinite(esc.unattributed_bytes_s):
            self.metrics.unattributed.labels(dev).set(esc.unattributed_bytes_s)
        for name in seen:
            self.metrics.escaping.labels(name, dev).set(1 if name in esc.targets else 0)
        if esc.targets != self.escapes[dev]:
            if esc.targets:
                self.log("escape", device=dev, targets=list(esc.targets),
                         unattributed_bytes_s=round(esc.unattributed_bytes_s),
                         dirty_bytes={n: seen[n][dev].dirty for n in esc.targets},
                         message="buffered writes written back by the kernel, charged to no cgroup: no cap holds "
                                 "them (cgroup v1 writeback)")
            else:
                self.log("escape-cleared", device=dev, targets=list(self.escapes[dev]))
            self.escapes[dev] = esc.targets
        return esc

    def _weigh(self, name: str, dev: str, weight: int | None) -> None:
        """A target's BFQ weight on a disk (None: the one it had), with a log line when it changes."""
        try:
            self.limiter.weigh(self.targets[name].relpath, dev, weight, self.policy.weighs)
        except OSError as e:  # the cgroup went away between scan and now
            self.log("weight-failed", target=name, device=dev, error=str(e))
            return
        if self._logged_weights.get((name, dev), "unset") != weight:
            self._logged_weights[(name, dev)] = weight
            self.log("weight", target=name, device=dev, weight=weight, dry_run=self.cfg.dry_run)

    def _log_cap(self, name: str, dev: str, cap: float | None, usage: float) -> None:
        """A log line when a cap appears, goes, or moves by more than 10 %."""
        logged = (name, dev) in self._logged_caps
        old = self._logged_caps.get((name, dev))
        if not logged or (old is None) != (cap is None) or (
                cap is not None and old is not None and abs(cap - old) > 0.1 * old):
            self._logged_caps[(name, dev)] = cap
            self.log("cap", target=name, device=dev, cap_bytes_s=None if cap is None else round(cap),
                     usage_bytes_s=round(usage), dry_run=self.cfg.dry_run)

    # -- the loop
    def run(self, stop: threading.Event | None = None, duration: float | None = None) -> None:
        """Until stop is set, duration passes, or an interrupt; caps are removed however it ends."""
        stop = stop or threading.Event()
        period = self.period_ms / 1000
        end = None if duration is None else time.monotonic() + duration
        self.log("start", policy=self.cfg.policy,
                 disks={d: round(c) if math.isfinite(c) else AUTO for d, c in self.disks.items()},
                 scheduler=self.policy.scheduler or None,
                 period_ms=self.period_ms, window=self.cfg.window, hysteresis=self.hysteresis,
                 io_bytes={d: round(b) for d, b in self.io_bytes.items()}, direct_view=self.direct_view,
                 **{k: getattr(self.policy, k) for k in POLICY_OWN if hasattr(self.policy, k)},
                 dry_run=self.cfg.dry_run, pid=os.getpid())
        try:
            next_at = time.monotonic()
            while not stop.is_set() and (end is None or time.monotonic() < end):
                self.step()
                next_at += period
                stop.wait(max(0.0, next_at - time.monotonic()))
        finally:
            with signals_deferred():  # a second Ctrl-C must not leave caps behind
                self.close()

    def close(self) -> None:
        """Every cap off (what was there before restored), the endpoint down; once, however often called."""
        if self._closed:
            return
        self._closed = True
        self.limiter.release_all()
        self.metrics.close()
        self.hooks.close()
        self.log("stop", caps_removed=True)
