"""The guard's collector: per-target bytes and IOs per disk from the cgroup counters (v1 blkio, v2
io.stat) and each disk's latency and written bytes from its own counters (/sys/dev/block/MAJ:MIN/stat), as rates
between calls; what they mean and cost is diskuse's."""
from __future__ import annotations

import math
import time

from ..cgroups import Cgroup, IoCounters
from ..diskuse import Usage, device_counters, latency_ms, rates


class Collector:
    """Differences of cumulative counters between calls of `collect`, turned into rates (pure `rates`)."""

    def __init__(self, devices: list[str]):
        self.devices = devices
        self._io: dict[str, tuple[float, dict[str, IoCounters]]] = {}
        self._dirty: dict[str, tuple[int, int]] = {}  # per target, its dirty page cache at the last two calls
        self._dev: dict[str, tuple[float, tuple[int, int, int]]] = {}
        self.written: dict[str, float] = {}  # per disk, bytes/s written in the period latency() ended
        self.seconds: dict[str, float] = {}  # per disk, that period's length

    def forget(self, name: str) -> None:
        self._io.pop(name, None)
        self._dirty.pop(name, None)

    def dirty_before(self, name: str) -> int:
        """A target's dirty page cache at the start of the last period (its previous call of usage)."""
        return self._dirty.get(name, (0, 0))[0]

    def usage(self, name: str, cgroup: Cgroup) -> dict[str, Usage] | None:
        """Per disk, since the last call for this target (None on the first call: nothing to compare)."""
        now, stats = time.monotonic(), cgroup.stats()
        cur = stats.io
        prev = self._io.get(name)
        self._io[name] = (now, cur)
        self._dirty[name] = (self._dirty.get(name, (0, 0))[1], stats.memory_dirty)
        if prev is None:
            return None
        return {d: rates(prev[1].get(d, IoCounters()), cur.get(d, IoCounters()), now - prev[0], stats.memory_dirty,
                         stats.memory_writeback) for d in self.devices}

    def latency(self) -> dict[str, float]:
        out = {}
        now = time.monotonic()
        for d in self.devices:
            cur = device_counters(d)
            prev = self._dev.get(d)
            self._dev[d] = (now, cur)
            out[d] = latency_ms(prev[1], cur) if prev else math.nan
            self.seconds[d] = now - prev[0] if prev else math.nan
            self.written[d] = max(0, cur[2] - prev[1][2]) / max(now - prev[0], 1e-6) if prev else math.nan
        return out
