"""What do contend's host probes cost the workload they watch?

One runc container, without limits, runs a CPU benchmark (stress-ng matrixprod on every CPU) and a disk
benchmark (fio 4k random reads, direct I/O, iodepth 32, unthrottled) for `--seconds` per run, with no probes
and with all of them (cgroup sampler + every bpftrace probe: cpu, block, memory, net), interleaved A/B
`--rounds` times (the machine is shared and noisy: side by side in one run, never against a number from
another day). Prints each setting's median and the ratio all/none per workload.

    sudo .venv/bin/python bench/probe_overhead.py [--seconds 5] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
from functools import partial

from benchkit import bogo_rate, fio_iops, runc_container
from contend.probes import BpftraceProbes, CgroupSampler, Target

SETTINGS = ("none", "all")


def cpu_work(rt, c, seconds: float) -> float:
    return bogo_rate(rt, c, ["--cpu", str(os.cpu_count()), "--cpu-method", "matrixprod"], seconds)


def disk_work(rt, c, seconds: float) -> float:
    return fio_iops(rt, c, seconds, "--size=512M", "--ioengine=libaio", "--iodepth=32")


WORKLOADS = {"cpu (bogo ops/s)": cpu_work, "fio 4k randread (IOPS)": disk_work}


def one(rt, c, setting: str, work, seconds: float) -> float:
    target = [Target("t", c.cgroup, c.tracking, partial(rt.track, c))]
    probes = []
    if setting == "all":
        probes.append(CgroupSampler(target, 0.1).start())
        probes.append(BpftraceProbes(target, 0.1).start())
    try:
        return work(rt, c, seconds)
    finally:
        for pr in probes:
            pr.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    results = {(w, s): [] for w in WORKLOADS for s in SETTINGS}
    with runc_container() as (rt, c):
        for r in range(args.rounds):
            for w, work in WORKLOADS.items():
                order = SETTINGS if r % 2 == 0 else SETTINGS[::-1]  # A/B, then B/A: no order bias
                for s in order:
                    results[(w, s)].append(one(rt, c, s, work, args.seconds))
                    print(f"round {r + 1} {w:24s} {s:5s} {results[(w, s)][-1]:10.1f}", flush=True)
    print(f"\nmedian of {args.rounds} interleaved rounds, {args.seconds:g} s each, in one runc container:")
    for w in WORKLOADS:
        none, every = (statistics.median(results[(w, s)]) for s in SETTINGS)
        print(f"  {w:24s} none {none:10.1f}   all probes {every:10.1f}   ratio {every / none:.3f}"
              f"   overhead {100 * (1 - every / none):+.1f} %")


if __name__ == "__main__":
    main()
