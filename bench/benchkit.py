"""What the benchmarks share: a container (runc unless named) with a data directory, removed with it afterwards."""
from __future__ import annotations

import json
import sys
import uuid
from contextlib import contextmanager

from contend import owned
from contend.runtimes import ContainerSpec, get


def bogo_rate(rt, c, stressor: list[str], seconds: float) -> float:
    """stress-ng's bogo ops per second of wall time, for `stressor` run in the container for `seconds`."""
    p = rt.run(c, ["stress-ng", *stressor, "--timeout", f"{seconds:g}s", "--metrics-brief", "--yaml", "/tmp/b.yaml"],
               timeout=seconds + 60)
    if p.returncode != 0:
        sys.exit(f"stress-ng failed: {p.stderr}")
    y = rt.run(c, ["cat", "/tmp/b.yaml"]).stdout
    return float(next(ln.split(":")[1] for ln in y.splitlines() if "bogo-ops-per-second-real-time" in ln))


def fio_iops(rt, c, seconds: float, *options: str) -> float:
    """fio's read IOPS of 4k random direct reads of /data/bench.fio for `seconds`, with `options`."""
    p = rt.run(c, ["fio", "--name=b", "--filename=/data/bench.fio", "--direct=1", "--bs=4k", "--rw=randread",
                   "--time_based", f"--runtime={seconds:g}", "--output-format=json", *options], timeout=seconds + 120)
    if p.returncode != 0:
        sys.exit(f"fio failed: {p.stderr}")
    return json.loads(p.stdout)["jobs"][0]["read"]["iops"]


@contextmanager
def runc_container(userns: bool = True, runtime: str = "runc"):
    """(runtime, container) of one unlimited container (runc unless named) whose /data is a fresh directory on
    the experiment device; both removed on the way out."""
    rt = get(runtime)
    data = owned.data_dir("bench", uuid.uuid4().hex[:6])
    data.mkdir(parents=True, exist_ok=True)
    try:
        c = rt.create(ContainerSpec(f"bench-{uuid.uuid4().hex[:6]}", data_dir=data, userns=userns))
        try:
            yield rt, c
        finally:
            rt.delete(c)
    finally:
        owned.remove_data_dir(data)


def interleaved(up: dict, loads: dict, rounds: int, seconds: float) -> dict[tuple[str, str], list[float]]:
    """Each load on each container (`up`: name -> (runtime, container)), `rounds` times, the containers' order
    rotating each round: side by side in one run. Prints every measurement; returns them per (load, name)."""
    names = list(up)
    results: dict[tuple[str, str], list[float]] = {(w, n): [] for w in loads for n in names}
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for w, work in loads.items():
            for n in order:
                results[(w, n)].append(work(*up[n], seconds))
                print(f"round {r + 1} {w:38s} {n:22s} {results[(w, n)][-1]:12.1f}", flush=True)
    return results


BPF_STATS = "/proc/sys/kernel/bpf_stats_enabled"


@contextmanager
def bpf_stats():
    """The kernel's accounting of each BPF program's run time on (kernel.bpf_stats_enabled), as it was after."""
    with open(BPF_STATS) as f:
        before = f.read().strip()
    with open(BPF_STATS, "w") as f:
        f.write("1")
    try:
        yield
    finally:
        with open(BPF_STATS, "w") as f:
            f.write(before)


def bpf_run_ns(pid: int) -> int:
    """Nanoseconds the BPF programs process `pid` holds have run (with bpf_stats on): time spent in the kernel, in
    the context of the tasks they trace, which no process's CPU time shows."""
    import os
    total = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") != "anon_inode:bpf-prog":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                total += sum(int(ln.split()[1]) for ln in f if ln.startswith("run_time_ns:"))
        except OSError:
            continue
    return total

