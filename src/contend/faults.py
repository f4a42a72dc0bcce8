"""Fault injection, for the tests that interrupt a study at chosen moments (and for anyone reproducing one).

CONTEND_FAULT="POINT[@N]=SIGNAL" makes contend send SIGNAL (INT, TERM or KILL) to itself the N-th time (default
the first) it reaches the checkpoint POINT; "POINT[@N]=raise:NAME" raises the exception NAME there instead (one
of RAISES: what fails a trial, and RuntimeError, which no trial absorbs). Several faults are separated by ";".
The points, in the order a study reaches them:

  start        the results directory and spec.yaml written
  host-facts   the host looked at (a container per runtime)
  trial        a trial about to begin
  containers   a trial's containers up (every kind's: Tenants)
  probes       its probes attached
  step         a step of the ramp beginning (the baseline is the first)
  teardown     its containers about to be removed
  store-write  inside the store's transaction of a finished trial, half written
  report       every trial done, the report about to be written

Without the variable, checkpoint() costs a dictionary lookup.
"""
from __future__ import annotations

import os
import signal
import subprocess

from .failures import Failure

RAISES: dict[str, type[BaseException]] = {
    "Failure": Failure, "OSError": OSError, "ValueError": ValueError,
    "SubprocessError": subprocess.SubprocessError, "RuntimeError": RuntimeError}
POINTS = ("start", "host-facts", "trial", "containers", "probes", "step", "teardown", "store-write", "report")
_hits: dict[str, int] = {}


def checkpoint(point: str) -> None:
    want = os.environ.get("CONTEND_FAULT")
    if not want:
        return
    faults = [f.strip().partition("=") for f in want.split(";")]
    if not any(where.partition("@")[0] == point for where, _, _ in faults):
        return
    _hits[point] = _hits.get(point, 0) + 1
    for where, _, what in faults:
        name, _, nth = where.partition("@")
        if name != point or _hits[point] != int(nth or 1):
            continue
        if what.startswith("raise:"):
            kind = what.removeprefix("raise:")
            raise RAISES[kind](f"CONTEND_FAULT: {kind} raised at {point}@{nth or 1}")
        os.kill(os.getpid(), getattr(signal, f"SIG{what.upper().removeprefix('SIG')}"))
