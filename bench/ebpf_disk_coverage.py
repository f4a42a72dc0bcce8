"""How much of a tenant's written bytes the eBPF disk view attributes to it, against what the kernel charged its
cgroup, with and without a write throttle: side by side in one run, rounds interleaved.

A bio over the tenant's throttle is queued by blk-throttle and submitted later by a kernel worker in the root
cgroup, where the eBPF view (keyed by the submitting task's cgroup) cannot see whose it was (docs/metrics.md);
this prints the share it still sees per throttle, and the bytes kernel workers submitted meanwhile.

    sudo .venv/bin/python bench/ebpf_disk_coverage.py [--mib 100] [--rounds 3] [--rates 0,200,50,20]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from functools import partial

from benchkit import runc_container
from contend.cgroups import IoLimit, Limits
from contend.doctor.calibrate import device_of
from contend.paths import DATA
from contend.probes import BpftraceProbes, Target
from contend.probes.ebpf import WRITES, ensure_tracefs

# what kernel workers (per-CPU kworkers: blk-throttle's dispatch; not the unbound writeback flushers) wrote
WORKERS = (f'tracepoint:block:block_io_start /({WRITES}) && strncmp(comm, "kworker/", 8) == 0 && '
           'strncmp(comm, "kworker/u", 9) != 0/ { @worker = sum(args->bytes); }')  # printed at exit


def one(rt, c, mib: int, rate_mib: int) -> tuple[float, float]:
    """(eBPF-attributed share of the charged bytes, MiB kernel workers wrote meanwhile) of `mib` MiB of direct
    1 MiB writes under a write throttle of `rate_mib` MiB/s (0: none)."""
    dev = device_of(DATA)
    c.cgroup.clear_io_limits(dev)
    if rate_mib:
        c.cgroup.set_limits(Limits(io=(IoLimit(dev, wbps=rate_mib << 20),)))
    before = c.cgroup.stats().io.get(dev)
    workers = subprocess.Popen(["bpftrace", "-e", WORKERS], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
    probes = BpftraceProbes([Target("t", c.cgroup, c.tracking, partial(rt.track, c))], period=0.1,
                            wanted=("block",)).start()
    time.sleep(1.0)  # the workers' bpftrace attached too
    p = rt.run(c, ["dd", "if=/dev/zero", "of=/data/f", "bs=1M", f"count={mib}", "oflag=direct", "conv=notrunc"],
               timeout=600)
    time.sleep(0.3)
    samples = probes.stop()
    workers.send_signal(2)
    out, _ = workers.communicate(timeout=30)
    if p.returncode != 0:
        raise SystemExit(f"dd failed: {p.stderr}")
    charged = c.cgroup.stats().io[dev].wbytes - (before.wbytes if before else 0)
    ebpf = sum(s.value * 0.1 for s in samples if s.quantity == "blk_bytes_s")
    worker = next((int(ln.split()[1]) for ln in out.splitlines() if ln.startswith("@worker:")), 0)
    return ebpf / charged, worker / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mib", type=int, default=100, help="MiB written per measurement")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rates", default="0,200,50,20", help="write throttles in MiB/s, 0 = none")
    a = ap.parse_args()
    if why := ensure_tracefs():
        raise SystemExit(why)
    rates = [int(r) for r in a.rates.split(",")]
    seen: dict[int, list[float]] = {r: [] for r in rates}
    work: dict[int, list[float]] = {r: [] for r in rates}
    with runc_container() as (rt, c):
        rt.run(c, ["dd", "if=/dev/zero", "of=/data/f", "bs=1M", f"count={a.mib}", "oflag=direct"], timeout=600)
        for k in range(a.rounds):
            for r in rates[k % len(rates):] + rates[:k % len(rates)]:
                share, worker = one(rt, c, a.mib, r)
                seen[r].append(share)
                work[r].append(worker)
                print(f"round {k + 1} throttle {r or 'none':>4} MiB/s: eBPF saw {share:.3f} of the charged bytes, "
                      f"kernel workers wrote {worker:.1f} MiB", flush=True)
    print(f"\n{a.mib} MiB of direct 1 MiB writes, medians of {a.rounds} rounds:")
    print("| write throttle | eBPF bytes / charged bytes | MiB written by kernel workers |")
    print("|---|---|---|")
    for r in rates:
        print(f"| {f'{r} MiB/s' if r else 'none'} | {statistics.median(seen[r]):.3f} "
              f"({min(seen[r]):.3f}-{max(seen[r]):.3f}) | {statistics.median(work[r]):.1f} |")


if __name__ == "__main__":
    main()
