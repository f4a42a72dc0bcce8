"""report: metrics from the store, the results table, figures and a self-contained report.html, one module
per kind of study (isolation, protection, scaling, victim) over shared tables, figures and page.

Reads only the results directory, so it works on a copy made on a machine without root. Which kind's report a
directory gets is the kind registry's (`contend.kinds.refresh`).
"""
from __future__ import annotations

from .analyze import analyze
from .isolation import refresh_isolation
from .page import Written, failures, fewer_repetitions
from .table import rich_views

__all__ = ["Written", "analyze", "failures", "fewer_repetitions", "refresh_isolation", "rich_views"]
