"""contend watch on a Kubernetes node's scale (issue 54): its own CPU, memory and start with 20, 110 and 250
pods, every pod real (a containerd of contend's own with its CRI plugin, pods made through the CRI as a kubelet
makes them: contend/cri/node.py), watched as `contend watch -t k8s:` watches a node.

The pods are added in steps (20, then 110, then 250: kubelet's default limit is 110 pods a node); one of them
runs a CPU load (stress-ng, one worker), the rest sleep. At each step `contend watch -t k8s: --cri …` runs as a
user runs it, `--rounds` times for `--seconds` each, eBPF on, 1-s periods. Per run, from /proc: its CPU once
started (the watch and its bpftrace, from its first recorded frame to its last; its loop alone: the Python
process), its eBPF programs' time in the
kernel (kernel.bpf_stats_enabled: run in the traced tasks' context, in no process's CPU time), its resident
memory at the end (the watch and bpftrace), and its start (the wall time from launch to its first frame, less
the one period that frame covers). Targets (issue 54): ≤ 1 % of one CPU at 110 pods and ≤ 2 % at 250, ≤ 100 MiB
at 250, a start ≤ 2 s.

    sudo .venv/bin/python bench/watch_node.py [--pods 20 110 250] [--rounds 3] [--seconds 20] [--before SRC]
                                              [--deployed] [--light SHARE]

`--light SHARE` makes that share of the pods lightly loaded (stress-ng at 1 % of a CPU each: their CPU time and
stalls move every period), where by default they sleep: the watch reads a calm pod's files less (TopDown).

By default the watch records its frames (`--record`: how its first frame is seen) and has no Prometheus endpoint.
`--deployed` runs it as `contend cluster render-watch`'s DaemonSet does: its endpoint on, scraped every 15 s as a
Prometheus would, nothing recorded.

`--before SRC` (a `src` directory of the code before a change: `git worktree add /tmp/before REV`) runs that
code's watch beside this one's, interleaved (before, now, before, now, ...), and prints both and their ratios.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchkit import bpf_run_ns, bpf_stats
from contend.cri.node import CriNode
from contend.pageout import give_back
from contend.watch.cli import START_LIBS

TICK = os.sysconf("SC_CLK_TCK")
SCRAPE_S = 15.0  # how often `--deployed` reads the endpoint, as a Prometheus scraping every 15 s would


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def scrape(port: int) -> str:
    """The watch's Prometheus endpoint, as Prometheus reads it ('' while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def one_watch(endpoint: str, seconds: float, src: str | None = None, deployed: bool = False) -> dict[str, float]:
    """One `contend watch -t k8s:` run (of the code in `src`, else this one): its cost once started, its memory,
    its start. `deployed`: as `contend cluster render-watch`'s DaemonSet runs it (its Prometheus endpoint on, no
    recording), scraped every SCRAPE_S as Prometheus would; else its frames recorded, no endpoint."""
    env = {**os.environ, "PYTHONPATH": src} if src else None
    port = free_port()
    # on a node nothing else maps the watch's libraries; this bench does (it made the pods through the same gRPC),
    # and the kernel keeps a page two processes map: its own are given back first, so the watch's are its alone
    give_back(os.getpid(), START_LIBS)
    with tempfile.TemporaryDirectory() as tmp:
        rec = Path(tmp) / "frames.jsonl"
        out = ["--metrics", f"127.0.0.1:{port}"] if deployed else ["--metrics", "off", "--record", str(rec)]
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "contend.cli", "watch", "-t", "k8s:", "--cri", endpoint,
                                 "--json", "--period", "1", *out],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)

        def started() -> bool:
            if deployed:
                return 'contend_watch_signal{' in scrape(port)
            return rec.exists() and rec.read_text().count("\n") >= 1
        try:
            while not started():
                if proc.poll() is not None or time.monotonic() - t0 > 60:
                    sys.exit(f"contend watch did not start: {proc.stderr.read() if proc.stderr else ''}")
                time.sleep(0.02)
            t_first = time.monotonic()
            pids = [proc.pid, *children(proc.pid)]
            cpu0, bpf0, own0 = sum(cpu_s(p) for p in pids), sum(bpf_run_ns(p) for p in pids), cpu_s(proc.pid)
            while time.monotonic() < t_first + seconds:
                time.sleep(min(SCRAPE_S, t_first + seconds - time.monotonic()))
                if deployed and time.monotonic() < t_first + seconds:
                    scrape(port)
            pids = [proc.pid, *children(proc.pid)]
            cpu1, bpf1, own1 = sum(cpu_s(p) for p in pids), sum(bpf_run_ns(p) for p in pids), cpu_s(proc.pid)
            t_end = time.monotonic()
            rss = sum(rss_mib(p) for p in pids)
            # every watched container has its CPU signal: in the last frame, or on the endpoint now
            last = scrape(port) if deployed else rec.read_text().splitlines()[-1]
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    watched = last.count('signal="cpu"}') if deployed else last.count('"cpu":')
    span = t_end - t_first
    return {"cpu_pct": 100 * (cpu1 - cpu0) / span, "loop_pct": 100 * (own1 - own0) / span,
            "kernel_pct": 100 * (bpf1 - bpf0) / 1e9 / span, "rss_mib": rss,
            "start_s": t_first - t0 - 1.0, "watched": watched, "bpftrace": len(pids) > 1}


def table(rows: list[tuple[int, list[dict]]], label: str, rounds: int, seconds: float, deployed: bool) -> None:
    how = "its endpoint on, scraped every 15 s" if deployed else "its frames recorded"
    print(f"\n{label}contend watch -t k8s: (eBPF, 1-s periods, {how}), median (min-max) of {rounds} runs of "
          f"{seconds:g} s:")
    print("| pods | watched | its CPU, % of one CPU | of which its loop | eBPF in the kernel, % | memory MiB | "
          "start s |")
    print("|---|---|---|---|---|---|---|")
    for n, runs in rows:
        def col(k: str, fmt: str = ".2f") -> str:
            xs = [r[k] for r in runs]
            return f"{statistics.median(xs):{fmt}} ({min(xs):{fmt}}-{max(xs):{fmt}})"
        print(f"| {n} | {int(statistics.median(r['watched'] for r in runs))} | {col('cpu_pct')} | "
              f"{col('loop_pct')} | {col('kernel_pct')} | {col('rss_mib', '.0f')} | {col('start_s')} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, nargs="+", default=[20, 110, 250])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--before", metavar="SRC", help="the src directory of the code before a change: run beside")
    ap.add_argument("--light", type=float, default=0.0, metavar="SHARE",
                    help="the share of pods lightly loaded (1 %% of a CPU each), the rest sleeping (default 0)")
    ap.add_argument("--deployed", action="store_true",
                    help="run the watch as the DaemonSet does: its Prometheus endpoint on (scraped every 15 s), "
                         "no recording")
    args = ap.parse_args()
    if not 0 <= args.light <= 1:
        sys.exit(f"--light {args.light}: must be a share, 0 to 1")
    if args.before and not (Path(args.before) / "contend" / "cli.py").is_file():
        sys.exit(f"--before {args.before}: no contend/cli.py there (give the src directory of a checkout)")
    versions = [("before", args.before), ("now", None)] if args.before else [("now", None)]
    rows: dict[str, list[tuple[int, list[dict]]]] = {v: [] for v, _ in versions}
    with CriNode() as node:
        made = 0
        for n in sorted(args.pods):
            t = time.monotonic()
            while made < n:
                pod = node.run_pod(f"ns-{made % 7}", f"pod-{made}",
                                   qos=("burstable", "besteffort", "guaranteed")[made % 3])
                light = made and int(made * args.light) != int((made - 1) * args.light)  # spread among them
                node.run(pod, "main", ["/usr/bin/stress-ng", "--cpu", "1", "--timeout", "3600"] if made == 0
                         else ["/usr/bin/stress-ng", "--cpu", "1", "--cpu-load", "1", "--timeout", "3600"] if light
                         else ["/usr/bin/sleep", "3600"])
                made += 1
            print(f"{n} pods running ({time.monotonic() - t:.0f} s to add them)", flush=True)
            runs: dict[str, list[dict]] = {v: [] for v, _ in versions}
            for r in range(args.rounds):
                for v, src in versions:  # interleaved: the same minutes of this shared machine for each
                    runs[v].append(one_watch(node.endpoint, args.seconds, src, args.deployed))
                    print(f"  round {r + 1} {v}: " + ", ".join(f"{k} {x:.3g}" for k, x in runs[v][-1].items()),
                          flush=True)
            for v in runs:
                rows[v].append((n, runs[v]))
    for v, _ in versions:
        table(rows[v], f"{v}: " if args.before else "", args.rounds, args.seconds, args.deployed)
    if args.before:
        print("\nnow / before (medians):")
        for (n, b), (_, a) in zip(rows["before"], rows["now"]):
            print(f"  {n} pods: " + ", ".join(
                f"{k} {statistics.median(r[k] for r in a) / statistics.median(r[k] for r in b):.2f}"
                for k in ("cpu_pct", "loop_pct", "kernel_pct", "rss_mib", "start_s")))


if __name__ == "__main__":
    with bpf_stats():
        main()
