"""contend watch --guard: the watcher hands a disk culprit to the guard.

The guard runs beside the watcher (its own thread and period) over the same containers and the guard's disks,
with its policy (contend's: every container's lifeline protected, the rest of the disk handed to whoever wants
it). Its caps are in force only while it is engaged: from the first blame of a container (not `writeback`, not
`host`) on disk, for as long as such a blame holds, and after that while a capped container still presses
against its cap (it would hurt again without it), until `release_s` have passed with neither. Disengaged, it
sets nothing and only learns everybody's lifeline, so the first caps it sets are already fair ones.
"""
from __future__ import annotations

import math
import threading
import time
from typing import TextIO

from ..cgroups import CgroupHost
from .detector import Verdict
from .signals import HOST, WRITEBACK

PRESSED = 0.9  # a container using this share of its cap presses against it


class GuardHandoff:
    def __init__(self, targets: list[str], disks: dict[str, float], host: CgroupHost, release_s: float = 10.0,
                 log: TextIO | None = None, clock0: float | None = None):
        from ..guard import Guard, GuardConfig  # here: the guard's policies (numpy, pydantic) only for --guard
        cfg = GuardConfig(targets=targets, policy="contend", metrics="off", rescan_s=5.0)
        self.guard = Guard(cfg, disks, host, log=log, clock0=clock0)
        self.engaged = False
        self.guard.gate = lambda dev: self.engaged
        self.release_s = release_s
        self._until = -math.inf
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="watch-guard", daemon=True)

    def _run(self) -> None:
        self.guard.scan()
        self.guard.run(self._stop)

    def start(self) -> "GuardHandoff":
        self._thread.start()
        return self

    def pressed(self) -> bool:
        """Some container uses (almost) all of the cap it has now."""
        g = self.guard
        return any(cap is not None and g.usage.get(key) and g.usage[key][-1] >= PRESSED * cap
                   for key, cap in list(g.caps.items()))

    def update(self, verdicts: list[Verdict]) -> None:
        """After each of the watcher's periods: engage on a disk culprit, release after release_s calm."""
        now = time.monotonic()
        if any(v.resource == "disk" and v.kind == "blame" and v.culprit not in (WRITEBACK, HOST) for v in verdicts) \
                or (self.engaged and self.pressed()):
            self._until = now + self.release_s
        self.engaged = now < self._until

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
