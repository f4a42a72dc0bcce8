"""Does rewriting a throttle every period hurt the victim it protects? (docs/results/archive.md, guard, issues 26 and
55)

The kernel restarts a cgroup's throttle slice whenever its limit file is written (blk-throttle's
tg_conf_updated), so a writer with I/O queued behind its cap may dispatch a fresh budget at once. A guard that
rewrites caps every 100 ms (contend's policy moves its caps a little almost every period) may then let the
neighbour burst past its cap. Side by side in one run, interleaved A/B/A/B: a rate-limited victim (fio, 256 KiB
direct writes, depth 4) next to a writer (1 MiB, depth 32) capped at `--cap` MB/s as the guard caps (bytes/s
and IOs/s, reads and writes: guard.limiter.cap_limit), the cap written once (A) or written again every
`--every-ms` (B: the same value ± 1 byte, or with `--move P` a random walk within ± P % of it, as a policy's
moves). Prints per run the victim's throughput, mean and p99 latency, the writer's throughput and, from the
writer's own per-I/O log in 100 ms buckets, the share of buckets it did more than 1.2 × the cap in force and
its largest bucket over that cap; then the mean of B over A for each.

    sudo .venv/bin/python bench/cap_rewrites.py [--seconds 8] [--cap 450] [--victim 280] [--rounds 2] [--move 3]
"""
from __future__ import annotations

import argparse
import os
import random
import threading
import time
import uuid

import numpy as np

from contend.cgroups import Limits, detect
from contend.diskuse import DEFAULT_IO_BYTES
from contend.doctor.calibrate import device_of
from contend.guard.limiter import cap_limit
from contend.kinds.guard.trial import io_buckets, read_io_log
from contend.paths import DATA
from throttle_victim import fio, result

LOG = "contend-bench-writer"  # fio appends _lat.1.log


def rewrite(g, dev: str, cap: int, every_s: float, move: float, stop: threading.Event,
            written: list[tuple[float, float]]) -> None:
    """Write the writer's cap every `every_s` until stopped: ± 1 byte, or a random walk within ± move of it."""
    k, now = 0, float(cap)
    while not stop.wait(every_s):
        k += 1
        now = min(cap * (1 + move), max(cap * (1 - move), now * (1 + random.uniform(-move, move) / 2))) if move \
            else cap + k % 2
        g.set_limits(Limits(io=(cap_limit(dev, now, None, DEFAULT_IO_BYTES),)))
        written.append((time.time(), now))


def overshoot(written: list[tuple[float, float]]) -> tuple[float, float]:
    """From the writer's per-I/O log: the share of its 100 ms buckets above 1.2 × the cap in force a bucket
    before, and its largest bucket over that cap (the first and last buckets, part-filled, left out)."""
    t, done, _ = io_buckets(read_io_log(DATA / f"{LOG}_lat.1.log"))
    if len(t) < 3:
        return float("nan"), float("nan")
    wt, wc = np.array([w[0] for w in written]), np.array([w[1] for w in written])
    cap = wc[np.clip(np.searchsorted(wt, t[1:-1] - 0.1, side="right") - 1, 0, len(wc) - 1)]
    ratio = done[1:-1] / cap
    return float(np.mean(ratio > 1.2)), float(ratio.max())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--cap", type=int, default=450, help="the writer's cap, MB/s")
    ap.add_argument("--victim", type=int, default=280, help="the victim's rate, MB/s")
    ap.add_argument("--every-ms", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--move", type=float, default=0.0, help="B's caps move within ± this % of --cap (0: ± 1 byte)")
    a = ap.parse_args()
    if a.cap < 2 or a.victim < 1 or a.seconds < 2 or a.rounds < 1 or not 0 <= a.move < 100 or a.every_ms < 10:
        ap.error("--cap ≥ 2, --victim ≥ 1, --seconds ≥ 2, --rounds ≥ 1, 0 ≤ --move < 100, --every-ms ≥ 10")
    DATA.mkdir(parents=True, exist_ok=True)
    dev = device_of(DATA)
    victim = ["--bs=256k", "--iodepth=4", f"--rate={a.victim}m", "--percentile_list=99"]
    writer = ["--bs=1M", "--iodepth=32", f"--write_lat_log={DATA / LOG}", "--log_unix_epoch=1", "--disable_clat=1",
              "--disable_slat=1"]
    g = detect().cgroup(f"contend/bench-{uuid.uuid4().hex[:6]}")
    g.create()
    cap = a.cap * 1_000_000
    got: dict[str, list[tuple[float, ...]]] = {"A": [], "B": []}
    try:
        for name in ("victim", "writer"):  # laid out first: a fresh file's first writes allocate blocks
            result(fio(name, 1, ["--bs=1M", "--create_only=1"]))
        for rnd in range(1, a.rounds + 1):
            for mode in ("A", "B"):
                g.clear_io_limits(dev)
                g.set_limits(Limits(io=(cap_limit(dev, cap, None, DEFAULT_IO_BYTES),)))
                written = [(0.0, float(cap))]
                stop = threading.Event()
                t = threading.Thread(target=rewrite, args=(g, dev, cap, a.every_ms / 1000, a.move / 100, stop,
                                                           written), daemon=True)
                w = fio("writer", a.seconds, writer, preexec=lambda: g.add_pid(os.getpid()))
                if mode == "B":
                    t.start()
                v = result(fio("victim", a.seconds, victim))
                n = result(w)
                stop.set()
                if mode == "B":
                    t.join()
                row = (v["bw_bytes"] / 1e6, v["clat_ns"]["mean"] / 1e6,
                       v["clat_ns"]["percentile"]["99.000000"] / 1e6, n["bw_bytes"] / 1e6, *overshoot(written))
                got[mode].append(row)
                what = "written once" if mode == "A" else f"rewritten every {a.every_ms} ms"
                print(f"round {rnd} {mode} (cap {what}): victim {row[0]:.0f} MB/s, mean {row[1]:.2f} ms, "
                      f"p99 {row[2]:.2f} ms; writer {row[3]:.0f} MB/s, over 1.2 × its cap in {row[4]:.0%} of "
                      f"100 ms buckets, at most {row[5]:.2f} × it")
        mean = {m: [float(np.mean([r[i] for r in rows])) for i in range(6)] for m, rows in got.items()}
        names = ("victim MB/s", "victim mean ms", "victim p99 ms", "writer MB/s")
        print("B / A: " + ", ".join(f"{n} {mean['B'][i] / mean['A'][i]:.2f}" for i, n in enumerate(names)))
        print("writer's buckets over 1.2 × its cap, A " + f"{mean['A'][4]:.1%}, B {mean['B'][4]:.1%}; largest over "
              f"the cap, A {mean['A'][5]:.2f}, B {mean['B'][5]:.2f} (means over rounds)")
    finally:
        g.clear_io_limits(dev)
        g.remove()
        for name in ("victim", "writer"):
            (DATA / f"contend-bench-{name}.dat").unlink(missing_ok=True)
        (DATA / f"{LOG}_lat.1.log").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
