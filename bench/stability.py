"""How stable are contend's numbers? The quick preset's study run K times, the spread of every cell across runs.

Runs `presets/quick.yaml` (or `--spec`) K times, each into its own results directory, or reads existing ones
(`--from DIR …`), and prints:
- per runtime × scenario × view: the mean, standard deviation, min and max across runs of each run's cell
  value of I_plr, I_intFree and S_I (a run's cell is the mean of its repetitions);
- per trial: the host view minus the eBPF view of I_intFree and I_plr (the same CPU time, counted twice);
- the issue's targets: runc/crun CPU harmony in [0.95, 1.03] in every view and run, |ΔI_intFree| ≤ 0.03 and
  |ΔI_plr| ≤ 0.02 host vs eBPF in every trial, SD of I_intFree ≤ 0.03 for every CPU cell.

    sudo .venv/bin/python bench/stability.py [--runs 5] [--spec presets/quick.yaml] [--runtimes crun]
    .venv/bin/python bench/stability.py --from /tmp/stab/run-1 /tmp/stab/run-2 … [--reanalyze]
"""
from __future__ import annotations

import argparse
import math
import tempfile
from pathlib import Path

import numpy as np
from rich.console import Console

from contend.kinds import load, open_store

METRICS = ("I_plr", "I_intFree", "S_I")
HARMONY_BAND = (0.95, 1.03)
MAX_DELTA = {"I_intFree": 0.03, "I_plr": 0.02}
MAX_SD = 0.03


def read_run(directory: Path, reanalyze: bool = False) -> tuple[dict, dict]:
    """(cells: (runtime, scenario, resource, view, metric) -> value, trials: trial id -> {(view, metric): value}).
    `reanalyze`: the metrics of the recorded samples computed again by this version (as `contend report`)."""
    if reanalyze:
        from contend.kinds.isolation.analyze import analyze
        with open_store(directory) as store:
            analyze(directory, store)
    with open_store(directory, read_only=True) as store:
        cells = {(r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"]): r["value"]
                 for r in store.metrics() if r["metric"] in METRICS}
        trials: dict[str, dict] = {}
        for r in store.trial_metric_rows():
            if r["metric"] in (*METRICS, "host_speedup", "W_d_ref", "host_outside"):
                trials.setdefault(r["trial_id"], {"cell": (r["runtime"], r["scenario"], r["resource"])})[
                    (r["view"], r["metric"])] = r["value"]
    return cells, trials


def finite(v) -> bool:
    return v is not None and isinstance(v, float) and math.isfinite(v)


def report(dirs: list[Path], reanalyze: bool = False) -> int:
    runs = [read_run(d, reanalyze) for d in dirs]
    print(f"{len(runs)} runs: {', '.join(str(d) for d in dirs)}")
    keys = sorted({k for cells, _ in runs for k in cells})
    misses = []
    print(f"\n{'runtime':7s} {'scenario':9s} {'res':4s} {'view':5s} {'metric':9s} {'mean':>6s} {'sd':>6s} "
          f"{'min':>6s} {'max':>6s}  n")
    for key in keys:
        v = np.array([cells[key] for cells, _ in runs if finite(cells.get(key))])
        if not len(v):
            continue
        sd = float(v.std(ddof=1)) if len(v) > 1 else math.nan
        rt, sc, res, view, metric = key
        print(f"{rt:7s} {sc:9s} {res:4s} {view:5s} {metric:9s} {v.mean():6.3f} {sd:6.3f} {v.min():6.3f} "
              f"{v.max():6.3f}  {len(v)}")
        if res == "cpu" and metric == "I_intFree" and len(v) > 1 and sd > MAX_SD:
            misses.append(f"SD of I_intFree {sd:.3f} > {MAX_SD} in {' '.join(key[:4])}")
        if res == "cpu" and sc == "harmony" and rt in ("runc", "crun") and metric in ("I_plr", "I_intFree"):
            out = [x for x in v if not HARMONY_BAND[0] <= x <= HARMONY_BAND[1]]
            if out or len(v) < len(runs):
                misses.append(f"{' '.join(key)}: {len(v) - len(out)} of {len(runs)} runs in {list(HARMONY_BAND)}")
    print(f"\nper trial, host − eBPF view ({', '.join(f'|Δ{m}| ≤ {x}' for m, x in MAX_DELTA.items())}):")
    worst = {m: 0.0 for m in MAX_DELTA}
    for i, (_, trials) in enumerate(runs, 1):
        for tid, t in sorted(trials.items(), key=lambda kv: kv[1]["cell"]):
            deltas = {m: t.get(("host", m), math.nan) - t.get(("ebpf", m), math.nan) for m in MAX_DELTA}
            if not all(math.isfinite(d) for d in deltas.values()):
                continue
            print(f"  run {i} {tid}: " + "  ".join(f"Δ{m} {d:+.3f}" for m, d in deltas.items()) +
                  f"  host_outside {t.get(('host', 'host_outside'), math.nan):+.3f}")
            for m, d in deltas.items():
                worst[m] = max(worst[m], abs(d))
                if abs(d) > MAX_DELTA[m]:
                    misses.append(f"run {i} trial {tid}: |Δ{m}| {abs(d):.3f} > {MAX_DELTA[m]}")
    print("largest |Δ| host − eBPF: " + ", ".join(f"{m} {x:.3f}" for m, x in worst.items()))
    speed_report(runs)
    reference_report(runs)
    outside_report(runs)
    print(f"\ntargets: {'all met' if not misses else f'{len(misses)} missed'}")
    for m in misses:
        print(f"  MISSED {m}")
    return 0


def speed_report(runs: list[tuple[dict, dict]]) -> None:
    """The guest view of CPU against the host's own speed: per cell, its trials' guest I_plr where the host
    kept its baseline's speed (host_speedup ≤ 1.05) and where it ran faster in some step (flagged in the table)."""
    from contend.kinds.isolation.table import SPEEDUP
    cells: dict[tuple, dict[str, list[float]]] = {}
    for _, trials in runs:
        for t in trials.values():
            sp, plr = t.get(("guest", "host_speedup")), t.get(("guest", "I_plr"))
            if finite(sp) and finite(plr):
                kind = "steady" if sp <= SPEEDUP else "faster"
                cells.setdefault(t["cell"], {"steady": [], "faster": []})[kind].append(plr)
    if not cells:
        return
    print(f"\nguest view of CPU, trial I_plr by the host's own speed (host_speedup ≤ {SPEEDUP} steady, above: faster):")
    for cell, kinds in sorted(cells.items()):
        print(f"  {' '.join(cell)}: " + "; ".join(
            f"{k} {len(v)} trials" + (f" {min(v):.2f}–{max(v):.2f}" if v else "") for k, v in kinds.items()))


def reference_report(runs: list[tuple[dict, dict]]) -> None:
    """Where the SD of a CPU cell's I_intFree comes from: its trials split by the host view's change point. A
    loss near the band's floor (5 %) puts the reference at the start in some trials (I_intFree over the whole
    ramp) and at a later step in others (over the degraded steps alone): I_intFree is discontinuous there, by
    Krebs' definition, while I_plr moves smoothly."""
    cells: dict[tuple, dict[str, list[tuple[float, float]]]] = {}
    for _, trials in runs:
        for t in trials.values():
            ref, free, plr = (t.get(("host", m)) for m in ("W_d_ref", "I_intFree", "I_plr"))
            if t["cell"][2] == "cpu" and all(finite(x) for x in (ref, free, plr)):
                kind = "later" if ref > 0 else "start"
                cells.setdefault(t["cell"], {"start": [], "later": []})[kind].append((plr, free))
    if not cells:
        return
    print("\nhost view of CPU, trials by where the change point put the reference (start: none found, the whole "
          "ramp; later: W_d,ref > 0):")
    for cell, kinds in sorted(cells.items()):
        print(f"  {' '.join(cell)}: " + "; ".join(
            f"{k} {len(v)} trials" + (f" I_plr {min(p for p, _ in v):.3f}–{max(p for p, _ in v):.3f}, I_intFree "
                                      f"{min(f for _, f in v):.3f}–{max(f for _, f in v):.3f}" if v else "")
            for k, v in kinds.items()))


def outside_report(runs: list[tuple[dict, dict]]) -> None:
    """Per CPU cell, the trials in which something outside the tenants (another process, the hypervisor's
    steal) took more of the host's CPUs during the ramp than during the baseline (host_outside > the band)."""
    from contend.kinds.isolation.table import OUTSIDE
    cells: dict[tuple, list[float]] = {}
    for _, trials in runs:
        for t in trials.values():
            if finite(x := t.get(("host", "host_outside"))):
                cells.setdefault(t["cell"], []).append(x)
    if cells:
        print(f"\nCPU taken outside the tenants during the ramp (|host_outside| > {OUTSIDE} flags a trial):")
    for cell, xs in sorted(cells.items()):
        print(f"  {' '.join(cell)}: {sum(abs(x) > OUTSIDE for x in xs)} of {len(xs)} trials flagged, "
              f"host_outside {min(xs):+.3f} to {max(xs):+.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--from", dest="src", type=Path, nargs="+", help="existing results directories")
    ap.add_argument("--runs", type=int, default=5, help="K: how many times to run the study (default 5)")
    ap.add_argument("--spec", type=Path, default=Path(__file__).parent.parent / "presets" / "quick.yaml")
    ap.add_argument("--runtimes", help="comma-separated: run these runtimes instead of the spec's (e.g. crun)")
    ap.add_argument("--out", type=Path, help="where the runs' results directories go (default: a new temp dir)")
    ap.add_argument("--reanalyze", action="store_true",
                    help="with --from: compute the metrics of the recorded samples again with this version")
    args = ap.parse_args()
    if args.src:
        raise SystemExit(report(args.src, args.reanalyze))
    from contend.interrupts import INTERRUPTED
    from contend.kinds.isolation.study import IsolationStudy as Study
    spec = load(args.spec)
    if args.runtimes:  # validated again, as a spec file naming them would be
        spec = type(spec).model_validate({**spec.model_dump(), "runtimes": args.runtimes.split(",")})
    out = args.out or Path(tempfile.mkdtemp(prefix="contend-stability-"))
    dirs = []
    for k in range(1, args.runs + 1):
        d = out / f"run-{k}"
        Console(stderr=True).print(f"stability: run {k} of {args.runs} → {d}")
        code = Study(spec, d, Console(stderr=True)).run()
        if INTERRUPTED.is_set() or code not in (0, 1):  # Ctrl-C: the runs so far, then stop
            break
        dirs.append(d)
    raise SystemExit(report(dirs))


if __name__ == "__main__":
    main()
