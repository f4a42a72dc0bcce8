"""Load: real load generators run inside tenants, stepped by the ramp controller."""
from .ramp import RampController, Step, StepRecord, plan_steps
from .stress import CpuStress, LoadGenerator

__all__ = ["CpuStress", "LoadGenerator", "RampController", "Step", "StepRecord", "plan_steps"]
