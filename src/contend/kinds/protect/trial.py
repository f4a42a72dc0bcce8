"""One protect trial: a detect trial (kinds/detect/trial.py: the case's tenants, loads and clock, contend watch
beside them) under one mode: `none` (the watch alone), `protect` (contend protect acting on its verdicts, the
guard its disk actuator) or `fixed` (the fixed policy's settings on every tenant but the victim from the start).
It records what protect did (each action an event, names as the tenants') and what it left set after it closed."""
from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from ...cgroups import IoLimit, Limits
from ...network import tbf
from ...tenants import Tenants, TrialResult
from ...watch.daemon import Watcher
from ..detect.cases import CASES
from ..detect.metrics import VICTIM
from ..detect.trial import run_detect_trial
from ..detect.trial import trial_id as detect_id
from .cell import ProtectCell
from .spec import ProtectSpec

ACTION = "protect-action"
NET = Path("/sys/class/net")


def trial_id(runtime: str, case: str, mode: str, rep: int) -> str:
    return detect_id(runtime, f"{case}.{mode}", rep)


def run_protect_trial(spec: ProtectSpec, runtime: str, case: str, mode: str, rep: int, t_change: float,
                      facts: dict) -> TrialResult:
    cell = ProtectCell(case, CASES[case].resource, {"mode": mode}, mode)
    events: list[tuple] = []  # protect's actions, as the trial's events

    def arm(w: Watcher, t: Tenants, rel: dict[str, str]) -> Callable[[], dict]:
        if mode == "protect":
            return _protect(spec, w, rel, events)
        if mode == "fixed":
            return _fixed(spec, t, rel)
        return lambda: {}
    r = run_detect_trial(spec, runtime, case, rep, t_change, facts, cell=cell,
                         ident=trial_id(runtime, case, mode, rep), arm=arm)
    r.events += events
    return r


def _protect(spec: ProtectSpec, w: Watcher, rel: dict[str, str], events: list[tuple]) -> Callable[[], dict]:
    from ...guard import default_disks
    from ...protect.daemon import build
    from ...protect.model import ProtectModel
    from ...watch.handoff import GuardHandoff
    o = spec.protect
    handoff = None
    if "disk" in o.resources:
        disks = default_disks("contend", say=lambda s: None)
        handoff = GuardHandoff(list(w.cfg.targets), lambda: w.targets, disks, w.host, log=None,
                               clock0=w.collector.clock0).start()
    p = w.protector = build(w.host, lambda: w.targets, tuple(o.resources),
                            ProtectModel(confirm_s=o.confirm_s, release_s=o.release_s), handoff,
                            floor_cpus=o.cpu_floor, floor_bps=o.net_floor_bps, log=None)

    def name(x: str) -> str:
        return rel.get(x, x)

    def done() -> dict:
        p.close()  # (the watcher closed it already; again is nothing)
        for a in p.actions:
            a = {**a, "culprit": name(a["culprit"]), "victims": [name(v) for v in a["victims"]]}
            events.append((a["t"], a["culprit"], ACTION, json.dumps(a)))
        left = sum(len(h) for h in p.limiter.held.values()) if p.limiter is not None else 0
        left += int(p.limiter.state_file.exists()) if p.limiter is not None else 0
        left += len(list(NET.glob("contendq*")))  # an IFB of a network hold (a study runs alone: none is another's)
        return {"actions": len(p.actions), "settings_left": left, "refused": list(p.problems)}
    return done


def _fixed(spec: ProtectSpec, t: Tenants, rel: dict[str, str]) -> Callable[[], dict]:
    """The fixed policy on every tenant but the victim, from before the watch starts to the trial's end (the
    settings go with the containers)."""
    from ...doctor.calibrate import device_of
    from ...paths import DATA
    dev, f = device_of(DATA), spec.fixed
    rate = int(f.disk_bps)
    held = [n for n in rel.values() if n != VICTIM]
    for n in held:
        t.c[n].cgroup.set_limits(Limits(cpu=f.cpus, memory=f.memory_bytes, io=(IoLimit(dev, rbps=rate, wbps=rate),)))
        if t.link is not None and n in t.link.ports:  # its sending, in its namespace on contend's link (gone with it)
            tbf(t.link.ports[n].netns, "eth0", f.net_bps)
    fixed = {"cpus": f.cpus, "memory_bytes": f.memory_bytes, "disk_bps": rate, "net_bps": f.net_bps, "device": dev,
             "tenants": held}
    return lambda: {"fixed": fixed, "settings_left": 0}
