"""What every command shares on the terminal: one console, one-line failures (exit 2 unless said), the root
check, and Ctrl-C and SIGTERM as an interrupt that cleans up."""
from __future__ import annotations

import os
import re
import sys
from typing import NoReturn

import typer
from rich.console import Console
from rich.text import Text

console = Console()


CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # a terminal's escapes (and the C1 set a terminal obeys too)
LONG = 200  # characters of an untrusted string shown; the rest said as a count


def plain(text: object, lines: bool = False, limit: int = LONG) -> str:
    """A string contend did not write (a cgroup's, a pod's or a container's name, a recording's, a metrics.csv's,
    an artefact's) as a terminal may show it: every control character spelt out (`\\x1b`), tab and newline too
    unless `lines`, and at most `limit` characters (a 10 kB name is shown by its start and its length). The one
    helper for them (issue 52 L2, issue 95 L1)."""
    s = str(text)
    keep = "\t\n" if lines else ""
    s = CONTROL.sub(lambda m: m[0] if m[0] in keep else f"\\x{ord(m[0]):02x}", s)
    return s if len(s) <= limit else f"{s[:limit - 1]}… ({len(s)} characters)"


def untrusted(text: object, lines: bool = True, limit: int = 10_000) -> Text:
    """`plain` as a Rich Text: never parsed as markup (a cgroup named `[/]` killed the live watch)."""
    return Text(plain(text, lines, limit))


def fail(msg: str, code: int = 2) -> NoReturn:
    """One line, no traceback."""
    print(f"contend: {msg}", file=sys.stderr)  # never wrapped: one line, whatever the terminal width
    raise typer.Exit(code)


def need_root(what: str) -> None:
    if os.geteuid() != 0:
        fail(f"{what} needs root (containers, cgroups and eBPF are host facilities)")


def term_as_interrupt() -> None:
    from .interrupts import handle_interrupts
    handle_interrupts()
