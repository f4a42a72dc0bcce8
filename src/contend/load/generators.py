"""One load per resource, each a mode of the load agent (agent.c): what a level means in the agent's unit,
and what an interval's report means in the guest view.

A level is a fraction of the resource's host capacity. The agent runs for the whole trial; only its level
changes. Guest quantities per report interval: cpu `ops_s` (matrix products per second), memory `rss_bytes`
(anonymous resident bytes, a gauge), disk `iops` and `lat_mean_us`, network `bps` (bits sent per second).
"""
from __future__ import annotations

from abc import ABC, abstractmethod

from .agent import IN_CONTAINER
from .fio import layout


class LoadGenerator(ABC):
    resource: str = ""

    @abstractmethod
    def agent_args(self, tenant: str) -> list[str]:
        """The agent's mode and its arguments for this tenant."""

    @abstractmethod
    def value(self, level: float, tenant: str = "") -> float:
        """A level (fraction of the resource's host capacity) in the agent's unit."""

    @abstractmethod
    def guest(self, seconds: float, work: int, extra: int) -> dict[str, float]:
        """One report interval (its length, the agent's work and extra counters) in the guest view."""

    def prepare(self) -> list[str] | None:
        """A command run once in each tenant before its agent starts (e.g. laying out a file), or None."""
        return None

    def settle(self, tenant: str, own_bytes: int) -> None:  # noqa: B027 (a hook: only memory needs it)
        """What the tenant's cgroup holds before its agent starts: its runtime's and init's own memory."""


def rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


class CpuLoad(LoadGenerator):
    """As few worker threads as the level needs (at most one per host CPU), each busy level × CPUs / workers
    of every 10 ms: stress-ng --cpu-load's scheme, so 100 % of a one-CPU limit is one worker that never sleeps.
    The level is a demand: CPU time a worker lost to a neighbour it asks for again (agent.c, cpu_worker)."""

    resource = "cpu"

    def __init__(self, ncpu: int):
        self.ncpu = ncpu

    def agent_args(self, tenant: str) -> list[str]:
        return ["cpu", str(self.ncpu)]

    def value(self, level: float, tenant: str = "") -> float:
        return level * self.ncpu  # CPUs

    def guest(self, seconds: float, work: int, extra: int) -> dict[str, float]:
        return {"ops_s": rate(work, seconds)}


class MemoryLoad(LoadGenerator):
    """`level` × capacity of anonymous resident memory (what the tenant's cgroup is charged for), touched once
    and held. At a tenant's own limit it holds a headroom less: a tenant holding exactly its limit is at the
    OOM edge, since its page tables and its runtime's own memory are charged to the same cgroup. So "100 % of
    the limit" is (1 − headroom) of it; below the limit the level is held as it is, and above it (escape) the
    limit is really crossed. `limits`: each tenant's limit as a fraction of capacity.

    What the runtime itself holds in the tenant's cgroup (`settle`: gVisor's sentry, 13 MiB here; runc's
    init, under 1 MiB) comes off that ceiling too: at a 256 MiB limit the 5 % headroom alone left gVisor's
    sandbox 0.1 MiB and the OOM killer ended it in the baseline."""

    resource = "memory"

    def __init__(self, capacity_bytes: int, headroom: float = 0.05, limits: dict[str, float] | None = None):
        self.capacity_bytes = capacity_bytes
        self.headroom = headroom
        self.limits = limits or {}
        self.own: dict[str, int] = {}  # tenant -> bytes its cgroup held before the agent started

    def settle(self, tenant: str, own_bytes: int) -> None:
        self.own[tenant] = own_bytes

    def target(self, level: float, tenant: str = "") -> int:
        limit = self.limits.get(tenant)
        if limit is None or level > limit:
            return int(level * self.capacity_bytes)
        ceiling = limit * (1 - self.headroom) * self.capacity_bytes - self.own.get(tenant, 0)
        return int(max(0.0, min(level * self.capacity_bytes, ceiling)))

    def agent_args(self, tenant: str) -> list[str]:
        return ["mem"]

    def value(self, level: float, tenant: str = "") -> float:
        return self.target(level, tenant)

    def guest(self, seconds: float, work: int, extra: int) -> dict[str, float]:
        return {"rss_bytes": float(work)}


class DiskLoad(LoadGenerator):
    """Random direct writes of one block size to the tenant's own file, paced at level × the calibrated
    random-write IOPS, `depth` writes in flight at most (Volpert et al.: a disk rated by its random-write
    IOPS; direct, so neither the page cache absorbs the load nor a v1 throttle misses it)."""

    resource = "disk"
    FILE = "/data/contend-disk.dat"
    FILE_SIZE = "256M"  # each tenant's file on the experiment device

    def __init__(self, capacity_iops: float, size: str = FILE_SIZE, block: str = "4K", depth: int = 32):
        self.capacity_iops = capacity_iops
        self.size = size
        self.block = block
        self.depth = depth

    def prepare(self) -> list[str]:
        """fio writes the file once, so the random writes neither allocate nor convert extents (fio.layout)."""
        return layout(self.FILE, self.size)

    def agent_args(self, tenant: str) -> list[str]:
        return ["disk", self.FILE, self.size, self.block, str(self.depth)]

    def value(self, level: float, tenant: str = "") -> float:
        return level * self.capacity_iops

    def guest(self, seconds: float, work: int, extra: int) -> dict[str, float]:
        out = {"iops": rate(work, seconds)}
        if work:
            out["lat_mean_us"] = extra / work
        return out


class NetworkLoad(LoadGenerator):
    """One TCP connection to the tenant's sink (network/), paced at level × the link's capacity; the guest
    view is what the application sent: over a report interval it differs from what arrived by at most what
    sits in the socket buffer."""

    resource = "network"

    def __init__(self, capacity_bps: float, server: str, ports: dict[str, int]):
        self.capacity_bps = capacity_bps
        self.server = server
        self.ports = ports  # tenant -> its sink's port

    def agent_args(self, tenant: str) -> list[str]:
        return ["net", self.server, str(self.ports[tenant])]

    def value(self, level: float, tenant: str = "") -> float:
        return level * self.capacity_bps / 8  # bytes/s

    def guest(self, seconds: float, work: int, extra: int) -> dict[str, float]:
        return {"bps": 8 * rate(work, seconds)}


__all__ = ["CpuLoad", "DiskLoad", "IN_CONTAINER", "LoadGenerator", "MemoryLoad", "NetworkLoad"]
