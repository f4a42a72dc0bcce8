"""The disk as the host sees it: its own counters (/sys/dev/block/MAJ:MIN/stat) every bucket, whoever issued
the I/O: a tenant, or the kernel's flusher writing back a tenant's page cache outside its cgroup."""
from __future__ import annotations

import time
from pathlib import Path

from .base import Sample
from .sampler import PeriodicSampler

# Documentation/block/stat.rst: the fields of the stat file, in order
FIELDS = ("read_ios", "read_merges", "read_sectors", "read_ticks", "write_ios", "write_merges", "write_sectors",
          "write_ticks", "in_flight", "io_ticks", "time_in_queue")
TENANT = "device"


def read_stat(device: str) -> dict[str, int]:
    values = Path(f"/sys/dev/block/{device}/stat").read_text().split()
    return dict(zip(FIELDS, map(int, values)))


def device_rates(prev: dict[str, int], cur: dict[str, int], dt: float) -> dict[str, float]:
    """Per-second rates and levels between two snapshots (pure): utilisation (share of the time the device
    had I/O in flight), average queue depth (Little: time in queue per second), IOPS and bytes per second."""
    d = {k: cur[k] - prev[k] for k in FIELDS if k != "in_flight"}
    return {
        "util": min(1.0, d["io_ticks"] / 1e3 / dt),
        "queue_depth": d["time_in_queue"] / 1e3 / dt,
        "rios_s": d["read_ios"] / dt, "wios_s": d["write_ios"] / dt,
        "rbytes_s": d["read_sectors"] * 512 / dt, "wbytes_s": d["write_sectors"] * 512 / dt,
    }


class DeviceSampler(PeriodicSampler):
    """The disk's counters every bucket, as samples of tenant "device"."""

    source = "device"

    def __init__(self, device: str, period: float = 0.1, clock0: float | None = None):
        super().__init__(period, clock0)
        self.device = device

    def start(self) -> "DeviceSampler":
        read_stat(self.device)  # fails here, not in the thread, when the device has no counters
        return super().start()

    def _loop(self) -> None:
        then, old = time.monotonic(), read_stat(self.device)
        next_at = then + self.period
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            next_at += self.period
            try:
                now, cur = time.monotonic(), read_stat(self.device)
            except OSError as e:
                self.problems.append(f"{self.device}: {e}")
                return
            stamp = (now + then) / 2 - self.clock0
            for q, v in device_rates(old, cur, now - then).items():
                self.samples.append(Sample(stamp, TENANT, self.source, q, v))
            then, old = now, cur
