"""guard: adaptive disk I/O isolation on live cgroups (DESIGN §6): collector → policy → limiter."""
from __future__ import annotations

from .config import GuardConfig, default_disks, parse_rate
from .daemon import Guard, Period
from .policy import POLICIES, Decision, PolicyInput, TargetView, make
from .targets import TargetError

__all__ = ["Decision", "Guard", "GuardConfig", "POLICIES", "Period", "PolicyInput", "TargetError", "TargetView",
           "default_disks", "make", "parse_rate"]

