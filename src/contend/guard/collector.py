"""The guard's collector: per-target bytes and IOs per disk from the cgroup counters (v1 blkio, v2
io.stat), each disk's latency and written bytes from its own counters (/sys/dev/block/MAJ:MIN/stat), and
what the disk wrote that no guarded cgroup was charged for (`escaping`)."""
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
    dirty: int = 0  # bytes of its page cache dirty or under writeback now (its buffered writes not on disk yet)


# an escape is said when the disk wrote at least this much more per second than the guarded cgroups were
# charged for, while a target held at least ESCAPE_DIRTY of buffered writes not on the disk yet
ESCAPE_BYTES_S = 8 << 20
ESCAPE_DIRTY = 8 << 20


@dataclass(frozen=True)
class Escape:
    """One disk in one period: written bytes/s no guarded cgroup was charged for, and the targets whose
    buffered writes are the likely cause (empty: nothing escaping, or no target to blame)."""

    unattributed_bytes_s: float
    targets: tuple[str, ...]


def escaping(device_wbytes_s: float, usage: dict[str, Usage], dirty_before: dict[str, int]) -> Escape:
    """What escaped the guard on one disk in a period (pure). On cgroup v1 a container's buffered writes are
    written back by the kernel's flusher threads and charged to no container, so no throttle holds them: the
    disk then writes more than the guarded cgroups were charged for, while the writer holds dirty page cache.
    A target is named when the disk wrote ESCAPE_BYTES_S more than all targets were charged and the target held
    ESCAPE_DIRTY of dirty or writeback pages at the start or the end of the period (`dirty_before`: at the start).
    Other unguarded writers on the host (a journal, a build) raise the unattributed rate too; without a target
    holding dirty pages nobody is named. v2 charges writeback to the cgroup that dirtied the pages where the
    filesystem supports cgroup writeback; the same check applies there."""
    charged = sum(u.wbytes_s for u in usage.values())
    extra = max(0.0, device_wbytes_s - charged) if math.isfinite(device_wbytes_s) else math.nan
    if not extra >= ESCAPE_BYTES_S:
        return Escape(extra, ())
    return Escape(extra, tuple(sorted(name for name, u in usage.items()
                                      if max(u.dirty, dirty_before.get(name, 0)) >= ESCAPE_DIRTY)))


def device_counters(device: str) -> tuple[int, int, int]:
    """(I/Os completed, ms spent on them, bytes written) of a whole disk since boot; zeros if it has no stat
    file."""
    try:
        f = Path(f"/sys/dev/block/{device}/stat").read_text().split()
    except OSError:
        return 0, 0, 0
    # read + write I/Os, read + write ticks, sectors written (of 512 bytes, whatever the disk's own)
    return int(f[0]) + int(f[4]), int(f[3]) + int(f[7]), int(f[6]) * 512


def latency_ms(prev: tuple[int, ...], cur: tuple[int, ...]) -> float:
    """Mean ms per I/O completed between two readings of device_counters (nan: no I/O)."""
    ios = cur[0] - prev[0]
    return (cur[1] - prev[1]) / ios if ios > 0 else math.nan


class Collector:
    """Differences of cumulative counters between calls of `collect`, turned into rates (pure `rates`)."""

    def __init__(self, devices: list[str]):
        self.devices = devices
        self._io: dict[str, tuple[float, dict[str, IoCounters]]] = {}
        self._dirty: dict[str, tuple[int, int]] = {}  # per target, its dirty page cache at the last two calls
        self._dev: dict[str, tuple[float, tuple[int, int, int]]] = {}
        self.written: dict[str, float] = {}  # per disk, bytes/s written in the period latency() ended

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
        return {d: rates(prev[1].get(d, IoCounters()), cur.get(d, IoCounters()), now - prev[0], stats.memory_dirty)
                for d in self.devices}

    def latency(self) -> dict[str, float]:
        out = {}
        now = time.monotonic()
        for d in self.devices:
            cur = device_counters(d)
            prev = self._dev.get(d)
            self._dev[d] = (now, cur)
            out[d] = latency_ms(prev[1], cur) if prev else math.nan
            self.written[d] = max(0, cur[2] - prev[1][2]) / max(now - prev[0], 1e-6) if prev else math.nan
        return out


def rates(prev: IoCounters, cur: IoCounters, dt: float, dirty: int = 0) -> Usage:
    dt = max(dt, 1e-6)
    r = max(0, cur.rbytes - prev.rbytes) / dt  # a recreated cgroup starts again from 0
    w = max(0, cur.wbytes - prev.wbytes) / dt
    ios = max(0, cur.rios + cur.wios - prev.rios - prev.wios) / dt
    return Usage(r + w, r, w, ios, dirty)
