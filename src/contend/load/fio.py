"""fio as a rate-controlled disk load: random 4k writes, direct I/O, `rate_iops` = level × capacity.

Random writes, as Volpert et al. (their disk was rated by its random-write IOPS); direct I/O, so the
page cache neither absorbs the load nor hides it from a v1 blkio throttle. Each tenant writes its own
file on the experiment device (its /data), laid out once before the baseline.
"""
from __future__ import annotations

from pathlib import Path

from .stress import LoadGenerator, read_json

FILE = "/data/contend-fio.dat"


class FioLoad(LoadGenerator):
    resource = "disk"

    def __init__(self, capacity_iops: float, size: str = "256M", block: str = "4k", iodepth: int = 32):
        self.capacity_iops = capacity_iops
        self.size = size
        self.block = block
        self.iodepth = iodepth

    def common(self) -> list[str]:
        return ["fio", "--name=contend", f"--filename={FILE}", f"--size={self.size}", "--direct=1",
                "--ioengine=libaio", f"--bs={self.block}"]

    def prepare(self) -> list[str]:
        return [*self.common(), "--rw=write", "--create_only=1"]

    def argv(self, level: float, seconds: float, out: str, tenant: str = "") -> list[str]:
        return [*self.common(), "--rw=randwrite", f"--iodepth={self.iodepth}",
                f"--rate_iops={max(1, round(level * self.capacity_iops))}", "--time_based",
                f"--runtime={max(1, int(seconds * 1000))}ms", "--output-format=json", f"--output={out}"]

    def guest(self, report: Path) -> dict[str, float]:
        jobs = read_json(report).get("jobs") or []
        if not jobs:
            return {}
        w = jobs[0].get("write", {})
        clat = w.get("clat_ns", {})
        pct = clat.get("percentile") or {}
        out = {"iops": float(w.get("iops", 0.0)), "lat_mean_us": float(clat.get("mean", 0.0)) / 1e3}
        if "99.000000" in pct:
            out["lat_p99_us"] = float(pct["99.000000"]) / 1e3
        return out
