"""A resident-set allocator: reaches a target RSS, holds it, reports the RSS it had (the guest view).

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
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
held, chunk = [], 16 << 20
while time.monotonic() < end:
    n = min(chunk, target - rss())  # the interpreter's own pages count towards the target too
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
    """`level` × capacity of resident memory, less a headroom: a tenant that holds exactly its memory limit
    is at the OOM edge, since its page tables and its runtime's own memory are charged to the same cgroup.
    So "100 % of the limit" is (1 − headroom) of it; above 100 % (escape) the limit is really crossed."""

    resource = "memory"

    def __init__(self, capacity_bytes: int, headroom: float = 0.05):
        self.capacity_bytes = capacity_bytes
        self.headroom = headroom

    def target(self, level: float) -> int:
        return int(level * self.capacity_bytes * (1 - self.headroom))

    def argv(self, level: float, seconds: float, out: str, tenant: str = "") -> list[str]:
        return ["python3", "-c", ALLOCATOR, str(self.target(level)), f"{seconds:g}", out]

    def guest(self, report: Path) -> dict[str, float]:
        doc = read_json(report)
        return {"rss_bytes": float(doc["rss_bytes"])} if "rss_bytes" in doc else {}
