"""Does how a file was laid out change what a disk trial measures? Random direct writes into a file that fio
only fallocated (the old layout: ext4 unwritten extents) against one written once (contend.load.fio.layout),
interleaved A/B/A/B in one run on the experiment device.

A disk trial's baseline is its first seconds. If the disk runs slower there than later, the abiding tenant's
undisturbed level is too low and its curve can rise above it (an I_intFree above 1). This prints, per run,
the IOPS of each second, the first second over the median of the rest, and the mean.

    .venv/bin/python bench/disk_layout.py [--seconds 8] [--size 256M] [--rounds 2]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import uuid

import numpy as np

from contend import owned
from contend.load.fio import iops_log, layout


def fallocated(path: str, size: str) -> list[str]:
    """The layout contend used before 2026-11-23: a write job's --create_only (fio only fallocates)."""
    return ["fio", "--name=layout", f"--filename={path}", f"--size={size}", "--rw=write", "--bs=4K",
            "--direct=1", "--ioengine=libaio", "--create_only=1"]


def one(kind: str, directory, size: str, seconds: int) -> np.ndarray:
    f = directory / f"{kind}.dat"
    f.unlink(missing_ok=True)
    argv = layout(str(f), size) if kind == "written" else fallocated(str(f), size)
    subprocess.run(argv, check=True, capture_output=True, cwd=directory)
    log = directory / kind
    subprocess.run(["fio", "--name=randwrite", f"--filename={f}", f"--size={size}", "--rw=randwrite", "--bs=4K",
                    "--direct=1", "--ioengine=libaio", "--iodepth=32", "--time_based", f"--runtime={seconds}",
                    f"--write_iops_log={log}", "--log_avg_msec=1000", "--output-format=json"],
                   check=True, capture_output=True, cwd=directory)
    out = directory / f"{kind}_iops.1.log"
    rates = np.array([v for _, v in iops_log(out.read_text())])
    out.unlink()
    f.unlink()
    return rates


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--size", default="256M")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    directory = owned.data_dir("bench", uuid.uuid4().hex[:6])
    directory.mkdir(parents=True)
    rows = []
    try:
        for _ in range(args.rounds):
            for kind in ("fallocated", "written"):
                r = one(kind, directory, args.size, args.seconds)
                first = r[0] / np.median(r[1:])
                rows.append({"layout": kind, "iops_per_s": [round(x) for x in r], "first_over_rest": round(first, 2),
                             "mean": round(float(r.mean()))})
                print(f"{kind:10s}  first/rest {first:4.2f}  mean {r.mean():7.0f}  per s: "
                      + " ".join(f"{x:.0f}" for x in r), flush=True)
    finally:
        owned.remove_data_dir(directory)
    for kind in ("fallocated", "written"):
        f = [r["first_over_rest"] for r in rows if r["layout"] == kind]
        print(f"{kind}: first second over the rest's median {min(f):.2f}-{max(f):.2f}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
