"""The disk-fill attack's metrics (Kim et al. WISA 2025): the victim's IOPS drop and latency multiplier against
its own baseline, per repetition (the pairing is metrics/victim.py's). Pure."""
from __future__ import annotations

from ...metrics.directions import LOWER
from ...metrics.victim import WINDOW_DIRECTIONS

DISKFILL_RULES = {  # WISA Figs. 2-3: D's IOPS drop and latency multiplier, read and write
    "read_iops_drop_pct": ("read_iops", "drop"), "write_iops_drop_pct": ("write_iops", "drop"),
    # the worst 500 ms of the window against the base's mean: how deep the attack cut at its worst
    "read_iops_worst_drop_pct": ("read_iops_min", "drop", "read_iops"),
    "write_iops_worst_drop_pct": ("write_iops_min", "drop", "write_iops"),
    "read_lat_x": ("read_lat_us", "x"), "write_lat_x": ("write_lat_us", "x"),
    "read_p99_x": ("read_p99_us", "x"), "write_p99_x": ("write_p99_us", "x"),
}

# which way is better (contend compare): drops are losses, latency multipliers costs
DIRECTIONS = {**WINDOW_DIRECTIONS, **{metric: LOWER for metric in DISKFILL_RULES}}
