"""The database victim's metrics (Xavier et al. PDP 2015): D per disruptor and transaction type (Eq. 1), against
the same repetition's base window (the pairing is metrics/victim.py's), and the repetition rule. Pure."""
from __future__ import annotations

import math

from ...metrics.directions import DESCRIPTIVE, HIGHER, LOWER
from ...metrics.stats import mean_ci
from ...metrics.victim import WINDOW_DIRECTIONS

OLTP_RULES = {  # PDP 2015 Tables II-III: D per disruptor and transaction type
    "D": ("tps", "drop"), "tps_base": ("tps", "base"), "tps_disturbed": ("tps", "value"), "lat_x": ("lat_ms", "x"),
}
# which way is better (contend compare): D is a loss, a latency multiplier a cost
DIRECTIONS = {**WINDOW_DIRECTIONS, "D": LOWER, "tps_base": DESCRIPTIVE, "tps_disturbed": HIGHER, "lat_x": LOWER}


def converged(values: list[float], ci_pct: float) -> bool:
    """The repetition rule of PDP 2015: the 95 % interval within ±ci_pct % of the mean (n >= 2)."""
    mean, lo, hi, n = mean_ci(values)
    return n >= 2 and math.isfinite(lo) and (hi - lo) / 2 <= ci_pct / 100 * abs(mean)
