"""metrics: pure functions over samples and curves (DESIGN §3); trial.py the isolation study's rows per trial
and their aggregate."""
from .curves import SAME_QUANTITY_AS_HOST, Curve, Samples, StepWindow, capacity_of, curves
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
from .stats import mean_ci, similarity_ci
from .trial import NAN, aggregate, host_speedup, trial_metrics, trial_refs, trial_rows

__all__ = ["Curve", "Samples", "StepWindow", "capacity_of", "curves", "curve_metrics", "degradation",
           "escape_ratio", "i_plr", "isolation_percentiles", "reference_point", "similarity", "mean_ci",
           "per_second", "similarity_ci", "trial_refs", "RefPoint", "SAME_QUANTITY_AS_HOST", "NAN",
           "trial_metrics", "trial_rows", "aggregate", "host_speedup"]
