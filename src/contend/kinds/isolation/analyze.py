"""An isolation study's metrics: reads its store, computes every metric (metrics/ and rows.py, pure) and stores
them back."""
from __future__ import annotations

import math
from pathlib import Path

from ...metrics import curves
from ...metrics.curves import host_outside
from ...report.page import publish, read_yaml
from ...spec import Metrics
from ...store import Store
from .rows import trial_rows


def settings(directory: Path) -> Metrics:
    try:
        return Metrics.model_validate(read_yaml(directory / "spec.yaml").get("metrics") or {})
    except ValueError:
        return Metrics()


def trial_curves(store: Store, trial: dict, cfg: Metrics):
    return curves(trial["resource"], store.samples(trial["trial_id"]), store.steps(trial["trial_id"]),
                  trial["capacity"], cfg.trim, cfg.trim_end)


def analyze_trial(store: Store, trial: dict, cfg: Metrics) -> None:
    samples, steps = store.samples(trial["trial_id"]), store.steps(trial["trial_id"])
    found = curves(trial["resource"], samples, steps, trial["capacity"], cfg.trim, cfg.trim_end)
    outside = host_outside(samples, steps, trial["capacity"].get("cpus", 0), cfg.trim, cfg.trim_end)
    store.set_trial_metrics(trial["trial_id"], trial_rows(trial["resource"], found, trial["scenario_params"]["l_d"],
                                                          cfg.threshold, cfg.alpha, outside))


def analyze(directory: Path, store: Store) -> list[dict]:
    """Per-trial metrics (from the stored samples), the aggregate with CIs, and metrics.csv."""
    cfg = settings(directory)
    for t in store.trials("ok"):
        analyze_trial(store, t, cfg)
    return publish(directory, store, not_measured(store))


def not_measured(store: Store) -> list[dict]:
    """Cells whose every trial failed: one row saying so (value empty, n = 0)."""
    ok = {(t["runtime"], t["scenario"], t["resource"]) for t in store.trials("ok")}
    out, seen = [], set()
    for t in store.trials():
        if t["status"] == "ok":
            continue
        key = (t["runtime"], t["scenario"], t["resource"])
        if key in ok or key in seen:
            continue
        seen.add(key)
        out.append({"runtime": key[0], "scenario": key[1], "resource": key[2], "view": "host", "metric": "I_plr",
                    "value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0})
    return out
