"""Does the ramp controller apply the load it means to? Achieved vs ideal disruptive load per step.

Runs a small study (runc, harmony: the disruptive tenant ramps up to its limit, never beyond, in `--steps`
steps of `--step-s` seconds) for each resource, or reads an existing results directory (`--from DIR`), and
prints per resource and view the normalised RMSE of achieved W_d against the ideal W_d over the ramp steps
(RMSE / the highest ideal W_d). Target (scenario engine issue): ≤ 3 %.

    sudo .venv/bin/python bench/ramp_fidelity.py [--steps 6] [--step-s 4] [--resources cpu,memory,disk,network]
    .venv/bin/python bench/ramp_fidelity.py --from results/volpert-icpe24-…
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console

from contend.kinds import open_store, parse
from contend.kinds.isolation.analyze import settings
from contend.metrics import curves

TARGET = 0.03


def nrmse(ideal: np.ndarray, achieved: np.ndarray) -> float:
    ramp = ideal > 0
    return float(np.sqrt(np.mean((achieved[ramp] - ideal[ramp]) ** 2)) / ideal.max())


def report(directory: Path) -> None:
    cfg = settings(directory)
    rows: dict[tuple, list[float]] = {}
    with open_store(directory) as store:
        for t in store.trials("ok"):
            if t["scenario_params"]["w_d"] > 1:
                continue  # an escape ramps past the limit on purpose: not a fidelity question
            for c in curves(t["resource"], store.samples(t["trial_id"]), store.steps(t["trial_id"]),
                            t["capacity"], cfg.trim, cfg.trim_end):
                rows.setdefault((t["runtime"], t["resource"], c.view), []).append(nrmse(c.w_d_ideal, c.w_d))
    print(f"{'runtime':8s} {'resource':8s} {'view':6s} {'NRMSE':>7s}  (target ≤ {TARGET:.0%}; n trials)")
    for (rt, res, view), v in sorted(rows.items()):
        m = float(np.mean(v))
        print(f"{rt:8s} {res:8s} {view:6s} {m:7.1%}  {'ok' if m <= TARGET else 'ABOVE'}  n={len(v)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="src", type=Path, help="an existing results directory")
    ap.add_argument("--runtime", default="runc")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--step-s", type=float, default=4)
    ap.add_argument("--resources", default="cpu,memory,disk,network")
    args = ap.parse_args()
    if args.src:
        report(args.src)
        return
    from contend.kinds.isolation.study import IsolationStudy as Study
    spec = parse(f"name: ramp-fidelity\nruntimes: [{args.runtime}]\nscenarios: [harmony]\n"
                 f"resources: [{args.resources}]\ntrial: {{baseline_s: 3, steps: {args.steps}, "
                 f"step_s: {args.step_s}}}\n", "bench")
    out = Path(tempfile.mkdtemp(prefix="contend-ramp-"))
    Study(spec, out, Console(stderr=True)).run()
    report(out)


if __name__ == "__main__":
    main()
