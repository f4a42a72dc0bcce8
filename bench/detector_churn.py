"""What the watch's detector keeps of pods that were deleted: a node's pods come and go for months.

Pure: `--cycles` times, `--pods` containers appear beside 10 that stay, are watched for 40 frames and deleted
(5 frames without them). The memory the detector's process holds grows by what it kept of them (tracemalloc,
after a first cycle that sizes its tables). With `--before SRC` (another checkout's src, a `git worktree`), that
checkout's detector runs the same frames beside this one's.

    .venv/bin/python bench/detector_churn.py [--pods 110] [--cycles 5] [--before /tmp/wb/src]
"""
from __future__ import annotations

import argparse
import math
import random
import sys
import tracemalloc
from pathlib import Path

from contend.watch.signals import Frame
from detect_replay import detector_of
from watch_loop_speed import CALM

HERE = Path(__file__).resolve().parents[1] / "src"


def frame(t: int, names: list[str]) -> Frame:
    return Frame(float(t), 1.0, {n: {k: v * random.uniform(0.8, 1.2) if math.isfinite(v) else v
                                     for k, v in CALM.items()} for n in names}, {}, {"cpus": 2.0})


def kept_per_pod(detector: type, pods: int, cycles: int) -> float:
    """KiB the process grew by per pod made and deleted, over `cycles` cycles after the first."""
    random.seed(1)
    d, keep, t = detector(), [f"keep{i}" for i in range(10)], 0

    def cycle(c: int) -> None:
        nonlocal t
        for names in [keep + [f"pod{c}-{i}" for i in range(pods)]] * 40 + [keep] * 5:
            d.step(frame(t, names))
            t += 1
    cycle(0)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    for c in range(1, cycles + 1):
        cycle(c)
    grew = sum(x.size_diff for x in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    return grew / (pods * cycles) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, default=110)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--before", type=Path, help="another checkout's src: its detector beside this one's")
    a = ap.parse_args()
    for name, src in ([("before", a.before.resolve())] if a.before else []) + [("now", HERE)]:
        print(f"{name:7} {kept_per_pod(detector_of(src), a.pods, a.cycles):5.1f} KiB kept per pod deleted "
              f"({a.cycles} cycles of {a.pods} pods)")


if __name__ == "__main__":
    sys.exit(main())
