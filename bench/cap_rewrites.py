"""Does rewriting a throttle every period hurt the victim it protects? (docs/results.md, guard, issue 26)

The kernel restarts a cgroup's throttle slice whenever its limit file is written (blk-throttle's
tg_conf_updated), so a writer with I/O queued behind its cap may dispatch a fresh budget at once. A guard that
rewrites caps every 100 ms (contend's policy moves its caps a little almost every period) may then let the
neighbour burst past its cap. Side by side in one run, interleaved A/B/A/B: a rate-limited victim (fio, 256 KiB
direct writes, depth 4) next to a writer (1 MiB, depth 32) capped at `--cap` MB/s, with the cap written
once (A) or written again every `--every-ms` (B, the same value ± 1 byte, as a policy's small moves).
Prints per run the victim's throughput, mean and p99 latency and the writer's throughput, then the mean of
B over A for each.

    sudo .venv/bin/python bench/cap_rewrites.py [--seconds 8] [--cap 450] [--victim 280] [--rounds 2]
"""
from __future__ import annotations

import argparse
import os
import threading
import uuid

from contend.cgroups import IoLimit, Limits, detect
from contend.doctor.calibrate import device_of
from contend.paths import DATA
from throttle_victim import fio, result


def rewrite(g, dev: str, cap: int, every_s: float, stop: threading.Event) -> None:
    k = 0
    while not stop.wait(every_s):
        k += 1
        g.set_limits(Limits(io=(IoLimit(dev, wbps=cap + k % 2),)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--cap", type=int, default=450, help="the writer's cap, MB/s")
    ap.add_argument("--victim", type=int, default=280, help="the victim's rate, MB/s")
    ap.add_argument("--every-ms", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    dev = device_of(DATA)
    victim = ["--bs=256k", "--iodepth=4", f"--rate={a.victim}m", "--percentile_list=99"]
    writer = ["--bs=1M", "--iodepth=32"]
    g = detect().cgroup(f"contend/bench-{uuid.uuid4().hex[:6]}")
    g.create()
    cap = a.cap * 1_000_000
    got: dict[str, list[tuple[float, float, float, float]]] = {"A": [], "B": []}
    try:
        for name in ("victim", "writer"):  # laid out first: a fresh file's first writes allocate blocks
            result(fio(name, 1, ["--bs=1M", "--create_only=1"]))
        for rnd in range(1, a.rounds + 1):
            for mode in ("A", "B"):
                g.clear_io_limits(dev)
                g.set_limits(Limits(io=(IoLimit(dev, wbps=cap),)))
                stop = threading.Event()
                t = threading.Thread(target=rewrite, args=(g, dev, cap, a.every_ms / 1000, stop), daemon=True)
                w = fio("writer", a.seconds, writer, preexec=lambda: g.add_pid(os.getpid()))
                if mode == "B":
                    t.start()
                v = result(fio("victim", a.seconds, victim))
                n = result(w)
                stop.set()
                if mode == "B":
                    t.join()
                row = (v["bw_bytes"] / 1e6, v["clat_ns"]["mean"] / 1e6,
                       v["clat_ns"]["percentile"]["99.000000"] / 1e6, n["bw_bytes"] / 1e6)
                got[mode].append(row)
                what = "written once" if mode == "A" else f"rewritten every {a.every_ms} ms"
                print(f"round {rnd} {mode} (cap {what}): victim {row[0]:.0f} MB/s, mean {row[1]:.2f} ms, "
                      f"p99 {row[2]:.2f} ms; writer {row[3]:.0f} MB/s")
        mean = {m: [sum(r[i] for r in rows) / len(rows) for i in range(4)] for m, rows in got.items()}
        names = ("victim MB/s", "victim mean ms", "victim p99 ms", "writer MB/s")
        print("B / A: " + ", ".join(f"{n} {mean['B'][i] / mean['A'][i]:.2f}" for i, n in enumerate(names)))
    finally:
        g.clear_io_limits(dev)
        g.remove()
        for name in ("victim", "writer"):
            (DATA / f"contend-bench-{name}.dat").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
