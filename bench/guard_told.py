"""contend's capacity estimate when told the disk right, wrong or nothing, on a simulated disk (issue 55).

Pure and deterministic (guard/simulate.py: the disk shares what it delivers in proportion to what each target
asks, caps held): a victim asking 0.2 C, a neighbour at 0.2 C that bursts to 2 C at period 20 and stays there.
The disk delivers C throughout (steady), or C then 0.6 C from period 200 (slows), or C but 0.6 C in the burst's first
period, the neighbour's first cap taking effect a period late (stumbles: this VM's disk at a burst's start, where
the first pre-emption reads the disk low, docs/results/archive.md 2026-11-29), or 0.5 C throughout (half: every number
told
from 1 C up is twice the truth or more), or C then 0.45 C from period 150 (fades: below the floor of half the most
it delivered, as a cloud volume out of burst credits). With --queue the policy also sees the device's latency rise
while the disk delivers less than it is asked, as on a real disk; without, saturation shows only in the usage. With
--jitter J the victim asks 0.2 C × a uniform draw in [1 - J, 1 + J] each period (seeded): a real writer's rate
is never flat, and its dips look like pre-emptions to a guard that sees only usage. Per row, over the periods
after the burst began: the victim's isolation (what it got over what it asked, per period) mean and p05, the neighbour's
share of what the victim left (work conservation), and the estimate at the end, × C. A real disk is the
protection study's to measure (presets/guard-caps.yaml); this shows what the policy's rules do, nothing else.

    .venv/bin/python bench/guard_told.py [--periods 600] [--jitter 0.15] [--queue]

The suite of every scene and policy is bench/policy_scenes.py; this is its told × disk grid for contend alone.
"""
from __future__ import annotations

import argparse
import math

import numpy as np

from contend.guard.policy import ContendPolicy
from contend.guard.simulate import simulate

C = 1000.0
DISKS = {"steady": lambda k: C, "slows": lambda k: C if k < 200 else 0.6 * C,
         "stumbles": lambda k: 0.6 * C if k == 20 else C, "half": lambda k: 0.5 * C,
         "fades": lambda k: C if k < 150 else 0.45 * C}
LAG = {"stumbles": 1}  # periods before a target's first cap takes effect


def row(told: float, disk: str, periods: int, jitter: float = 0.0, queue: bool = False) -> tuple:
    asks = 0.2 * C * np.random.default_rng(0).uniform(1 - jitter, 1 + jitter, periods)

    def demand(k: int) -> dict[str, float]:
        return {"victim": float(asks[k]), "neighbour": 0.2 * C if k < 20 else 2 * C}

    policy = ContendPolicy()
    trace = simulate(policy, demand, periods, told * C, DISKS[disk], lag=LAG.get(disk, 0), queue=queue)
    after = trace[20:]
    isol = np.array([g["victim"] / asks[k] for k, (g, _, _) in enumerate(after, start=20)])
    real = np.array([DISKS[disk](k) for k in range(20, periods)])
    spare = real - np.array([g["victim"] for g, _, _ in after])
    wc = float(np.mean([g["neighbour"] for g, _, _ in after]) / np.mean(spare))
    return isol.mean(), np.percentile(isol, 5), wc, trace[-1][2].capacity / C


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--periods", type=int, default=600)
    ap.add_argument("--jitter", type=float, default=0.0, help="the victim's rate varies by this share a period")
    ap.add_argument("--queue", action="store_true", help="the policy sees the device's latency rise while the disk "
                    "delivers less than it is asked (guard/simulate.py)")
    a = ap.parse_args()
    print(f"{'disk':8} {'told':>8} {'isol mean':>10} {'isol p05':>9} {'work cons.':>11} {'estimate/C':>11}")
    for disk in DISKS:
        for told in (0.5, 1.0, 1.5, 2.0, math.inf):
            m, p05, wc, est = row(told, disk, a.periods, a.jitter, a.queue)
            name = "nothing" if told == math.inf else f"{told:g} C"
            print(f"{disk:8} {name:>8} {m:10.3f} {p05:9.3f} {wc:11.3f} {est:11.3f}")


if __name__ == "__main__":
    main()
