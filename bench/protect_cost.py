"""What does contend protect add to the watch's cost: the watcher's own CPU with 20 containers watched, alone and
with protect acting beside it, side by side.

Twenty cgroups of contend's: 18 with a sleeping process, a victim (stress-ng on every CPU) and a noisy neighbour
(stress-ng on every CPU, started 6 s into each run), so the watch blames the neighbour and protect holds it back
(its CPU weight) for most of each protect run. Each setting runs `--seconds` with a watcher of 1 s periods (eBPF
on), in rotating order for `--rounds` rounds; the figure is its loop's thread CPU and bpftrace's, in % of one CPU
over the run (its start included, the same in both settings), and protect's actions in the run.

    sudo .venv/bin/python bench/protect_cost.py [--seconds 20] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import threading
import time

from contend.protect.daemon import build
from contend.protect.model import ProtectModel
from contend.watch.daemon import WatchConfig, Watcher
from watch_overhead import Sleepers

SETTINGS = ("watch", "watch --protect")


def one(run: str, protect: bool, seconds: float, noisy) -> tuple[float, int]:
    w = Watcher(WatchConfig([f"cgroup:contend/{run}-*"], period=1.0, metrics="off"))
    p = None
    if protect:
        p = w.protector = build(w.host, lambda: w.targets, ("cpu",), ProtectModel(), None, log=None)
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), kwargs={"duration": seconds})
    th.start()
    later = threading.Timer(6.0, noisy.start)  # once the watch has the victim's baseline: a harm to act on
    later.start()
    th.join()
    later.cancel()
    noisy.stop()
    return 100 * (w.cpu_s + w.collector.probe_cpu_s) / seconds, len(p.actions) if p is not None else 0


def hog(gs) -> subprocess.Popen:
    return subprocess.Popen(["stress-ng", "--cpu", str(os.cpu_count()), "--timeout", "3600"], stdout=subprocess.DEVNULL,
                            preexec_fn=lambda: [g.add_pid(os.getpid()) for g in gs])


class Noisy:
    """The neighbour's load, started in each run once the watch learnt the victim's calm, stopped at its end."""

    def __init__(self, gs):
        self.gs, self.p = gs, None

    def start(self) -> None:
        self.p = hog(self.gs)

    def stop(self) -> None:
        if self.p is not None:
            self.p.kill()
            self.p.wait()
            self.p = None
        time.sleep(3.0)  # the victim calm again before the next run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    s = Sleepers(18)
    loads = []
    try:
        groups = {}
        for name in ("victim", "noisy"):
            rel = f"contend/{s.run}-{name}"
            gs = groups[name] = [s.host.cgroup(rel)] + ([s.host.tracking(rel)] if s.host.mode == "hybrid" else [])
            for g in gs:
                g.create()
            s.groups += gs
        loads.append(hog(groups["victim"]))
        noisy = Noisy(groups["noisy"])
        got: dict[str, list[float]] = {k: [] for k in SETTINGS}
        acted: dict[str, list[int]] = {k: [] for k in SETTINGS}
        for r in range(a.rounds):
            for k in (SETTINGS if r % 2 == 0 else SETTINGS[::-1]):
                pct, n = one(s.run, k != "watch", a.seconds, noisy)
                got[k].append(pct)
                acted[k].append(n)
                print(f"round {r + 1} {k:<16} {pct:.2f} % of a CPU, {n} actions", flush=True)
        base = statistics.median(got["watch"])
        for k in SETTINGS:
            m = statistics.median(got[k])
            print(f"{k:<16} median {m:.2f} % of a CPU  ({m - base:+.2f} against the watch alone; actions per run "
                  f"{acted[k]})")
    finally:
        for p in loads:
            p.kill()
            p.wait()
        s.close()


if __name__ == "__main__":
    main()
