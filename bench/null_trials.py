"""What can each view resolve on this host? Null trials (the disruptive tenant idle) interleaved with real ones.

A null trial is a real trial of a scenario (harmony by default) in which the disruptive tenant is started with
its limit and its load agent but stays at level 0 in every step: nothing disturbs the abiding tenant. Its
curve is analysed exactly as the real trial's, against the real scenario's ramp (its ideal W_d per step), so
every metric of a null trial is what that view reports for a perfectly isolated tenant on this host: 1 but for
the view's own noise (and the host's). A view whose null figures spread beyond a target band cannot meet that
band in a real trial either, whatever the isolation.

Rounds alternate the order (null, real), (real, null), … so that both kinds sample the same minutes (A/B/B/A).
Prints every trial, then per view and kind: the mean, SD, min and max of I_plr and I_intFree, and how many fall
in the band (default [0.95, 1.03], issue 19's harmony band).

    sudo .venv/bin/python bench/null_trials.py [--rounds 5] [--runtime runc] [--scenario harmony]
        [--spec presets/quick.yaml] [--no-ebpf]

--no-ebpf runs the same trials without contend's eBPF probes (the host and guest views only): run it between
two runs with them to see what the probes themselves take from the tenants (docs/results/archive.md, issue 25's v2
guest).
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from contend.doctor import ensure_capacity
from contend.hostlock import host_lock
from contend.kinds import load
from contend.kinds.isolation.plan import TrialPlan
from contend.kinds.isolation.rows import trial_rows
from contend.kinds.isolation.trial import run_trial, trial_capacity
from contend.measured import Samples
from contend.metrics import curves
from contend.metrics.curves import host_outside
from contend.paths import STATE
from contend.spec.base import STANDARD

BAND = (0.95, 1.03)
METRICS = ("I_plr", "I_intFree")


def samples_of(result) -> Samples:
    t, tenant, source, quantity, value = zip(*result.samples)
    return Samples(np.asarray(t, float), np.asarray(tenant), np.asarray(source), np.asarray(quantity),
                   np.asarray(value, float))


def measure(tp: TrialPlan, spec, capacity: dict, ramp_of: dict[int, float]) -> dict[tuple[str, str], float]:
    """One trial's (view, metric) values; the steps' ideal W_d is the real scenario's (`ramp_of`: step ->
    ideal disruptive level), so a null trial is read against the ramp it did not apply."""
    result = run_trial(tp, spec, capacity, {})
    if result.record.status != "ok":
        raise SystemExit(f"{tp.id}: {result.record.reason}")
    steps = [type(s)(s.step, s.phase, s.t_start, s.t_end, {**s.ideal, "disruptive": ramp_of[s.step]})
             for s in result.steps]
    samples, m = samples_of(result), spec.metrics
    found = curves(tp.resource, samples, steps, capacity, m.trim, m.trim_end)
    outside = host_outside(samples, steps, capacity.get("cpus", 0), m.trim, m.trim_end)
    rows = trial_rows(tp.resource, found, tp.scenario.l_d, m.threshold, m.alpha, outside)
    return {(view, k): v for view, k, v in rows if k in (*METRICS, "host_speedup", "host_outside")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5, help="null/real pairs (default 5)")
    ap.add_argument("--runtime", default="runc")
    ap.add_argument("--scenario", default="harmony", choices=list(STANDARD))
    ap.add_argument("--resource", default="cpu")
    ap.add_argument("--spec", type=Path, default=Path(__file__).parent.parent / "presets" / "quick.yaml",
                    help="the trial's shape (baseline, steps, buckets) and metric settings come from here")
    ap.add_argument("--no-ebpf", action="store_true", help="without contend's eBPF probes")
    args = ap.parse_args()
    spec = load(args.spec)
    if args.no_ebpf:
        spec = spec.model_copy(update={"probes": spec.probes.model_copy(update={"ebpf": False})})
    lock = host_lock(STATE / "bench-null-trials")  # noqa: F841  (held until exit: no study runs beside it)
    real = STANDARD[args.scenario]
    # the null scenario: the same tenants and limits, the disruptive tenant's load at 0 throughout
    null = real.model_construct(**{**real.model_dump(), "name": f"{real.name}-null", "w_d": 0.0})
    capacity = trial_capacity(ensure_capacity([args.resource]), spec)
    n = spec.trial.steps
    ramp_of = {k: real.disruptive_level * k / n for k in range(n + 1)}
    got: dict[str, list[dict]] = {"null": [], "real": []}
    for r in range(args.rounds):
        order = [("null", null), ("real", real)] if r % 2 == 0 else [("real", real), ("null", null)]
        for kind, sc in order:
            values = measure(TrialPlan(args.runtime, sc, args.resource, r + 1), spec, capacity, ramp_of)
            got[kind].append(values)
            print(f"round {r + 1} {kind:4s} " + "  ".join(
                f"{view} {m} {values.get((view, m), math.nan):.3f}" for view in ("host", "ebpf", "guest")
                for m in METRICS) + f"  host_speedup {values.get(('guest', 'host_speedup'), math.nan):.2f}"
                f"  host_outside {values.get(('host', 'host_outside'), math.nan):+.3f}",
                flush=True)
    print(f"\n{args.runtime} {args.scenario} {args.resource}, {args.rounds} rounds; null = the disruptive tenant idle, "
          f"read against the {args.scenario} ramp; band {list(BAND)}")
    print(f"{'view':5s} {'kind':4s} {'metric':9s} {'mean':>6s} {'sd':>6s} {'min':>6s} {'max':>6s}  in band")
    for view in ("host", "ebpf", "guest"):
        for kind in ("null", "real"):
            for m in METRICS:
                v = np.array([x[(view, m)] for x in got[kind] if math.isfinite(x.get((view, m), math.nan))])
                if not len(v):
                    continue
                inside = int(((v >= BAND[0]) & (v <= BAND[1])).sum())
                sd = v.std(ddof=1) if len(v) > 1 else math.nan
                print(f"{view:5s} {kind:4s} {m:9s} {v.mean():6.3f} {sd:6.3f} {v.min():6.3f} {v.max():6.3f}  "
                      f"{inside} of {len(v)}")


if __name__ == "__main__":
    main()
