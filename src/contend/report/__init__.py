"""report: metrics from the store, the results table, figures and a self-contained report.html.

Reads only the results directory, so it works on a copy made on a machine without root.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Group

from ..store import Store
from .analyze import analyze, settings, trial_curves
from .figures import heatmap_figure, isolation_figure, save, timeline_figure
from .page import read_yaml, write_page
from .table import HEADLINE, TABLE4, pivot, rich_views, table4, table4_markdown, views_in

__all__ = ["Written", "analyze", "build", "failures", "refresh", "rich_views"]


@dataclass
class Written:
    rows: list[dict]  # the aggregated metrics, as in metrics.csv
    path: Path  # report.html
    table: Group  # the results table(s) for the terminal


def refresh(directory: Path, store: Store, title: str) -> Written:
    """Everything a results directory shows, from its store: metrics, metrics.csv, Table 4 per view
    (table4-<view>.md), figures, report.html. The terminal gets Table 4's metrics with every view side by
    side (rich_views)."""
    kind = read_yaml(directory / "spec.yaml").get("kind")
    if kind == "guard":
        from .protection import refresh_protection
        return refresh_protection(directory, store, title)
    if kind == "parallel":
        from .scaling import refresh_scaling
        return refresh_scaling(directory, store, title)
    if kind in ("diskfill", "oltp"):
        from .victim import refresh_victim
        return refresh_victim(directory, store, title)
    rows = analyze(directory, store)
    notes = failures(store)
    views = views_in(rows) or ["host"]
    tables = {view: table4(rows, notes, view, brackets=True) for view in views}
    for view, t4 in tables.items():
        (directory / f"table4-{view}.md").write_text(table4_markdown(t4, f"{title} ({view} view)"))
    table = rich_views(rows, notes, title)
    return Written(rows, build(directory, store, rows, notes, tables), table)


def fewer_repetitions(trials: list[dict]) -> list[str]:
    """Cells that rest on fewer repetitions than planned because some of their trials failed, one line each
    (a cell whose every trial failed is n/a in the tables instead)."""
    cells: dict[tuple, list[dict]] = {}
    for t in trials:
        if t["status"] != "n/a":
            cells.setdefault((t["runtime"], t["scenario"], t["resource"]), []).append(t)
    out = []
    for key, ts in sorted(cells.items()):
        bad = [t for t in ts if t["status"] == "failed"]
        if bad and len(bad) < len(ts):
            why = "; ".join(f"r{t['repetition']}: {t['reason']}" for t in bad)
            out.append(f"{' · '.join(key)}: {len(ts) - len(bad)} of {len(ts)} repetitions ({why})")
    return out


def failures(store: Store) -> dict[tuple, str]:
    """Why a cell has no value: its trials' reasons (failed, or n/a: not run here)."""
    out: dict[tuple, str] = {}
    for t in store.trials():
        if t["status"] != "ok":
            out.setdefault((t["runtime"], t["scenario"], t["resource"]), t["reason"])
    return out


def build(directory: Path, store: Store, rows: list[dict], notes: dict[tuple, str], tables: dict[str, dict]) -> Path:
    """Write figures/ and report.html (with the Table 4 of each view); returns the report's path."""
    cfg = settings(directory)
    figdir = directory / "figures"
    trials = store.trials("ok")
    groups: dict[tuple, list] = {}
    timelines = []
    for t in trials:
        for c in trial_curves(store, t, cfg):
            groups.setdefault((t["runtime"], t["scenario"], t["resource"], c.view), []).append(c)
        title = f"{t['runtime']} · {t['scenario']} · {t['resource']} · rep {t['repetition']}"
        png = save(timeline_figure(title, store.samples(t["trial_id"]), store.steps(t["trial_id"]), t,
                                   store.events(t["trial_id"])), figdir / f"timeline-{t['trial_id']}")
        timelines.append({"title": title, "png": png})
    heatmaps = [{"title": f"Table 4 ({view} view)", "view": view,
                 "png": save(heatmap_figure(f"Table 4 as a heatmap ({view} view)", table4(rows, notes, view), TABLE4),
                            figdir / f"heatmap-{view}")}
                for view in tables]  # the cells as the terminal shows them (mean ± half CI): they fit a square
    isolation = []
    for key, reps in sorted(groups.items()):
        title = " · ".join(key)
        png = save(isolation_figure(title, reps, cfg.threshold, cfg.alpha), figdir / ("isolation-" + "-".join(key)))
        isolation.append({"title": title, "png": png})
    return write_page(
        directory, "report.html.j2", heatmaps + isolation + timelines, n_ok=len(trials), n_trials=len(store.trials()),
        headline=HEADLINE, columns=("runtime", "scenario", "resource", "view", *HEADLINE, "n"),
        table=pivot(rows, notes), failed=store.trials("failed"), not_run=store.trials("n/a"),
        fewer=fewer_repetitions(store.trials()),
        t4cols=TABLE4, table4=[{"view": v, **t4} for v, t4 in tables.items()],
        heatmaps=heatmaps, isolation=isolation, timelines=timelines, events=store.events())
