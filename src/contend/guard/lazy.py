"""The guard package's names, each imported from its module when first asked for (PEP 562): importing
contend.guard.targets or .collector (contend watch does) then costs those modules alone, not the policies'
numpy and pydantic."""
from __future__ import annotations

import importlib
from typing import Any

WHERE = {"GuardConfig": "config", "default_disks": "config", "parse_rate": "config", "Guard": "daemon",
         "Period": "daemon", "POLICIES": "policy", "Decision": "policy", "PolicyInput": "policy",
         "TargetView": "policy", "make": "policy", "TargetError": "targets"}


def __getattr__(name: str) -> Any:
    if name in WHERE:
        return getattr(importlib.import_module(f"contend.guard.{WHERE[name]}"), name)
    raise AttributeError(f"module 'contend.guard' has no attribute {name!r}")
