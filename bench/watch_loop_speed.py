"""The watch's per-period work on a node's scale, pure: its detector (Detector.step) and its Prometheus endpoint's
update (WatchMetrics.update, the endpoint not served) over `--frames` synthetic calm frames of `--pods` containers
(every signal a live frame has, each a little noisy), the best of `--repeat` runs, in ms per frame.
With `--before SRC` (the src directory of the code before a change: `git worktree add /tmp/before REV`), that
code's detector runs beside this one's in a child process each, interleaved `--rounds` times, and the ratio is
printed (side by side in one run: this machine is shared and noisy).

    .venv/bin/python bench/watch_loop_speed.py [--pods 110] [--frames 80] [--rounds 3] [--before SRC]
"""
from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import timeit

CALM = {"cpu": 0.02, "rq_delay": 0.01, "cpu_psi": 0.01, "mem_psi": 0.0, "io_psi": 0.0, "throttled": 0.0,
        "mem": 3e7, "mem_limit": math.nan, "cpu_quota": math.nan, "majfault": 0.0, "refault": 0.0, "io_bytes": 0.0,
        "io_wbytes": 0.0, "io_ios": 0.0, "dirty": 0.0, "net_bytes": 0.0, "net_rtt_ms": math.nan,
        "net_retrans": math.nan, "net_drops": 0.0, "io_wait_ms": math.nan, "mem_max": 0.0, "oom_kill": 0.0,
        "io_limited": 0.0}


def ms_per_frame(pods: int, frames: int, repeat: int) -> tuple[float, float]:
    """(detector, endpoint) in this process's contend (PYTHONPATH decides whose): the best of `repeat` runs over
    the same frames."""
    from contend.watch.daemon import WatchMetrics
    from contend.watch.detector import Detector
    from contend.watch.signals import Frame
    rnd = random.Random(1)
    seq = [Frame(float(t), 1.0, {f"ns-{i % 7}/pod-{i}/main": {k: v * (1 + 0.2 * rnd.random()) for k, v in CALM.items()}
                                 for i in range(pods)}, {}, {"cpu_other": 0.1, "steal": 0.0, "cpus": 2.0}, {})
           for t in range(frames)]

    def detect() -> None:
        d = Detector()
        for f in seq:
            d.step(f)

    def export() -> None:
        m = WatchMetrics("off")
        for f in seq:
            m.update(f, [])
    return tuple(min(timeit.repeat(run, number=1, repeat=repeat)) / frames * 1e3  # type: ignore[return-value]
                 for run in (detect, export))


def child(src: str | None, args: argparse.Namespace) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": src or os.path.join(os.path.dirname(__file__), "..", "src")}
    out = subprocess.run([sys.executable, __file__, "--pods", str(args.pods), "--frames", str(args.frames),
                          "--repeat", str(args.repeat), "--one"], env=env, capture_output=True, text=True, check=True)
    a, b = out.stdout.split()
    return float(a), float(b)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--frames", type=int, default=80)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--before", metavar="SRC", help="the src directory of the code before a change: run beside")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a child: print ms per frame alone
    args = ap.parse_args()
    if args.one:
        print(*ms_per_frame(args.pods, args.frames, args.repeat))
        return
    if args.before and not os.path.isfile(os.path.join(args.before, "contend", "cli.py")):
        sys.exit(f"--before {args.before}: no contend/cli.py there (give the src directory of a checkout)")
    versions = [("before", args.before), ("now", None)] if args.before else [("now", None)]
    got: dict[str, list[tuple[float, float]]] = {v: [] for v, _ in versions}
    for r in range(args.rounds):
        for v, src in versions:  # interleaved: the same minutes of this shared machine for each
            got[v].append(child(src, args))
            print(f"round {r + 1} {v}: detector {got[v][-1][0]:.2f}, endpoint {got[v][-1][1]:.2f} ms per frame",
                  flush=True)
    print(f"\n{args.pods} containers, {args.frames} calm frames, best of {args.repeat}; median of {args.rounds} rounds "
          "(ms per frame; % of one CPU at 1-s periods):")
    for i, what in enumerate(("Detector.step", "WatchMetrics.update")):
        for v in got:
            ms = statistics.median(x[i] for x in got[v])
            print(f"  {what} {v}: {ms:.2f} ms ({ms / 10:.3f} %)")
        if args.before:
            ratios = [a[i] / b[i] for a, b in zip(got["now"], got["before"])]
            each = ", ".join(f"{x:.2f}" for x in ratios)
            print(f"  {what} now / before, per round: {each}; median {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
