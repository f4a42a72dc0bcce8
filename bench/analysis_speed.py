"""How fast are the metrics? One trial of 1,000,000 samples (two tenants, the cgroup, eBPF and load views,
noise on a curve that degrades halfway) from raw samples to every metric of every view.

Target (scenario engine issue): ≤ 2 s. Prints the time, the target and their ratio.

    .venv/bin/python bench/analysis_speed.py [--samples 1000000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from contend.kinds.isolation.rows import trial_metrics
from contend.metrics import Samples, StepWindow, curves

TARGET_S = 2.0


def synthetic(n: int, steps: int = 10, step_s: float = 10.0) -> tuple[Samples, list[StepWindow]]:
    rng = np.random.default_rng(1)
    windows = [StepWindow(0, "baseline", 0.0, step_s, {"abiding": 0.5, "disruptive": 0.0})]
    windows += [StepWindow(k, "ramp", k * step_s, (k + 1) * step_s, {"abiding": 0.5, "disruptive": 0.5 * k / steps})
                for k in range(1, steps + 1)]
    per = n // 4  # abiding and disruptive × cgroup and ebpf
    t = np.sort(rng.uniform(0, (steps + 1) * step_s, per))
    w_d = np.minimum(0.5, 0.5 * np.floor(t / step_s) / steps)
    w_a = np.where(w_d > 0.25, 0.5 - (w_d - 0.25), 0.5)  # degrades halfway
    cols = {k: [] for k in ("t", "tenant", "source", "quantity", "value")}
    for source in ("cgroup", "ebpf"):
        for tenant, v in (("abiding", w_a), ("disruptive", w_d)):
            cols["t"].append(t)
            cols["tenant"].append(np.full(per, tenant, dtype=object))
            cols["source"].append(np.full(per, source, dtype=object))
            cols["quantity"].append(np.full(per, "cpu", dtype=object))
            cols["value"].append(2 * v + rng.normal(0, 0.01, per))  # in CPUs of a 2-CPU host
    return Samples(*(np.concatenate(cols[k]) for k in ("t", "tenant", "source", "quantity", "value"))), windows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    samples, steps = synthetic(args.samples)
    times = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        out = [trial_metrics(c, 0.5) for c in curves("cpu", samples, steps, {"cpus": 2})]
        times.append(time.perf_counter() - t0)
    m = out[0]
    print(f"{len(samples.t):,} samples, {len(out)} views: I_plr {m['I_plr']:.3f}, I_intFree {m['I_intFree']:.3f}")
    best = statistics.median(times)
    print(f"metrics in {best:.3f} s (median of {args.rounds}); target {TARGET_S:g} s; ratio {best / TARGET_S:.3f}")


if __name__ == "__main__":
    main()
