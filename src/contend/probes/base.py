from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from ..cgroups import Cgroup, V2Cgroup


class Sample(NamedTuple):
    """One measured value: t seconds since the trial's clock started, per tenant, source and quantity."""

    t: float
    tenant: str
    source: str  # "cgroup" | "ebpf" | "load" | "ramp"
    quantity: str  # e.g. "cpu" (CPUs used), "mem_bytes", "io_rbytes_s"
    value: float


@dataclass
class Target:
    """What a probe watches: one tenant's cgroups, and a hook that keeps its tracking cgroup current."""

    tenant: str
    cgroup: Cgroup
    tracking: V2Cgroup | None = None
    sync: Callable[[], None] | None = None
    netdev: str | None = None  # the host side of its veth, in a network trial
