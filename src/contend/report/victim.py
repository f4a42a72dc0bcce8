"""What the two victim kinds' reports share (kinds/diskfill, kinds/oltp): metrics.csv's rows from the store,
the runtimes' footnote marks, the grouped bars, a trial's timeline and the page (victim.html.j2). Each kind's
report.py makes its own tables and summary figures on these."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..metrics import aggregate
from ..metrics.victim import measured_windows, paired
from ..paths import write_text
from ..store import Store
from .answer import Answer
from .figures import Figure, plt, save
from .page import Written, write_page
from .table import TextTable, markdown_tables, rich_text_tables


# ------------------------------------------------------------------ metrics from the store
def victim_rows(store: Store, base: str, rules: dict[str, tuple]) -> list[dict]:
    """Per repetition paired (each window against the `base` window by `rules`), then mean and 95 % interval
    per cell (metrics.csv's rows)."""
    windows = [w for t in store.trials("ok") for w in measured_windows(
        store.samples(t["trial_id"]), store.steps(t["trial_id"]), t["runtime"], t["resource"], t["repetition"])]
    return aggregate(paired(windows, base, rules, alone=("calibration",)))


# ------------------------------------------------------------------ tables
def notes_for(trials: list[dict], runtime: str, notes: list[str], resource: str | None = None) -> str:
    """The footnote marks of a runtime's trials (of one resource: a database) that failed or were not run,
    e.g. "failed (1)"."""
    marks = []
    for t in trials:
        if t["runtime"] == runtime and resource in (None, t["resource"]) and (t["status"] != "ok" or t["reason"]):
            if t["reason"] not in notes:
                notes.append(t["reason"])
            marks.append(f"{t['status'] if t['status'] != 'ok' else 'partly'} ({notes.index(t['reason']) + 1})")
    return ", ".join(dict.fromkeys(marks))


# ------------------------------------------------------------------ figures
def bars_figure(rows: list[dict], runtimes: list[str], phases: list[str], groups: list[tuple[str, str, str]],
                title: str) -> Figure:
    """Grouped bars per runtime: one bar per phase, one panel per (metric, label, unit); log scale, 95 % CI."""
    cols = min(2, len(groups))
    rows_ = math.ceil(len(groups) / cols)
    fig, axes = plt.subplots(rows_, cols, figsize=(5.2 * cols, 3.4 * rows_), squeeze=False)
    axes = axes.ravel()
    idx = {(r["runtime"], r["scenario"], r["metric"]): r for r in rows if r["view"] == "guest"}
    width = 0.8 / max(1, len(phases))
    for ax, (metric, label, unit) in zip(axes, groups):
        drawn: list[float] = []
        for j, ph in enumerate(phases):
            xs, ys, below, above = [], [], [], []
            for i, rt in enumerate(runtimes):
                r = idx.get((rt, ph, metric))
                if r is None or not math.isfinite(r["value"]):
                    continue
                xs.append(i + (j - (len(phases) - 1) / 2) * width)
                ys.append(r["value"])
                known = math.isfinite(r["ci_low"])  # an interval clipped at its metric's edge is not symmetric
                below.append(r["value"] - r["ci_low"] if known else 0)
                above.append(r["ci_high"] - r["value"] if known else 0)
            ax.bar(xs, ys, width, yerr=[below, above], capsize=2, label=ph)
            drawn += ys
        ax.set_xticks(range(len(runtimes)), runtimes)
        if drawn and min(drawn) > 0:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "" if drawn else "nothing measured", transform=ax.transAxes, ha="center",
                    color="grey")
        ax.set_ylabel(unit)
        ax.set_title(label)
        ax.grid(alpha=0.3, axis="y")
    if axes[0].get_legend_handles_labels()[0]:
        fig.legend(*axes[0].get_legend_handles_labels(), fontsize=8, loc="upper right", ncol=len(phases))
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def timeline(title: str, samples, steps, events: list[dict], series: list[tuple[str, str, str, str]],
             right: Sequence[tuple[str, str, str, str, float]] = (), ylabel: str = "", rlabel: str = "",
             zero_after: str = "") -> Figure:
    """Left axis: `series` (tenant, source, quantity, label); right axis: `right` (…, scale); each window
    shaded and named; events marked. zero_after: the event kind after which seconds at zero are shaded red
    (PDP 2015 Fig. 5's time-slice A: transactions at 0 after an OOM kill)."""
    fig, ax = plt.subplots(figsize=(9, 3.6))
    for tenant, source, quantity, label in series:
        t, v = _gaps(*samples.series(tenant, source, quantity))
        if len(t):
            ax.plot(t, v, lw=1.2, label=label)
            zero = np.nan_to_num(v, nan=1.0) <= 0
            if zero_after and zero.any() and any(e["kind"] == zero_after for e in events):
                ax.fill_between(t, 0, np.nanmax(v), where=zero, color="tab:red", alpha=0.25, lw=0, step="mid",
                                label=f"{label} at 0 (after an OOM kill: PDP Fig. 5's time-slice A)")
    if right:
        rx = ax.twinx()
        for tenant, source, quantity, label, scale in right:
            t, v = _gaps(*samples.series(tenant, source, quantity))
            if len(t):
                rx.plot(t, v * scale, lw=0.8, ls="--", alpha=0.8, label=label)
        rx.set_ylabel(rlabel)
        rx.set_ylim(bottom=0)
        if rx.get_legend_handles_labels()[0]:
            rx.legend(fontsize=7, loc="upper right")
    for k, st in enumerate(sorted(steps, key=lambda s: s.t_start)):
        ax.axvspan(st.t_start, st.t_end, color=f"C{k % 10}", alpha=0.08)
        ax.annotate(st.phase, (st.t_start, 1.0), xycoords=("data", "axes fraction"), fontsize=7, va="top")
    kinds = set()
    for e in events:
        if e["kind"] in ("oom-kill", "attack-done", "attack-failed", "attack-stopped", "disruptor-failed"):
            ax.axvline(e["t"], color="black" if e["kind"] == "oom-kill" else "grey", lw=0.6, alpha=0.7,
                       label=e["kind"] if e["kind"] not in kinds else None)
            kinds.add(e["kind"])
    ax.set_xlabel("time since the trial's probes started (s)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="upper left", ncol=2)
    return fig


def _gaps(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A series with NaN where it was not measured (between windows), so no line bridges the gap."""
    if len(t) < 3:
        return t, v
    gap = np.diff(t) > 3 * np.median(np.diff(t))
    cut = np.flatnonzero(gap) + 1
    return np.insert(t.astype(float), cut, np.nan), np.insert(v.astype(float), cut, np.nan)


# ------------------------------------------------------------------ the results directory
def victim_page(directory: Path, store: Store, title: str, kind: str, rows: list[dict], tables: list[TextTable],
                summary: list[dict], timeline_of: Callable[[str, dict, object, object, list[dict]], Figure],
                answers: Sequence[Answer] = ()) -> Written:
    """victim-tables.md, a timeline per measured trial (`timeline_of(name, trial, samples, steps, events)`) and
    report.html, after the kind's own tables and summary figures."""
    write_text(directory / "victim-tables.md", markdown_tables(tables, title))
    timelines = []
    for t in store.trials("ok"):
        samples, steps, events = store.samples(t["trial_id"]), store.steps(t["trial_id"]), store.events(t["trial_id"])
        name = f"{t['runtime']} · {t['resource']} · rep {t['repetition']}"
        fig = timeline_of(name, t, samples, steps, events)
        timelines.append({"title": name, "png": save(fig, directory, f"timeline-{t['trial_id']}")})
    out = write_page(directory, "victim.html.j2", summary + timelines, tables=tables, summary=summary,
                     timelines=timelines, kind=kind, answers=list(answers),
                     events=[e for e in store.events() if e["kind"] not in ("attack-start",)])
    return Written(rows, out, rich_text_tables(tables, title), list(answers))
