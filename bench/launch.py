"""Container launch side by side (issue 5, docs/results/archive.md): per runtime, and through `docker run` of the
same container (CoPTS launched through docker), in one run:

- start-to-running latency: from the create call until its init process runs (contend's direct OCI launch
  returns then; `docker run -d` too), median and p90 over --samples, and the same plus `true` exec'd inside
  and the container removed (a whole short-lived benchmark container's overhead);
- memory per idle container: the host's MemAvailable drop with --idle containers up, divided by their number
  (runtime processes included: runsc's sentry and gofer, docker's shim);
- time to get N containers running, created by N threads at once (--parallel).

The ratio column divides each figure by docker's (docker-runc: the same runc, behind the engine).

    sudo .venv/bin/python bench/launch.py [--runtimes runc,crun,runsc,lxc] [--samples 10] [--idle 10] [--parallel 10]
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid

from contend import runtimes
from contend.cgroups import Limits
from contend.runtimes import ContainerSpec, RuntimeFailed
from contend.runtimes.engine import docker_session


def mem_available() -> int:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemAvailable in /proc/meminfo")


def spec() -> ContainerSpec:
    return ContainerSpec(f"bench-{uuid.uuid4().hex[:8]}", Limits(cpu=2, memory=4 << 30))


def latencies(rt: runtimes.Runtime, samples: int) -> tuple[list[float], list[float]]:
    start, whole = [], []
    for _ in range(samples):
        t0 = time.perf_counter()
        c = rt.create(spec())
        start.append(time.perf_counter() - t0)
        try:
            if rt.run(c, ["/usr/bin/true"]).returncode != 0:
                raise RuntimeFailed(f"{rt.name}: true failed inside")
        finally:
            rt.delete(c)
        whole.append(time.perf_counter() - t0)
    return start, whole


def idle_memory(rt: runtimes.Runtime, idle: int) -> float:
    before = mem_available()
    up = []
    try:
        for _ in range(idle):
            up.append(rt.create(spec()))
        time.sleep(2)  # let the runtimes' processes settle
        return (before - mem_available()) / idle
    finally:
        for c in up:
            rt.delete(c)


def parallel_start(rt: runtimes.Runtime, n: int) -> float:
    made: list = []
    errors: list[str] = []

    def one():
        try:
            made.append(rt.create(spec()))
        except RuntimeFailed as e:
            errors.append(str(e))
    threads = [threading.Thread(target=one) for _ in range(n)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - t0
    for c in made:
        rt.delete(c)
    if errors:
        raise RuntimeFailed(f"{len(errors)} of {n} failed: {errors[0]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runtimes", default="runc,crun,runsc,lxc")
    ap.add_argument("--samples", type=int, default=10)
    ap.add_argument("--idle", type=int, default=10)
    ap.add_argument("--parallel", type=int, default=10)
    a = ap.parse_args()
    with docker_session() as engine:
        names = a.runtimes.split(",") + (["docker-runc"] if engine else [])
        results = {}
        for name in names:
            rt = runtimes.get(name)
            try:
                start, whole = latencies(rt, a.samples)
                results[name] = {"start_ms": 1e3 * statistics.median(start),
                                 "start_p90_ms": 1e3 * sorted(start)[int(0.9 * (len(start) - 1))],
                                 "whole_ms": 1e3 * statistics.median(whole),
                                 "idle_mib": idle_memory(rt, a.idle) / 2 ** 20,
                                 "parallel_s": parallel_start(rt, a.parallel)}
            except (RuntimeFailed, OSError) as e:
                print(f"{name}: {e}")
        if not engine:
            print("docker: no engine (dockerd not installed or did not start): no ratios")
    ref = results.get("docker-runc")
    cols = ("start_ms", "start_p90_ms", "whole_ms", "idle_mib", "parallel_s")
    print(f"{'runtime':<12}" + "".join(f"{c:>14}{'÷docker':>9}" for c in cols))
    for name, r in results.items():
        print(f"{name:<12}" + "".join(f"{r[c]:>14.1f}{(r[c] / ref[c] if ref and ref[c] else float('nan')):>9.2f}"
                                      for c in cols))
    print(f"(samples {a.samples}, idle {a.idle}, parallel {a.parallel}; memory is MemAvailable's drop per container)")


if __name__ == "__main__":
    main()
