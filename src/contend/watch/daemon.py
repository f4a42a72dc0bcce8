"""contend watch: every period, collector → detector → outputs (JSON events, a live table, Prometheus, a
recording of the raw frames). It sets nothing on the host: it reads counters and runs one bpftrace."""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from prometheus_client import CollectorRegistry, Gauge, start_http_server

from ..cgroups import CgroupHost, detect
from ..cri.client import DEFAULT_ENDPOINTS, Cri, CriError, connect
from ..cri.logs import KUBELET_LINKS, PodLogs
from ..guard.targets import Resolved, TargetError, check_selector, pods_token, resolve
from ..hooks import Hooks
from ..terminal import plain
from .collector import REFRESH_S, WatchCollector
from .detector import Detector, Verdict
from .handoff import GuardHandoff
from .signals import Frame

HOOK_TIMEOUT_S = 30.0  # a hook running longer is killed with its process group
# a symptom above its threshold for one frame is confirmed (or not) by a frame this share of a period later,
# not a whole period later: the verdict comes half a period sooner, the cadence of the rest is kept
CONFIRM = 0.5
# a frame is read this long after one of the kernel's ticks (its maps printed and parsed by then): the eBPF
# counts it takes end where its cgroup readings do, not up to a tick interval earlier
AFTER_TICK = 0.05


def on_tick(t: float, tick_at: float | None, every: float, period: float) -> float:
    """The time `t` moved to AFTER_TICK past the eBPF tick nearest it, the ticks coming `every` seconds from
    `tick_at` (pure): a frame and its second look then take whole ticks. `t` itself before the first tick, and
    where the period is no whole number of ticks (its cadence is kept)."""
    ticks = period / every
    if tick_at is None or abs(ticks - round(ticks)) > 1e-6:
        return t
    return tick_at + AFTER_TICK + round((t - AFTER_TICK - tick_at) / every) * every


class WatchMetrics:
    """The Prometheus endpoint: the verdicts now, and each container's symptoms."""

    def __init__(self, listen: str):
        r = self.registry = CollectorRegistry()
        self.blame = Gauge("contend_watch_verdict", "1 × confidence while a verdict holds (kind: blame, self, "
                           "unattributed)", ["victim", "resource", "kind", "culprit"], registry=r)
        self.share = Gauge("contend_watch_blame_share", "A culprit's share of a victim's harm while a verdict "
                           "holds (CPU: of the time its tasks waited; the culprits' shares sum to at most 1)",
                           ["victim", "resource", "culprit"], registry=r)
        self.signal = Gauge("contend_watch_signal", "A watched container's signal in the last period "
                            "(see docs/watch.md for units)", ["container", "signal"], registry=r)
        # container -> signal -> [its series, the value it shows], kept between periods
        self._signals: dict[str, dict[str, list[Any]]] = {}
        self.server = None
        if listen != "off":
            host, _, port = listen.rpartition(":")
            self.server, _ = start_http_server(int(port), host or "127.0.0.1", registry=r)

    SHOWN = ("cpu", "rq_delay", "cpu_psi", "throttled", "mem", "mem_psi", "io_bytes", "io_psi")

    def update(self, frame: Frame, verdicts: list[Verdict]) -> None:
        # each container's series kept and set again when its value changed (a calm pod's mostly do not), those
        # without a value now removed: made anew each period (clear, then labels), the 880 series of a node of 110
        # pods took 4.0-4.2 ms a period, 0.5 kept (by container, then signal: no set of 880 pairs built a period)
        for c in [c for c in self._signals if c not in frame.containers]:
            for s in self._signals.pop(c):
                self.signal.remove(c, s)
        for c, sig in frame.containers.items():
            kept = self._signals.get(c)
            if kept is None:
                kept = self._signals[c] = {}
            for s in self.SHOWN:
                one = kept.get(s)
                if math.isfinite(value := sig.get(s, math.nan)):
                    if one is None:
                        one = kept[s] = [self.signal.labels(c, s), math.nan]
                    if one[1] != value:
                        one[0].set(value)
                        one[1] = value
                elif one is not None:
                    self.signal.remove(c, s)
                    del kept[s]
        self.blame.clear()
        self.share.clear()
        for v in verdicts:
            self.blame.labels(v.victim, v.resource, v.kind, v.culprit).set(v.confidence)
            for c, x in v.culprits:
                self.share.labels(v.victim, v.resource, c).set(x)

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()


@dataclass
class WatchConfig:
    targets: list[str]
    period: float = 1.0
    ebpf: bool = True
    net_rtt: bool = True  # with ebpf: the TCP round-trip probe (it costs TCP floods some throughput: docs/watch.md)
    metrics: str = "off"
    disks: list[str] | None = None
    rescan_s: float = 5.0
    detector: dict = field(default_factory=dict)
    hook: str = ""  # the operator's command, run by the shell on every event (docs/watch.md, "Hook")
    cri: tuple[str, ...] = DEFAULT_ENDPOINTS  # where k8s: selectors ask for the pods' names (the first that answers)
    # where pods' names come from (POD_NAMES); the kubelet's links where `logs` reads them
    pod_names: str = "auto"
    pod_logs: str = KUBELET_LINKS
    # contend protect's victim class (--victims): selectors as targets' or qos:CLASS; () for none (anyone may be
    # protected or held)
    victims: tuple[str, ...] = ()


# cri: the CRI's socket (the names and the pods' labels; whoever can connect to it is root on the node:
# docs/security.md); auto: the socket where one answers (as cri; a watch started on a host by hand); logs: the
# kubelet's links only (no socket, no labels: what the DaemonSet uses); paths: neither. Where the source chosen does
# not answer, a pod container is named by its cgroup's path, which changes each time it restarts
POD_NAMES = ("auto", "cri", "logs", "paths")


class Watcher:
    def __init__(self, cfg: WatchConfig, host: CgroupHost | None = None, events: Callable[[dict], None] | None = None,
                 record: TextIO | None = None, clock0: float | None = None):
        self.cfg = cfg
        self.host = host or detect()
        self.detector = Detector(**cfg.detector)
        self.metrics = WatchMetrics(cfg.metrics)
        self.collector = WatchCollector(self.host, cfg.disks, cfg.ebpf, clock0, cfg.net_rtt, cfg.period)
        self.cpu_s = 0.0  # CPU-seconds its own loop used (its thread); bpftrace's: collector.probe_cpu_s
        self.on_event = events or (lambda e: None)
        self.record = record
        self.hooks = Hooks(cfg.hook, timeout_s=HOOK_TIMEOUT_S) if cfg.hook else None
        self.handoff: GuardHandoff | None = None  # --guard: set by the caller, told every period's verdicts
        self.protector: Any = None  # --protect: a protect.daemon.Protector, set by the caller, told every period
        self.targets: dict[str, Resolved] = {}
        self.victims: set[str] | None = None  # the targets in cfg.victims' class, as of the last scan
        self._scan_cri: Cri | PodLogs | None = None  # the CRI this scan asks (None once it failed in it)
        self.frames = 0
        self.last: Frame | None = None
        self._last_scan = -math.inf
        self._closed = False
        self._started = False  # start(): the first scan and reading made
        self.cri: Cri | PodLogs | None = None
        self.pods = any(s.startswith("k8s:") for s in (*cfg.targets, *cfg.victims))
        self.only_pods = all(s.startswith("k8s:") for s in cfg.targets)
        self._pods_token: tuple | None = None  # the pods' cgroups as last seen (targets.pods_token)
        self._settling = 0  # scans still due after the pods changed (a container's cgroup comes before it runs)
        self.cri_said = ""  # the last thing said of the CRI (said again only when it changes)

    @property
    def problems(self) -> list[str]:
        self.collector.attach()  # what eBPF could not attach is known once it tried
        return self.collector.problems

    def start(self) -> None:
        """The first scan and reading, made while bpftrace compiles (at 250 pods they take 0.3 s of its 0.9), then
        its probes waited for. run() starts it if nobody did."""
        if self._started:
            return
        self._started = True
        self.scan()
        self._last_scan = time.monotonic()
        self.collector.collect()  # the first reading only sets the counters' start
        self.collector.attach()

    def _cri(self) -> Cri | PodLogs | None:
        """Where the pods' names come from (cfg.pod_names), asked again at each scan until one answers (None
        meanwhile: named by their cgroups' paths)."""
        mode = self.cfg.pod_names
        if self.cri is None and mode != "paths":
            why = []
            if mode in ("auto", "cri"):  # (auto takes no links: a node may keep none, and then nothing is named)
                try:
                    self.cri = connect(self.cfg.cri)
                except CriError as e:
                    why.append(str(e))
            if mode == "logs":
                if os.path.isdir(self.cfg.pod_logs):
                    self.cri = PodLogs(self.cfg.pod_logs)
                else:
                    why.append(f"no kubelet's links in {self.cfg.pod_logs}")
            if self.cri is not None:
                self._say(f"contend watch: pods named through {self.cri.endpoint} ({self.cri.version()})")
            else:
                self._say(f"contend watch: {'; '.join(why)}; pods are named by their cgroups' paths")
        return self.cri

    def _say(self, line: str) -> None:
        if line != self.cri_said:
            self.cri_said = line
            print(plain(line, limit=2000), file=sys.stderr, flush=True)  # a CRI's version is the runtime's text

    def _pods_changed(self) -> bool:
        """With k8s: targets, whether a pod's container came or went since the last period (its cgroup's count,
        read every period: a pod is named in the period it starts, not at the next rescan), or came a moment ago."""
        if not self.pods:
            return False
        token = pods_token(self.host)
        if token != self._pods_token:
            self._pods_token, self._settling = token, 3
        self._settling = max(0, self._settling - 1)
        return self._settling > 0

    def scan(self) -> None:
        """Resolve every selector again (containers come and go); one naming nothing now is not an error."""
        if self.pods:  # the pods as this scan sees them: no scan again until they change (_pods_changed)
            self._pods_token = pods_token(self.host)
        found: dict[str, Resolved] = {}
        self._scan_cri = self._cri() if self.pods else None
        for sel in self.cfg.targets:
            for r in self._resolve(sel):
                found.setdefault(r.name, r)
        self.targets = found
        self.collector.set_targets(found)
        if self.cfg.victims:
            self.victims = {r.name for sel in self.cfg.victims for r in self._members(sel) if r.name in found}

    def _resolve(self, sel: str) -> list[Resolved]:
        """What one selector names now ([] for nothing, or where it cannot be resolved)."""
        try:
            try:
                return resolve(self.host, sel, cri=self._scan_cri)
            except CriError as e:  # the runtime went away: named by path until it answers again (not this scan)
                self._say(f"contend watch: {e}; pods are named by their cgroups' paths")
                self.cri = self._scan_cri = None
                return resolve(self.host, sel)
        except TargetError:
            return []

    def _members(self, sel: str) -> list[Resolved]:
        """The targets a victim-class selector names: a pod's QoS class (qos:Guaranteed), or a target selector."""
        if sel.startswith("qos:"):
            return [r for r in self.targets.values() if r.qos.lower() == sel[len("qos:"):].lower()]
        return self._resolve(sel)

    def step(self) -> list[dict]:
        now = time.monotonic()
        # pods alone, named through a CRI: their coming and going is seen every period (_pods_changed), the rest
        # seldom changes (without a CRI: asked again at every rescan)
        every = max(self.cfg.rescan_s, REFRESH_S) if self.only_pods and self.cri is not None else self.cfg.rescan_s
        if now - self._last_scan >= every or self._pods_changed():
            self._last_scan = now
            self.scan()
        # a verdict on memory, disk or network going on: every container's counters of those read every period
        self.collector.hot = any(res != "cpu" for _, res in self.detector.active)
        f = self.collector.collect()
        self.last = f
        self.frames += 1
        if self.record is not None:
            print(f.to_json(), file=self.record, flush=True)
        events = self.collector.take_notices() + self.detector.step(f)
        for e in events:
            self.on_event(e)
            self._hook(e)
        if self.hooks is not None:
            for pid, after in self.hooks.reap():
                print(f"contend: watch hook (pid {pid}) killed after {after:.0f} s", file=sys.stderr)
        if self.handoff is not None:
            self.handoff.update(self.detector.verdicts())
        if self.protector is not None:
            self.protector.update(f, self.detector, self.victims)
        if self.metrics.server is not None:
            self.metrics.update(f, self.detector.verdicts())
        return events

    def _hook(self, e: dict) -> None:
        """The hook, told one event: its fields in CONTEND_WATCH_* variables, the whole event as JSON on stdin."""
        if self.hooks is None:
            return
        env = {f"CONTEND_WATCH_{k.upper()}": str(e[k]) for k in ("event", "victim", "resource", "kind", "culprit",
                                                                 "confidence", "why")}
        if not self.hooks.run(env, json.dumps(e) + "\n"):
            print(f"contend: watch hook not run for {e['event']} {plain(e['victim'])} {e['resource']}: "
                  f"{self.hooks.max_running} still running", file=sys.stderr)

    def on_tick(self, t: float) -> float:
        runq = self.collector.runq
        return on_tick(t, runq.tick_at, runq.period, self.cfg.period) if runq is not None else t

    def run(self, stop: threading.Event | None = None, duration: float | None = None,
            after_step: Callable[["Watcher"], None] | None = None) -> None:
        stop = stop or threading.Event()
        end = None if duration is None else time.monotonic() + duration
        cpu0 = time.thread_time()

        def look() -> None:
            self.step()
            if after_step is not None:
                after_step(self)

        try:
            self.start()
            next_at = time.monotonic() + self.cfg.period
            while not stop.is_set() and (end is None or time.monotonic() < end):
                stop.wait(max(0.0, next_at - time.monotonic()))
                if stop.is_set():
                    break
                took_at, next_at = next_at, self.on_tick(next_at + self.cfg.period)
                look()
                if self.detector.pending():  # the second look, within the period (one per period)
                    stop.wait(max(0.0, self.on_tick(took_at + CONFIRM * self.cfg.period) - time.monotonic()))
                    if not stop.is_set() and time.monotonic() < next_at - 0.2 * self.cfg.period:
                        look()
        finally:
            self.cpu_s += time.thread_time() - cpu0
            self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.collector.close()
        self.metrics.close()
        if self.cri is not None:
            self.cri.close()
        if self.handoff is not None:
            self.handoff.close()
        if self.protector is not None:
            self.protector.close()
        if self.hooks is not None:
            self.hooks.close()


def check_targets(selectors: list[str]) -> list[str]:
    """The selectors, each checked (ValueError: the one line to print)."""
    return [check_selector(s) for s in selectors]
