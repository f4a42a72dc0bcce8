"""The burst's onset apart from the rest: what a policy's isol p05 is made of (docs/results/archive.md, issue 22).

Reads guard studies' results directories (`contend run SPEC --out DIR`) and prints per workload and policy (its
swept settings included), over its runs: how far the neighbour got past the cap in force in the burst's first
guard periods (the most in one period, MB, and as a share of one 100 ms slice at that cap: blk-throttle lets a
group that ran below its limit dispatch about one slice's budget at once), the victim's lowest isol in the
onset (the burst's first `--onset` seconds, host view), and after it: the victim's isol p05 and the share of
its 100 ms buckets below 0.9, beside the run's work conservation. Medians over the runs, with min-max. Nothing
is run: the stores are only read.

    .venv/bin/python bench/guard_onset.py DIR [DIR ...] [--onset 0.6]
"""
from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np

from contend.kinds import open_store
from contend.kinds.guard.report import load_run
from contend.metrics.isolation import isol_series


def onset_and_after(run, onset_s: float) -> dict[str, float]:
    t0, t1 = run.burst
    isol = isol_series(run.victim, run.victim_rate)
    first = (run.t >= t0) & (run.t < t0 + onset_s)
    after = (run.t >= t0 + onset_s) & (run.t < t1)
    ct, cap = run.samples.series("neighbour", "guard", "cap_bytes_s")
    ut, use = run.samples.series("neighbour", "guard", "usage_bytes_s")
    over = slices = np.nan
    if len(ct) and len(ut):
        w = (ut >= t0 - 0.1) & (ut < t0 + onset_s)
        in_force = np.interp(ut[w] - 0.1, ct, cap)  # the cap set a period before
        excess = (use[w] - in_force) * 0.1  # bytes past the cap in one 100 ms period
        over = max(0.0, float(excess.max())) / 1e6 if len(excess) else np.nan
        slices = over * 1e6 / (float(np.median(in_force)) * 0.1) if len(excess) else np.nan
    return {"over_mb": over, "slices": slices,
            "onset_min": float(isol[first].min()) if first.any() else np.nan,
            "p05": float(np.percentile(isol[after], 5)) if after.any() else np.nan,
            "below": float(np.mean(isol[after] < 0.9)) if after.any() else np.nan}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directories", type=Path, nargs="+")
    ap.add_argument("--onset", type=float, default=0.6, help="seconds of the burst counted as its onset")
    a = ap.parse_args()
    rows: dict[str, list[dict]] = defaultdict(list)
    for d in a.directories:
        with open_store(d, read_only=True) as st:
            wc = {r["trial_id"]: r["value"] for r in st.trial_metric_rows()
                  if r["view"] == "host" and r["metric"] == "work_conservation"}
            for trial in st.trials("ok"):
                if trial["policy"] == "none":
                    continue
                run = load_run(st, trial)
                if not np.isfinite(run.burst[0]):
                    continue
                rows[trial["scenario"]].append({**onset_and_after(run, a.onset), "wc": wc.get(trial["trial_id"])})

    def stat(xs: list) -> str:
        v = np.array([x for x in xs if x is not None and np.isfinite(x)], float)
        return f"{np.median(v):.2f} ({v.min():.2f}-{v.max():.2f})" if len(v) else "n/a"

    print("| workload/policy | runs | past its cap at onset, MB (× one 100 ms slice) | victim's lowest isol at onset "
          "| isol p05 after | buckets < 0.9 after | work cons. |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(rows):
        r = rows[name]
        col = {k: [x[k] for x in r] for k in r[0]}
        print(f"| {name} | {len(r)} | {stat(col['over_mb'])} ({stat(col['slices'])}) | {stat(col['onset_min'])} "
              f"| {stat(col['p05'])} | {stat(col['below'])} | {stat(col['wc'])} |")


if __name__ == "__main__":
    main()
