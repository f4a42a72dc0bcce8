"""What does each runtime cost a load? One unlimited container per runtime, all up at once, run the same loads
for `--seconds` each, interleaved `--rounds` times in a rotating order (side by side in one run, never against a
number from another day). gVisor's platforms differ most where a load makes system calls: systrap traps them
with seccomp and a shared-memory stub, ptrace with a ptrace stop each.

Loads: stress-ng's `get` stressor (getpid, getuid, getrlimit, ...: nothing but system calls), fio 4k random
reads with direct I/O and psync at iodepth 1 (a system call per I/O), and stress-ng matrixprod on one CPU (no
system calls: the control). Prints each runtime's median and its ratio to the first runtime's (below 1: the
runtime costs the load that much).

    sudo .venv/bin/python bench/runtime_overhead.py [--runtimes runc,runsc,runsc@20260905,...] [--seconds 3]
"""
from __future__ import annotations

import argparse
import contextlib
import statistics

from benchkit import bogo_rate, fio_iops, interleaved, runc_container

LOADS = {
    "syscalls: stress-ng get (bogo ops/s)": lambda rt, c, s: bogo_rate(rt, c, ["--get", "1"], s),
    "fio 4k randread psync qd1 (IOPS)": lambda rt, c, s: fio_iops(rt, c, s, "--size=256M", "--ioengine=psync"),
    "cpu: matrixprod, 1 CPU (bogo ops/s)":
        lambda rt, c, s: bogo_rate(rt, c, ["--cpu", "1", "--cpu-method", "matrixprod"], s),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default="runc,youki@0.7.0,runsc,runsc@20260905,runsc@20260905-ptrace")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    names = args.runtimes.split(",")
    with contextlib.ExitStack() as stack:
        up = {n: stack.enter_context(runc_container(runtime=n)) for n in names}
        for rt, c in up.values():  # lay fio's file out before any clock
            LOADS["fio 4k randread psync qd1 (IOPS)"](rt, c, 1)
        results = interleaved(up, LOADS, args.rounds, args.seconds)
    print(f"\nmedian of {args.rounds} interleaved rounds, {args.seconds:g} s each; ratio to {names[0]}:")
    for w in LOADS:
        med = {n: statistics.median(results[(w, n)]) for n in names}
        print(f"  {w}")
        for n in names:
            print(f"    {n:24s} {med[n]:12.1f}  ({med[n] / med[names[0]]:.3f})")


if __name__ == "__main__":
    main()
