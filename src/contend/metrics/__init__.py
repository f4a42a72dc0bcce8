"""metrics: pure functions over samples and curves (DESIGN §3); trial.py the isolation study's rows per trial
and their aggregate."""
from .curves import SAME_QUANTITY_AS_HOST, Curve, Samples, StepWindow, curves
from .isolation import (
    RefPoint,
    curve_metrics,
    degradation,
    escape_ratio,
    i_plr,
    isolation_percentiles,
    per_second,
    reference_point,
    similarity,
)
from .stats import aggregate, mean_ci, similarity_ci

__all__ = ["Curve", "Samples", "StepWindow", "curves", "curve_metrics", "degradation",
           "escape_ratio", "i_plr", "isolation_percentiles", "reference_point", "similarity", "mean_ci",
           "per_second", "similarity_ci", "aggregate", "RefPoint", "SAME_QUANTITY_AS_HOST",
           "host_speedup"]
