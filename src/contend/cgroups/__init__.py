"""cgroups: v1 / hybrid / v2 behind one interface, chosen once at start (like runc's managers)."""
from __future__ import annotations

from .base import PREFIX, Cgroup, IoCounters, IoLimit, Limits, Stats, mirror, remove_tree
from .host import CgroupHost, detect
from .v1 import V1Cgroup
from .v2 import V2Cgroup

__all__ = ["PREFIX", "Cgroup", "CgroupHost", "IoCounters", "IoLimit", "Limits", "Stats",
           "V1Cgroup", "V2Cgroup", "detect", "mirror", "remove_tree"]
