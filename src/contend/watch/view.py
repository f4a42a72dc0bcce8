"""What a person watching sees: a top-style table of the watched containers with their symptoms and the
verdicts that hold now, and one line per event when the output is not a terminal."""
from __future__ import annotations

import math
from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from ..terminal import plain
from .detector import Verdict
from .signals import Frame


def _num(x: float, fmt: str = "{:.2f}") -> str:
    return fmt.format(x) if math.isfinite(x) else "-"


def table(frame: Frame | None, verdicts: list[Verdict], problems: Sequence[str] = (),
          held: dict[str, str] | None = None) -> Table:
    """held: what holds each container back now (the guard's caps under --guard, protect's settings under
    --protect), by container; None: neither runs."""
    t = Table(title="contend watch", caption=Text(plain("; ".join(problems), limit=2000)) if problems else None,
              expand=False)
    cols = [("container", "left"), ("CPU", "right"), ("wait s/s", "right"), ("thr", "right"),
            ("mem MiB", "right"), ("mem psi", "right"), ("disk MB/s", "right"), ("io psi", "right"),
            ("net MB/s", "right"), ("rtt ms", "right")]
    for col, just in cols + ([("held", "left")] if held is not None else []) + [("verdict", "left")]:
        t.add_column(col, justify=just, no_wrap=col != "verdict")  # type: ignore[arg-type]
    by_victim: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_victim.setdefault(v.victim, []).append(v)
    for name, s in sorted((frame.containers if frame else {}).items()):
        wait = s.get("rq_delay", math.nan)
        wait = wait if math.isfinite(wait) else s.get("cpu_psi", math.nan)
        cells: list[str | Text] = [
            Text(plain(name, limit=NAME_SHOWN)), _num(s.get("cpu", math.nan)), _num(wait),
            _num(s.get("throttled", math.nan), "{:.0%}"), _num(s.get("mem", math.nan) / 2**20, "{:.0f}"),
            _num(s.get("mem_psi", math.nan)), _num(s.get("io_bytes", math.nan) / 1e6, "{:.1f}"),
            _num(s.get("io_psi", math.nan)), _num(s.get("net_bytes", math.nan) / 1e6, "{:.1f}"),
            _num(s.get("net_rtt_ms", math.nan), "{:.1f}")]
        if held is not None:
            cells.append(Text(held.get(name, "")))
        t.add_row(*cells, Text("\n".join(line(v) for v in by_victim.get(name, [])) or "ok"))
    return t


NAME_SHOWN = 60  # characters of a container's name in the table (a longer one: its start and its length)


def line(v: Verdict) -> str:
    """A verdict as plain text (its names as `terminal.plain` shows them)."""
    if v.kind == "blame":  # the first three culprits, others' shares left out
        named = ", ".join(f"{plain(c, limit=NAME_SHOWN)} {x:.0%}"
                          for c, x in (v.culprits or [(v.culprit, v.confidence)])[:3])
        return f"{v.resource}: hurt by {named}"
    if v.kind == "self":
        return f"{v.resource}: its own doing"
    return f"{v.resource}: hurt, cause not here"


def event_line(e: dict) -> str:
    """One event as a line for a log or a pipe: every name and the reason as `terminal.plain` shows them (a
    recording replayed may come from anywhere; a cgroup's name is its creator's)."""
    head = f"t={e['t']:>8.1f}s {plain(e['event']):<12} {plain(e['victim'])} {plain(e['resource'])}"
    if e["event"] == "blame":
        named = ", ".join(f"{plain(c)} {x:.0%}"
                          for c, x in (e.get("culprits") or [[e["culprit"], e["confidence"]]])[:3])
        return f"{head} <- {named}: {plain(e['why'], limit=2000)}"
    return f"{head}: {plain(e['why'], limit=2000)}"
