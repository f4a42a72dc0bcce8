"""Ctrl-C and SIGTERM as one interrupt, noted where a lost KeyboardInterrupt cannot hide it.

Python prints and ignores an exception raised in an at-fork hook (subprocess runs them), so a Ctrl-C can
vanish; `INTERRUPTED` keeps it, and a study checks it before every trial. Kept tiny: the guard installs the
handlers too, and must start fast.
"""
from __future__ import annotations

import signal
import threading

INTERRUPTED = threading.Event()


def handle_interrupts() -> None:
    """SIGINT and SIGTERM raise KeyboardInterrupt in the main thread, and set INTERRUPTED."""
    def handler(signum, frame):
        INTERRUPTED.set()
        raise KeyboardInterrupt
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
