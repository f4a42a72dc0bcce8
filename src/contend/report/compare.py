"""`contend compare A B`: two results directories' metrics.csv side by side, for people and for CI."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..metrics.compare import Comparison, compare, regressions, tally
from ..store import METRICS_CSV, read_metrics_csv
from ..terminal import untrusted
from .table import cell

__all__ = ["as_json", "compare_dirs", "regressions", "rich_compare"]

STYLE = {"worse": "bold red", "better": "green", "same": "", "untested": "dim", "descriptive": "dim", "unknown": "dim",
         "not measured": "dim", "only in A": "yellow", "only in B": "yellow"}


def load(directory: Path) -> list[dict]:
    """A results directory's metrics (ValueError with one line when it has none or they do not parse)."""
    path = directory / METRICS_CSV
    if not directory.is_dir():
        raise ValueError(f"{directory}: no such results directory")
    if not path.is_file():
        raise ValueError(f"{directory}: no {METRICS_CSV} (run `contend report {directory}` to write it)")
    return read_metrics_csv(path)


def compare_dirs(a: Path, b: Path, min_change: float, directions: Mapping[str, int],
                 headlines: dict[str, int] | None = None) -> list[Comparison]:
    """`directions`: which way is better for each metric, `headlines`: the direction of a resource's headline
    figure where the kind says it (both the registry's)."""
    comps = compare(load(a), load(b), directions, min_change, headlines)
    if comps and all(c.verdict.startswith("only in") for c in comps):
        raise ValueError(f"{a} and {b} share no cell (runtime, scenario, resource, view, metric): not the same study")
    return comps


def as_json(a: Path, b: Path, min_change: float, comps: list[Comparison]) -> dict:
    return {"a": str(a), "b": str(b), "min_change": min_change, "tally": tally(comps),
            "worse": len(regressions(comps)), "comparisons": [c.as_dict() for c in comps]}


def _side(c) -> str:
    return "—" if c is None else cell(asdict(c))


def rich_compare(a: Path, b: Path, comps: list[Comparison], show_all: bool) -> Group:
    """The changed cells (every cell with show_all) and a line of counts."""
    shown = comps if show_all else [c for c in comps if c.verdict in ("worse", "better")]
    t = Table(title=untrusted(f"A = {a}   B = {b}"), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
              collapse_padding=True)
    t.add_column("cell", no_wrap=True)  # runtime/scenario/resource/view
    t.add_column("metric", no_wrap=True)
    for col in ("A", "B", "B−A"):
        t.add_column(col, justify="right", no_wrap=True)
    t.add_column("overlap", no_wrap=True)  # do the 95 % intervals overlap
    t.add_column("verdict", no_wrap=True)
    for c in shown:
        change = "" if c.change != c.change else f"{c.change:+.2f}"
        overlap = {True: "yes", False: "no", None: "—"}[c.overlap]
        t.add_row(untrusted("/".join((c.runtime, c.scenario, c.resource, c.view))), untrusted(c.metric), _side(c.a),
                  _side(c.b),
                  change, overlap, Text(c.verdict, style=STYLE[c.verdict]))
    counts = tally(comps)
    summary = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
    parts: list = [t] if shown else [Text("no cell changed significantly" + ("" if show_all else
                                                                              " (--all lists every cell)"))]
    parts.append(Text(f"{len(comps)} cells: {summary}"))
    if counts["untested"]:
        parts.append(Text(f"{counts['untested']} cells rest on one repetition on a side: no interval, so not "
                          "tested (run with --repetitions 3 or more to gate on them)", style="dim"))
    worse = regressions(comps)
    parts.append(Text(f"{len(worse)} significantly worse" if worse else "nothing significantly worse",
                      style="bold red" if worse else "green"))
    return Group(*parts)
