"""The isolation study's trials: host setup → containers up → probes on → baseline → ramped disruptive load →
down (trial.py), and the study that runs them (study.py). It measures and records; it never computes a metric
(that is metrics/, reading the store)."""
from __future__ import annotations

from ..tenants import TrialResult, reset_host
from .trial import EBPF_PROBES, TENANTS, generator_for, limits_for, run_trial, trial_capacity, trial_without_data

__all__ = ["EBPF_PROBES", "TENANTS", "TrialResult", "generator_for", "limits_for", "reset_host", "run_trial",
           "trial_capacity", "trial_without_data"]
