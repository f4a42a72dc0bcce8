"""contend protect on a scene no preset holds: two CPU culprits of different size that start together beside 18
sleeping bystanders, against a victim that wants both CPUs; no action and protect interleaved.

Twenty cgroups of contend's: the victim (stress-ng on every CPU from the start), `big` (stress-ng on one CPU at
100 %) and `small` (stress-ng on every CPU at 30 %), both started `--calm` seconds in, and 17 sleepers. Each round
runs the watch (1 s periods) alone and with protect (CPU only) in turn, the order turned each round. Per run: the
victim's CPU over the attack against its calm level (isolation), the culprits' CPU, protect's actions, and the
first tightening's shares (is the larger culprit held harder?).

    sudo .venv/bin/python bench/protect_scene.py [--rounds 3] [--calm 8] [--attack 16]
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


def cgroup_of(s: Sleepers, name: str):
    rel = f"contend/{s.run}-{name}"
    gs = [s.host.cgroup(rel)] + ([s.host.tracking(rel)] if s.host.mode == "hybrid" else [])
    for g in gs:
        g.create()
    s.groups += gs
    return gs


def start(gs, argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, preexec_fn=lambda: [g.add_pid(os.getpid()) for g in gs])


def cpu_s(g) -> float:
    return g.stats(detail=False).cpu_usage_ns * 1e-9


def one(s: Sleepers, groups: dict, protect: bool, calm: float, attack: float) -> dict:
    w = Watcher(WatchConfig([f"cgroup:contend/{s.run}-*"], period=1.0, metrics="off"))
    p = build(w.host, lambda: w.targets, ("cpu",), ProtectModel(), None, log=None) if protect else None
    w.protector = p
    n = os.cpu_count() or 1
    procs = [start(groups["victim"], ["stress-ng", "--cpu", str(n), "--timeout", f"{int(calm + attack + 2)}s"])]
    th = threading.Thread(target=w.run, kwargs={"duration": calm + attack})
    th.start()
    time.sleep(2.0)  # the victim's own start
    v0 = cpu_s(groups["victim"][0])
    time.sleep(calm - 2.0)
    v1, c1 = cpu_s(groups["victim"][0]), {k: cpu_s(groups[k][0]) for k in ("big", "small")}
    procs += [start(groups["big"], ["stress-ng", "--cpu", "1", "--timeout", f"{int(attack)}s"]),
              start(groups["small"], ["stress-ng", "--cpu", str(n), "--cpu-load", "30", "--timeout",
                                      f"{int(attack)}s"])]
    time.sleep(attack - 0.5)
    v2, c2 = cpu_s(groups["victim"][0]), {k: cpu_s(groups[k][0]) for k in ("big", "small")}
    th.join()
    for x in procs:
        x.kill()
        x.wait()
    level = (v1 - v0) / (calm - 2.0)
    first: dict[str, float] = {}  # each culprit's share when first held
    for act in p.actions if p is not None else []:
        if act["action"] == "tighten":
            first.setdefault(act["culprit"].rsplit("-", 1)[-1], act["share"])
    return {"isolation": min(1.0, (v2 - v1) / (attack - 0.5) / level),
            "culprits": {k: round((c2[k] - c1[k]) / (attack - 0.5), 2) for k in c2},
            "actions": len(p.actions) if p is not None else 0,
            "first": first}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calm", type=float, default=8.0)
    ap.add_argument("--attack", type=float, default=16.0)
    a = ap.parse_args()
    s = Sleepers(17)
    try:
        groups = {k: cgroup_of(s, k) for k in ("victim", "big", "small")}
        got: dict[str, list[float]] = {"none": [], "protect": []}
        for r in range(a.rounds):
            for mode in (("none", "protect") if r % 2 == 0 else ("protect", "none")):
                m = one(s, groups, mode == "protect", a.calm, a.attack)
                got[mode].append(m["isolation"])
                print(f"round {r + 1} {mode:<8} isolation {m['isolation']:.2f}  culprits' CPUs {m['culprits']}  "
                      f"actions {m['actions']}  first shares {m['first']}", flush=True)
        for mode, xs in got.items():
            print(f"{mode:<8} isolation median {statistics.median(xs):.2f} ({', '.join(f'{x:.2f}' for x in xs)})")
    finally:
        s.close()


if __name__ == "__main__":
    main()
