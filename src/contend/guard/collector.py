"""The guard's collector: per-target bytes and IOs per disk from the cgroup counters (v1 blkio, v2
io.stat), and each disk's latency from its own counters (/sys/dev/block/MAJ:MIN/stat)."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from ..cgroups import Cgroup, IoCounters


@dataclass(frozen=True)
class Usage:
    """What one target did on one disk in the last period, per second."""

    bytes_s: float  # reads + writes
    rbytes_s: float
    wbytes_s: float
    ios_s: float


def device_counters(device: str) -> tuple[int, int]:
    """(I/Os completed, ms spent on them) of a whole disk since boot; (0, 0) if it has no stat file."""
    try:
        f = Path(f"/sys/dev/block/{device}/stat").read_text().split()
    except OSError:
        return 0, 0
    return int(f[0]) + int(f[4]), int(f[3]) + int(f[7])  # read + write I/Os, read + write ticks


def latency_ms(prev: tuple[int, int], cur: tuple[int, int]) -> float:
    """Mean ms per I/O completed between two readings of device_counters (nan: no I/O)."""
    ios = cur[0] - prev[0]
    return (cur[1] - prev[1]) / ios if ios > 0 else math.nan


class Collector:
    """Differences of cumulative counters between calls of `collect`, turned into rates (pure `rates`)."""

    def __init__(self, devices: list[str]):
        self.devices = devices
        self._io: dict[str, tuple[float, dict[str, IoCounters]]] = {}
        self._dev: dict[str, tuple[float, tuple[int, int]]] = {}

    def forget(self, name: str) -> None:
        self._io.pop(name, None)

    def usage(self, name: str, cgroup: Cgroup) -> dict[str, Usage] | None:
        """Per disk, since the last call for this target (None on the first call: nothing to compare)."""
        now, cur = time.monotonic(), cgroup.stats().io
        prev = self._io.get(name)
        self._io[name] = (now, cur)
        if prev is None:
            return None
        return {d: rates(prev[1].get(d, IoCounters()), cur.get(d, IoCounters()), now - prev[0]) for d in self.devices}

    def latency(self) -> dict[str, float]:
        out = {}
        now = time.monotonic()
        for d in self.devices:
            cur = device_counters(d)
            prev = self._dev.get(d)
            self._dev[d] = (now, cur)
            out[d] = latency_ms(prev[1], cur) if prev else math.nan
        return out


def rates(prev: IoCounters, cur: IoCounters, dt: float) -> Usage:
    dt = max(dt, 1e-6)
    r = max(0, cur.rbytes - prev.rbytes) / dt  # a recreated cgroup starts again from 0
    w = max(0, cur.wbytes - prev.wbytes) / dt
    ios = max(0, cur.rios + cur.wios - prev.rios - prev.wios) / dt
    return Usage(r + w, r, w, ios)
