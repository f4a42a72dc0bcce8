"""What every kind's tables share: a mean with its interval as text, captioned text tables for the terminal and
markdown. (The isolation study's Table 4 is its own: kinds/isolation/table.py; a string from a file contend did
not write is made safe by terminal.untrusted.)"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich import box
from rich.console import Console, ConsoleOptions, Group
from rich.measure import Measurement
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


# ------------------------------------------------------------------ tables that fit, answers first (issue 97)
class Fitted:
    """A renderable (a Table, or a Group of them and text) that never cuts a cell or a label: a table wider
    than the console is folded, one block per row (its label columns as the block's heading, then each other
    column as `head: value`), where Rich would have cut its cells to `…`. Text wraps at words as ever."""

    def __init__(self, renderable):
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions):
        yield from _fit(self.renderable, console, options)


def _fit(r, console: Console, options: ConsoleOptions):
    if isinstance(r, Group):
        for part in r.renderables:
            yield from _fit(part, console, options)
    elif isinstance(r, Table):
        yield r if width_needed(console, r) <= options.max_width else folded(r)
    else:
        yield r


def width_needed(console: Console, table: Table) -> int:
    """The fewest columns a table takes with no cell cut (Rich's minimum: a no_wrap column's widest cell, a
    wrapping column's longest word, the borders and padding)."""
    return Measurement.get(console, console.options.update(width=10_000, max_width=10_000), table).minimum


def _text(cell) -> str:
    if isinstance(cell, Text):
        return cell.plain
    return Text.from_markup(cell).plain if isinstance(cell, str) else str(cell)


def folded(table: Table) -> Group:
    """The table as blocks, one a row: its leading left-justified columns (names) as the heading, carried down where a
    row leaves them blank (as the tables do under a runtime's first row), the others as `head: value` lines."""
    cols = table.columns
    names = []  # the leading left-justified columns (a note at the end is a value, not a name)
    for i, c in enumerate(cols):
        if c.justify not in ("left", "default", None):
            break
        names.append(i)
    names = names or [0]
    title = table.title if table.title is not None else ""
    out: list = [Text(_text(title), style="bold")] if title else []
    held = [""] * len(cols)
    for row in range(table.row_count):
        cells = [_text(c._cells[row]) if row < len(c._cells) else "" for c in cols]
        for i in names:
            if cells[i]:
                held[i] = cells[i]
                for j in (k for k in names if k > i):
                    held[j] = cells[j]
        heading = "  ".join(held[i] for i in names if held[i])
        out.append(Text(heading, style="bold"))
        out += [Text(f"    {_text(cols[i].header)}: {cells[i]}") for i in range(len(cols))
                if i not in names and cells[i]]
    return Group(*out)


TONES = {"good": "green", "bad": "bold red", "unsure": "yellow"}


def answers_block(answers: Sequence, title: str) -> Group:
    """The answer first: a heading, then one line per cell (its subject's parts aligned in columns, the word in
    its tone's colour, the number and why); lines wrap, never cut."""
    if not answers:
        return Group()
    widths = [max(len(a.subject[i]) if i < len(a.subject) else 0 for a in answers)
              for i in range(max(len(a.subject) for a in answers))]
    word_w = max(len(a.word) for a in answers)
    lines: list = [Text(f"{title}: the answer", style="bold")]
    for a in answers:
        t = Text("  ".join(s.ljust(w) for s, w in zip(a.subject, widths)) + "  ")
        t.append(a.word.ljust(word_w), style=TONES.get(a.tone, ""))
        t.append(f"  {a.number}" + (f"; {a.why}" if a.why else ""))
        lines.append(t)
    return Group(*lines, Text(""))
