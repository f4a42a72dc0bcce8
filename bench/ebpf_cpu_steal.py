"""The eBPF CPU view against the cgroup's counter, with the VM's steal time beside them.

A spinner in a runc container; rounds rotate the cpu probe's variants: `runtime` (the scheduler's
sum_exec_runtime read through BTF: what cpuacct charges), `cleared` (the same, its map cleared by bpftrace
after every print, as the probes did before: what the kernel adds between the read and the clear is lost)
and `wall` (the wall time a task was current: the variant for kernels without BTF). `--busy` keeps every
other CPU busy with a spinner on the host, outside the container (bpftrace's own reader then waits its
turn). Each measurement is a window of `--seconds`: the CPUs the eBPF view saw over
its whole buckets, the CPUs the kernel charged the cgroup, and the share of the window the hypervisor stole
from the CPUs (/proc/stat). The wall variant reads high by about the steal; the runtime variant does not.

    sudo .venv/bin/python bench/ebpf_cpu_steal.py [--rounds 4] [--seconds 3] [--busy]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import time
from dataclasses import replace
from functools import partial

import numpy as np

from benchkit import runc_container
from contend.probes import BpftraceProbes, Target
from contend.probes.ebpf import CATALOGUE

RUNTIME = next(p for p in CATALOGUE if p.name == "cpu" and p.btf)
VARIANTS = {"runtime": (RUNTIME,),
            "cleared": (replace(RUNTIME, cumulative=False),),  # bpftrace's clear() after each print, as before
            "wall": tuple(p for p in CATALOGUE if p.name == "cpu" and not p.btf)}


def steal_ticks() -> int:
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def window(rt, c, catalogue, seconds: float) -> tuple[float, float, float]:
    """(eBPF CPUs, charged CPUs, stolen share of the CPUs) over one window of a spinning container."""
    probes = BpftraceProbes([Target("t", c.cgroup, c.tracking, partial(rt.track, c))], period=0.1,
                            wanted=("cpu",), catalogue=catalogue).start()
    if probes.attached != ["cpu"]:
        raise SystemExit(f"the cpu probe did not attach: {probes.problems}")
    time.sleep(0.5)
    t0, u0, s0 = time.monotonic() - probes.clock0, c.cgroup.stats().cpu_usage_ns, steal_ticks()
    time.sleep(seconds)
    t1, u1, s1 = time.monotonic() - probes.clock0, c.cgroup.stats().cpu_usage_ns, steal_ticks()
    time.sleep(0.3)
    seen = [s.value for s in probes.stop() if s.quantity == "cpu" and t0 + 0.1 <= s.t <= t1]
    hz = os.sysconf("SC_CLK_TCK")
    return float(np.mean(seen)), (u1 - u0) / 1e9 / (t1 - t0), (s1 - s0) / hz / (t1 - t0) / os.cpu_count()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--busy", action="store_true", help="spin every other CPU on the host meanwhile")
    args = ap.parse_args()
    ratios: dict[str, list[float]] = {v: [] for v in VARIANTS}
    others = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range((os.cpu_count() or 1) - 1)] \
        if args.busy else []
    with runc_container() as (rt, c):
        spinner = rt.exec(c, ["sh", "-c", "while :; do :; done"])
        time.sleep(0.3)
        rt.track(c)
        try:
            for r in range(args.rounds):
                names = list(VARIANTS)
                order = names[r % len(names):] + names[:r % len(names)]
                for v in order:
                    seen, charged, stolen = window(rt, c, VARIANTS[v], args.seconds)
                    ratios[v].append(seen / charged)
                    print(f"round {r + 1} {v:7s} eBPF {seen:.4f} CPUs  charged {charged:.4f}  "
                          f"eBPF/charged {seen / charged:.4f}  steal {100 * stolen:.2f} % of the CPUs", flush=True)
        finally:
            spinner.kill()
            for p in others:
                p.kill()
    for v, x in ratios.items():
        print(f"{v:7s} eBPF/charged: median {np.median(x):.4f}, min {min(x):.4f}, max {max(x):.4f}")


if __name__ == "__main__":
    main()
