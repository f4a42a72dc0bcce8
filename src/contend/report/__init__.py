"""report: metrics from the store, the results table, figures and a self-contained report.html, what every
kind's report shares: tables, figures and the page (each kind's own report is its folder's report.py).

Reads only the results directory, so it works on a copy made on a machine without root. Which kind's report a
directory gets is the kind registry's (`contend.kinds.refresh`).
"""
from __future__ import annotations

from .page import Written, failures, fewer_repetitions

__all__ = ["Written", "failures", "fewer_repetitions"]
