"""BFQ's proportional weights against the disk's own scheduler, side by side in one run (issue 22's
work-conserving mechanisms, measured before they become a guard policy).

A victim asks for a fixed rate (fio, 256 KiB direct random writes, depth 4, `--victim` × the calibrated bandwidth,
as the guard evaluation's) beside a neighbour that wants everything (1 MiB, depth 32), each in a blkio/io cgroup of
its own, under: the disk's scheduler as it is (no protection), BFQ with equal weights, BFQ with the victim weighted
10:1, and BFQ 1:1 without idling (slice_idle 0). Rounds interleave the modes. Per run: the victim's MB/s, mean and
p99 latency, the neighbour's MB/s, and its work conservation against the same round's run under the disk's own
scheduler (neighbour / (that run's total − victim), at most 1: the share of what the victim left that the neighbour
still got). The disk's scheduler is restored however the bench ends.

    sudo .venv/bin/python bench/bfq_share.py [--rounds 3] [--seconds 6] [--victim 0.2]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import uuid
from pathlib import Path

from contend.cgroups import detect
from contend.doctor import ensure_capacity
from contend.doctor.calibrate import device_of
from contend.guard import scheduler
from contend.load.fio import layout
from contend.paths import DATA

SIZE = "2G"


def slice_idle(device: str, ms: int) -> None:
    """BFQ's idling for a queue that just emptied (8 ms by default; 0: none, BFQ then shares by weight only
    what is backlogged)."""
    Path(f"/sys/dev/block/{device}/queue/iosched/slice_idle").write_text(str(ms))


def fio(cg, name: str, path: Path, seconds: float, rate: str | None, bs: str, depth: int) -> subprocess.Popen:
    argv = ["fio", f"--name={name}", f"--filename={path}", f"--size={SIZE}", "--rw=randwrite", f"--bs={bs}",
            f"--iodepth={depth}", "--ioengine=libaio", "--direct=1", "--time_based", f"--runtime={seconds:g}",
            "--output-format=json", *([f"--rate={rate}"] if rate else [])]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: cg.add_pid(os.getpid()))


def one(host, cgs, files, device: str, mode: str, own: str, seconds: float, rate: float) -> dict:
    """One run under `mode` ("own", "bfq 1:1", "bfq 10:1"): the fio figures of both."""
    scheduler.switch(device, "bfq" if mode.startswith("bfq") else own)
    if mode.startswith("bfq"):
        slice_idle(device, 0 if mode.endswith("idle 0") else 8)
        w = (1000, 100) if "10:1" in mode else (100, 100)
        for cg, weight in zip(cgs, w):
            cg.set_io_weight(device, weight)
    v = fio(cgs[0], "victim", files[0], seconds, f"{int(rate)}", "256k", 4)
    n = fio(cgs[1], "neighbour", files[1], seconds, None, "1M", 32)
    out = {}
    for who, p in (("victim", v), ("neighbour", n)):
        stdout, stderr = p.communicate(timeout=seconds + 120)
        if p.returncode != 0:
            raise SystemExit(f"fio ({who}) failed: {stderr.strip()[-300:]}")
        out[who] = json.loads(stdout)["jobs"][0]["write"]
    return {"victim_mb_s": out["victim"]["bw_bytes"] / 1e6, "victim_ms": out["victim"]["clat_ns"]["mean"] / 1e6,
            "victim_p99_ms": out["victim"]["clat_ns"]["percentile"]["99.000000"] / 1e6,
            "neighbour_mb_s": out["neighbour"]["bw_bytes"] / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=6)
    ap.add_argument("--victim", type=float, default=0.2, help="the victim's rate, a share of the calibrated bandwidth")
    a = ap.parse_args()
    device = device_of(DATA)
    if "bfq" not in scheduler.offered(device):
        raise SystemExit(f"{device}: no bfq scheduler offered ({' '.join(scheduler.offered(device))})")
    rate = a.victim * float(ensure_capacity(["disk"], say=print)["disk_write_bw_bytes_s"])
    host = detect()
    tag = uuid.uuid4().hex[:6]
    cgs = [host.cgroup(f"contend/bench-bfq-{tag}-{who}") for who in ("victim", "neighbour")]
    files = [DATA / f"contend-bench-bfq-{tag}-{who}.dat" for who in ("victim", "neighbour")]
    own = scheduler.current(device)
    modes = ["own", "bfq 1:1", "bfq 10:1", "bfq 1:1 idle 0"]
    runs: dict[str, list[dict]] = {m: [] for m in modes}
    try:
        for cg in cgs:
            cg.create()
        for f in files:
            subprocess.run(layout(str(f), SIZE), check=True, capture_output=True)
        for r in range(a.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            got = {m: one(host, cgs, files, device, m, own, a.seconds, rate) for m in order}
            base = got["own"]["victim_mb_s"] + got["own"]["neighbour_mb_s"]  # this round's delivery, no protection
            for m in order:
                g = got[m]
                g["work_conservation"] = min(1.0, g["neighbour_mb_s"] / max(base - g["victim_mb_s"], 1e-9))
                runs[m].append(g)
                print(f"round {r + 1} {m:9s} victim {g['victim_mb_s']:7.0f} MB/s (asked {rate / 1e6:.0f}), "
                      f"{g['victim_ms']:.2f} ms, p99 {g['victim_p99_ms']:.2f} ms; neighbour {g['neighbour_mb_s']:6.0f} "
                      f"MB/s; work conservation {g['work_conservation']:.2f}", flush=True)
    finally:
        scheduler.switch(device, own)
        for f in files:
            f.unlink(missing_ok=True)
        for cg in cgs:
            cg.remove()
    print(f"\nmedians of {a.rounds} rounds ({a.seconds:g} s each), the disk's scheduler '{own}' restored:")
    print("| scheduler | victim MB/s (asked) | victim p99 ms | neighbour MB/s | work conservation |")
    print("|---|---|---|---|---|")
    for m in modes:
        med = {k: statistics.median(x[k] for x in runs[m]) for k in runs[m][0]}
        print(f"| {m if m != 'own' else own} | {med['victim_mb_s']:.0f} ({rate / 1e6:.0f}) "
              f"| {med['victim_p99_ms']:.2f} | {med['neighbour_mb_s']:.0f} | {med['work_conservation']:.2f} |")


if __name__ == "__main__":
    main()
