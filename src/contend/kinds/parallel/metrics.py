"""The parallel suite's metrics (CoPTS, Tables 2-7), pure: runs in, metrics.csv rows out.

For each runtime × count × benchmark, over every run of every container (guest view, the benchmark's own
figure):
- the figure itself (mean and 95 % CI over runs), under its own name (mflops, ghz, copy_mb_s, seconds…);
- `normalized`: that mean over the mean of the base cell, runc isolated (the paper's "1.00x"), or the first
  runtime with an isolated run when runc has none;
- `loss_pct`: the change from the same runtime's isolated mean, in % (the paper's "Throughput Loss" or
  "Runtime Increase" column: −13 means 13 % less throughput, +51 means 51 % longer runtime);
- `jain`: Jain's fairness index of the containers' figures (1 = every container got the same).
The CIs of the ratios divide the CI of the mean by the base mean; the base's own spread is not propagated.
Host view (cgroup counters): `cpu`, the CPUs a container used during a run, and its `jain` over containers,
which says how evenly CPU time was shared; `mem_peak_mib`, a container's memory peak; `concurrency`, how
many runs were going on at once, on average over each run (N when the N containers' runs fully overlap:
short runs behind a slow launch overlap less, and then "parallel-N" measured less contention than N).
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ...metrics.directions import DESCRIPTIVE, HIGHER, LOWER
from ...metrics.stats import mean_ci

# which way is better (contend compare): the benchmarks' figures, and what says how even a share was; the ratios
# (normalized, loss_pct) follow their benchmark's headline figure (metrics/directions.FOLLOWS_HEADLINE)
DIRECTIONS = {
    "mflops": HIGHER, "ghz": HIGHER, "copy_mb_s": HIGHER, "scale_mb_s": HIGHER, "add_mb_s": HIGHER,
    "triad_mb_s": HIGHER, "events_s": HIGHER, "mib_s": HIGHER, "iops": HIGHER, "lat_mean_us": LOWER,
    "seconds": LOWER,
    "jain": HIGHER, "cpu": DESCRIPTIVE, "mem_peak_mib": DESCRIPTIVE, "concurrency": DESCRIPTIVE,
}

BASE_RUNTIME = "runc"


@dataclass(frozen=True)
class Run:
    runtime: str
    count: int
    benchmark: str
    container: str  # p<process>c<container>
    figures: dict  # guest view: the benchmark's figures
    host: dict  # host view: cpu, mem_peak_bytes
    span: tuple[float, float] | None = None  # (start, end) in the cell's seconds


def concurrency(spans: list[tuple[float, float]]) -> float:
    """The mean over runs of the number of runs going on during it (itself included), time-weighted."""
    out = []
    for a, b in spans:
        if b <= a:
            continue
        overlap = sum(max(0.0, min(b, d) - max(a, c)) for c, d in spans)
        out.append(overlap / (b - a))
    return float(np.mean(out)) if out else math.nan


def jain(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one has everything."""
    x = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if len(x) == 0 or not np.any(x):
        return math.nan
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum()))


def scenario_of(count: int) -> str:
    return "isolated" if count == 1 else f"parallel-{count}"


def count_of(scenario: str) -> int:
    """scenario_of's inverse."""
    return 1 if scenario == "isolated" else int(scenario.removeprefix("parallel-"))


def row(runtime: str, count: int, benchmark: str, view: str, metric: str, value: float, low: float = math.nan,
        high: float = math.nan, n: int = 1) -> dict:
    return {"runtime": runtime, "scenario": scenario_of(count), "resource": benchmark, "view": view,
            "metric": metric, "value": value, "ci_low": low, "ci_high": high, "n": n}


def base_runtime(runs: list[Run], benchmark: str, runtimes: list[str]) -> str | None:
    """Whose isolated run is 1.00x: runc's where it was measured, else the first runtime's that was."""
    have = {r.runtime for r in runs if r.benchmark == benchmark and r.count == 1}
    for rt in [BASE_RUNTIME, *runtimes]:
        if rt in have:
            return rt
    return None


def scaling_metrics(runs: list[Run], figure: dict[str, str], runtimes: list[str]) -> list[dict]:
    """figure: benchmark -> its headline figure (the one normalised). Returns metrics.csv rows."""
    cells: dict[tuple, list[Run]] = defaultdict(list)
    for r in runs:
        cells[(r.runtime, r.count, r.benchmark)].append(r)
    means = {k: mean_ci([r.figures.get(figure[k[2]], math.nan) for r in v], metric=figure[k[2]])
             for k, v in cells.items()}
    out = []
    for (rt, count, bench), rs in sorted(cells.items()):
        names = sorted({k for r in rs for k in r.figures})
        for name in names:
            out.append(row(rt, count, bench, "guest", name,
                            *mean_ci([r.figures.get(name, math.nan) for r in rs], metric=name)))
        m, lo, hi, n = means[(rt, count, bench)]
        base = base_runtime(runs, bench, runtimes)
        if base is not None and n:
            b = means[(base, 1, bench)][0]
            out.append(row(rt, count, bench, "guest", "normalized", m / b, lo / b, hi / b, n))
        iso = means.get((rt, 1, bench))
        if iso is not None and iso[3] and n:
            i = iso[0]
            out.append(row(rt, count, bench, "guest", "loss_pct", (m / i - 1) * 100, (lo / i - 1) * 100,
                           (hi / i - 1) * 100, n))
        per_container = _per_container(rs, lambda r: r.figures.get(figure[bench], math.nan))
        if count > 1 and len(per_container) > 1:
            out.append(row(rt, count, bench, "guest", "jain", jain(per_container), n=len(per_container)))
        cpu = [r.host.get("cpu", math.nan) for r in rs]
        if any(math.isfinite(c) for c in cpu):
            out.append(row(rt, count, bench, "host", "cpu", *mean_ci(cpu, metric="cpu")))
            shares = _per_container(rs, lambda r: r.host.get("cpu", math.nan))
            if count > 1 and len(shares) > 1:
                out.append(row(rt, count, bench, "host", "jain", jain(shares), n=len(shares)))
        spans = [r.span for r in rs if r.span is not None]
        if spans:
            out.append(row(rt, count, bench, "host", "concurrency", concurrency(spans), n=len(spans)))
        peak = [r.host.get("mem_peak_bytes", math.nan) / 2 ** 20 for r in rs]
        if any(math.isfinite(p) for p in peak):
            out.append(row(rt, count, bench, "host", "mem_peak_mib", *mean_ci(peak, metric="mem_peak_mib")))
    return out


def _per_container(rs: list[Run], value: Callable[[Run], float]) -> list[float]:
    """Each container's mean over its runs (the unit that shares the host with the others)."""
    by: dict[str, list[float]] = defaultdict(list)
    for r in rs:
        v = value(r)
        if math.isfinite(v):
            by[r.container].append(v)
    return [float(np.mean(v)) for v in by.values()]
