"""Fault injection, for the tests that interrupt a study at chosen moments (and for anyone reproducing one).

CONTEND_FAULT="POINT[@N]=SIGNAL" makes contend send SIGNAL (INT, TERM or KILL) to itself the N-th time (default
the first) it reaches the checkpoint POINT. The points, in the order a study reaches them:

  start        the results directory and spec.yaml written
  host-facts   the host looked at (a container per runtime)
  trial        a trial about to begin
  containers   a trial's containers up
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

POINTS = ("start", "host-facts", "trial", "containers", "probes", "step", "teardown", "store-write", "report")
_hits: dict[str, int] = {}


def checkpoint(point: str) -> None:
    want = os.environ.get("CONTEND_FAULT")
    if not want:
        return
    where, _, sig = want.partition("=")
    name, _, nth = where.partition("@")
    if name != point:
        return
    _hits[point] = _hits.get(point, 0) + 1
    if _hits[point] == int(nth or 1):
        os.kill(os.getpid(), getattr(signal, f"SIG{sig.upper().removeprefix('SIG')}"))
