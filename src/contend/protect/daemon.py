"""contend protect beside the watcher: every period the detector's verdicts go through the control model
(model.py) and its level changes to the actuators (actuators.py), each action logged with its reason, shown
in the live view and exported (`contend_protect_action`, `contend_protect_level`). Every setting is put back
on close (Ctrl-C, SIGTERM); a run killed outright leaves a state file `contend clean` restores from.

Who may be held: a container the watch resolved (its cgroup one of its targets, never the root's), on a
resource the operator asked for. A culprit the watch blames that is not one is said once and never acted on."""
from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TextIO

from prometheus_client import CollectorRegistry, Gauge

from ..cgroups import CgroupHost
from ..guard.limiter import Limiter
from ..guard.targets import Resolved
from ..terminal import plain
from ..watch.detector import Detector
from ..watch.signals import Frame
from .actuators import CpuActuator, DiskActuator, MemoryActuator, NetworkActuator, Setting
from .model import Blame, Change, ProtectModel

RESOURCES = ("cpu", "memory", "disk", "network")


class Protector:
    def __init__(self, host: CgroupHost, source: Callable[[], dict[str, Resolved]], model: ProtectModel,
                 actuators: dict, dry_run: bool = False, log: TextIO | None = sys.stderr,
                 registry: CollectorRegistry | None = None, limiter: Limiter | None = None):
        self.host, self.source, self.model, self.dry_run = host, source, model, dry_run
        self.actuators = actuators  # resource -> actuator
        self.limiter = limiter
        self.log_stream = log
        self.actions: list[dict] = []  # every action taken (or, dry, that would have been)
        self.problems: list[str] = []  # each said once
        self._said: set[tuple[str, str]] = set()
        self.settings: dict[tuple[str, str], list[Setting]] = {}  # (resource, culprit) -> what its hold set now
        r = registry or CollectorRegistry()
        self.level = Gauge("contend_protect_level", "How hard contend protect holds a culprit back on a resource "
                           "(0: untouched, 1: the floor)", ["resource", "culprit"], registry=r)
        self.action = Gauge("contend_protect_action", "1 while a setting of contend protect is in force on a "
                            "culprit (its victims, the file and the value it set)",
                            ["resource", "culprit", "victim", "setting", "value"], registry=r)
        self._closed = False

    @staticmethod
    def blames(detector: Detector) -> list[Blame]:
        """The model's view of the verdicts standing now (whether each victim's symptom is back at its baseline)."""
        return [Blame(v.victim, v.resource, v.kind, tuple((c, x) for c, x in v.culprits),
                      suffering=(v.victim, v.resource) in detector.unsettled,
                      severity=detector.severity.get((v.victim, v.resource), math.inf)) for v in detector.verdicts()]

    def update(self, frame: Frame, detector: Detector, victims: set[str] | None = None) -> list[dict]:
        """One period: the model stepped on the verdicts, its changes made settings; the actions taken (victims:
        the victim class's members now, None for no class)."""
        targets = self.source()
        presses = {}
        for (res, culprit), h in self.model.holds.items():
            t, act = targets.get(culprit), self.actuators.get(res)
            if t is not None and act is not None and h.level > 0:
                presses[(res, culprit)] = act.presses(t, frame.containers.get(culprit, {}))
                self._keep(res, culprit, t, act)
        done = []
        for ch in self.model.step(frame.t, self.blames(detector), presses, detector.unsettled, detector.severity,
                                  victims):
            a = self._act(frame, ch, targets)
            if a is not None:
                done.append(a)
        return done

    def _keep(self, res: str, culprit: str, t: Resolved, act) -> None:
        """What a standing hold's actuator keeps true every period (memory: a v1 limit above what cannot be
        reclaimed), its settings shown as the hold's."""
        keep = getattr(act, "keep", None)
        try:
            done = keep(t) if keep is not None else []
        except OSError:
            return  # it ended: nothing to keep
        if done:
            now = {s.file: s for s in self.settings.get((res, culprit), [])}
            self.settings[(res, culprit)] = list({**now, **{s.file: s for s in done}}.values())

    def refusal(self, change: Change, targets: dict[str, Resolved]) -> str | None:
        t = targets.get(change.culprit)
        if change.resource not in self.actuators:
            return f"protect: {change.culprit} is blamed for {change.resource}, which protect does not act on here"
        if t is None:
            return f"protect: {change.culprit} is blamed for {change.resource} but is no container the watch " \
                   "resolved: never touched"
        if not t.relpath.strip("/"):
            return f"protect: {change.culprit} is the root cgroup: never touched"
        return None

    def _act(self, frame: Frame, ch: Change, targets: dict[str, Resolved]) -> dict | None:
        key = (ch.resource, ch.culprit)
        why = self.refusal(ch, targets)
        if why is not None:
            self._problem(key, why)
            self.model.holds.pop(key, None)  # never acted on: no hold kept either
            return None
        t = targets[ch.culprit]
        sig = frame.containers.get(ch.culprit, {})
        try:
            done = self.actuators[ch.resource].apply(t, ch.after, sig)  # dry: the limiter writes nothing
        except (OSError, ValueError) as e:
            if not self.host.cgroup(t.relpath).exists():
                return None  # it ended: nothing to hold
            self._problem(key, f"protect: cannot hold {ch.culprit} on {ch.resource}: {e}")
            return None
        self._gauges(ch, done)
        a = {"t": round(frame.t, 3), "event": "protect", "action": ch.why, "resource": ch.resource,
             "culprit": ch.culprit, "victims": list(ch.victims), "share": ch.share, "level": [ch.before, ch.after],
             "settings": [[s.file, s.before, s.after] for s in done], "dry_run": self.dry_run}
        self.actions.append(a)
        self._log(a)
        return a

    def _gauges(self, ch: Change, done: list[Setting]) -> None:
        key = (ch.resource, ch.culprit)
        for s in self.settings.pop(key, []):
            try:
                self.action.remove(ch.resource, ch.culprit, ",".join(ch.victims), s.file, s.after or "")
            except KeyError:
                pass
        if ch.after > 0:
            self.level.labels(ch.resource, ch.culprit).set(ch.after)
            kept = [s for s in done if s.after is not None]
            for s in kept:
                self.action.labels(ch.resource, ch.culprit, ",".join(ch.victims), s.file, s.after or "").set(1)
            self.settings[key] = kept
        else:
            try:
                self.level.remove(ch.resource, ch.culprit)
            except KeyError:
                pass

    def _problem(self, key: tuple[str, str], line: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self.problems.append(line)
            self._log({"event": "protect-refused", "resource": key[0], "culprit": key[1], "message": line})

    def _log(self, doc: dict) -> None:
        if self.log_stream is not None:
            line = {"ts": datetime.now(timezone.utc).isoformat(timespec="milliseconds"), **doc}
            print(json.dumps(line), file=self.log_stream, flush=True)

    def held(self) -> dict[str, str]:
        """Each held container's settings now, as the live view shows them."""
        out: dict[str, list[str]] = {}
        for (res, culprit), kept in self.settings.items():
            out.setdefault(culprit, []).append(f"{res} " + " ".join(f"{s.file}={s.after}" for s in kept)
                                               + (" (dry run)" if self.dry_run else ""))
        return {c: plain("; ".join(v), limit=120) for c, v in out.items()}

    def close(self) -> None:
        """Every setting put back (what was there before restored), the disk's guard stopped."""
        if self._closed:
            return
        self._closed = True
        disk = self.actuators.get("disk")
        if isinstance(disk, DiskActuator) and disk.handoff is not None:
            disk.handoff.close()
        if self.limiter is not None:
            self.limiter.release_all()


def build(host: CgroupHost, source: Callable[[], dict[str, Resolved]], resources: tuple[str, ...],
          model: ProtectModel, handoff=None, dry_run: bool = False, floor_cpus: float = 0.1,
          floor_bytes: int = 64 << 20, floor_bps: float = 1e6, log: TextIO | None = sys.stderr,
          registry: CollectorRegistry | None = None) -> Protector:
    """A Protector with an actuator for each resource asked (disk: the guard's hand-off given)."""
    limiter = Limiter(host, dry_run=dry_run)
    acts: dict = {}
    if "cpu" in resources:
        acts["cpu"] = CpuActuator(limiter, host, floor_cpus)
    if "memory" in resources:
        acts["memory"] = MemoryActuator(limiter, host, floor_bytes)
    if "disk" in resources:
        acts["disk"] = DiskActuator(handoff)
    if "network" in resources:
        acts["network"] = NetworkActuator(limiter, host, floor_bps)
    model.resources = tuple(resources)
    return Protector(host, source, model, acts, dry_run=dry_run, log=log, registry=registry, limiter=limiter)
