"""Load: real load generators run inside tenants, stepped by the ramp controller."""
from .fio import FioLoad
from .iperf import IperfLoad
from .memory import MemoryAllocator
from .ramp import RampController, Step, StepRecord, plan_steps
from .stress import CpuStress, LoadGenerator

__all__ = ["CpuStress", "FioLoad", "IperfLoad", "LoadGenerator", "MemoryAllocator", "RampController", "Step",
           "StepRecord", "plan_steps"]
