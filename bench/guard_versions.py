"""One guard policy under two versions of contend's code, interleaved on the real disk (issue 99's proof).

Each round runs every cell once under the code of `--rev` (checked out in a temporary git worktree) and once under
this tree's, back to back and in alternating order, each run a subprocess importing the version's `src/` (real
containers, as `contend run` does: kinds/guard/trial.py). Prints per run the victim's isolation mean and p05 (host
view), its p99 latency impact and the neighbour's MB/s in the burst, then each figure's mean and its 95 % interval
per version and cell.

    sudo .venv/bin/python bench/guard_versions.py --rev 96f305f \\
        --cell presets/guard-caps.yaml:workload2:contend@capacity=1 \\
        --cell presets/guard-shapes.yaml:iops-neighbour:contend [--rounds 3] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FIGURES = (("host", "isol_mean"), ("host", "isol_p05"), ("guest", "lat_p99_imp"), ("host", "neighbour_mb_s"))


def one(spec: str, workload: str, policy: str, rnd: int, out: Path) -> None:
    """One run under the contend importable here (the version's src/ on PYTHONPATH): its figures as a JSON line."""
    import contend
    from contend.doctor import ensure_capacity
    from contend.kinds import load
    from contend.kinds.guard.report import load_run, run_metrics
    from contend.kinds.guard.trial import run_guard_trial
    from contend.store import Store
    study = load(spec)
    w = next(x for x in study.workloads if x.name == workload)
    result = run_guard_trial(study, w, policy, rnd, ensure_capacity(["disk"]), {}, out)
    row: dict = {"code": str(Path(contend.__file__).parent), "status": result.record.status}
    if result.record.status == "ok":
        with Store(out) as store:
            store.add_trial(result.record, result.steps, result.samples, result.events)
            m = {(view, k): v for view, k, v in run_metrics(load_run(store, store.trials()[0]), math.nan)}
        row |= {k: m.get((view, k), math.nan) for view, k in FIGURES}
    print(json.dumps(row))


def interval(xs: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % interval (Student's t)."""
    from scipy import stats
    xs = [x for x in xs if math.isfinite(x)]
    if not xs:
        return math.nan, math.nan
    m = sum(xs) / len(xs)
    if len(xs) < 2:
        return m, math.nan
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))
    return m, float(stats.t.ppf(0.975, len(xs) - 1)) * sd / math.sqrt(len(xs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rev", required=True, help="the commit to compare against (e.g. the one before a change)")
    ap.add_argument("--cell", action="append", required=True, metavar="SPEC:WORKLOAD:POLICY",
                    help="a study's workload under a policy label (its sweep point: contend@capacity=1); repeatable")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", type=Path, help="write every run's figures here")
    ap.add_argument("--one", nargs=5, metavar=("SPEC", "WORKLOAD", "POLICY", "ROUND", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        spec, workload, policy, rnd, out = a.one
        return one(spec, workload, policy, int(rnd), Path(out))
    cells = [tuple(c.split(":", 2)) for c in a.cell]
    for c in cells:
        if len(c) != 3:
            sys.exit(f"--cell {':'.join(c)}: want SPEC:WORKLOAD:POLICY")
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="contend-versions-") as tmp:
        old = Path(tmp) / "before"
        subprocess.run(["git", "-C", str(HERE), "worktree", "add", "--detach", "-q", str(old), a.rev], check=True)
        trees = {a.rev: old, "now": HERE}
        try:
            for rnd in range(1, a.rounds + 1):
                order = list(trees.items()) if rnd % 2 else list(trees.items())[::-1]  # A/B, then B/A
                for spec, workload, policy in cells:
                    for version, tree in order:
                        out = Path(tmp) / f"{version}-{workload}-{policy}-{rnd}"
                        out.mkdir(parents=True)
                        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
                        p = subprocess.run([sys.executable, str(HERE / "bench/guard_versions.py"), "--rev", a.rev,
                                            "--cell", "x:x:x", "--one", str(HERE / spec), workload, policy, str(rnd),
                                            str(out)], env=env, cwd=HERE, capture_output=True, text=True)
                        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
                        row = json.loads(lines[-1]) if lines else {"status": f"exit {p.returncode}: "
                                                                             f"{p.stderr.strip()[-300:]}"}
                        row |= {"version": version, "cell": f"{workload} {policy}", "round": rnd}
                        runs.append(row)
                        figs = ", ".join(f"{k} {row[k]:.2f}" for _, k in FIGURES if k in row)
                        print(f"round {rnd} {version:>8} {workload} {policy}: {figs or row['status']}", flush=True)
        finally:
            subprocess.run(["git", "-C", str(HERE), "worktree", "remove", "--force", str(old)], check=False)
    if a.json:
        a.json.write_text(json.dumps(runs, indent=1))
    print(f"\n{'cell':<40} {'version':>8}  " + "  ".join(f"{k:>16}" for _, k in FIGURES))
    for cell in dict.fromkeys(r["cell"] for r in runs):
        for version in trees:
            rows = [r for r in runs if r["cell"] == cell and r["version"] == version and r.get("status") == "ok"]
            cols = [interval([r[k] for r in rows]) for _, k in FIGURES]
            print(f"{cell:<40} {version:>8}  " + "  ".join(f"{m:>9.2f} ± {h:<4.2f}" for m, h in cols)
                  + f"  (n = {len(rows)})")


if __name__ == "__main__":
    main()
