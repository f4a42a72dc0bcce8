"""contend watch on issue 51's scene: two antagonists at once, each with its own way of hurting.

A victim runs two CPU-bound workers (stress-ng --cpu 2) on this host's CPUs; `--hog-at` seconds in a hog takes
one CPU (stress-ng --cpu 1); `--writer-at` seconds in a writer joins (fio, 1 MiB direct writes 16 deep: it
takes some CPU and wakes on every completion). Each in a cgroup of its own, watched by contend watch (eBPF on,
0.5 s periods) for `--seconds`. Per run it prints the victim's CPU verdicts (their culprits and shares) and,
over the frames with both antagonists, each one's preemptions of the victim per second beside the time it
took from it (s/s), and the sum of the time taken against the victim's run-queue wait (two views of one wait).

    sudo .venv/bin/python bench/watch_two_antagonists.py [--runs 3] [--seconds 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.test_watch import Box  # noqa: E402  (a cgroup of contend's with real processes, as the tests use)

from contend.cgroups import detect  # noqa: E402
from contend.paths import DATA  # noqa: E402
from contend.watch.daemon import WatchConfig, Watcher  # noqa: E402
from contend.watch.detector import ENDS  # noqa: E402
from contend.watch.signals import Frame  # noqa: E402


def one(seconds: float, hog_at: float, writer_at: float) -> None:
    host = detect()
    run = f"bench-2a-{uuid.uuid4().hex[:6]}"
    victim, hog, writer = (Box(host, run, n) for n in ("victim", "hog", "writer"))
    DATA.mkdir(parents=True, exist_ok=True)
    file = DATA / f"{run}-writer.dat"
    events: list[dict] = []
    frames: list[Frame] = []
    w = Watcher(WatchConfig([f"cgroup:contend/{run}-*"], period=0.5, metrics="off"), host, events=events.append)
    w.start()  # its first reading and probes ready before the loads start
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), kwargs={"after_step": lambda x: frames.append(x.last)})
    th.start()
    try:
        clock = lambda: time.monotonic() - w.collector.clock0  # noqa: E731  the frames' t
        at0 = clock()
        victim.run("stress-ng", "--cpu", "2", "--timeout", f"{seconds:g}")
        time.sleep(max(0.0, at0 + hog_at - clock()))
        hog.run("stress-ng", "--cpu", "1", "--timeout", f"{seconds - hog_at:g}")
        time.sleep(max(0.0, at0 + writer_at - clock()))
        t_writer = clock()
        writer.run("fio", "--name=w", f"--filename={file}", "--size=1G", "--rw=write", "--bs=1M", "--direct=1",
                   "--iodepth=16", "--ioengine=libaio", "--time_based", f"--runtime={seconds - writer_at:g}")
        time.sleep(max(0.0, at0 + seconds - clock()))
    finally:
        stop.set()
        th.join(timeout=30)
        file.unlink(missing_ok=True)
        for b in (victim, hog, writer):
            b.remove()
    short = lambda n: n.rsplit("-", 1)[-1]  # noqa: E731
    for e in events:
        if e["victim"] == victim.name and e["resource"] == "cpu" and e["event"] not in ENDS:
            named = ", ".join(f"{short(c)} {x:.2f}" for c, x in e["culprits"])
            print(f"  t={e['t'] - at0:5.1f} s  {e['kind']:<12} {named}")
    both = [f for f in frames if f.t - f.dt >= t_writer + 2 and f.get(writer.name, "cpu") > 0.05]
    if not both:
        print("  the writer never ran")
        return
    v = victim.name

    def mean(get) -> float:
        return statistics.fmean(get(f) for f in both)
    pre = {short(n): mean(lambda f, n=n: f.preempt.get(v, {}).get(n, 0.0)) for n in (hog.name, writer.name)}
    took = {short(n): mean(lambda f, n=n: f.taken.get(v, {}).get(n, 0.0)) for n in (hog.name, writer.name, v)}
    cpu = {short(n): mean(lambda f, n=n: f.get(n, "cpu")) for n in (hog.name, writer.name)}
    waited = mean(lambda f: f.get(v, "rq_delay"))
    charged = mean(lambda f: sum(f.taken.get(v, {}).values()))
    print(f"  {len(both)} frames with both: CPUs used hog {cpu['hog']:.2f}, writer {cpu['writer']:.2f}; "
          f"preemptions/s hog {pre['hog']:.0f}, writer {pre['writer']:.0f}; time taken s/s hog {took['hog']:.3f}, "
          f"writer {took['writer']:.3f}, its own {took['victim']:.3f}; taken {charged:.3f} vs waited "
          f"{waited:.3f} s/s (ratio {charged / waited:.3f})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=40)
    ap.add_argument("--hog-at", type=float, default=8)
    ap.add_argument("--writer-at", type=float, default=18)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/watch_two_antagonists.py: needs root (cgroups, bpftrace)")
    for r in range(a.runs):
        print(f"run {r + 1}/{a.runs}:", flush=True)
        one(a.seconds, a.hog_at, a.writer_at)


if __name__ == "__main__":
    main()
