"""Guard studies' stores side by side: per run and per told capacity, the victim's isolation, p05, reaction and the
neighbour's work conservation (host view), and per arm of an interleaved A/B (issue 55).

Each DIR is a results directory of `contend run` on a guard spec. Directories whose names differ only in a trailing
number (ab-Old1, ab-Old2, ...) are one arm; runs under `none` are references and left out. Per arm: one row per
workload and policy (the runs' figures in the order of the directories), then one per policy over every workload:
the mean and lowest isolation and p05, how many runs reacted within 1 s, and the mean work conservation. Last, every
run whose host view missed the victim's writes (its cgroup's disk counters off: left out of the means).
With --views instead, per arm how often the two views of the victim (host: its cgroup's counters; guest: its own fio
log) disagree on a run's isolation (by more than 0.02), runs under `none` too, and the runs that disagree most.

    .venv/bin/python bench/guard_stores.py /var/tmp/g62/ab-Old* /var/tmp/g62/ab-New* [--views]
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

import duckdb

from contend.kinds.guard.trial import unseen
from contend.probes import Sample
from contend.store import Store

FIGURES = ("isol_mean", "isol_p05", "reaction_s", "work_conservation")


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


def _listed(xs: list[float]) -> str:
    return ", ".join("n/a" if math.isnan(x) else f"{x:.2f}" for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    ap.add_argument("--views", action="store_true", help="the host and guest views of each run side by side")
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
    for arm, dirs in arms.items():
        cells: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
        for d in dirs:
            for tid, figs in sorted(runs(d).items()):
                workload, rest = tid.split(".", 1)
                cells[(workload, rest.rsplit(".r", 1)[0])].append(figs)
        print(f"## {arm} ({len(dirs)} store(s))\n")
        print("| workload | policy | isol mean | isol p05 | reaction s | work cons. |\n|---|---|---|---|---|---|")
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
