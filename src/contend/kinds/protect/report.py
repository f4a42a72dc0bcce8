"""The report of a protect study: each trial's protection (metrics.py, pure) from the tenants' own counters, per
runtime a table of case × mode (terminal, protect-tables.md, report.html), the answer per case first, a
timeline per trial (the victim's rate and the culprits', protect's actions marked)."""
from __future__ import annotations

import json
import math

from ...paths import write_text
from ...report.answer import BAD, GOOD, UNSURE, Answer, finite, interval, judge
from ...report.figures import Figure, plt, save
from ...report.page import Written, failures, kind_page, publish, write_page
from ...report.table import TextTable, markdown_tables, rich_text_tables
from ...store import Store
from ..detect.cases import CASES
from ..detect.metrics import VICTIM
from .metrics import protection, rates
from .trial import ACTION

VIEW = "protect"
COLUMNS = (("isolation", "isolation"), ("p05", "p05"), ("reaction_s", "reaction s"), ("culprit_kept", "culprit kept"),
           ("actions", "actions"), ("control_actions", "on controls"), ("settings_left", "left"))


def judged(trial: dict, samples) -> dict[str, float]:
    """One stored trial's figures: its victim's protection (where its resource's counters were read: cpu, disk;
    memory: what its processes read; network: what its agents sent) and what protect did."""
    p, case = trial["params"], CASES[trial["case_name"]]
    out: dict[str, float] = {}
    if samples is not None and case.antagonist:
        use = {n: list(zip(*samples.series(n, "truth", case.resource))) for n in case.tenants}
        began = p.get("t_use") if p.get("t_use") is not None else p["t_start"]
        # the attack as planned: a culprit held back may take longer to end than it was given (fio drains its
        # queue under the cap), and the victim's load ends with the trial's plan, not with it
        end = min(p["t_end"], p["t_start"] + p["trial"]["attack_s"])
        out.update(protection(use[VICTIM], {n: use[n] for n in case.antagonists}, began, end))
    if trial["mode"] == "protect":
        out["actions"] = float(p.get("actions", 0))
        if not case.antagonist:
            out["control_actions"] = float(p.get("actions", 0))
    out["settings_left"] = float(p.get("settings_left", 0))
    return out


def analyze(store: Store) -> list[dict]:
    """Per-trial figures into the store; the culprits' work kept under each mode against no action's as extra
    rows (work conservation)."""
    rate: dict[tuple, list[float]] = {}
    for t in store.trials("ok"):
        m = judged(t, store.samples(t["trial_id"]))
        store.set_trial_metrics(t["trial_id"], [(VIEW, k, v) for k, v in m.items()])
        if finite(m.get("culprit_rate")):
            rate.setdefault((t["runtime"], t["case_name"], t["mode"]), []).append(m["culprit_rate"])
    extra = []
    for (rt, case, mode), xs in rate.items():
        none = rate.get((rt, case, "none"))
        if none and sum(none) > 0:
            extra.append({"runtime": rt, "scenario": case, "resource": mode, "view": VIEW, "metric": "culprit_kept",
                          "value": min(1.0, (sum(xs) / len(xs)) / (sum(none) / len(none))), "ci_low": math.nan,
                          "ci_high": math.nan, "n": len(xs)})
    return extra


def answers(rows: list[dict], runtimes: list[str], cases: list[str], modes: list[str]) -> list[Answer]:
    """Per runtime × case (pure): under protect, is the victim isolated (judge, on its isolation), with no
    action's and the fixed policy's beside it; in a control, did protect act (never: quiet)?"""
    cells = {(r["runtime"], r["scenario"], r["resource"], r["metric"]): r for r in rows if r["view"] == VIEW}
    out = []
    for rt in runtimes:
        for case in cases:
            subject = (rt, CASES[case].resource, case)
            if not CASES[case].antagonist:
                r = cells.get((rt, case, "protect", "control_actions"))
                if r is None or not finite(r["value"]):
                    out.append(Answer(subject, "n/a", UNSURE, "nothing measured", card=(rt,)))
                    continue
                out.append(Answer(subject, "quiet" if r["value"] == 0 else "ACTED ON A CONTROL",
                                  GOOD if r["value"] == 0 else BAD, f"actions {r['value']:.1f} a trial, n={r['n']}",
                                  card=(rt,)))
                continue
            r = cells.get((rt, case, "protect", "isolation"))
            if r is None:
                out.append(Answer(subject, "n/a", UNSURE, "no protect trial measured", card=(rt,)))
                continue
            word, tone, why = judge(r["value"], r["ci_low"], r["ci_high"], r["n"])
            beside = [f"{m} {cells[(rt, case, m, 'isolation')]['value']:.2f}" for m in modes
                      if m != "protect" and (rt, case, m, "isolation") in cells]
            out.append(Answer(subject, word, tone, f"under protect: isolation {interval(r)}"
                              + (f"; {', '.join(beside)}" if beside else ""), why, card=(rt,)))
    return out


def tables(rows: list[dict], failed: dict[tuple, str], runtimes: list[str], cases: list[str],
           modes: list[str]) -> list[TextTable]:
    cells = {(r["runtime"], r["scenario"], r["resource"], r["metric"]): r for r in rows if r["view"] == VIEW}
    out: list[TextTable] = []
    for rt in runtimes:
        lines = []
        for case in cases:
            for mode in (modes if CASES[case].antagonist else ["protect"]):
                n = max((r["n"] for (a, b, c, _), r in cells.items() if (a, b, c) == (rt, case, mode)), default=0)
                why = failed.get((rt, case, mode))
                lines.append([case, mode, str(n), *(_fmt(m, cells.get((rt, case, mode, m))) if n or not why else "n/a"
                                                    for m, _ in COLUMNS)])
        notes = [f"{case} {mode}: {why}" for (r, case, mode), why in failed.items() if r == rt]
        if not out:
            notes.insert(0, "isolation: the victim's rate against its calm level period by period (each at most "
                            "1) over the attack; p05: its 5th percentile period by period once the mode reacted; "
                            "reaction: from the harm's start (the victim's first period below 95 %) until it is back "
                            "within 5 %; culprit "
                            "kept: the antagonists' work against no action's; left: settings left after the run")
        out.append(TextTable(rt, ["case", "mode", "n", *(h for _, h in COLUMNS)], lines, notes))
    return out


def _fmt(metric: str, r: dict | None) -> str:
    if r is None or not finite(r["value"]):
        return "-"
    if metric in ("actions", "control_actions", "settings_left"):
        return f"{r['value']:.1f}"
    return interval(r).rsplit(",", 1)[0]


def timeline(trial: dict, samples, actions: list[dict]) -> Figure:
    """The victim's and the antagonists' rates over the trial, the attack shaded, protect's actions marked."""
    case, p = CASES[trial["case_name"]], trial["params"]
    fig, ax = plt.subplots(figsize=(8, 3))
    unit = {"disk": 1e6, "memory": 1e6, "network": 1e6 / 8}.get(case.resource, 1.0)
    for n in case.tenants:
        starts, ends, r = rates(list(zip(*samples.series(n, "truth", case.resource))))
        if len(r):
            ax.step(ends, r / unit, where="pre", label=n)
    ax.axvspan(p["t_start"], p["t_end"], color="orange", alpha=0.15)
    for a in actions:
        ax.axvline(a["t"], color="red" if a["action"] == "tighten" else "green", lw=0.7)
    ax.set_ylabel({"cpu": "CPUs", "memory": "MB/s read", "network": "Mbit/s"}.get(case.resource, "MB/s"))
    ax.set_xlabel("s")
    ax.legend(fontsize=7)
    ax.set_title(f"{trial['runtime']} · {trial['case_name']} · {trial['mode']} · rep {trial['repetition']}", fontsize=9)
    return fig


def refresh_protect(directory, store: Store, title: str) -> Written:
    from ...report.page import read_yaml
    spec = read_yaml(directory / "spec.yaml")
    runtimes, cases = spec.get("runtimes", []), spec.get("cases", [])
    modes = spec.get("modes", ["none", "protect", "fixed"])
    rows = publish(directory, store, analyze(store))
    tabs = tables(rows, failures(store), runtimes, cases, modes)
    write_text(directory / "protect-tables.md", markdown_tables(tabs, title))
    figs = []
    for t in store.trials("ok"):
        if not CASES[t["case_name"]].antagonist:
            continue
        acts = [json.loads(e["detail"]) for e in store.events(t["trial_id"]) if e["kind"] == ACTION]
        f = timeline(t, store.samples(t["trial_id"]), acts)
        figs.append({"title": t["trial_id"], "png": save(f, directory, f"protect-{t['trial_id']}")})
    said = answers(rows, runtimes, cases, modes)
    out = write_page(directory, kind_page(__file__), figs, tables=tabs, timelines=figs, answers=said,
                     events=[e for e in store.events() if e["kind"] == ACTION])
    return Written(rows, out, rich_text_tables(tabs, title, compact=True), said)
