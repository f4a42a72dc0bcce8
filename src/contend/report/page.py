"""What every kind's report shares: what a refresh wrote (Written), the failed cells, and report.html of any
results directory (the template rendered with the spec's name and description, the host's facts and the
figures embedded: the page opens offline)."""
from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import yaml
from rich.console import Group

from ..metrics import aggregate
from ..paths import write_text
from ..store import METRICS_CSV, Store, write_metrics_csv
from .answer import Answer, cards
from .table import Fitted, answers_block


def kind_page(module_file: str) -> Path:
    """A kind's page: report.html.j2 in its own folder (`kind_page(__file__)` from its report.py)."""
    return Path(module_file).parent / "report.html.j2"


def write_page(directory: Path, template: str | Path, embedded: list[dict], **context) -> Path:
    """The page `template` (a kind's own file, or a name among report/templates/, which a kind's page includes
    from) rendered to report.html. embedded: the figures, dicts with a "png" path each; they get their "data"
    (base64) here."""
    for f in embedded:
        f["data"] = base64.b64encode(f["png"].read_bytes()).decode()
    shared = jinja2.PackageLoader("contend.report", "templates")
    own = [jinja2.FileSystemLoader(template.parent)] if isinstance(template, Path) else []
    # a host.json missing or cut short (an artifact copied by hand) leaves its facts blank, not a traceback
    env = jinja2.Environment(loader=jinja2.ChoiceLoader([*own, shared]), autoescape=True,
                             undefined=jinja2.ChainableUndefined)
    spec = read_yaml(directory / "spec.yaml")
    context["answer_cards"] = cards(context.pop("answers", []))  # the first screen: _answers.html.j2
    html = env.get_template(template.name if isinstance(template, Path) else template).render(
        name=spec.get("name", directory.name), description=spec.get("description", ""),
        host=read_json(directory / "host.json"), written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        **context)
    out = directory / "report.html"
    write_text(out, html)
    return out


def read_yaml(p: Path) -> dict:
    try:
        return yaml.safe_load(p.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}


def read_json(p: Path) -> dict:
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {"host": {}, "cgroups": {}}


@dataclass
class Written:
    rows: list[dict]  # the aggregated metrics, as in metrics.csv
    path: Path  # report.html
    table: Group  # the results table(s) for the terminal, in the view(s) shown by default
    answers: list[Answer] = field(default_factory=list)  # the answer per cell, said first (report/answer.py)
    views: Callable[[str], Group] | None = None  # the tables in other views (`--views all`), where a kind has them

    def terminal(self, title: str, views: str = "read") -> Group:
        """What the terminal shows: the answers first, then the tables (folded where too wide: never cut)."""
        table = self.table if views == "read" or self.views is None else self.views(views)
        return Group(Fitted(answers_block(self.answers, title)), Fitted(table))

    def as_json(self) -> dict:
        return {"answers": [a.as_json() for a in self.answers], "metrics": self.rows}


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


def publish(directory: Path, store: Store, extra: Sequence[dict] = ()) -> list[dict]:
    """The stored per-trial metrics aggregated (mean, CI) per cell, with `extra` rows, into the store's
    metrics table and metrics.csv."""
    rows = aggregate(store.trial_metric_rows()) + list(extra)
    rows.sort(key=lambda r: (r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"]))
    store.set_metrics(rows)
    write_metrics_csv(directory / METRICS_CSV, rows)
    return rows
