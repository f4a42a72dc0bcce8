"""The isolation study's report: metrics, metrics.csv, Table 4 per view, figures and report.html."""
from __future__ import annotations

from pathlib import Path

from ...paths import write_text
from ...report.figures import save
from ...report.page import Written, failures, fewer_repetitions, kind_page, write_page
from ...store import Store
from .analyze import analyze, settings, trial_curves
from .figures import heatmap_figure, isolation_figure, timeline_figure
from .table import HEADLINE, READ, TABLE4, answers, pivot, rich_views, table4, table4_markdown, views_in


def refresh_isolation(directory: Path, store: Store, title: str) -> Written:
    """Everything a results directory shows, from its store: metrics, metrics.csv, Table 4 per view
    (table4-<view>.md), figures, report.html; the answer per cell first (table.answers). The terminal gets Table
    4's metrics in the view the answers read (rich_views; every view with --views all)."""
    rows = analyze(directory, store)
    notes = failures(store)
    views = views_in(rows) or ["host"]
    tables = {view: table4(rows, notes, view, brackets=True) for view in views}
    for view, t4 in tables.items():
        write_text(directory / f"table4-{view}.md", table4_markdown(t4, f"{title} ({view} view)"))
    cfg = settings(directory)
    groups: dict[tuple, list] = {}  # each cell's curves per view, every repetition's
    for t in store.trials("ok"):
        for c in trial_curves(store, t, cfg):
            groups.setdefault((t["runtime"], t["scenario"], t["resource"], c.view), []).append(c)
    said = answers(rows, notes, groups)
    return Written(rows, build(directory, store, rows, notes, tables, groups, said), rich_views(rows, notes, title),
                   said, lambda shown: rich_views(rows, notes, title, shown))


def read_first(view: str) -> int:
    """The page's order of the views: the one the answers read first."""
    return READ.index(view) if view in READ else len(READ)


def build(directory: Path, store: Store, rows: list[dict], notes: dict[tuple, str], tables: dict[str, dict],
          groups: dict[tuple, list], said: list) -> Path:
    """Write figures/ and report.html (the answers first, then the Table 4 of each view); returns its path."""
    cfg = settings(directory)
    trials = store.trials("ok")
    timelines = []
    for t in trials:
        title = f"{t['runtime']} · {t['scenario']} · {t['resource']} · rep {t['repetition']}"
        png = save(timeline_figure(title, store.samples(t["trial_id"]), store.steps(t["trial_id"]), t,
                                   store.events(t["trial_id"])), directory, f"timeline-{t['trial_id']}")
        timelines.append({"title": title, "png": png})
    heatmaps = [{"title": f"Table 4 ({view} view)", "view": view,
                 "png": save(heatmap_figure(f"Table 4 as a heatmap ({view} view)", table4(rows, notes, view), TABLE4),
                            directory, f"heatmap-{view}")}
                for view in tables]  # the cells as the terminal shows them (mean ± half CI): they fit a square
    isolation = []
    for key, reps in sorted(groups.items()):
        title = " · ".join(key)
        png = save(isolation_figure(title, reps, cfg.threshold, cfg.alpha), directory, "isolation-" + "-".join(key))
        isolation.append({"title": title, "png": png})
    return write_page(
        directory, kind_page(__file__), heatmaps + isolation + timelines, n_ok=len(trials),
        n_trials=len(store.trials()),
        headline=HEADLINE, columns=("runtime", "scenario", "resource", "view", *HEADLINE, "n"),
        table=pivot(rows, notes), failed=store.trials("failed"), not_run=store.trials("n/a"),
        fewer=fewer_repetitions(store.trials()),
        t4cols=TABLE4, table4=[{"view": v, **tables[v]} for v in sorted(tables, key=read_first)],
        heatmaps=heatmaps, isolation=isolation, timelines=timelines, events=store.events(), answers=said)
