"""A resident-set allocator: reaches a target anonymous RSS, holds it, reports the RSS it had (the guest view).

Anonymous memory is what the tenant's cgroup is charged for; the interpreter's mapped libraries are the
host's page cache, charged to whoever read them first, so they do not count towards the target.

stress-ng's vm stressor keeps rewriting its pages (it loads memory bandwidth and CPU as much as RSS);
the scenarios here are about how much memory a tenant can hold, so this one touches each page once and
then only reads its own RSS every 100 ms. It is plain Python: every container has the host's python3.
"""
from __future__ import annotations

from pathlib import Path

from .stress import LoadGenerator, read_json

ALLOCATOR = r"""
import json, mmap, sys, time
target, seconds, out = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
end = time.monotonic() + seconds
page = mmap.PAGESIZE
def rss():  # anonymous resident memory: resident less file-backed and shmem pages (shared with the host)
    with open("/proc/self/statm") as f:
        v = f.read().split()
    return (int(v[1]) - int(v[2])) * page
held, chunk = [], 16 << 20
while time.monotonic() < end:
    n = min(chunk, target - rss())  # the interpreter's own heap counts towards the target too
    if n < page:
        break
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for off in range(0, n, page):
        m[off] = 1
    held.append(m)
seen = []
while time.monotonic() < end:
    seen.append(rss())
    time.sleep(max(0.0, min(0.1, end - time.monotonic())))
with open(out, "w") as f:
    json.dump({"rss_bytes": sum(seen) / len(seen) if seen else rss(), "target_bytes": target}, f)
"""


class MemoryAllocator(LoadGenerator):
    """`level` × capacity of resident memory. At a tenant's own limit it holds a headroom less: a tenant
    that holds exactly its memory limit is at the OOM edge, since its page tables and its runtime's own
    memory are charged to the same cgroup. So "100 % of the limit" is (1 − headroom) of it; below the limit
    the level is held as it is, and above it (escape) the limit is really crossed. `limits`: each tenant's
    limit as a fraction of capacity (a tenant without one gets no headroom)."""

    resource = "memory"

    def __init__(self, capacity_bytes: int, headroom: float = 0.05, limits: dict[str, float] | None = None):
        self.capacity_bytes = capacity_bytes
        self.headroom = headroom
        self.limits = limits or {}

    def target(self, level: float, tenant: str = "") -> int:
        limit = self.limits.get(tenant)
        if limit is None or level > limit:
            return int(level * self.capacity_bytes)
        return int(min(level, limit * (1 - self.headroom)) * self.capacity_bytes)

    def argv(self, level: float, seconds: float, out: str, tenant: str = "") -> list[str]:
        return ["python3", "-c", ALLOCATOR, str(self.target(level, tenant)), f"{seconds:g}", out]

    def guest(self, report: Path) -> dict[str, float]:
        doc = read_json(report)
        return {"rss_bytes": float(doc["rss_bytes"])} if "rss_bytes" in doc else {}
