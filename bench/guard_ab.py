"""One guard policy under two settings, side by side: A/B/A/B runs of an Aridac workload (issue 26).

Each round runs the workload once with the study's guard settings (A) and once with `--set KEY=VALUE` on top
(B), back to back, real containers as `contend run` does (kinds/guard/trial.py), each run into its own store.
Prints per run the victim's isol mean and p05 (host view), its p99 latency impact and the neighbour's MB/s
during the burst, then each figure's mean under A and under B (the figures the guard table reports).

    sudo .venv/bin/python bench/guard_ab.py --set hysteresis=0.05 [--workload workload1] [--rounds 3]
"""
from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np

from contend.doctor import ensure_capacity
from contend.kinds import load
from contend.kinds.guard.report import load_run, run_metrics
from contend.kinds.guard.trial import run_guard_trial
from contend.store import Store

FIGURES = (("host", "isol_mean"), ("host", "isol_p05"), ("guest", "lat_p99_imp"), ("host", "neighbour_mb_s"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="presets/aridac-workloads.yaml")
    ap.add_argument("--workload", default="workload1")
    ap.add_argument("--policy", default="contend")
    ap.add_argument("--set", dest="changes", action="append", required=True, metavar="KEY=VALUE",
                    help="a guard setting for B (repeatable), e.g. hysteresis=0.05")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--keep", type=Path, metavar="DIR",
                    help="keep each run's store and guard log in DIR/<mode><round> (default: thrown away)")
    a = ap.parse_args()
    study = load(a.spec)
    w = next(x for x in study.workloads if x.name == a.workload)
    changes = {k: float(v) for k, _, v in (c.partition("=") for c in a.changes)}
    settings = {"A": study, "B": study.model_copy(update={"guard": study.guard.model_copy(update=changes)})}
    capacity = ensure_capacity(["disk"])
    got: dict[str, list[dict]] = {"A": [], "B": []}
    with tempfile.TemporaryDirectory(prefix="contend-guard-ab-") as tmp:
        for rnd in range(1, a.rounds + 1):
            for mode, s in settings.items():
                d = (a.keep or Path(tmp)) / f"{mode}{rnd}"
                d.mkdir(parents=True, exist_ok=True)
                result = run_guard_trial(s, w, a.policy, rnd, capacity, {}, d)
                if result.record.status != "ok":
                    print(f"round {rnd} {mode}: failed: {result.record.reason}")
                    continue
                with Store(d) as store:
                    store.add_trial(result.record, result.steps, result.samples, result.events)
                    run = load_run(store, store.trials()[0])
                m = {(view, k): v for view, k, v in run_metrics(run, math.nan)}
                row = {f: m.get(f, math.nan) for f in FIGURES}
                got[mode].append(row)
                print(f"round {rnd} {mode}: " + ", ".join(f"{k} {v:.2f}" for (_, k), v in row.items()), flush=True)
    mean = {mode: {f: float(np.nanmean([r[f] for r in rows])) for f in FIGURES} for mode, rows in got.items() if rows}
    for mode, m in mean.items():
        print(f"mean {mode}{' (' + ', '.join(a.changes) + ')' if mode == 'B' else ''}: "
              + ", ".join(f"{k} {v:.2f}" for (_, k), v in m.items()))


if __name__ == "__main__":
    main()
