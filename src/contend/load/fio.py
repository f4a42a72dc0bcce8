"""fio as a rate-controlled disk load: random writes (4K unless the spec says), direct I/O, `rate_iops` = level × capacity.

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
    FILE_SIZE = "256M"  # each tenant's file on the experiment device

    def __init__(self, capacity_iops: float, size: str = FILE_SIZE, block: str = "4K", iodepth: int = 32):
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


# ---------------------------------------------------------------- the disk-fill victim (WISA 2025's container D)
VICTIM_FILES = {"read": "/data/victim-read.dat", "write": "/data/victim-write.dat"}
JOBS = {"read": "randread", "write": "randwrite"}


def victim_prepare(size: str) -> list[str]:
    """Lay out the victim's two files once (direct, so the page cache holds none of them)."""
    argv = ["fio", "--rw=write", "--bs=1M", "--direct=1", "--ioengine=psync", f"--size={size}"]
    for d, path in VICTIM_FILES.items():
        argv += [f"--name=prepare-{d}", f"--filename={path}"]
    return argv


def victim_argv(size: str, block: str, iodepth: int, seconds: float, log: str) -> list[str]:
    """Random reads and random writes side by side (two jobs, so both see the same moment of an attack),
    direct I/O, with completion-latency percentiles and an IOPS log every 500 ms (`log`_iops.<job>.log)."""
    engine = ["--ioengine=psync"] if iodepth == 1 else ["--ioengine=libaio", f"--iodepth={iodepth}"]
    argv = ["fio", "--output-format=json", "--direct=1", f"--bs={block}", f"--size={size}", "--time_based",
            f"--runtime={max(1, int(seconds * 1000))}ms", *engine, f"--write_iops_log={log}", "--log_avg_msec=500",
            "--percentile_list=50:99"]
    for d, rw in JOBS.items():
        argv += [f"--name={d}", f"--rw={rw}", f"--filename={VICTIM_FILES[d]}"]
    return argv


def victim_figures(report: dict) -> dict[str, float]:
    """IOPS and completion latency (mean, p50, p99 in µs) of each job of victim_argv's JSON report."""
    out: dict[str, float] = {}
    for job in report.get("jobs") or []:
        d = job.get("jobname")
        if d not in JOBS:
            continue
        io = job.get(d, {})
        clat = io.get("clat_ns", {})
        pct = clat.get("percentile") or {}
        out[f"{d}_iops"] = float(io.get("iops", 0.0))
        out[f"{d}_lat_us"] = float(clat.get("mean", 0.0)) / 1e3
        for key, name in (("50.000000", "p50"), ("99.000000", "p99")):
            if key in pct:
                out[f"{d}_{name}_us"] = float(pct[key]) / 1e3
    return out


def iops_log(text: str) -> list[tuple[float, float]]:
    """fio's IOPS log: (seconds since the job started, IOPS over the last interval) per line."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2:
            try:
                out.append((int(parts[0]) / 1e3, float(parts[1])))
            except ValueError:
                continue
    return out
