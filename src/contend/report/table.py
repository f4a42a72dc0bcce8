"""What every kind's tables share: a mean with its interval as text, a string from a file contend did not write
made safe, captioned text tables for the terminal and markdown. (The isolation study's Table 4 is its own:
kinds/isolation/table.py.)"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Iterable

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text


def spread(r: dict, fmt: str, sep: str = "") -> str:
    """What follows a mean: `sep`±half its 95 % interval, or ` [low, high]` where the interval is not centred on
    the mean at the shown precision (clipped at its metric's edge, metrics.bounds; a bootstrap's): there ±
    half its width would misstate both ends. '' without one (n < 2)."""
    if r["n"] < 2 or not math.isfinite(r["ci_low"]):
        return ""
    plain = fmt.lstrip("+")
    below, above = (format(abs(x), plain) for x in (r["value"] - r["ci_low"], r["ci_high"] - r["value"]))
    if below != above:
        return f" [{format(r['ci_low'], fmt)}, {format(r['ci_high'], fmt)}]"
    return f"{sep}±{format((r['ci_high'] - r['ci_low']) / 2, plain)}"


def ci_text(r: dict, brackets: bool) -> str:
    """mean ± half-width (terminal) or mean [low, high] (files, and where the interval was clipped); the mean
    alone when n < 2."""
    if r["n"] < 2 or math.isnan(r["ci_low"]):
        return f"{r['value']:.2f}"
    if brackets:
        return f"{r['value']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    return f"{r['value']:.2f}{spread(r, '.2f')}"


def cell(r: dict | None) -> str:
    if r is None or r["value"] is None or math.isnan(r["value"]):
        return "n/a"
    return ci_text(r, brackets=False)


# ---------------------------------------------------------------- Volpert et al. Table 4
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # a terminal's escapes, kept: tab and newline


def untrusted(text) -> Text:
    """A string from a file contend did not write (metrics.csv, trial.json) as plain text: never Rich markup (a
    `[/oops]` was a traceback), never a terminal escape (one cleared the screen): issue 52 L2."""
    return Text(CONTROL.sub("?", str(text)))


# ------------------------------------------------------------------ captioned text tables (parallel, victim)
def mean_text(r: dict | None, fmt: str, suffix: str = "") -> str | None:
    """mean[suffix] ± half the 95 % interval (n >= 2; [low, high] where it was clipped); None where nothing was
    measured."""
    if r is None or not math.isfinite(r["value"]):
        return None
    return format(r["value"], fmt) + suffix + spread(r, fmt, " ")


@dataclass
class TextTable:
    """A captioned table of text cells; its first `left` columns are names (aligned left); footnotes after it."""

    caption: str
    heads: list[str]
    lines: list[list[str]]
    notes: list[str] = field(default_factory=list)
    left: int = 1


def rich_text_tables(tables: Iterable[TextTable], title: str, compact: bool = False) -> Group:
    """compact: no vertical rules (an 80-column terminal, a pipe)."""
    parts: list = []
    for t in tables:
        tab = (Table(title=f"{title}: {t.caption}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
               if compact else Table(title=f"{title}: {t.caption}", title_justify="left"))
        for i, h in enumerate(t.heads):
            tab.add_column(h, justify="left" if i < t.left else "right", no_wrap=compact and i < t.left)
        for line in t.lines:
            tab.add_row(*line)
        parts.append(tab)
        parts += [f"  ({i}) {n}" for i, n in enumerate(t.notes, 1)]
    return Group(*parts)


def markdown_tables(tables: Iterable[TextTable], title: str, intro: str = "") -> str:
    out = [f"# {title}", ""] + ([intro, ""] if intro else [])
    for t in tables:
        out += [f"## {t.caption}", "", "| " + " | ".join(t.heads) + " |", "|" + "---|" * len(t.heads)]
        out += ["| " + " | ".join(line) + " |" for line in t.lines]
        out += [""] + [f"({i}) {n}" for i, n in enumerate(t.notes, 1)] + ([""] if t.notes else [])
    return "\n".join(out)
