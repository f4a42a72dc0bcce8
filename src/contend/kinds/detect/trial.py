"""One detect trial: three tenants in containers of one runtime, contend watch live beside them (in a thread,
its own clock the trial's), the victim's and bystander's loads from the start, the change (an antagonist, or
a control's) at a drawn time. It measures and records: the watcher's events and frames, when the change ran,
what the watcher cost; the judging is metrics.py's, from the store."""
from __future__ import annotations

import json
import subprocess
import threading
import time

from ...cgroups import CgroupHost, detect
from ...load.fio import layout, warm
from ...probes import Sample
from ...runtimes import RuntimeFailed, last_line, signals_deferred
from ...store import TrialRecord
from ...tenants import Tenants, TrialResult, reset_host, stop
from ...watch.daemon import WatchConfig, Watcher
from ...watch.signals import Frame
from .cases import CASES, Case
from .cell import DetectCell
from .spec import DetectStudy

# the signals kept as samples (source "watch"), for the report's timelines
KEPT = ("cpu", "rq_delay", "cpu_psi", "throttled", "mem", "mem_psi", "refault", "io_bytes", "io_wait_ms")


def trial_id(runtime: str, case: str, rep: int) -> str:
    return f"{runtime}.{case}.r{rep}"


class WatcherThread:
    """The watcher under test on a thread of its own; stopped (its probe gone) whatever happens."""

    def __init__(self, w: Watcher):
        self.w = w
        self.frames: list[Frame] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=w.run, args=(self._stop,), name="watch", daemon=True,
                                        kwargs={"after_step": lambda x: self.frames.append(x.last)})

    def __enter__(self) -> "WatcherThread":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            self._stop.set()
            self._thread.join(timeout=15)
            self.w.close()


def run_detect_trial(study: DetectStudy, runtime: str, case_name: str, rep: int, t_change: float, facts: dict,
                     host: CgroupHost | None = None) -> TrialResult:
    host = host or detect()
    case, tr = CASES[case_name], study.trial
    result = TrialResult(TrialRecord(
        trial_id=trial_id(runtime, case_name, rep), runtime=runtime, repetition=rep,
        cell=DetectCell(case_name, case.resource, {"trial": tr.model_dump(), "t_change_planned": t_change,
                                                    "ebpf": study.ebpf}),
        facts=facts))
    rec = result.record
    try:
        reset_host(case.resource)
        with Tenants(runtime, case.tenant_limits(), host, userns=study.userns, shared=case.shared) as t:
            for name, size in case.files.items():  # before the watcher: a layout is not the trial's I/O
                t.run(name, layout(f"/data/{name}.dat", size), timeout=300, what="fio layout")
                if case.warm:
                    t.run(name, warm(f"/data/{name}.dat", size), timeout=300, what="fio warm")
            rel = {t.c[n].cgroup.relpath: n for n in t.c}
            events: list[dict] = []
            w = Watcher(WatchConfig([f"cgroup:{r}" for r in rel], period=tr.period_s, ebpf=study.ebpf,
                                    metrics="off"), host, events=events.append)
            if w.problems:
                result.events.append((0.0, "", "watch-problem", "; ".join(w.problems)))
            t.clock0 = w.collector.clock0  # one clock: the watcher's frames and the trial's events
            with WatcherThread(w) as wt:
                ran = _loads(t, case, t_change, tr.attack_s, tr.tail_s, result)
            _record(result, rel, events, wt.frames, w, ran)
        rec.status = "ok"
    except RuntimeFailed as e:
        rec.reason = str(e)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        rec.reason = f"{type(e).__name__}: {e}"
    finally:
        rec.ended_at = time.time()
    return result


def _wait_until(t: Tenants, at: float) -> None:
    while t.now() < at:
        time.sleep(min(0.1, at - t.now()))


def _loads(t: Tenants, case: Case, t_change: float, attack_s: float, tail_s: float,
           result: TrialResult) -> dict[str, float]:
    """The case's loads on the trial's clock; when the change really started and ended."""
    total = t_change + attack_s + tail_s
    procs: dict[str, subprocess.Popen] = {}
    tools: dict[str, str] = {}
    try:
        for name, load in case.at_start.items():
            argv = load(total)
            procs[name], tools[name] = t.exec(name, argv, stdout=subprocess.DEVNULL), argv[0]
        _wait_until(t, t_change)
        start = t.now()
        for name, load in case.at_change.items():
            argv = load(attack_s)
            procs[f"{name}:change"], tools[f"{name}:change"] = t.exec(name, argv, stdout=subprocess.DEVNULL), argv[0]
        result.events.append((start, "noisy" if case.antagonist else "", "change-start",
                              f"{case.name}: {', '.join(case.at_change) or 'nothing'} started"))
        _wait_until(t, start + attack_s)
        for key in [k for k in procs if k.endswith(":change")]:
            try:
                procs[key].wait(timeout=max(5.0, attack_s))
            except subprocess.TimeoutExpired:
                pass
        end = t.now()
        result.events.append((end, "", "change-end", f"{case.name}: its loads ended"))
        _wait_until(t, end + tail_s)
        for key, p in procs.items():
            # an OOM kill is the own-memory case's point: its load's exit status is not a failure there
            if p.poll() is not None and p.returncode not in (0, None) and case.name != "own-memory":
                err = p.stderr.read() if p.stderr else ""
                raise RuntimeFailed(f"{key.split(':')[0]}: {tools[key]} exited {p.returncode} {last_line(err)}")
        return {"t_start": start, "t_end": end, "duration_s": t.now()}
    finally:
        stop(list(procs.values()))


def _record(result: TrialResult, rel: dict[str, str], events: list[dict], frames: list[Frame], w: Watcher,
            ran: dict[str, float]) -> None:
    """The watcher's events (names as the tenants'), its frames' main signals, when the change ran, and what
    the watcher cost (its loop's CPU and bpftrace's)."""
    name = lambda x: rel.get(x, x)  # noqa: E731
    for e in events:
        e = {**e, "victim": name(e["victim"]), "culprit": name(e["culprit"]),
             "suspects": [[name(s), x] for s, x in e["suspects"]]}
        result.events.append((e["t"], e["victim"], e["event"], json.dumps(e)))
    for f in frames:
        for c, sig in f.containers.items():
            result.samples += [Sample(f.t, name(c), "watch", k, v) for k, v in sig.items() if k in KEPT]
    result.record.cell.params.update(ran, watch_cpu_s=w.cpu_s, probe_cpu_s=w.collector.probe_cpu_s,
                                     frames=len(frames))
