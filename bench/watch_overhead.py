"""What does contend watch cost: its own CPU at 1 s periods with 20 containers watched, and what it takes from
the workloads it watches.

One runc container runs a CPU benchmark (stress-ng matrixprod on every CPU), a disk benchmark (fio 4k random
reads, direct I/O, iodepth 32) and a network one (iperf3 over its loopback) for `--seconds` per run, with no
watcher, with `contend watch` (eBPF on) and with `contend watch --no-net-rtt` watching it and 19 more cgroups
(each with a sleeping process), interleaved in rotating order `--rounds` times (side by side in one run, never
against a number from another day). Prints each setting's median, its ratio to no watcher per workload, and the
watcher's own CPU once started (its loop's thread after its first period, bpftrace's process after attaching) in % of
one CPU, what its start cost once, and its eBPF programs' run time in the kernel (kernel.bpf_stats_enabled, on for
the run), which is spent in the traced tasks' context and shows in no process's CPU time.

    sudo .venv/bin/python bench/watch_overhead.py [--seconds 10] [--rounds 5] [--containers 20] [--workload cpu]

`--workload` (cpu, disk or net; repeatable) runs only those: the watcher's own CPU is read during each, so one
is enough to compare two versions of the watch side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid

from benchkit import bogo_rate, bpf_run_ns, bpf_stats, fio_iops, runc_container
from contend.cgroups import PREFIX, detect
from contend.watch.daemon import WatchConfig, Watcher

SETTINGS = ("none", "watch", "watch --no-net-rtt")


def cpu_work(rt, c, seconds: float) -> float:
    return bogo_rate(rt, c, ["--cpu", str(os.cpu_count()), "--cpu-method", "matrixprod"], seconds)


def disk_work(rt, c, seconds: float) -> float:
    return fio_iops(rt, c, seconds, "--size=512M", "--ioengine=libaio", "--iodepth=32")


def net_work(rt, c, seconds: float) -> float:
    """iperf3 over the container's own loopback, in Gbit/s: the most ACKs per second a TCP flow here takes in,
    each one a run of the watch's RTT probe (tcp:tcp_probe), so the probe's worst case."""
    if rt.run(c, ["iperf3", "-s", "-1", "-D", "-p", "5299"]).returncode != 0:
        sys.exit("iperf3 -s failed")
    time.sleep(0.3)
    p = rt.run(c, ["iperf3", "-c", "127.0.0.1", "-p", "5299", "-t", f"{seconds:g}", "-J"], timeout=seconds + 60)
    if p.returncode != 0:
        sys.exit(f"iperf3 failed: {p.stderr}")
    return json.loads(p.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9


WORKLOADS = {"cpu (bogo ops/s)": cpu_work, "fio 4k randread (IOPS)": disk_work, "iperf3 loopback (Gbit/s)": net_work}
SHORT = dict(zip(("cpu", "disk", "net"), WORKLOADS))


class Sleepers:
    """n cgroups of contend's (and their unified mirrors), a sleeping process in each: containers to watch."""

    def __init__(self, n: int):
        self.host = detect()
        self.run = f"wbench-{uuid.uuid4().hex[:6]}"
        self.groups, self.procs = [], []
        for i in range(n):
            rel = f"{PREFIX}/{self.run}-{i}"
            gs = [self.host.cgroup(rel)] + ([self.host.tracking(rel)] if self.host.mode == "hybrid" else [])
            for g in gs:
                g.create()
            self.groups += gs
            self.procs.append(subprocess.Popen(["sleep", "3600"], preexec_fn=lambda gs=gs: [
                g.add_pid(os.getpid()) for g in gs]))

    def close(self) -> None:
        for p in self.procs:
            p.kill()
            p.wait()
        for g in self.groups:
            g.remove()


def one(rt, c, setting: str, work, seconds: float, selectors: list[str], cost: list[float],
        start: list[float], kernel: list[float]) -> float:
    if setting == "none":
        return work(rt, c, seconds)
    w = Watcher(WatchConfig(selectors, period=1.0, metrics="off", net_rtt=setting == "watch"))
    stop = threading.Event()
    first: list[float] = []  # the loop's thread's CPU when its first period ended: its start and that period
    bpf: list[tuple[float, int]] = []  # (when, its eBPF programs' run time so far) after the first period

    def after(w) -> None:
        if not first:
            first.append(time.thread_time())
            if w.collector.runq is not None and w.collector.runq._proc is not None:
                bpf.append((time.monotonic(), bpf_run_ns(w.collector.runq._proc.pid)))
    th = threading.Thread(target=w.run, args=(stop,), kwargs={"after_step": after})
    th.start()
    try:
        return work(rt, c, seconds)
    finally:
        if bpf and w.collector.runq is not None and w.collector.runq._proc is not None:
            ns = bpf_run_ns(w.collector.runq._proc.pid)
            kernel.append(100 * (ns - bpf[0][1]) / 1e9 / (time.monotonic() - bpf[0][0]))
        stop.set()
        th.join()
        # % of one CPU per 1 s period once started, from the end of the first period on (the start, once: the
        # first scan and reading, bpftrace compiling and attaching, printed beside)
        if w.frames >= 2 and first:
            cost.append(100 * (w.cpu_s - first[0] + w.collector.probe_cpu_s) / (w.frames - 1))
            start.append(1000 * (first[0] + (w.collector.runq.start_cpu_s if w.collector.runq else 0.0)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--containers", type=int, default=20)
    ap.add_argument("--workload", action="append", choices=list(SHORT),
                    help="only this workload (repeatable; default all three)")
    args = ap.parse_args()
    workloads = {SHORT[k]: WORKLOADS[SHORT[k]] for k in args.workload} if args.workload else WORKLOADS
    results = {(w, s): [] for w in workloads for s in SETTINGS}
    cost: list[float] = []
    start: list[float] = []
    kernel: list[float] = []
    sleepers = Sleepers(args.containers - 1)
    try:
        with runc_container() as (rt, c):
            selectors = [f"cgroup:{c.cgroup.relpath}", f"cgroup:{PREFIX}/{sleepers.run}-*"]
            for r in range(args.rounds):
                for w, work in workloads.items():
                    order = SETTINGS[r % 3:] + SETTINGS[:r % 3]  # rotating: no order bias
                    for s in order:
                        results[(w, s)].append(one(rt, c, s, work, args.seconds, selectors, cost, start, kernel))
                        print(f"round {r + 1} {w:24s} {s:5s} {results[(w, s)][-1]:10.1f}", flush=True)
    finally:
        sleepers.close()
    print(f"\nmedian of {args.rounds} interleaved rounds, {args.seconds:g} s each, one runc container loaded and "
          f"{args.containers} watched:")
    for w in workloads:
        none, *watched = (statistics.median(results[(w, s)]) for s in SETTINGS)
        print(f"  {w:24s} none {none:10.1f}" + "".join(
            f"   {s} {x:10.1f} (ratio {x / none:.3f}, {100 * (1 - x / none):+.1f} %)"
            for s, x in zip(SETTINGS[1:], watched)))
    print(f"  the watcher's own CPU (its loop and bpftrace), once started, median of {len(cost)} runs: "
          f"{statistics.median(cost):.2f} % of one CPU (max {max(cost):.2f} %); its start, once: "
          f"{statistics.median(start):.0f} ms of CPU (the first scan and reading, bpftrace compiling and attaching)")
    if kernel:
        print(f"  its eBPF programs in the kernel (run in the traced tasks' context, in no process's CPU time), "
              f"median of {len(kernel)} runs: {statistics.median(kernel):.2f} % of one CPU (max {max(kernel):.2f} %)")


if __name__ == "__main__":
    with bpf_stats():
        main()
