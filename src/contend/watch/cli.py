"""`contend watch`: its options checked (exit 2, one line), the watcher started live, as JSON lines or over a
recording (--replay)."""
from __future__ import annotations

import gc
import json
import os
import sys
import threading
from pathlib import Path
from typing import Optional

import typer

from ..guard.cli import guard_capacities, guard_disks
from ..pageout import give_back
from ..terminal import console, fail, need_root, plain, term_as_interrupt

# the libraries the watch needs to start and seldom after: gRPC's core (the CRI client: a call per 30-s refresh
# reads back the few pages it uses), protobuf's, the TLS and hashing ones the HTTP modules import and the endpoint
# never uses (plain HTTP), typer's pydantic (options parsed once), decimal (rich's import). At 250 pods they held
# 16 MiB of its resident memory, for nothing once it runs (pageout.give_back)
START_LIBS = ("/cygrpc.", "/_message.", "/libcrypto.", "/libssl.", "/_ssl.", "/_hashlib.", "/_pydantic_core.",
              "/_decimal.", "/libstdc++.")


def watch(target: list[str] = typer.Option([], "--target", "-t", metavar="SELECTOR",
                                           help="What to watch (repeatable): cgroup:PATH or a glob, docker:NAME, "
                                                "docker:label=K=V, docker:*, podman:..., contend (its containers), "
                                                "k8s: (every pod on this node, as namespace/pod/container), "
                                                "k8s:NAMESPACE/*, k8s:label=K=V. Default: contend and docker:*."),
          period: float = typer.Option(1.0, min=0.1, max=60, help="Seconds per period."),
          duration: Optional[float] = typer.Option(None, min=0.1, help="Stop after this many seconds "
                                                                       "(default: until Ctrl-C / SIGTERM)."),
          as_json: bool = typer.Option(False, "--json", help="One JSON line per event on stdout (a verdict that "
                                                             "starts, changes or clears, with its evidence)."),
          record: Optional[Path] = typer.Option(None, "--record", metavar="FILE",
                                                help="Write every period's raw signals to FILE (JSON lines)."),
          replay: Optional[Path] = typer.Option(None, "--replay", metavar="FILE",
                                                help="Run the detector over a recording instead of this host "
                                                     "(no root needed); prints its events."),
          ebpf: bool = typer.Option(True, "--ebpf/--no-ebpf", help="Run-queue delay and preemptions by eBPF "
                                                                   "(else CPU pressure only)."),
          net_rtt: bool = typer.Option(True, "--net-rtt/--no-net-rtt",
                                       help="With eBPF, containers' TCP round-trip times (tcp_probe); it costs a "
                                            "loopback TCP flood ~10 % of its throughput (docs/watch.md). Off: "
                                            "retransmissions and drops only."),
          disk: list[str] = typer.Option([], "--disk", metavar="MAJ:MIN", help="A disk whose latency counts "
                                                                              "(repeatable; default: every disk)."),
          metrics: str = typer.Option("127.0.0.1:9733", help="Prometheus endpoint HOST:PORT, or off."),
          hook: str = typer.Option("", "--hook", metavar="CMD",
                                   help="Shell command run on every event (CONTEND_WATCH_* in its env, the event "
                                        "as JSON on its stdin); never waited for, killed after 30 s."),
          guard: bool = typer.Option(False, "--guard", help="Hand a disk culprit to the guard: while a container "
                                                            "is blamed for a disk (and while it presses against "
                                                            "its cap), the guard's policy caps the disk's users; "
                                                            "every cap removed when it stops."),
          strict: bool = typer.Option(False, "--strict", help="With --guard: stop with exit 1 as soon as a disk "
                                                              "culprit the watch blames is one the guard cannot "
                                                              "cap (said once either way, in the live view and "
                                                              "the log)."),
          capacity: list[str] = typer.Option([], "--capacity", metavar="MAJ:MIN=RATE",
                                             help="With --guard: a disk and what it delivers, e.g. 254:0=4G "
                                                  "(repeatable; default: the calibrated disk)."),
          cri: list[str] = typer.Option([], "--cri", metavar="unix:///PATH",
                                        help="The node's CRI socket, where k8s: targets get the pods' names "
                                             "(repeatable: the first that answers; default: containerd's "
                                             "/run/containerd/containerd.sock, then CRI-O's "
                                             "/var/run/crio/crio.sock)."),
          pod_names: str = typer.Option("auto", "--pod-names", metavar="auto|cri|logs|paths",
                                        help="Where k8s: targets get the pods' names: cri (the CRI's socket, with "
                                             "the pods' labels; whoever may connect to it is root on the node), "
                                             "logs (the kubelet's links in --pod-logs: no socket, no labels), "
                                             "paths (the cgroups' paths), auto (cri where a runtime answers)."),
          pod_logs: str = typer.Option("/var/log/containers", "--pod-logs", metavar="DIR",
                                       help="With --pod-names logs: the kubelet's links <pod>_<ns>_<container>-<id>"
                                            ".log (read, never followed)."),
          protect: bool = typer.Option(False, "--protect", help="Act on the blame (contend protect, "
                                                                "docs/protect.md): hold a culprit back on the "
                                                                "resource it is blamed for, in proportion to its "
                                                                "share, until its victim is whole; every setting "
                                                                "put back when it stops."),
          resource: list[str] = typer.Option([], "--resource", metavar="cpu|memory|disk|network",
                                             help="With --protect: a resource it acts on (repeatable; default: "
                                                  "all four)."),
          dry_run: bool = typer.Option(False, "--dry-run", help="With --protect: log what it would set, set "
                                                                "nothing."),
          victims: list[str] = typer.Option([], "--victims", metavar="SELECTOR",
                                            help="With --protect: the victim class (repeatable): only these are "
                                                 "protected, and they are never held; the rest may be held. A "
                                                 "selector as -t's (k8s:label=tier=latency, docker:web) or a pod's "
                                                 "QoS class, qos:Guaranteed|Burstable|BestEffort. Default: anyone."),
          confirm: float = typer.Option(1.0, min=0, max=60, metavar="S",
                                        help="With --protect: seconds a blame must last before any action."),
          release: float = typer.Option(10.0, min=0, max=3600, metavar="S",
                                        help="With --protect: seconds with no blame and the culprit no longer "
                                             "pressing before its hold is given back (step by step)."),
          cpu_floor: float = typer.Option(0.1, min=0.01, metavar="CPUS",
                                          help="With --protect: the least CPU quota it leaves a culprit."),
          memory_floor: str = typer.Option("64M", metavar="SIZE",
                                           help="With --protect: the least memory it leaves a culprit (v2 "
                                           "memory.high; v1 memory.limit_in_bytes, never within 64 MiB of its "
                                           "anonymous memory)."),
          net_floor: float = typer.Option(1.0, min=0.01, metavar="MBIT",
                                          help="With --protect: the least rate (Mbit/s) it leaves what a culprit "
                                               "sends.")):
    """Who hurts whom on this host, now: every period, each watched container's symptoms (run-queue delay,
    pressure, its own throttling, its disk's latency) against its own baseline, and a blame when a neighbour's
    use rose with it; a container held by its own limit is its own doing. Sets nothing, unless --guard
    (docs/watch.md)."""
    from ..watch.daemon import WatchConfig, Watcher
    from ..watch.view import event_line
    if record is not None and replay is not None:
        fail("--record and --replay: one or the other")

    def emit(e: dict) -> None:
        print(json.dumps(e) if as_json else event_line(e), flush=True)

    if replay is not None:
        return _watch_replay(replay, emit)
    targets = _watch_checks(target, metrics, disk, cri, pod_names)
    acts, floor = _protect_checks(protect, guard, resource, dry_run, memory_floor, victims)
    disk_guard = _guard_checks(guard, acts, capacity, strict)
    given = guard_capacities(capacity) if capacity else {}  # the guard's config (pydantic, numpy) only if asked
    if ebpf or guard or protect:  # the PSI-only watch reads world-readable files: any user may (a DaemonSet's nobody)
        need_root("contend watch" + (" --guard" if guard else " --protect" if protect else
                                     " (eBPF: --no-ebpf watches without root)"))
    capacities = guard_disks(given) if disk_guard else {}
    try:
        out = open(record, "x") if record is not None else None
    except OSError as e:
        fail(f"--record {record}: {e.strerror or e}" + (" (not overwritten)" if isinstance(e, FileExistsError)
                                                         else ""))
    term_as_interrupt()
    live = sys.stdout.isatty() and not as_json
    cfg = WatchConfig(targets, period=period, ebpf=ebpf, net_rtt=net_rtt, metrics=metrics, disks=list(disk) or None,
                      hook=hook, cri=tuple(cri) or WatchConfig.cri, pod_names=pod_names, pod_logs=pod_logs,
                      victims=tuple(victims))
    try:
        w = Watcher(cfg, events=None if live else emit, record=out)
    except OSError as e:  # the metrics port taken, say
        fail(f"cannot start: {e}")
    except KeyboardInterrupt:  # stopped while it started (bpftrace compiling): what it started is stopped
        return
    if guard:
        from ..watch.handoff import GuardHandoff
        # the guard's JSON log on stderr, but not under the live table; its targets the watch's own (same names)
        w.handoff = GuardHandoff(targets, lambda: w.targets, capacities, w.host, log=None if live else sys.stderr,
                                 clock0=w.collector.clock0).start()
    if protect:
        _start_protect(w, targets, capacities, acts, dry_run, live, confirm=confirm, release=release,
                       floor_cpus=cpu_floor, floor_bytes=floor, floor_bps=net_floor * 1e6)
    try:
        w.start()  # its first scan and reading while bpftrace compiles
    except KeyboardInterrupt:
        w.close()
        return
    for prob in w.problems:
        print(f"contend: {plain(prob, limit=2000)}", file=sys.stderr)
    # what it started with (modules, bpftrace's pipe, the endpoint) lives as long as it does: kept out of the
    # collector's full passes, which with 110 pods otherwise took a tenth of the watch's CPU (the cycles a
    # period makes are young and still collected)
    gc.freeze()
    give_back(os.getpid(), START_LIBS)
    try:
        stopped = _run_live(w, live, duration, strict)
    finally:
        if out is not None:
            out.close()
    if stopped:
        raise typer.Exit(1)


def _run_live(w, live: bool, duration: float | None, strict: bool) -> bool:
    """The watcher run until its duration, Ctrl-C or SIGTERM (a live table on a terminal); the guard's problems
    said once on stderr (the live view shows them too). Returns whether --strict stopped it on one."""
    from ..watch.view import table
    stop = threading.Event()
    told: list[str] = []
    lv = None

    def after(x) -> None:
        said = [*(x.handoff.problems if x.handoff is not None else []),
                *(x.protector.problems if x.protector is not None else [])]
        for line in said[len(told):]:
            told.append(line)
            if lv is None:
                print(f"contend: {plain(line, limit=2000)}", file=sys.stderr, flush=True)
        if strict and said:
            stop.set()
        if lv is not None:
            lv.update(table(x.last, x.detector.verdicts(), [*x.problems, *said], held(x)), refresh=True)
    try:
        if live:
            from rich.live import Live
            with Live(table(None, []), console=console, auto_refresh=False) as lv:
                w.run(stop, duration=duration, after_step=after)
        else:
            w.run(stop, duration=duration, after_step=after)
    except KeyboardInterrupt:
        pass
    finally:
        w.close()
    return strict and bool(told)


def _start_protect(w, targets: list[str], capacities: dict[str, float], acts: tuple[str, ...], dry_run: bool,
                   live: bool, confirm: float, release: float, floor_cpus: float, floor_bytes: int,
                   floor_bps: float) -> None:
    """contend protect beside the watcher (its log on stderr, not under the live table), the guard its disk
    actuator (not under --dry-run: the guard caps as soon as it is engaged)."""
    from ..protect.daemon import build
    from ..protect.model import ProtectModel
    from ..watch.handoff import GuardHandoff
    log = None if live else sys.stderr
    handoff = GuardHandoff(targets, lambda: w.targets, capacities, w.host, log=log,
                           clock0=w.collector.clock0).start() if "disk" in acts and not dry_run else None
    w.protector = build(w.host, lambda: w.targets, acts, ProtectModel(confirm_s=confirm, release_s=release),
                        handoff, dry_run=dry_run, floor_cpus=floor_cpus, floor_bytes=floor_bytes, floor_bps=floor_bps,
                        log=log,
                        registry=w.metrics.registry)


def held(w) -> dict[str, str] | None:
    """What the live view's `held` column shows: the guard's caps (--guard), protect's settings (--protect)."""
    if w.protector is not None:
        return w.protector.held()
    if w.handoff is not None:
        return {name: f"disk {cap / 1e6:.0f} MB/s" for name, cap in w.handoff.caps().items()}
    return None


def _guard_checks(guard: bool, acts: tuple[str, ...], capacity: list[str], strict: bool) -> bool:
    """The guard's options checked (exit 2, one line); whether a guard runs (--guard, or --protect on disk)."""
    disk_guard = guard or "disk" in acts
    if capacity and not disk_guard:
        fail("--capacity: only with --guard or --protect on disk")
    if strict and not guard:
        fail("--strict: only with --guard")
    return disk_guard


QOS_CLASSES = ("guaranteed", "burstable", "besteffort")  # a pod's QoS class, as --victims qos: names it


def _protect_checks(protect: bool, guard: bool, resource: list[str], dry_run: bool,
                    memory_floor: str, victims: list[str]) -> tuple[tuple[str, ...], int]:
    """--protect's options checked (exit 2, one line): the resources it acts on and its memory floor."""
    from ..guard.targets import check_selector
    from ..protect.daemon import RESOURCES
    from ..units import size_bytes
    if not protect:
        for flag, given in (("--resource", resource), ("--dry-run", dry_run), ("--victims", victims)):
            if given:
                fail(f"{flag}: only with --protect")
        return (), 0
    if guard:
        fail("--guard and --protect: one or the other (--protect acts on disk through the guard)")
    for r in resource:
        if r not in RESOURCES:
            fail(f"--resource {r!r}: one of {', '.join(RESOURCES)}")
    for v in victims:
        if v.startswith("qos:"):
            if v[len("qos:"):].lower() not in QOS_CLASSES:
                fail(f"--victims {v!r}: qos:Guaranteed, qos:Burstable or qos:BestEffort")
            continue
        try:
            check_selector(v)
        except ValueError as e:
            fail(f"--victims: {e}")
    try:
        floor = size_bytes(memory_floor)
    except ValueError as e:
        fail(f"--memory-floor {memory_floor!r}: {e}")
    return tuple(dict.fromkeys(resource)) or RESOURCES, floor


def _watch_replay(path: Path, emit) -> None:
    """The detector over a recording's frames, its events emitted."""
    from ..watch.detector import Detector
    from ..watch.signals import Frame
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        fail(f"{path}: {e.strerror or e}")
    d = Detector()
    for i, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        try:
            f = Frame.from_json(ln)
        except (ValueError, KeyError, TypeError) as e:
            fail(f"{path}:{i}: not a frame of contend watch --record ({e})")
        for event in d.step(f):
            emit(event)


def _watch_checks(target: list[str], metrics: str, disk: list[str], cri: list[str], pod_names: str) -> list[str]:
    """The watch's options checked (exit 2, one line); its selectors."""
    import re

    from ..watch.daemon import POD_NAMES, check_targets
    if pod_names not in POD_NAMES:
        fail(f"--pod-names {pod_names!r}: one of {', '.join(POD_NAMES)}")
    labelled = next((t for t in target if t.startswith("k8s:label=")), None)
    if labelled and pod_names in ("logs", "paths"):
        fail(f"-t {labelled}: pods' labels come only through the CRI's socket, not --pod-names {pod_names}")
    try:
        targets = check_targets(target or ["contend", "docker:*"])
    except ValueError as e:
        fail(str(e))
    if not re.fullmatch(r"off|[^:]*:[0-9]+", metrics):
        fail(f"--metrics {metrics!r}: HOST:PORT or off")
    for d in disk:
        if not re.fullmatch(r"[0-9]+:[0-9]+", d) or not Path(f"/sys/dev/block/{d}").exists():
            fail(f"--disk {d!r}: no such block device (MAJ:MIN)")
    for endpoint in cri:
        if not endpoint.startswith("unix:///"):
            fail(f"--cri {endpoint!r}: a unix socket, unix:///path")
    return targets
