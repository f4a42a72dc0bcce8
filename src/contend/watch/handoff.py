"""contend watch --guard: the watcher hands a disk culprit to the guard.

The guard runs beside the watcher (its own thread and period) over the same containers and the guard's disks,
with its policy (contend's: every container's lifeline protected, the rest of the disk handed to whoever wants
it). Its caps are in force only while it is engaged: from the first blame of a container (not `writeback`, not
`host`) on disk, for as long as such a blame holds, and after that while a capped container still presses
against its cap (it would hurt again without it), until `release_s` have passed with neither. Disengaged, it
sets nothing and only learns everybody's lifeline, so the first caps it sets are already fair ones. That rule is
contend protect's latch (protect/model.py), and under `contend protect` the hand-off is its disk actuator: engaged
by protect's disk holds, not by this latch.

The guard's targets are the watch's own (`source`: the containers as the watch resolved them, names and cgroups),
so what the watch blames is what the guard caps, by the same name, whatever the selectors (k8s:NS/*, label=...):
before, the guard resolved the selectors again without a CRI and a `k8s:prod/*` watch capped nobody, silently.
A blamed culprit the guard cannot cap (not among its targets, or its cap refused) is said once (`problems`).
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from typing import TextIO

from ..cgroups import CgroupHost
from ..diskuse import PRESSES
from ..guard.targets import Resolved
from ..protect.model import Latch
from .detector import Verdict
from .signals import HOST, WRITEBACK


class GuardHandoff:
    def __init__(self, targets: list[str], source: Callable[[], dict[str, Resolved]], disks: dict[str, float],
                 host: CgroupHost, release_s: float = 10.0, log: TextIO | None = None, clock0: float | None = None):
        from ..guard import Guard, GuardConfig  # here: the guard's policies (numpy, pydantic) only for --guard
        cfg = GuardConfig(targets=targets, policy="contend", metrics="off", rescan_s=1.0)
        self.guard = Guard(cfg, disks, host, log=log, clock0=clock0)
        self.guard.source = source
        self.guard.on_log = self._logged
        self.engaged = False
        self.guard.gate = lambda dev: self.engaged
        self.problems: list[str] = []  # each said once: a culprit the guard could not cap, and why
        self._said: set[str] = set()
        # contend protect's latch, on the first blame (protect's own waits for one that lasts)
        self.latch = Latch(confirm_s=0.0, release_s=release_s)
        self._blamed: dict[str, float] = {}  # a disk culprit blamed now -> when first
        self._known: set[str] = set()  # every name the guard has had as a target (one that ended is no problem)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-guard", daemon=True)

    def _run(self) -> None:
        self.guard.scan()
        self.guard.run(self._stop)

    def start(self) -> "GuardHandoff":
        self._thread.start()
        return self

    def pressed(self, name: str | None = None) -> bool:
        """Some container (or the one named) uses (almost) all of the cap it has now (the share contend's policy
        reads as wanting more)."""
        g = self.guard
        return any(cap is not None and g.usage.get(key) and g.usage[key][-1] >= PRESSES * cap
                   for key, cap in list(g.caps.items()) if name is None or key[0] == name)

    def _problem(self, key: str, line: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self.problems.append(line)
            self.guard.log("guard-cannot-cap", message=line)

    def _logged(self, event: str, fields: dict) -> None:
        """A cap refused on a cgroup that is still there (one that went, its container ended, is no problem)."""
        target = self.guard.targets.get(fields.get("target", ""))
        if event == "cap-failed" and target is not None and self.guard.host.cgroup(target.relpath).exists():
            self._problem(f"failed {fields.get('target')}", f"watch --guard: cannot cap {fields.get('target')} on "
                                                            f"{fields.get('device')}: {fields.get('error')}")

    def update(self, verdicts: list[Verdict]) -> None:
        """After each of the watcher's periods: engage on a disk culprit, release after release_s calm; a culprit
        the guard has no target for is said once (it resolves the watch's containers at its next scan: a culprit
        still missing after the guard scanned since it was first blamed is one it cannot cap)."""
        now = time.monotonic()
        culprits = [v.culprit for v in verdicts if v.resource == "disk" and v.kind == "blame"
                    and v.culprit not in (WRITEBACK, HOST)]
        self.engaged = self.latch.step(now, bool(culprits), self.pressed())
        self._known.update(self.guard.targets)
        for c in culprits:
            first = self._blamed.setdefault(c, now)
            # still blamed a moment after its container ended (the verdict outlives its culprit): not one it missed
            if c not in self.guard.targets and c not in self._known and self.guard.scanned_at > first:
                self._problem(f"missing {c}", f"watch --guard: {c} is blamed for the disk but the guard has no "
                                              "target of that name: it cannot cap it")
        for c in [c for c in self._blamed if c not in culprits]:
            del self._blamed[c]

    def caps(self) -> dict[str, float]:
        """Each capped container's cap now (bytes/s, summed over the guard's disks)."""
        out: dict[str, float] = {}
        for (name, _dev), cap in list(self.guard.caps.items()):
            if cap is not None and math.isfinite(cap):
                out[name] = out.get(name, 0.0) + cap
        return out

    def close(self) -> None:
        """The guard stopped and every cap it set removed (what was there before restored)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15)
        self.guard.close()
