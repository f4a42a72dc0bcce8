"""What reading a cgroup's files costs, three ways, side by side: a Python file object (what contend's samplers
used before), the bare system calls (os.open, os.read, os.close: `read_text` now), and a file kept open and read
again from offset 0 (`KeptOpen`, what contend watch does every period). The files are those the watch reads
for a container: a new cgroup of contend's, a process in it, on this host's hierarchy.

    sudo .venv/bin/python bench/kernel_reads.py [--reads 2000] [--rounds 3]

Prints, per file, the median over the rounds of the µs per read; the three ways alternate in each round.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
import uuid

from contend.cgroups import PREFIX, detect
from contend.cgroups.base import KeptOpen, read_text

WANTED = ("cpu.stat", "cpuacct.usage", "memory.stat", "memory.usage_in_bytes", "memory.current",
          "blkio.throttle.io_service_bytes_recursive", "io.stat", "cpu.pressure", "io.pressure")


def file_object(path: str) -> str:
    with open(path, "rb", buffering=0) as f:
        return f.read().decode()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reads", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    host = detect()
    rel = f"{PREFIX}/kreads-{uuid.uuid4().hex[:6]}"
    groups = [host.cgroup(rel)] + ([host.tracking(rel)] if host.mode == "hybrid" else [])
    for g in groups:
        g.create()
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        for g in groups:
            g.add_pid(sleeper.pid)
        files = [str(d / n) for g in groups for d in g.dirs() for n in WANTED if (d / n).is_file()]
        kept = KeptOpen()
        ways = {"file object": file_object, "system calls": read_text,
                "kept open": lambda p: kept.read(p)}
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for f in files:
                for name, read in ways.items():
                    t = time.perf_counter()
                    for _ in range(args.reads):
                        read(f)
                    times.setdefault((f, name), []).append((time.perf_counter() - t) / args.reads * 1e6)
        kept.close()
    finally:
        sleeper.kill()
        sleeper.wait()
        for g in groups:
            g.remove()
    print(f"µs per read, median of {args.rounds} rounds of {args.reads} reads ({host.mode} host):")
    print(f"  {'file':72s}" + "".join(f"{w:>14s}" for w in ways))
    for f in files:
        print(f"  {os.path.relpath(f, '/sys/fs/cgroup'):72s}" +
              "".join(f"{statistics.median(times[(f, w)]):14.1f}" for w in ways))


if __name__ == "__main__":
    main()
