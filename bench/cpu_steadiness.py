"""How steady is one CPU's throughput on this host? The load agent busy on one CPU, its work per second.

The guest view of a CPU trial is the agent's matrix products per second. Where the host itself delivers a
varying amount of work per CPU-second (a VM whose hypervisor shares its cores, frequency scaling), the guest
view moves with it while the cgroup's CPU time does not. This prints the agent's work per `--interval`,
the coefficient of variation and the max/min ratio, so that noise can be told from isolation.

    .venv/bin/python bench/cpu_steadiness.py [--seconds 20] [--interval 0.5]
"""
from __future__ import annotations

import argparse
import subprocess
import time

import numpy as np

from contend.load.agent import Agent, build_agent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--interval", type=float, default=0.5)
    args = ap.parse_args()
    a = Agent.start([str(build_agent()), "-i", str(int(args.interval * 1000)), "cpu", "1"], subprocess.Popen)
    try:
        a.set(1.0)
        time.sleep(args.seconds)
    finally:
        a.stop()
    rates = np.array([r.work / args.interval for r in a.reports[1:]])  # the first interval holds the start
    print("matrix products/s per interval:", " ".join(f"{x:.0f}" for x in rates))
    print(f"{len(rates)} intervals of {args.interval:g} s: mean {rates.mean():.0f}/s, "
          f"CV {rates.std() / rates.mean():.1%}, "
          f"max/min {rates.max() / rates.min():.2f}")


if __name__ == "__main__":
    main()
