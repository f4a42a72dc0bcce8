"""contend watch on a Kubernetes node's scale (issue 54): its own CPU, memory and start with 20, 110 and 250
pods, every pod real (a containerd of contend's own with its CRI plugin, pods made through the CRI as a kubelet
makes them: contend/cri/node.py), watched as `contend watch -t k8s:` watches a node.

The pods are added in steps (20, then 110, then 250: kubelet's default limit is 110 pods a node); one of them
runs a CPU load (stress-ng, one worker), the rest sleep. At each step `contend watch -t k8s: --cri …` runs as a
user runs it, `--rounds` times for `--seconds` each, eBPF on, 1-s periods. Per run, from /proc: its CPU once
started (the watch and its bpftrace, from its first recorded frame to its last), its eBPF programs' time in the
kernel (kernel.bpf_stats_enabled: run in the traced tasks' context, in no process's CPU time), its resident
memory at the end (the watch and bpftrace), and its start (the wall time from launch to its first frame, less
the one period that frame covers). Targets (issue 54): ≤ 1 % of one CPU at 110 pods and ≤ 2 % at 250, ≤ 100 MiB
at 250, a start ≤ 2 s.

    sudo .venv/bin/python bench/watch_node.py [--pods 20 110 250] [--rounds 3] [--seconds 20]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchkit import bpf_run_ns, bpf_stats
from contend.cri.node import CriNode

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / TICK


def rss_mib(pid: int) -> float:
    try:
        for ln in Path(f"/proc/{pid}/status").read_text().splitlines():
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(x) for x in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def one_watch(endpoint: str, seconds: float) -> dict[str, float]:
    """One `contend watch -t k8s:` run: its cost once started, its memory, its start."""
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "frames.jsonl"
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "contend.cli", "watch", "-t", "k8s:", "--cri", endpoint,
                                 "--json", "--metrics", "off", "--period", "1", "--record", str(rec)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            while not (rec.exists() and rec.read_text().count("\n") >= 1):
                if proc.poll() is not None or time.monotonic() - t0 > 60:
                    sys.exit(f"contend watch did not start: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.02)
            t_first = time.monotonic()
            pids = [proc.pid, *children(proc.pid)]
            cpu0, bpf0 = sum(cpu_s(p) for p in pids), sum(bpf_run_ns(p) for p in pids)
            time.sleep(seconds)
            pids = [proc.pid, *children(proc.pid)]
            cpu1, bpf1 = sum(cpu_s(p) for p in pids), sum(bpf_run_ns(p) for p in pids)
            t_end = time.monotonic()
            rss = sum(rss_mib(p) for p in pids)
            frames = rec.read_text().splitlines()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    last = frames[-1]
    watched = last.count('"cpu":')  # every watched container has its CPU signal
    span = t_end - t_first
    return {"cpu_pct": 100 * (cpu1 - cpu0) / span, "kernel_pct": 100 * (bpf1 - bpf0) / 1e9 / span, "rss_mib": rss,
            "start_s": t_first - t0 - 1.0, "watched": watched, "bpftrace": len(pids) > 1}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, nargs="+", default=[20, 110, 250])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    args = ap.parse_args()
    rows = []
    with CriNode() as node:
        made = 0
        for n in sorted(args.pods):
            t = time.monotonic()
            while made < n:
                pod = node.run_pod(f"ns-{made % 7}", f"pod-{made}",
                                   qos=("burstable", "besteffort", "guaranteed")[made % 3])
                node.run(pod, "main", ["/usr/bin/stress-ng", "--cpu", "1", "--timeout", "3600"] if made == 0
                         else ["/usr/bin/sleep", "3600"])
                made += 1
            print(f"{n} pods running ({time.monotonic() - t:.0f} s to add them)", flush=True)
            runs = []
            for r in range(args.rounds):
                runs.append(one_watch(node.endpoint, args.seconds))
                print(f"  round {r + 1}: " + ", ".join(f"{k} {v:.3g}" for k, v in runs[-1].items()), flush=True)
            rows.append((n, runs))
    print(f"\ncontend watch -t k8s: (eBPF, 1-s periods), median (min-max) of {args.rounds} runs of {args.seconds:g} s:")
    print("| pods | watched | its CPU, % of one CPU | eBPF in the kernel, % | memory MiB | start s |")
    print("|---|---|---|---|---|---|")
    for n, runs in rows:
        def col(k: str, fmt: str = ".2f") -> str:
            xs = [r[k] for r in runs]
            return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}-{max(xs):{fmt}})"
        print(f"| {n} | {int(statistics.median(r['watched'] for r in runs))} | {col('cpu_pct')} | "
              f"{col('kernel_pct')} | {col('rss_mib', '.0f')} | {col('start_s')} |")


if __name__ == "__main__":
    with bpf_stats():
        main()
