"""Load: one load agent per tenant for the whole trial (agent.c), its level stepped by the ramp controller."""
from .generators import CpuLoad, DiskLoad, LoadGenerator, MemoryLoad, NetworkLoad
from .ramp import Ramp, RampController, Step, StepRecord, plan_steps

__all__ = ["CpuLoad", "DiskLoad", "LoadGenerator", "MemoryLoad", "NetworkLoad", "Ramp", "RampController", "Step",
           "StepRecord", "plan_steps"]
