"""What the guard costs a writer that fsyncs (a database's checkpoint, say), side by side (issue 22).

dd writes `--mbytes` MiB into the page cache of a file on the experiment disk from inside a cgroup, then
fsyncs: the kernel submits the whole writeback at once in dd's cgroup, where it is charged at submission and
held by the cgroup's throttle. Each round times it once with no guard (A) and once under a guard guarding that
cgroup with contend's policy, told the disk delivers `--capacity` MB/s (B), back to back. Prints each run's
seconds, then the mean of B over A. Before the guard settled charges against what the disk wrote
(diskuse.settle), the charge's one-period spike then silence made the writer look idle and its cap fell
to the floor while its writeback was still queued.

    sudo .venv/bin/python bench/guard_fsync.py [--mbytes 300] [--capacity 200] [--rounds 3]
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import threading
import time
import uuid

from contend.cgroups import detect
from contend.doctor.calibrate import device_of
from contend.guard import Guard, GuardConfig
from contend.paths import DATA


def fsync_write(cg, target: str, mbytes: int) -> float:
    """Seconds dd takes to write `mbytes` MiB to target from inside cg and fsync them."""
    t0 = time.monotonic()
    subprocess.run(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mbytes}", "conv=fsync"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=lambda: cg.add_pid(os.getpid()))
    return time.monotonic() - t0


def guarded(host, cg, device: str, capacity: float, target: str, mbytes: int) -> float:
    cfg = GuardConfig(targets=[{"target": f"cgroup:{cg.relpath}"}], policy="contend", metrics="off")
    g = Guard(cfg, {device: capacity}, host, log=io.StringIO(), record=True)
    g.scan(strict=True)
    stop = threading.Event()
    th = threading.Thread(target=g.run, args=(stop,))
    th.start()
    try:
        while len(g.records) < 2:  # the guard has decided twice: caps exist before the writer starts
            time.sleep(0.05)
        return fsync_write(cg, target, mbytes)
    finally:
        stop.set()
        th.join(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mbytes", type=int, default=300)
    ap.add_argument("--capacity", type=float, default=200, help="MB/s the guard is told the disk delivers")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    host = detect()
    device = device_of(DATA)
    DATA.mkdir(parents=True, exist_ok=True)
    target = DATA / f"contend-bench-fsync-{uuid.uuid4().hex[:6]}.dat"
    cg = host.cgroup(f"contend/bench-fsync-{uuid.uuid4().hex[:6]}")
    cg.create()
    runs: dict[str, list[float]] = {"A no guard": [], "B guarded": []}
    try:
        for r in range(a.rounds):
            for mode in runs:
                target.unlink(missing_ok=True)
                subprocess.run(["sync"], check=True)  # nothing of the last run's left to write back
                s = fsync_write(cg, str(target), a.mbytes) if mode.startswith("A") else \
                    guarded(host, cg, device, a.capacity * 1e6, str(target), a.mbytes)
                runs[mode].append(s)
                print(f"round {r + 1} {mode:12s} {a.mbytes} MiB + fsync {s:7.2f} s", flush=True)
    finally:
        target.unlink(missing_ok=True)
        cg.remove()
    mean = {m: sum(v) / len(v) for m, v in runs.items()}
    print(f"mean: no guard {mean['A no guard']:.2f} s, guarded {mean['B guarded']:.2f} s, "
          f"B/A {mean['B guarded'] / mean['A no guard']:.2f}")


if __name__ == "__main__":
    main()
