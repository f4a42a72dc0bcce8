"""How often a capped neighbour got past its cap, and whether the victim dipped then (docs/results/archive.md, issue
26).

Reads a guard study's results directory (`contend run presets/aridac-workloads.yaml --out DIR`) and prints per
run, during the burst (its first second left out): the host view's 100 ms buckets, those where the neighbour
did more than 1.2 × the cap in force, the victim's dips (below 0.8 × its median over the burst), the dips next
to (within a bucket of) an overshoot, and how much the neighbour's cap moved from one guard period to the next
(median %); then per cell (workload and policy, its repetitions together) the same counts summed. Nothing is run:
the store is only read.

    .venv/bin/python bench/guard_overshoot.py DIR [--policy contend]
"""
from __future__ import annotations

import argparse
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from contend.kinds import open_store
from contend.kinds.guard.report import io_series


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path)
    ap.add_argument("--policy", action="append", help="only these policies (repeatable; default: every capped one)")
    a = ap.parse_args()
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])  # runs, buckets, over, dips, dips near
    with open_store(a.directory, read_only=True) as st:
        for trial in st.trials():
            tid = trial["trial_id"]
            policy = trial["policy"]
            if trial["status"] != "ok" or policy == "none" or (a.policy and policy not in a.policy):
                continue
            s = st.samples(tid)
            names = {t.rsplit("-", 1)[-1]: t for t in set(s.tenant[s.source == "guard"]) if t}
            burst = next((w for w in st.steps(tid) if w.phase == "burst"), None)
            if burst is None or "neighbour" not in names:
                continue
            ct, cap = s.series(names["neighbour"], "guard", "cap_bytes_s")
            t, nb = io_series(s, "neighbour")
            tv, victim = io_series(s, "victim")
            victim = np.interp(t, tv, victim) if len(tv) else np.full(len(t), np.nan)  # the two may differ by a bucket
            m = (t > burst.t_start + 1) & (t < burst.t_end)
            if not m.any() or not len(ct):
                continue
            over = nb[m] > 1.2 * np.interp(t[m] - 0.1, ct, cap)  # the cap set a period before the bucket
            dip = victim[m] < 0.8 * np.median(victim[m])
            near = over | np.roll(over, 1) | np.roll(over, -1)
            during = (ct > burst.t_start) & (ct < burst.t_end)
            moves = np.abs(np.diff(cap[during])) / cap[during][:-1] if during.sum() > 1 else np.array([0.0])
            c = cells[re.sub(r"\.r\d+$", "", tid)]
            for k, n in enumerate((1, m.sum(), over.sum(), dip.sum(), (dip & near).sum())):
                c[k] += int(n)
            print(f"{tid}: {m.sum()} buckets, neighbour over 1.2 × its cap in {over.sum()}, victim dips {dip.sum()} "
                  f"({(dip & near).sum()} next to an overshoot); cap moved {np.median(moves) * 100:.2f} % "
                  f"a period (median), in {np.mean(moves > 0) * 100:.0f} % of periods")
    for cell, (runs, n, over_n, dips, near_n) in sorted(cells.items()):
        print(f"{cell}: {runs} runs, {n} buckets, neighbour over 1.2 × its cap in {over_n} ({over_n / max(n, 1):.1%}), "
              f"victim dips {dips} ({near_n} next to an overshoot)")


if __name__ == "__main__":
    main()
