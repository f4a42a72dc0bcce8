"""The report of a detect study: each trial judged against its known answer (metrics.py, pure), per runtime
a table of the cases (terminal, detect-tables.md, report.html) and a timeline per trial (the victim's symptom,
each tenant's use, the change and the verdicts)."""
from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from ...paths import check_name, write_text, write_under
from ...report.answer import BAD, GOOD, UNSURE, Answer, finite
from ...report.figures import Figure, plt, save
from ...report.page import Written, failures, kind_page, publish, write_page
from ...report.table import TextTable, markdown_tables, rich_text_tables
from ...store import Store
from ...watch.detector import ENDS
from .cases import CASES
from .metrics import FRAME, STEP, USES, VICTIM, Truth, cell_figures, coverage, trial_metrics

VERDICTS = ("blame", "self", "unattributed", *ENDS)
COLUMNS = (("detected", "found"), ("first_right", "1st"), ("latency_p50_s", "p50 s"), ("latency_p95_s", "p95 s"),
           ("request_p50_s", "req. p50 s"), ("precision", "prec."), ("coverage", "cover"),
           ("share_error", "share err"),
           ("false_blames", "false"), ("no_baseline", "no base"), ("false_per_h", "per h"), ("watch_cpu_pct", "CPU %"))


def verdicts(store: Store, trial_id: str) -> list[dict]:
    return [json.loads(e["detail"]) for e in store.events(trial_id) if e["kind"] in VERDICTS]


def judged(trial: dict, events: list[dict], steps: Sequence[dict] = (), samples=None) -> dict[str, float]:
    """One stored trial's figures: its events against its case's answer, the verdicts period by period against
    the tenants' own use (where recorded: an antagonist on cpu or disk), and what the watcher cost (% of one CPU:
    its loop and bpftrace, over the time it watched)."""
    p, case = trial["params"], CASES[trial["case_name"]]
    t_use = p.get("t_use")  # None: not measured (a network case, a store of an older contend)
    truth = Truth(case.antagonist, trial["resource"], p["t_start"], p["t_end"], p["duration_s"],
                  t_use if t_use is not None else math.nan, case.antagonists or ("noisy",),
                  p.get("baseline_periods"))
    out = trial_metrics(events, truth)
    if steps and samples is not None and trial["resource"] in USES:
        use = {n: list(zip(*samples.series(n, "truth", trial["resource"]))) for n in (*case.tenants, "host")}
        out.update(coverage([(s["t"], s["kind"], s["culprits"]) for s in steps], {n: u for n, u in use.items() if u},
                            VICTIM, case.antagonists, t_use if t_use is not None else p["t_start"], p["t_end"]))
    out["watch_cpu_pct"] = 100 * (p.get("watch_cpu_s", 0.0) + p.get("probe_cpu_s", 0.0)) / p["duration_s"]
    return out


def analyze(store: Store) -> tuple[list[dict], dict[str, list[dict]]]:
    """Per-trial metrics into the store; the cell figures (precision, latency percentiles, false blames per
    hour) as extra rows; each trial's events for its timeline."""
    cells: dict[tuple, tuple[list, list]] = {}
    events: dict[str, list[dict]] = {}
    for t in store.trials("ok"):
        ev = events[t["trial_id"]] = verdicts(store, t["trial_id"])
        steps = [json.loads(e["detail"]) for e in store.events(t["trial_id"]) if e["kind"] == STEP]
        m = judged(t, ev, steps, store.samples(t["trial_id"]) if steps else None)
        store.set_trial_metrics(t["trial_id"], [("watch", k, v) for k, v in m.items()])
        ms, hours = cells.setdefault((t["runtime"], t["scenario"], t["resource"]), ([], []))
        ms.append(m)
        hours.append(t["params"]["duration_s"] / 3600)
    extra = [{"runtime": rt, "scenario": sc, "resource": res, "view": "watch", "metric": k, "value": v,
              "ci_low": math.nan, "ci_high": math.nan, "n": len(ms)}
             for (rt, sc, res), (ms, hours) in cells.items() for k, v in cell_figures(ms, hours).items()]
    return extra, events


def answers(rows: list[dict], runtimes: list[str], cases: list[str]) -> list[Answer]:
    """Per runtime × case (pure): did the watch find the antagonist and name it first (found and first / found,
    not first / MISSED), or, in a control, blame nobody (quiet / FALSE BLAME)?"""
    cells = {(r["runtime"], r["scenario"], r["metric"]): r for r in rows if r["view"] == "watch"}
    out = []
    for rt in runtimes:
        for case in cases:
            got = {m: cells.get((rt, case, m)) for m in ("detected", "first_right", "false_blames", "latency_p50_s")}
            n = max((r["n"] for r in got.values() if r is not None), default=0)
            subject, card = (rt, CASES[case].resource, case), (rt,)

            def share(m: str) -> float:
                r = got[m]
                return r["value"] if r is not None and finite(r["value"]) else math.nan
            if not n:
                out.append(Answer(subject, "n/a", UNSURE, "nothing measured", card=card))
            elif not CASES[case].antagonist:
                fb = share("false_blames")
                out.append(Answer(subject, "quiet" if fb == 0 else "FALSE BLAME", GOOD if fb == 0 else BAD,
                                  f"false blames {fb:.1f} a trial, n={n}" if finite(fb) else f"n={n}", card=card))
            else:
                det, first, lat = share("detected"), share("first_right"), share("latency_p50_s")
                found = f"found in {round(det * n)} of {n}, first in {round(first * n)}" if finite(det) else f"n={n}"
                number = found + (f", latency p50 {lat:.2f} s" if finite(lat) else "")
                word, tone = (("found and first", GOOD) if det == 1 and first == 1 else
                              ("found, not first", UNSURE) if det == 1 else ("MISSED", BAD))
                out.append(Answer(subject, word, tone, number, card=card))
    return out


def tables(rows: list[dict], failed: dict[tuple, str], runtimes: list[str], cases: list[str]) -> list[TextTable]:
    cells = {(r["runtime"], r["scenario"], r["metric"]): r for r in rows if r["view"] == "watch"}
    out: list[TextTable] = []
    for rt in runtimes:
        lines = []
        for case in cases:
            why = failed.get((rt, case, CASES[case].resource))
            n = next((r["n"] for (a, b, _), r in cells.items() if (a, b) == (rt, case)), 0)
            line = [case, str(n)]
            for metric, _ in COLUMNS:
                r = cells.get((rt, case, metric))
                line.append(_fmt(metric, r) if r is not None else ("n/a" if why and not n else "-"))
            lines.append(line)
        notes = [f"{case}: {why}" for (r, case, _), why in failed.items() if r == rt]
        if not out:
            notes.insert(0, "latency p50/p95: from noisy's first use of its resource (its cgroup read every 20 ms); "
                            "req. p50: from contend's request to start its load (the runtime's exec, the tool's start)")
        out.append(TextTable(f"{rt}", ["case", "n", *(h for _, h in COLUMNS)], lines, notes))
    return out


def _fmt(metric: str, r: dict) -> str:
    v = r["value"]
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if metric in ("detected", "first_right", "precision", "coverage", "no_baseline"):
        return f"{v:.0%}"
    return f"{v:.2f}" if metric != "false_blames" else f"{v:.1f}"


def timeline(trial: dict, samples, events: list[dict]) -> Figure:
    """The victim's symptom and each tenant's use over the trial, the change shaded, each verdict marked."""
    case = CASES[trial["case_name"]]
    use, symptom = {"cpu": ("cpu", "rq_delay"), "disk": ("io_bytes", "io_wait_ms"),
                    "memory": ("mem", "mem_psi")}.get(case.resource, ("cpu", "rq_delay"))
    fig, (a, b) = plt.subplots(2, 1, figsize=(8, 4.2), sharex=True)
    for tenant in case.tenants:
        t, v = samples.series(tenant, "watch", use)
        a.plot(t, v, label=tenant)
    t, v = samples.series("victim", "watch", symptom)
    b.plot(t, v, color="black", label=f"victim {symptom}")
    p = trial["params"]
    for ax in (a, b):
        ax.axvspan(p["t_start"], p["t_end"], color="orange", alpha=0.15)
        if p.get("t_use") is not None:  # when noisy began to use its resource
            ax.axvline(p["t_use"], color="orange", ls="--", lw=0.8)
    for e in events:
        if e["event"] not in ENDS:
            b.axvline(e["t"], color="red" if e["event"] == "blame" else "grey", lw=0.8)
            b.annotate(f"{e['victim']}←{e['culprit'] or '?'}" if e["event"] == "blame" else e["event"],
                       (e["t"], 0), fontsize=6, rotation=90, va="bottom")
    a.set_ylabel(use)
    b.set_ylabel(symptom)
    b.set_xlabel("s")
    a.legend(fontsize=7)
    beside = f" · {p['bystanders']} bystanders more" if p.get("bystanders") else ""
    a.set_title(f"{trial['runtime']} · {trial['case_name']} · rep {trial['repetition']}{beside}", fontsize=9)
    return fig


FRAMES = "frames"


def write_frames(directory: Path, store: Store) -> None:
    """Each trial's watch frames as `contend watch --record` writes them (frames/TRIAL.jsonl below the results
    directory), to replay through the detector (`contend watch --replay`): what it saw when it missed, or what a
    change to it would say. A trial id is a name, never a path (issue 95 H1)."""
    for t in store.trials():
        lines = [e["detail"] for e in store.events(t["trial_id"]) if e["kind"] == FRAME]
        if lines:
            write_under(directory, FRAMES, check_name(t["trial_id"], "trial id") + ".jsonl",
                        text="\n".join(lines) + "\n")


def refresh_detect(directory: Path, store: Store, title: str) -> Written:
    from ...report.page import read_yaml
    spec = read_yaml(directory / "spec.yaml")
    extra, events = analyze(store)
    rows = publish(directory, store, extra)
    tabs = tables(rows, failures(store), spec.get("runtimes", []), spec.get("cases", []))
    write_text(directory / "detect-tables.md", markdown_tables(tabs, title))
    figs = []
    for t in store.trials("ok"):
        f = timeline(t, store.samples(t["trial_id"]), events[t["trial_id"]])
        figs.append({"title": t["trial_id"], "png": save(f, directory, f"detect-{t['trial_id']}")})
    write_frames(directory, store)
    said = answers(rows, spec.get("runtimes", []), spec.get("cases", []))
    out = write_page(directory, kind_page(__file__), figs, tables=tabs, timelines=figs, answers=said,
                     events=[e for e in store.events() if e["kind"] not in (*VERDICTS, STEP, FRAME)])
    return Written(rows, out, rich_text_tables(tabs, title, compact=True), said)
