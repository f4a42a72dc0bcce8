"""A detect study's trials side by side: per study, runtime and case, found and ranked first, the detection
latency from the antagonist's first use (median and 95th percentile over the trials), false blames, and the
same pooled over every antagonist trial of the study, with the watch's own CPU (its loop and bpftrace, each
trial's median). Several studies (the code before and after a change, run in the same minutes) print one block each.

    .venv/bin/python bench/detect_summary.py /var/tmp/d51b/old1 /var/tmp/d51b/new1
"""
from __future__ import annotations

import math
import sys
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np

QUERY = """SELECT t.runtime, c.case_name, m.metric, m.value FROM trial_metrics m
           JOIN trials t USING (trial_id) JOIN cells_detect c USING (trial_id)
           WHERE t.status = 'ok'
             AND m.metric IN ('detected', 'first_right', 'latency_s', 'false_blames', 'watch_cpu_pct')"""


def pct(xs: list[float], q: float) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return float(np.percentile(xs, q)) if xs else math.nan


def summary(out: Path) -> None:
    with duckdb.connect(str(out / "contend.duckdb"), read_only=True) as db:
        rows = db.execute(QUERY).fetchall()
        failed = db.execute("SELECT count(*) FROM trials WHERE status != 'ok'").fetchone()
    cells: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for runtime, case, metric, value in rows:
        cells[(runtime, case)][metric].append(value)
    print(f"{out}  ({failed[0] if failed else 0} trials failed)")
    print(f"  {'runtime':8} {'case':12} {'found':>6} {'first':>6} {'lat p50':>8} {'lat p95':>8} {'false':>6}")
    every: list[float] = []
    for (runtime, case), m in sorted(cells.items()):
        n = len(m["false_blames"])  # every trial has it; a control has no found, first or latency
        every += m["latency_s"]
        found, first = ((f"{sum(m['detected']):>3.0f}/{n:<2}", f"{sum(m['first_right']):>3.0f}/{n:<2}")
                        if m["detected"] else (f"{'-':>6}", f"{'-':>6}"))
        print(f"  {runtime:8} {case:12} {found} {first} "
              f"{pct(m['latency_s'], 50):8.2f} {pct(m['latency_s'], 95):8.2f} {sum(m['false_blames']):6.0f}")
    found = [v for m in cells.values() for v in m["detected"]]
    false = sum(v for m in cells.values() for v in m["false_blames"])
    timed = len([x for x in every if math.isfinite(x)])
    cost = [v for m in cells.values() for v in m["watch_cpu_pct"]]
    print(f"  all: found {sum(found):.0f}/{len(found)}, false blames {false:.0f}, latency over {timed} trials: "
          f"p50 {pct(every, 50):.2f} s, p95 {pct(every, 95):.2f} s; the watch (loop and bpftrace) "
          f"{pct(cost, 50):.2f} % of a CPU (median of the trials)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bench/detect_summary.py STUDY_DIR [STUDY_DIR ...]")
    for d in sys.argv[1:]:
        summary(Path(d))
