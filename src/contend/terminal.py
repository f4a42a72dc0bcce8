"""What every command shares on the terminal: one console, one-line failures (exit 2 unless said), the root
check, and Ctrl-C and SIGTERM as an interrupt that cleans up."""
from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer
from rich.console import Console

console = Console()


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
