"""What a throttle on a noisy writer leaves a rate-limited victim on this disk (docs/results/archive.md, guard).

The victim (fio: 256 KiB direct writes, queue depth 4, rate 1 GB/s) runs alone, then next to the writer
(1 MiB direct writes, depth 32) in a blkio/io cgroup capped at each rate in turn (0 = no cap, which comes first),
side by side in one run, `--rounds` times. Prints per cap the victim's throughput, mean latency and retention
(÷ alone) and the writer's throughput and work conservation: its share of the spare capacity, what the disk gave
both with no cap less what the victim asks (the guard evaluation's definition, kinds/guard/metrics.py). The guard
issue asks for both at once: retention ≥ 95 % and work conservation ≥ 90 %; the last line says which caps gave both.

    sudo .venv/bin/python bench/throttle_victim.py [--seconds 8] [--caps 4000,3500,3000,2500] [--rounds 1]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import uuid

from contend.cgroups import IoLimit, Limits, detect
from contend.doctor.calibrate import device_of
from contend.paths import DATA


def fio(name: str, seconds: int, extra: list[str], preexec=None) -> subprocess.Popen:
    argv = ["fio", "--output-format=json", f"--name={name}", f"--filename={DATA / f'contend-bench-{name}.dat'}",
            "--size=1G", "--direct=1", "--ioengine=libaio", "--rw=write", "--time_based", f"--runtime={seconds}",
            *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, preexec_fn=preexec)


def result(p: subprocess.Popen) -> dict:
    out, _ = p.communicate()
    return json.loads(out)["jobs"][0]["write"]


def clean(g) -> None:
    """Remove the bench's cgroup and fio's files."""
    g.remove()
    for name in ("victim", "writer"):
        (DATA / f"contend-bench-{name}.dat").unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--caps", default="4000,3500,3000,2500", help="writer caps in MB/s (no cap is always first)")
    ap.add_argument("--rounds", type=int, default=1, help="sweeps of every cap, one after the other")
    a = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    dev = device_of(DATA)
    victim = ["--bs=256k", "--iodepth=4", "--rate=1000m"]
    writer = ["--bs=1M", "--iodepth=32"]
    g = detect().cgroup(f"contend/bench-{uuid.uuid4().hex[:6]}")
    g.create()
    caps = [0, *(c for c in map(int, a.caps.split(",")) if c)]
    both: dict[int, list[bool]] = {}
    try:
        for rnd in range(1, a.rounds + 1):
            v = result(fio("victim", a.seconds, victim))
            alone_v, spare = v["bw_bytes"], None
            print(f"round {rnd}: victim alone {alone_v / 1e9:.2f} GB/s, "
                  f"mean latency {v['clat_ns']['mean'] / 1e6:.2f} ms")
            for cap in caps:
                g.clear_io_limits(dev)
                if cap:
                    g.set_limits(Limits(io=(IoLimit(dev, wbps=cap * 1_000_000),)))
                w = fio("writer", a.seconds, writer, preexec=lambda: g.add_pid(os.getpid()))
                v = result(fio("victim", a.seconds, victim))
                n = result(w)
                if spare is None:  # the uncapped pair: what the disk gives both, less what the victim asks
                    spare = max(1.0, v["bw_bytes"] + n["bw_bytes"] - alone_v)
                kept, wc = v["bw_bytes"] / alone_v, n["bw_bytes"] / spare
                both.setdefault(cap, []).append(kept >= 0.95 and wc >= 0.90)
                print(f"  writer cap {cap or 'none':>5} MB/s: victim {v['bw_bytes'] / 1e9:.2f} GB/s ({kept:.0%} kept), "
                      f"mean latency {v['clat_ns']['mean'] / 1e6:.2f} ms; writer {n['bw_bytes'] / 1e9:.2f} GB/s "
                      f"({wc:.0%} of the spare)")
        good = [f"{c} MB/s ({sum(ok)} of {len(ok)} rounds)" for c, ok in both.items() if any(ok)]
        print("retention ≥ 95 % with work conservation ≥ 90 %: " + (", ".join(good) if good else "no cap"))
    finally:
        clean(g)


if __name__ == "__main__":
    main()
