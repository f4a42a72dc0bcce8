"""fio for the disk-fill victim (WISA 2025's container D): its files, its command and its figures.

The isolation trials' disk load is the load agent's (load/generators.py); fio still lays out its file.
"""
from __future__ import annotations


def layout(path: str, size: str) -> list[str]:
    """fio writes every block of a file once, before anything is measured on it. A write job's own layout
    (and --create_only) only fallocates: ext4 keeps the blocks as unwritten extents, and each direct write
    into one converts it, a journalled metadata change. The first seconds then ran at half the disk's later
    random-write rate (45k rising to 90k IOPS here), and a random read of one returns zeros without the
    disk. `--overwrite=1` makes fio write the data; a later job finds the file full-sized and keeps it."""
    return ["fio", "--name=layout", f"--filename={path}", f"--size={size}", "--rw=write", "--bs=1M",
            "--direct=1", "--ioengine=libaio", "--iodepth=8", "--overwrite=1", "--create_only=1"]


def warm(path: str, size: str) -> list[str]:
    """Read a laid-out file once through the page cache: its pages then stay cached, charged to the reader (a
    job that reads it later needs --invalidate=0, or fio drops them at its start)."""
    return ["fio", "--name=warm", f"--filename={path}", f"--size={size}", "--rw=read", "--bs=1M",
            "--ioengine=psync", "--invalidate=0"]


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
