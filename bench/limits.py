"""How well does each runtime hold a CPU quota and a block I/O limit on this host? Prints what was measured.

Per runtime: a 0.5-CPU quota under one spinning worker (CPUs used, seen from the host's cgroup counters),
and 10 MiB of direct writes under a 5 MiB/s write limit (achieved MiB/s, seen from inside by wall time).

    sudo .venv/bin/python bench/limits.py [runc crun runsc lxc]
"""
from __future__ import annotations

import sys
import time
import uuid

from contend import owned
from contend.cgroups import IoLimit, Limits
from contend.doctor.calibrate import device_of
from contend.paths import DATA
from contend.runtimes import ContainerSpec, get


def cpu_under_quota(rt) -> float:
    c = rt.create(ContainerSpec(f"bench-{uuid.uuid4().hex[:6]}", Limits(cpu=0.5)))
    try:
        before, t0 = c.cgroup.stats().cpu_usage_ns, time.monotonic()
        rt.run(c, ["timeout", "3", "sh", "-c", "while :; do :; done"], timeout=30)
        return (c.cgroup.stats().cpu_usage_ns - before) / 1e9 / (time.monotonic() - t0)
    finally:
        rt.delete(c)


def write_under_limit(rt, rate: int = 5 << 20) -> float:
    data = owned.data_dir("bench", uuid.uuid4().hex[:6])
    data.mkdir(parents=True)
    c = rt.create(ContainerSpec(f"bench-{uuid.uuid4().hex[:6]}", Limits(io=(IoLimit(device_of(DATA), wbps=rate),)),
                                data))
    try:
        t0 = time.monotonic()
        rt.run(c, ["dd", "if=/dev/zero", "of=/data/f", "bs=1M", "count=10", "oflag=direct"], timeout=60)
        return 10 / (time.monotonic() - t0)
    finally:
        rt.delete(c)
        owned.remove_data_dir(data)


def main() -> None:
    names = sys.argv[1:] or ["runc", "crun", "runsc", "lxc"]
    print(f"{'runtime':8s} {'CPUs under a 0.5 quota':>24s} {'MiB/s under a 5 MiB/s write limit':>36s}")
    for n in names:
        rt = get(n)
        if not rt.found():
            print(f"{n:8s} not installed")
            continue
        print(f"{n:8s} {cpu_under_quota(rt):24.3f} {write_under_limit(rt):36.1f}", flush=True)


if __name__ == "__main__":
    main()
