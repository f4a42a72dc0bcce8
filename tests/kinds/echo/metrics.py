"""The echo study's metrics (pure): how long `echo` took in the container, and how many words came back."""
from __future__ import annotations

from contend.metrics.directions import HIGHER, LOWER

DIRECTIONS = {"echo_s": LOWER, "words_back": HIGHER}


def echo_rows(trial: dict, figures: dict[str, float]) -> list[dict]:
    """A trial's rows for metrics.csv (guest view), from its figures."""
    base = {"runtime": trial["runtime"], "scenario": trial["scenario"], "resource": trial["resource"],
            "view": "guest", "trial_id": trial["trial_id"]}
    return [{**base, "metric": m, "value": figures[m]} for m in DIRECTIONS if m in figures]
