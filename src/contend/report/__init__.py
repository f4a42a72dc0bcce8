"""report: metrics from the store, the results table, figures and a self-contained report.html.

Reads only the results directory, so it works on a copy made on a machine without root.
"""
from __future__ import annotations

import base64
import json
import time
from dataclasses import dataclass
from pathlib import Path

import jinja2
import yaml
from rich.table import Table

from ..store import Store
from .analyze import analyze, settings, trial_curves
from .figures import isolation_graph, timeline
from .table import HEADLINE, pivot, rich_table

__all__ = ["Written", "analyze", "build", "failures", "refresh", "rich_table"]


@dataclass
class Written:
    rows: list[dict]  # the aggregated metrics, as in metrics.csv
    path: Path  # report.html
    table: Table  # the results table for the terminal


def refresh(directory: Path, store: Store, title: str) -> Written:
    """Everything a results directory shows, from its store: metrics, metrics.csv, figures, report.html."""
    rows = analyze(directory, store)
    return Written(rows, build(directory, store, rows), rich_table(rows, failures(store), title=title))


def failures(store: Store) -> dict[tuple, str]:
    return {(t["runtime"], t["scenario"], t["resource"]): t["reason"] for t in store.trials("failed")}


def build(directory: Path, store: Store, rows: list[dict]) -> Path:
    """Write figures/ and report.html; returns the report's path."""
    cfg = settings(directory)
    figdir = directory / "figures"
    trials = store.trials("ok")
    groups: dict[tuple, list] = {}
    timelines = []
    for t in trials:
        for c in trial_curves(store, t, cfg.trim):
            groups.setdefault((t["runtime"], t["scenario"], t["resource"], c.view), []).append(c)
        title = f"{t['runtime']} · {t['scenario']} · {t['resource']} · rep {t['repetition']}"
        png = timeline(figdir / f"timeline-{t['trial_id']}", title, store.samples(t["trial_id"]),
                       store.steps(t["trial_id"]), t, store.events(t["trial_id"]))
        timelines.append({"title": title, "png": png})
    isolation = []
    for key, reps in sorted(groups.items()):
        title = " · ".join(key)
        png = isolation_graph(figdir / ("isolation-" + "-".join(key)), title, reps, cfg.threshold, cfg.smooth)
        isolation.append({"title": title, "png": png})
    for f in isolation + timelines:
        f["data"] = base64.b64encode(f["png"].read_bytes()).decode()
    env = jinja2.Environment(loader=jinja2.PackageLoader("contend.report", "templates"), autoescape=True)
    spec = _read_yaml(directory / "spec.yaml")
    html = env.get_template("report.html.j2").render(
        name=spec.get("name", directory.name), description=spec.get("description", ""),
        host=_read_json(directory / "host.json"), n_ok=len(trials), n_trials=len(store.trials()),
        written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), headline=HEADLINE,
        columns=("runtime", "scenario", "resource", "view", *HEADLINE, "n"),
        table=pivot(rows, failures(store)), failed=store.trials("failed"),
        isolation=isolation, timelines=timelines, events=store.events())
    out = directory / "report.html"
    out.write_text(html)
    return out


def _read_yaml(p: Path) -> dict:
    try:
        return yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def _read_json(p: Path) -> dict:
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {"host": {}, "cgroups": {}}
