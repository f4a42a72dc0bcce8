"""A deep writer held to a rate by a throttle, against the same writer pacing itself at that rate: what a
latency-bound victim keeps beside each (docs/results/archive.md, guard, issue 55's IOPS-bound neighbour).

The victim (fio: 4 KiB random direct writes, one at a time, no rate: as fast as the disk answers) runs alone, then
beside the writer (4 KiB random direct writes, 32 deep) three ways, one after the other in each round: `paced`, fio's
own --rate, no cap; `throttled`, no --rate, its cgroup capped at the same rate in bytes/s and IOs/s (what the guard's
caps become, guard/limiter.cap_limit); and `paced-at-cap`, both, each between two runs of the victim alone. Prints per
arm the victim's IOs/s, mean latency and what it kept (÷ the mean of the runs alone before and after it: this disk's
4 KiB rate alone moves 20 % from one minute to the next), and the writer's rate. The question: does a
throttle, which lets a queued writer's slice of I/Os go at once (blk-throttle's slice: 100 ms on a disk that says it
is rotational, 20 ms else), cost a victim one write at a time more than the same rate paced by the writer itself?

    sudo .venv/bin/python bench/throttle_pacing.py [--rate 15] [--seconds 6] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import uuid
from pathlib import Path

import numpy as np

from contend.cgroups import IoLimit, Limits, detect
from contend.doctor.calibrate import device_of
from contend.paths import DATA
from throttle_victim import clean, fio, result

VICTIM = ["--rw=randwrite", "--bs=4k", "--iodepth=1"]
WRITER = ["--rw=randwrite", "--bs=4k", "--iodepth=32"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=float, default=15.0, help="the writer's rate, MB/s (paced and capped alike)")
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every arm, interleaved")
    a = ap.parse_args()
    if not a.rate > 0 or a.seconds < 1 or a.rounds < 1:
        ap.error("--rate must be > 0, --seconds and --rounds at least 1")
    DATA.mkdir(parents=True, exist_ok=True)
    dev = device_of(DATA)
    major, minor = dev.split(":")
    block = Path(f"/sys/dev/block/{major}:{minor}")
    queue = block / "queue" if (block / "queue").exists() else block.parent / "queue"
    rotational = (queue / "rotational").read_text().strip() if (queue / "rotational").exists() else "?"
    rate = int(a.rate * 1e6)
    cap = Limits(io=(IoLimit(dev, wbps=rate, wiops=max(1, rate // 4096)),))
    arms = {"paced": ([f"--rate={rate}"], False), "throttled": ([], True), "paced-at-cap": ([f"--rate={rate}"], True)}
    g = detect().cgroup(f"contend/bench-{uuid.uuid4().hex[:6]}")
    g.create()
    kept: dict[str, list[float]] = {k: [] for k in arms}
    print(f"disk {dev} (rotational {rotational}); writer at {a.rate:g} MB/s = {rate // 4096} IOs/s of 4 KiB")
    try:
        for rnd in range(1, a.rounds + 1):
            before = result(fio("victim", a.seconds, VICTIM))["iops"]
            print(f"round {rnd}: victim alone {before:.0f} IOs/s")
            for arm, (extra, capped) in arms.items():
                g.clear_io_limits(dev)
                if capped:
                    g.set_limits(cap)
                w = fio("writer", a.seconds + 1, WRITER + extra, preexec=lambda: g.add_pid(os.getpid()))
                v, n = result(fio("victim", a.seconds, VICTIM)), result(w)
                g.clear_io_limits(dev)
                after = result(fio("victim", a.seconds, VICTIM))["iops"]
                kept[arm].append(v["iops"] / ((before + after) / 2))
                print(f"  {arm:>12}: victim {v['iops']:.0f} IOs/s ({kept[arm][-1]:.0%} of alone before and after, "
                      f"{before:.0f} and {after:.0f}), mean latency {v['lat_ns']['mean'] / 1e3:.0f} µs; writer "
                      f"{n['bw_bytes'] / 1e6:.1f} MB/s")
                before = after
        print("victim kept, mean (lowest) over rounds: " + ", ".join(
            f"{k} {np.mean(v):.2f} ({min(v):.2f})" for k, v in kept.items()))
    finally:
        clean(g)


if __name__ == "__main__":
    main()
