"""What the watch's time-taken accounting (issue 51) costs in the kernel: the run-queue program with and without
it, and no program, side by side in one run.

The program runs in the context of every task that wakes up, migrates or is switched, so its cost is not in
bpftrace's process: it is read from the kernel's own accounting of each BPF program (kernel.bpf_stats_enabled,
`run_time_ns` in the programs' fdinfo), as a share of one CPU. Beside it: context switches per second, and what
a context-switch-bound workload (stress-ng --switch, in a cgroup of its own beside two CPU-bound ones in two
more) got done, as a ratio to no program. Settings interleaved in rotating order `--rounds` times.

    sudo .venv/bin/python bench/runq_cost.py [--seconds 8] [--rounds 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

from benchkit import bpf_run_ns, bpf_stats
from contend.cgroups import PREFIX, detect
from contend.probes.ebpf import _raise_memlock
from contend.watch.runq import program

SETTINGS = ("none", "waits", "waits+taken")


def ctxt() -> int:
    return next(int(ln.split()[1]) for ln in Path("/proc/stat").read_text().splitlines() if ln.startswith("ctxt "))


def start_in(cgdir: Path, argv: list[str], **kw) -> subprocess.Popen:
    return subprocess.Popen(["sh", "-c", f'echo $$ > {cgdir}/cgroup.procs && exec "$@"', "sh", *argv], **kw)


def drain(stream) -> None:
    for _ in stream:
        pass


def one(setting: str, seconds: float, switcher: Path) -> dict[str, float]:
    bt = None
    if setting != "none":  # the maps printed every 250 ms, as the watch reads them
        prog = program(taken=setting == "waits+taken") + " interval:ms:250 { print(@rq_ns); clear(@rq_ns); " \
            "print(@pre); clear(@pre);" + (" print(@took); clear(@took);" if setting == "waits+taken" else "") + " }"
        bt = subprocess.Popen(["bpftrace", "-f", "json", "-B", "line", "-e", prog], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, preexec_fn=_raise_memlock)
        assert bt.stdout is not None
        for line in bt.stdout:
            if "attached_probes" in line:
                break
        threading.Thread(target=drain, args=(bt.stdout,), daemon=True).start()
    ns0, c0, t0 = bpf_run_ns(bt.pid) if bt else 0, ctxt(), time.monotonic()
    p = start_in(switcher, ["stress-ng", "--switch", "1", "--timeout", f"{seconds:g}s", "--metrics-brief"],
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = p.communicate(timeout=seconds + 60)
    wall = time.monotonic() - t0
    ns1, c1 = bpf_run_ns(bt.pid) if bt else 0, ctxt()
    if bt is not None:
        bt.kill()
        bt.wait()
    rate = next((float(ln.split()[-2]) for ln in out.splitlines() if " switch " in ln and ln.split()[-2][0].isdigit()),
                float("nan"))
    return {"bpf_cpu_pct": (ns1 - ns0) / 1e9 / wall * 100, "ctxt_s": (c1 - c0) / wall, "switch_ops_s": rate}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench/runq_cost.py: needs root (bpftrace, cgroups)")
    host = detect()
    if host.unified is None:
        sys.exit("bench/runq_cost.py: needs a unified cgroup tree (eBPF's cgroup ids)")
    run = f"bench-rq-{uuid.uuid4().hex[:6]}"
    cgs = [host.unified / PREFIX / f"{run}-{n}" for n in ("victim", "hog", "switcher")]
    hogs: list[subprocess.Popen] = []
    try:
        for d in cgs:
            d.mkdir(parents=True)
        hogs = [start_in(cgs[0], ["stress-ng", "--cpu", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                start_in(cgs[1], ["stress-ng", "--cpu", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        got: dict[str, list[dict[str, float]]] = {s: [] for s in SETTINGS}
        for r in range(a.rounds):
            order = SETTINGS[r % 3:] + SETTINGS[:r % 3]
            for s in order:
                got[s].append(one(s, a.seconds, cgs[2]))
            print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                f"{s} {got[s][-1]['bpf_cpu_pct']:.2f} % CPU in BPF, {got[s][-1]['switch_ops_s']:.0f} switch ops/s"
                for s in SETTINGS), flush=True)
        base = statistics.median(x["switch_ops_s"] for x in got["none"])
        print(f"\n{'setting':<13} {'BPF % of a CPU':>15} {'ctx switches/s':>15} {'switch ops/s':>13} {'÷ none':>7}")
        for s in SETTINGS:
            med = {k: statistics.median(x[k] for x in got[s]) for k in got[s][0]}
            print(f"{s:<13} {med['bpf_cpu_pct']:>15.2f} {med['ctxt_s']:>15.0f} {med['switch_ops_s']:>13.0f} "
                  f"{med['switch_ops_s'] / base:>7.3f}")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        time.sleep(0.2)
        for d in cgs:
            if d.is_dir():
                d.rmdir()
        try:
            (host.unified / PREFIX).rmdir()
        except OSError:
            pass


if __name__ == "__main__":
    with bpf_stats():
        main()
