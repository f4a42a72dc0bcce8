"""guard: adaptive disk I/O isolation on live cgroups (DESIGN §6): collector → policy → limiter.

Its names are imported when first asked for: contend watch uses the guard's targets and collector alone, and
the policies' numpy and pydantic were 0.66 s of its start."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import GuardConfig, default_disks, parse_rate
    from .daemon import Guard, Period
    from .policy import POLICIES, Decision, PolicyInput, TargetView, make
    from .targets import TargetError

_WHERE = {"GuardConfig": "config", "default_disks": "config", "parse_rate": "config", "Guard": "daemon",
          "Period": "daemon", "POLICIES": "policy", "Decision": "policy", "PolicyInput": "policy",
          "TargetView": "policy", "make": "policy", "TargetError": "targets"}

__all__ = ["Decision", "Guard", "GuardConfig", "POLICIES", "Period", "PolicyInput", "TargetError", "TargetView",
           "default_disks", "make", "parse_rate"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
