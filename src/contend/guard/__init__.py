"""guard: adaptive disk I/O isolation on live cgroups (DESIGN §6): collector → policy → limiter.

Its names are imported when first asked for (lazy.py): contend watch uses the guard's targets
alone (the disk's cost and delivery model is contend.diskuse, below both), and the policies' numpy and pydantic
were 0.66 s of its start."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .lazy import __getattr__

if TYPE_CHECKING:
    from .config import GuardConfig, default_disks, parse_rate
    from .daemon import Guard, Period
    from .policy import POLICIES, Decision, PolicyInput, TargetView, make
    from .targets import TargetError

__all__ = ["Decision", "Guard", "GuardConfig", "POLICIES", "Period", "PolicyInput", "TargetError", "TargetView",
           "__getattr__", "default_disks", "make", "parse_rate"]
