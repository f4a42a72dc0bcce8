"""The disk-fill study's report (WISA 2025 Figs. 2-3): the victim's IOPS and latency per runtime, baseline and
under each attack; the disk as the host saw it. Terminal tables, victim-tables.md, metrics.csv, figures/ and
report.html, all from the store."""
from __future__ import annotations

from pathlib import Path

from ...report.answer import Answer, as_kept, retained_answer
from ...report.figures import Figure, save
from ...report.page import Written, publish, read_yaml
from ...report.table import TextTable, mean_text
from ...report.victim import bars_figure, notes_for, timeline, victim_page, victim_rows
from ...store import Store
from .metrics import DISKFILL_RULES


def diskfill_tables(rows: list[dict], trials: list[dict], runtimes: list[str], attacks: list[str]) -> list[TextTable]:
    """The baseline, then one table per attack: the victim's loss (guest view) next to the disk (host view)."""
    idx = {(r["runtime"], r["scenario"], r["view"], r["metric"]): r for r in rows}
    notes: list[str] = []
    names = {rt: rt + (f" {m}" if (m := notes_for(trials, rt, notes)) else "") for rt in runtimes}
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


def answers(rows: list[dict], runtimes: list[str], attacks: list[str]) -> list[Answer]:
    """Per runtime × attack (pure): is the victim isolated from the disk-fill? The IOPS it kept (1 − its drop) on
    the side it lost more, read or write, judged (report/answer.py)."""
    idx = {(r["runtime"], r["scenario"], r["metric"]): r for r in rows if r["view"] == "guest"}
    out = []
    for rt in runtimes:
        for a in attacks:
            kept = [(side, k) for side in ("read", "write")
                    if (k := as_kept(idx.get((rt, a, f"{side}_iops_drop_pct")))) is not None]
            side, worse = min(kept, key=lambda x: x[1]["value"]) if kept else ("read", None)
            out.append(retained_answer((rt, "disk", a), f"{side} IOPS kept", worse, card=(rt, "disk")))
    return out


def _scaled(r: dict | None, k: float) -> dict | None:
    return None if r is None else {**r, **{f: r[f] * k for f in ("value", "ci_low", "ci_high")}}


def _timeline(name: str, trial: dict, samples, steps, events: list[dict]) -> Figure:
    return timeline(name, samples, steps, events,
                    [("d", "guest", "read_iops_t", "D read IOPS"), ("d", "guest", "write_iops_t", "D write IOPS")],
                    [("device", "device", "util", "disk util (%)", 100),
                     ("device", "device", "queue_depth", "queue depth", 1)], "IOPS", "% / requests")


def refresh_diskfill(directory: Path, store: Store, title: str) -> Written:
    spec = read_yaml(directory / "spec.yaml")
    runtimes = spec.get("runtimes", [])
    rows = publish(directory, store, victim_rows(store, "baseline", DISKFILL_RULES))
    attacks = [k for k, v in (spec.get("files") or {}).items() if v is not None]
    tables = diskfill_tables(rows, store.trials(), runtimes, attacks)
    summary = [{"title": "the victim's IOPS and latency (WISA Figs. 2-3)", "png": save(bars_figure(
        rows, runtimes, ["baseline", *attacks],
        [("read_iops", "read IOPS", "IOPS"), ("write_iops", "write IOPS", "IOPS"),
         ("read_lat_us", "read latency (mean)", "µs"), ("write_lat_us", "write latency (mean)", "µs")],
        "container D: baseline and under each attack"), directory, "diskfill-bars")}]
    return victim_page(directory, store, title, "diskfill", rows, tables, summary, _timeline,
                       answers(rows, runtimes, attacks))
