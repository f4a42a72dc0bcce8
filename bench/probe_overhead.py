"""What do contend's host probes cost the workload they watch?

One runc container, without limits, runs stress-ng on every CPU for
`--seconds` per run, under three probe settings, interleaved `--rounds` times (the machine is shared and noisy:
side by side in one run, never against a number from another day). Prints bogo ops/s per setting and the
ratio to "no probes".

    sudo .venv/bin/python bench/probe_overhead.py [--seconds 5] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from functools import partial

from contend.probes import BpftraceProbes, CgroupSampler, Target
from contend.runtimes import ContainerSpec, get

SETTINGS = ("none", "cgroup", "cgroup+ebpf")


def one(rt, c, setting: str, seconds: float) -> float:
    target = [Target("t", c.cgroup, c.tracking, partial(rt.track, c))]
    probes = []
    if setting != "none":
        probes.append(CgroupSampler(target, 0.1).start())
    if setting == "cgroup+ebpf":
        probes.append(BpftraceProbes(target, 0.1).start())
    try:
        p = rt.run(c, ["stress-ng", "--cpu", str(os.cpu_count()), "--cpu-method", "matrixprod",
                       "--timeout", f"{seconds}s", "--metrics-brief", "--yaml", "/tmp/b.yaml"], timeout=seconds + 60)
        if p.returncode != 0:
            sys.exit(f"stress-ng failed: {p.stderr}")
    finally:
        for pr in probes:
            pr.stop()
    y = rt.run(c, ["cat", "/tmp/b.yaml"]).stdout
    return float(next(ln.split(":")[1] for ln in y.splitlines() if "bogo-ops-per-second-real-time" in ln))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rt = get("runc")
    c = rt.create(ContainerSpec(f"bench-{uuid.uuid4().hex[:6]}"))
    results: dict[str, list[float]] = {s: [] for s in SETTINGS}
    try:
        for r in range(args.rounds):
            for s in SETTINGS:
                results[s].append(one(rt, c, s, args.seconds))
                print(f"round {r + 1} {s:12s} {results[s][-1]:9.1f} bogo ops/s", flush=True)
    finally:
        rt.delete(c)
    base = statistics.median(results["none"])
    print(f"\nmedian of {args.rounds} rounds, {args.seconds:g} s each, stress-ng on {os.cpu_count()} CPUs in runc:")
    for s in SETTINGS:
        m = statistics.median(results[s])
        print(f"  {s:12s} {m:9.1f} bogo ops/s   ratio to none {m / base:.3f}")


if __name__ == "__main__":
    main()
