"""What a throttle on a noisy writer leaves a rate-limited victim on this disk (docs/results.md, guard).

The victim (fio: 256 KiB direct writes, queue depth 4, rate 1 GB/s) runs alone, then next to a writer
(1 MiB direct writes, depth 32) in a blkio/io cgroup capped at each rate in turn (0 = no cap), side by side
in one run. Prints the victim's throughput and mean latency and the writer's throughput per cap.

    sudo .venv/bin/python bench/throttle_victim.py [--seconds 8] [--caps 0,4000,3500,3000,2500]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--caps", default="0,4000,3500,3000,2500", help="writer caps in MB/s, 0 = none")
    a = ap.parse_args()
    DATA.mkdir(parents=True, exist_ok=True)
    dev = device_of(DATA)
    victim = ["--bs=256k", "--iodepth=4", "--rate=1000m"]
    v = result(fio("victim", a.seconds, victim))
    print(f"victim alone: {v['bw_bytes'] / 1e9:.2f} GB/s, mean latency {v['clat_ns']['mean'] / 1e6:.2f} ms")
    g = detect().cgroup(f"contend/bench-{uuid.uuid4().hex[:6]}")
    g.create()
    try:
        for cap in (int(x) for x in a.caps.split(",")):
            g.clear_io_limits(dev)
            if cap:
                g.set_limits(Limits(io=(IoLimit(dev, wbps=cap * 1_000_000),)))
            w = fio("writer", a.seconds, ["--bs=1M", "--iodepth=32"], preexec=lambda: g.add_pid(os.getpid()))
            v = result(fio("victim", a.seconds, victim))
            n = result(w)
            print(f"writer cap {cap or 'none':>5} MB/s: victim {v['bw_bytes'] / 1e9:.2f} GB/s, "
                  f"mean latency {v['clat_ns']['mean'] / 1e6:.2f} ms; writer {n['bw_bytes'] / 1e9:.2f} GB/s")
    finally:
        g.remove()
        for name in ("victim", "writer"):
            (DATA / f"contend-bench-{name}.dat").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
