"""What the host probes themselves spend on CPU, watching one idle runc container (docs/results/archive.md).

- Listing a container's processes, which the cgroup sampler's tracking sync does every bucket (to mirror
  them into the v2 tracking cgroup, for eBPF attribution): from every v1 hierarchy (`procs()`) and from one
  (`members()`, what the sync uses), interleaved, `--calls` in all: CPU ms per read and the ratio.
- The cgroup sampler thread (100 ms buckets) and bpftrace with every probe (its own process), each for
  `--seconds`: share of one CPU, from getrusage.

    sudo .venv/bin/python bench/probe_cpu.py [--calls 500] [--seconds 10]
"""
from __future__ import annotations

import argparse
import resource
import time

from benchkit import runc_container
from contend.probes import BpftraceProbes, CgroupSampler, Target


def read_cost(read, calls: int) -> float:
    """CPU ms per call of `read` (a way to list the container's processes)."""
    t0 = time.process_time()
    for _ in range(calls):
        read()
    return (time.process_time() - t0) / calls * 1e3


def cpu_share(make, seconds: float, who: int) -> float:
    """Share of one CPU that `who` (RUSAGE_SELF or RUSAGE_CHILDREN) spent while the probe `make` ran."""
    def used() -> float:
        r = resource.getrusage(who)
        return r.ru_utime + r.ru_stime
    before = used()
    probe = make().start()
    time.sleep(seconds)
    probe.stop()
    return (used() - before) / seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=500)
    ap.add_argument("--seconds", type=float, default=10)
    a = ap.parse_args()
    with runc_container() as (rt, c):
        every, one = [], []
        for _ in range(5):  # interleaved: the machine is shared and noisy
            every.append(read_cost(c.cgroup.procs, a.calls // 5))
            one.append(read_cost(c.cgroup.members, a.calls // 5))
        e, o = sorted(every)[2], sorted(one)[2]
        print(f"a container's processes: every hierarchy {e:.3f} ms, one hierarchy {o:.3f} ms per read "
              f"(median of 5 × {a.calls // 5}); ratio {o / e:.2f}")
        target = [Target("t", c.cgroup, c.tracking, lambda: rt.track(c))]
        s = cpu_share(lambda: CgroupSampler(target, 0.1), a.seconds, resource.RUSAGE_SELF)
        print(f"cgroup sampler thread, 100 ms buckets: {s:.2%} of a CPU over {a.seconds:g} s")
        b = cpu_share(lambda: BpftraceProbes(target, 0.1), a.seconds, resource.RUSAGE_CHILDREN)
        print(f"bpftrace, every probe, maps printed every 100 ms: {b:.2%} of a CPU over {a.seconds:g} s")


if __name__ == "__main__":
    main()
