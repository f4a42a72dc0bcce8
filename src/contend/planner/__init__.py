"""The planner: runtimes × scenarios × resources × repetitions → an ordered list of trials."""
from .plan import TrialPlan, plan, trial_seconds

__all__ = ["TrialPlan", "plan", "trial_seconds"]
