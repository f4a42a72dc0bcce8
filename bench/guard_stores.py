"""Guard studies' stores side by side: per run and per told capacity, the victim's isolation, p05, reaction and the
neighbour's work conservation (host view), and per arm of an interleaved A/B (issue 55).

Each DIR is a results directory of `contend run` on a guard spec. Directories whose names differ only in a trailing
number (ab-Old1, ab-Old2, ...) are one arm; runs under `none` are references and left out. Per arm: one row per
workload and policy (the runs' figures in the order of the directories, with what the disk delivered to both
tenants in the burst), then one per policy over every workload:
the mean and lowest isolation and p05, how many runs reacted within 1 s, and the mean work conservation. Last, every
run whose host view missed the victim's writes (its cgroup's disk counters off: left out of the means).
With --views instead, per arm how often the two views of the victim (host: its cgroup's counters; guest: its own fio
log) disagree on a run's isolation (by more than 0.02), runs under `none` too, and the runs that disagree most.
With --bands instead, every run of every DIR pooled by its work conservation (bands of the neighbour's share of the
spare), per policy (its name without the number told) and then per workload over every policy: how many runs reacted
within 1 s, and how many kept isol >= 0.95 and p05 >= 0.90, and the median swing of the victim's delivery (host view:
its 100 ms buckets' coefficient of variation from 1 s into the burst to its end, so not its first dip) and of what
the disk delivered to both tenants in the burst. Whether
reaction goes with the share a burst was given, whatever gave it: a static cap, written before the burst, has nothing
to react with (issue 55).

    .venv/bin/python bench/guard_stores.py /var/tmp/g62/ab-Old* /var/tmp/g62/ab-New* [--views | --bands]
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np

from contend.kinds import open_store
from contend.kinds.guard.report import load_run
from contend.kinds.guard.trial import unseen
from contend.probes import Sample
from contend.store import Store

FIGURES = ("isol_mean", "isol_p05", "reaction_s", "work_conservation", "delivery_mb_s")


def blind(directory: Path) -> list[str]:
    """Every run (under none too) whose host view missed the victim's writes, with what it missed (trial.unseen: such a
    run fails since 2026-12-02, and was stored before)."""
    out = []
    with Store(directory, read_only=True) as store:
        for (tid,) in store.con.execute("SELECT DISTINCT trial_id FROM samples ORDER BY 1").fetchall():
            rows = store.con.execute("SELECT t, tenant, source, quantity, value FROM samples WHERE trial_id = ? AND "
                                     "tenant = 'victim'", [tid]).fetchall()
            if said := unseen([Sample(*r) for r in rows]):
                out.append(f"{directory.name} {tid}: {said}")
    return out


def runs(directory: Path) -> dict[str, dict[str, float]]:
    """Per trial under a policy (not `none`): its host-view figures."""
    out: dict[str, dict[str, float]] = defaultdict(dict)
    with Store(directory, read_only=True) as store:
        rows = store.con.execute("SELECT trial_id, metric, value FROM trial_metrics WHERE view = 'host'").fetchall()
    for tid, metric, value in rows:
        if metric in FIGURES and ".none." not in tid:
            out[tid][metric] = value
    return out


def views(arms: dict[str, list[Path]], apart: float = 0.02) -> None:
    """Per arm: the runs whose host and guest isol_mean differ by more than `apart`, and the five furthest apart."""
    for arm, dirs in arms.items():
        pairs = []
        for d in dirs:
            with Store(d, read_only=True) as store:
                rows = store.con.execute("SELECT trial_id, view, metric, value FROM trial_metrics WHERE view IN "
                                         "('host', 'guest') AND metric IN ('isol_mean', 'isol_p05')").fetchall()
            got: dict[str, dict[str, float]] = defaultdict(dict)
            for tid, view, metric, value in rows:
                got[tid][f"{view}.{metric}"] = value
            pairs += [(f"{d.name} {tid}", v) for tid, v in sorted(got.items())
                      if math.isfinite(v.get("host.isol_mean", math.nan) - v.get("guest.isol_mean", math.nan))]
        far = sorted(pairs, key=lambda p: -abs(p[1]["host.isol_mean"] - p[1]["guest.isol_mean"]))
        gaps = [abs(v["host.isol_mean"] - v["guest.isol_mean"]) for _, v in pairs]
        print(f"## {arm}: {sum(g > apart for g in gaps)} of {len(gaps)} runs apart by more than {apart} "
              f"(mean gap {sum(gaps) / max(len(gaps), 1):.4f})\n")
        for name, v in far[:5]:
            print(f"- {name}: host {v['host.isol_mean']:.3f} / {v.get('host.isol_p05', math.nan):.3f}, "
                  f"guest {v['guest.isol_mean']:.3f} / {v.get('guest.isol_p05', math.nan):.3f}")
        print()


EDGES = (0.0, 0.3, 0.5, 0.7, 0.85, 1.0)  # work conservation's bands: the last one closed (a run bounded at 1)


def swing(t: np.ndarray, victim: np.ndarray, burst: tuple[float, float], skip_s: float = 1.0) -> float:
    """The victim's buckets' coefficient of variation from `skip_s` into the burst to its end (pure): how much its
    delivery swings once the burst's first dip is over; nan with fewer than 5 buckets or none delivered."""
    v = victim[(t >= burst[0] + skip_s) & (t < burst[1])]
    return float(np.std(v) / np.mean(v)) if len(v) >= 5 and np.mean(v) > 0 else math.nan


def swings(directory: Path) -> dict[str, float]:
    """Per trial under a policy (not `none`): swing() of its victim's host view."""
    with open_store(directory, read_only=True) as st:
        return {(run := load_run(st, trial)).trial["trial_id"]: swing(run.t, run.victim, run.burst)
                for trial in st.trials("ok") if trial["policy"] != "none"}


def band(wc: float, edges: tuple[float, ...] = EDGES) -> int | None:
    """The band of `edges` a work conservation falls in (the last band closed); None: nan or outside."""
    if not math.isfinite(wc) or not edges[0] <= wc <= edges[-1]:
        return None
    return next(i for i in range(len(edges) - 1) if wc < edges[i + 1] or i == len(edges) - 2)


def tally(figs: list[tuple[str, dict[str, float]]],
          edges: tuple[float, ...] = EDGES) -> dict[tuple[str, int], list[float]]:
    """Per (group, band): [runs, reacted within 1 s, isol mean >= 0.95, p05 >= 0.90, runs that reacted at all,
    their reaction's sum in s, the median swing, the median delivery in MB/s] (pure). `figs`: each run's group and
    host figures (`swing` among them where known); a run with no work conservation or no isolation (no host view) is
    left out, one that never reacted (nan) counts as not within 1 s."""
    out: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0.0])
    swung: dict[tuple[str, int], list[float]] = defaultdict(list)
    gave: dict[tuple[str, int], list[float]] = defaultdict(list)
    for group, v in figs:
        b = band(v.get("work_conservation", math.nan), edges)
        if b is None or not math.isfinite(v.get("isol_mean", math.nan)):
            continue
        row = out[(group, b)]
        row[0] += 1
        row[1] += v.get("reaction_s", math.nan) <= 1.0
        row[2] += v["isol_mean"] >= 0.95
        row[3] += v.get("isol_p05", math.nan) >= 0.90
        if math.isfinite(r := v.get("reaction_s", math.nan)):
            row[4], row[5] = row[4] + 1, row[5] + r
        if math.isfinite(w := v.get("swing", math.nan)):
            swung[(group, b)].append(w)
        if math.isfinite(d := v.get("delivery_mb_s", math.nan)):
            gave[(group, b)].append(d)
    return {k: row + [float(np.median(xs)) if xs else math.nan for xs in (swung[k], gave[k])]
            for k, row in out.items()}


def bands(dirs: list[Path]) -> None:
    """Every run pooled by its work conservation's band, per policy and per workload (--bands)."""
    every = [(tid.split(".", 1)[0], tid.split(".", 1)[1].rsplit(".r", 1)[0], {**figs, "swing": sw.get(tid, math.nan)})
             for d in dirs for sw in (swings(d),) for tid, figs in sorted(runs(d).items())]
    for what, key in (("policy", lambda w, p: p.split("@", 1)[0]), ("workload", lambda w, p: w)):
        got = tally([(key(w, p), f) for w, p, f in every] + [("every", f) for _, _, f in every])
        print(f"| {what} | work cons. | runs | reaction <= 1 s | mean reaction s | isol >= 0.95 | p05 >= 0.90 | "
              "swing | delivered MB/s |\n|---|---|---|---|---|---|---|---|---|")
        for (group, b), (n, fast, held, p05, m, rs, sw, dv) in sorted(got.items(),
                                                              key=lambda kv: (kv[0][0] == "every", kv[0])):
            never = f" ({n - m:.0f} never)" if m < n else ""
            print(f"| {group} | {EDGES[b]:.2f}-{EDGES[b + 1]:.2f} | {n:.0f} | {fast:.0f} ({fast / n:.2f}) | "
                  f"{rs / m if m else math.nan:.2f}{never} | {held:.0f} ({held / n:.2f}) | {p05:.0f} ({p05 / n:.2f}) | "
                  f"{sw:.3f} | {dv:.0f} |")
        print()


def _listed(xs: list[float]) -> str:
    return ", ".join("n/a" if math.isnan(x) else f"{x:.0f}" if abs(x) >= 100 else f"{x:.2f}" for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    ap.add_argument("--views", action="store_true", help="the host and guest views of each run side by side")
    ap.add_argument("--bands", action="store_true", help="every run pooled by its work conservation: how many reacted "
                    "within 1 s and kept the victim, per policy and per workload")
    a = ap.parse_args()
    arms: dict[str, list[Path]] = defaultdict(list)
    for d in a.dirs:
        try:  # a store a running study holds is locked: say which, in one line
            Store(d, read_only=True).close()
        except (duckdb.Error, OSError, ValueError) as e:
            sys.exit(f"{d}: cannot open the store: {str(e).splitlines()[0]}")
        arms[re.sub(r"\d+$", "", d.name)].append(d)
    if a.views:
        return views(arms)
    if a.bands:
        return bands(a.dirs)
    for arm, dirs in arms.items():
        cells: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
        for d in dirs:
            for tid, figs in sorted(runs(d).items()):
                workload, rest = tid.split(".", 1)
                cells[(workload, rest.rsplit(".r", 1)[0])].append(figs)
        print(f"## {arm} ({len(dirs)} store(s))\n")
        print("| workload | policy | isol mean | isol p05 | reaction s | work cons. | delivered MB/s |\n"
              "|---|---|---|---|---|---|---|")
        for (workload, policy), vs in sorted(cells.items()):
            print(f"| {workload} | {policy} | " + " | ".join(_listed([v.get(f, math.nan) for v in vs]) for f in FIGURES)
                  + " |")
        print("\n| policy | runs | isol mean (lowest) | p05 mean (lowest) | reaction ≤ 1 s | work cons. |"
              "\n|---|---|---|---|---|---|")
        for policy in sorted({p for _, p in cells}):
            every = [v for (_, p), xs in cells.items() if p == policy for v in xs]
            # a run without an isolation had no host view of the victim (a v1 host's disk counters off, before
            # 2026-12-02 such a run was stored): left out of the means, and counted
            vs = [v for v in every if math.isfinite(v.get("isol_mean", math.nan))]
            left = f" ({len(every) - len(vs)} without a host view left out)" if len(vs) < len(every) else ""
            if not vs:
                print(f"| {policy} | 0{left} | | | | |")
                continue
            i, p05 = [v["isol_mean"] for v in vs], [v["isol_p05"] for v in vs]
            react = [v.get("reaction_s", math.nan) for v in vs]
            wc = [w for v in vs if not math.isnan(w := v.get("work_conservation", math.nan))]
            print(f"| {policy} | {len(vs)}{left} | {sum(i) / len(i):.3f} ({min(i):.2f}) | {sum(p05) / len(p05):.3f} "
                  f"({min(p05):.2f}) | {sum(r <= 1.0 for r in react)} of {len(react)} | "
                  f"{sum(wc) / len(wc) if wc else math.nan:.2f} |")
        print()
    for line in (b for d in a.dirs for b in blind(d)):
        print(f"- no host view: {line}")


if __name__ == "__main__":
    main()
