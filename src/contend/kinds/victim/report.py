"""The report of a victim study: the disk-fill attack (WISA 2025 Figs. 2-3: the victim's IOPS and latency per
runtime, baseline and under each attack; the disk as the host saw it) and the database victim (PDP 2015
Tables II-III: D per disruptor and transaction type; Fig. 5: TPS over time with the OOM kills marked).
Terminal tables, victim-tables.md, metrics.csv, figures/ and report.html, all from the store."""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ...metrics import aggregate
from ...paths import write_text
from ...report.figures import Figure, plt, save
from ...report.page import Written, publish, read_yaml, write_page
from ...report.table import TextTable, markdown_tables, mean_text, rich_text_tables
from ...store import Store
from .metrics import DISKFILL_RULES, OLTP_RULES, measured_windows, paired


# ------------------------------------------------------------------ metrics from the store
def victim_rows(store: Store, kind: str) -> list[dict]:
    """Per repetition paired, then mean and 95 % interval per cell (metrics.csv's rows)."""
    windows = [w for t in store.trials("ok") for w in measured_windows(
        store.samples(t["trial_id"]), store.steps(t["trial_id"]), t["runtime"], t["resource"], t["repetition"])]
    base, rules = ("baseline", DISKFILL_RULES) if kind == "diskfill" else ("base", OLTP_RULES)
    return aggregate(paired(windows, base, rules, alone=("calibration",)))


# ------------------------------------------------------------------ tables
def _notes_for(trials: list[dict], runtime: str, notes: list[str], resource: str | None = None) -> str:
    """The footnote marks of a runtime's trials (of one resource: a database) that failed or were not run,
    e.g. "failed (1)"."""
    marks = []
    for t in trials:
        if t["runtime"] == runtime and resource in (None, t["resource"]) and (t["status"] != "ok" or t["reason"]):
            if t["reason"] not in notes:
                notes.append(t["reason"])
            marks.append(f"{t['status'] if t['status'] != 'ok' else 'partly'} ({notes.index(t['reason']) + 1})")
    return ", ".join(dict.fromkeys(marks))


def diskfill_tables(rows: list[dict], trials: list[dict], runtimes: list[str], attacks: list[str]) -> list[TextTable]:
    """The baseline, then one table per attack: the victim's loss (guest view) next to the disk (host view)."""
    idx = {(r["runtime"], r["scenario"], r["view"], r["metric"]): r for r in rows}
    notes: list[str] = []
    names = {rt: rt + (f" {m}" if (m := _notes_for(trials, rt, notes)) else "") for rt in runtimes}
    base = [[names[rt]] + [mean_text(idx.get((rt, "baseline", "guest", m)), fmt) or "n/a"
                           for m, fmt in (("read_iops", ",.0f"), ("write_iops", ",.0f"), ("read_lat_us", ".0f"),
                                          ("write_lat_us", ".0f"), ("read_p99_us", ".0f"), ("write_p99_us", ".0f"))]
            for rt in runtimes]
    out = [TextTable("baseline: container D alone (A-C idle), guest view "
                     "(fio, direct I/O, read and write side by side)",
                       ["runtime", "read IOPS", "write IOPS", "read lat (µs)", "write lat (µs)", "read p99 (µs)",
                        "write p99 (µs)"], base)]
    for a in attacks:
        lines = []
        for rt in runtimes:
            line = [names[rt]]
            for m, fmt, suffix in (("read_iops_drop_pct", ".1f", " %"), ("write_iops_drop_pct", ".1f", " %"),
                                   ("read_iops_worst_drop_pct", ".1f", " %"), ("read_lat_x", ".1f", "×"),
                                   ("write_lat_x", ".1f", "×")):
                line.append(mean_text(idx.get((rt, a, "guest", m)), fmt, suffix) or "n/a")
            for m, fmt, suffix, scale in (("device_util", ".0f", " %", 100), ("device_queue_depth", ".1f", "", 1),
                                          ("attackers_charged_pct", ".0f", " %", 1),
                                          ("victim_charged_pct", ".0f", " %", 1)):
                line.append(mean_text(_scaled(idx.get((rt, a, "host", m)), scale), fmt, suffix) or "n/a")
            line.append(mean_text(idx.get((rt, a, "guest", "attack_s")), ".0f") or "n/a")
            lines.append(line)
        out.append(TextTable(
            f"{a}: D against its baseline (guest view: IOPS drop over the window and in its worst 500 ms, mean latency "
            "×) and the disk meanwhile (host view: "
            "utilisation, queue depth, the shares of its writes charged to the attackers' and to D's cgroups — the "
            "rest was issued outside every container, by the kernel's writeback; the attack's length)",
            ["runtime", "read IOPS drop", "write IOPS drop", "worst 0.5 s (read)", "read lat ×", "write lat ×",
             "disk util", "queue depth",
             "writes charged to A-C", "to D", "attack (s)"], lines))
    out[-1].notes = notes  # the runtimes' marks point at them from every table: said once, at the end
    return out


def _point(r: dict | None) -> dict | None:
    """The mean alone (its interval stays in metrics.csv)."""
    return None if r is None else {**r, "n": 1}


def _scaled(r: dict | None, k: float) -> dict | None:
    return None if r is None else {**r, **{f: r[f] * k for f in ("value", "ci_low", "ci_high")}}


def oltp_tables(rows: list[dict], trials: list[dict], runtimes: list[str], disruptors: list[str],
                events: list[dict] = ()) -> list[TextTable]:
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
            mark = _notes_for(trials, rt, notes, db)
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
            xs, ys, err = [], [], []
            for i, rt in enumerate(runtimes):
                r = idx.get((rt, ph, metric))
                if r is None or not math.isfinite(r["value"]):
                    continue
                xs.append(i + (j - (len(phases) - 1) / 2) * width)
                ys.append(r["value"])
                err.append((r["ci_high"] - r["ci_low"]) / 2 if math.isfinite(r["ci_low"]) else 0)
            ax.bar(xs, ys, width, yerr=err, capsize=2, label=ph)
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
             right: list[tuple[str, str, str, str, float]] = (), ylabel: str = "", rlabel: str = "",
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
def refresh_victim(directory: Path, store: Store, title: str):
    spec = read_yaml(directory / "spec.yaml")
    kind = spec.get("kind")
    runtimes = spec.get("runtimes", [])
    trials = store.trials()
    rows = publish(directory, store, victim_rows(store, kind))
    figdir = directory / "figures"
    if kind == "diskfill":
        attacks = [k for k, v in (spec.get("files") or {}).items() if v is not None]
        tables = diskfill_tables(rows, trials, runtimes, attacks)
        summary = [{"title": "the victim's IOPS and latency (WISA Figs. 2-3)", "png": save(bars_figure(
            rows, runtimes, ["baseline", *attacks],
            [("read_iops", "read IOPS", "IOPS"), ("write_iops", "write IOPS", "IOPS"),
             ("read_lat_us", "read latency (mean)", "µs"), ("write_lat_us", "write latency (mean)", "µs")],
            "container D: baseline and under each attack"), figdir / "diskfill-bars")}]
    else:
        disruptors = spec.get("disruptors", [])
        tables = oltp_tables(rows, trials, runtimes, disruptors, store.events())
        summary = []
        for res in sorted({r["resource"] for r in rows if r["metric"] == "D"}):
            sub = [r for r in rows if r["resource"] == res]
            summary.append({"title": f"{res}: TPS per disruptor", "png": save(bars_figure(
                sub, runtimes, ["base", *disruptors], [("tps", f"{res}: TPS", "transactions/s")],
                f"{res}: base and disturbed TPS"), figdir / f"oltp-{res.replace(':', '-')}")})
    write_text(directory / "victim-tables.md", markdown_tables(tables, title))
    timelines = []
    for t in store.trials("ok"):
        samples, steps, events = store.samples(t["trial_id"]), store.steps(t["trial_id"]), store.events(t["trial_id"])
        name = f"{t['runtime']} · {t['resource']} · rep {t['repetition']}"
        if kind == "diskfill":
            fig = timeline(name, samples, steps, events,
                           [("d", "guest", "read_iops_t", "D read IOPS"),
                            ("d", "guest", "write_iops_t", "D write IOPS")],
                           [("device", "device", "util", "disk util (%)", 100),
                            ("device", "device", "queue_depth", "queue depth", 1)], "IOPS", "% / requests")
        else:
            db = t["resource"]
            fig = timeline(name, samples, steps, events, [("victim", "guest", f"{db}/tps_t", f"{db} TPS")],
                           [("victim", "cgroup", "cpu", "victim CPUs (×100)", 100),
                            ("disruptor", "cgroup", "cpu", "disruptor CPUs (×100)", 100)],
                           "transactions/s", "CPUs × 100", zero_after="oom-kill")
        timelines.append({"title": name, "png": save(fig, figdir / f"timeline-{t['trial_id']}")})
    out = write_page(directory, "victim.html.j2", summary + timelines, tables=tables, summary=summary,
                     timelines=timelines, kind=kind,
                     events=[e for e in store.events() if e["kind"] not in ("attack-start",)])
    return Written(rows, out, rich_text_tables(tables, title))
