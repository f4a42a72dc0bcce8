"""The database victim's report (PDP 2015 Tables II-III: D per disruptor and transaction type; Fig. 5: TPS over
time with the OOM kills marked). Terminal tables, victim-tables.md, metrics.csv, figures/ and report.html, all
from the store."""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ...report.answer import Answer, as_kept, retained_answer
from ...report.figures import Figure, save
from ...report.page import Written, publish, read_yaml
from ...report.table import TextTable, mean_text
from ...report.victim import bars_figure, notes_for, timeline, victim_page, victim_rows
from ...store import Store
from .metrics import OLTP_RULES


def _point(r: dict | None) -> dict | None:
    """The mean alone (its interval stays in metrics.csv)."""
    return None if r is None else {**r, "n": 1}


def oltp_tables(rows: list[dict], trials: list[dict], runtimes: list[str], disruptors: list[str],
                events: Sequence[dict] = ()) -> list[TextTable]:
    idx = {(r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"]): r for r in rows}
    notes: list[str] = []
    runtime_of = {t["trial_id"]: (t["runtime"], t["resource"]) for t in trials}
    missing: dict[tuple[str, str, str], str] = {}  # (runtime, database, disruptor) -> why it did not run
    for e in events:
        if e["kind"] in ("disruptor-failed", "window-failed") and e["trial_id"] in runtime_of:
            d = e["detail"].split(" ")[0].rstrip(":")
            missing.setdefault((*runtime_of[e["trial_id"]], d), re.sub(r"contend-[0-9a-f]{6}-", "", e["detail"]))
    resources = sorted({r["resource"] for r in rows if r["view"] == "guest" and r["metric"] == "tps"})
    heads = ["runtime", "transactions", "base TPS"] + [f"{d}: D / lat ×" for d in disruptors]
    lines = []
    for rt in runtimes:
        for db in dict.fromkeys(t["resource"] for t in trials if t["runtime"] == rt):
            mark = notes_for(trials, rt, notes, db)
            name = rt + (f" {mark}" if mark else "")
            # sysbench's read, write and other queries move with its transactions: metrics.csv has them
            have = [res for res in resources if res.startswith(db + ":") and (rt, "base", res, "guest", "tps") in idx
                    and res.split(":")[1] not in ("read", "write", "other")]
            for res in have or [db]:
                line = [name, res, mean_text(idx.get((rt, "base", res, "guest", "tps")), ",.1f") or "n/a"]
                for d in disruptors:
                    lat = mean_text(_point(idx.get((rt, d, res, "guest", "lat_x"))), ".1f", "×")
                    text = mean_text(idx.get((rt, d, res, "guest", "D")), ".1f", " %")
                    if text is None and (rt, db, d) in missing:  # the disruptor or the window failed
                        why = missing[(rt, db, d)]
                        if why not in notes:
                            notes.append(why)
                        text = f"n/a ({notes.index(why) + 1})"
                    line.append((text or "n/a") + (f" / {lat}" if lat else ""))
                lines.append(line)
    return [TextTable("the database victim: D = (1 − disturbed/base) × 100 of its TPS per disruptor and transaction "
                        "type (PDP 2015 Eq. 1; mean ± half the 95 % interval over repetitions, each paired with its "
                        "own base) / the mean latency multiplier (a fixed rate below capacity keeps D near 0 until the "
                        "server "
                        "cannot keep up; its latency says what the disruptor cost meanwhile). sysbench's read, write "
                        "and other queries per second are in metrics.csv", heads, lines, notes, left=2)]


def answers(rows: list[dict], runtimes: list[str], disruptors: list[str]) -> list[Answer]:
    """Per runtime × database (its transactions) × disruptor (pure): is the database isolated from it? The TPS it
    kept (1 − D/100, PDP 2015 Eq. 1) judged (report/answer.py)."""
    idx = {(r["runtime"], r["scenario"], r["resource"], r["metric"]): r for r in rows if r["view"] == "guest"}
    dbs = sorted({(k[0], k[2]) for k in idx
                  if k[3] == "D" and k[2].partition(":")[2] not in ("read", "write", "other")})
    return [retained_answer((rt, res, d), "TPS kept", as_kept(idx.get((rt, d, res, "D"))), card=(rt, res))
            for rt in runtimes for r2, res in dbs if r2 == rt for d in disruptors]


def _timeline(name: str, trial: dict, samples, steps, events: list[dict]) -> Figure:
    db = trial["resource"]
    return timeline(name, samples, steps, events, [("victim", "guest", f"{db}/tps_t", f"{db} TPS")],
                    [("victim", "cgroup", "cpu", "victim CPUs (×100)", 100),
                     ("disruptor", "cgroup", "cpu", "disruptor CPUs (×100)", 100)],
                    "transactions/s", "CPUs × 100", zero_after="oom-kill")


def refresh_oltp(directory: Path, store: Store, title: str) -> Written:
    spec = read_yaml(directory / "spec.yaml")
    runtimes = spec.get("runtimes", [])
    rows = publish(directory, store, victim_rows(store, "base", OLTP_RULES))
    disruptors = spec.get("disruptors", [])
    tables = oltp_tables(rows, store.trials(), runtimes, disruptors, store.events())
    summary = []
    for res in sorted({r["resource"] for r in rows if r["metric"] == "D"}):
        sub = [r for r in rows if r["resource"] == res]
        summary.append({"title": f"{res}: TPS per disruptor", "png": save(bars_figure(
            sub, runtimes, ["base", *disruptors], [("tps", f"{res}: TPS", "transactions/s")],
            f"{res}: base and disturbed TPS"), directory, f"oltp-{res.replace(':', '-')}")})
    return victim_page(directory, store, title, "oltp", rows, tables, summary, _timeline,
                       answers(rows, runtimes, disruptors))
