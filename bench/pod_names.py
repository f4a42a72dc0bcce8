"""Where the watch gets pods' names (issue 95 M1): the CRI's socket or the kubelet's links, side by side.

Real pods (contend/cri/node.py: a containerd of contend's own, pods made through its CRI as a kubelet makes them,
and the kubelet's /var/log/containers links as the kubelet makes them), `--pods` of them, one container each
(two in every fifth pod). Each round runs `contend watch -t k8s: --duration 1` once per source, interleaved
(cri, logs, paths, cri, logs, ...), as a user runs it, and reads from its recording how many pod containers
its first frame named namespace/pod/container, and from its stderr the wall time from launch to its first frame
(its start, less the one period that frame covers). Prints per source: names found / pod containers, the start
(median and range), and what the source asks of the DaemonSet.

    sudo .venv/bin/python bench/pod_names.py [--pods 30] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from contend.cri.node import CriNode

ASKS = {"cri": "the CRI's socket (root on the node)", "logs": "/var/log/containers read-only",
        "paths": "nothing (names change at each restart)"}


def one(node: CriNode, mode: str, out: Path) -> tuple[int, float]:
    """(pod containers named, start s) of one `contend watch` run naming pods by `mode`."""
    rec = out / f"{mode}-{time.monotonic_ns()}.jsonl"
    args = [sys.executable, "-m", "contend.cli", "watch", "-t", "k8s:", "--no-ebpf", "--duration", "1.5",
            "--metrics", "off", "--record", str(rec), "--pod-names", mode, "--cri", node.endpoint,
            "--pod-logs", str(node.logs / "containers")]
    t0 = time.monotonic()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while not (rec.exists() and rec.read_text().strip()) and p.poll() is None:
        time.sleep(0.01)
    start = time.monotonic() - t0 - 1.0
    p.communicate(timeout=60)
    first = json.loads(rec.read_text().splitlines()[0])
    return sum(1 for c in first["containers"] if c.count("/") == 2 and not c.startswith("kubepods")), start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with CriNode() as node, tempfile.TemporaryDirectory(prefix="contend-podnames-") as tmp:
        want = 0
        for i in range(a.pods):
            pod = node.run_pod(f"ns-{i % 5}", f"pod-{i}", qos=("burstable", "besteffort", "guaranteed")[i % 3])
            for c in ("main", "side")[:2 if i % 5 == 0 else 1]:
                node.run(pod, c, ["/usr/bin/sleep", "3600"])
                want += 1
        got: dict[str, list[tuple[int, float]]] = {m: [] for m in ASKS}
        for _ in range(a.rounds):
            for mode in ASKS:
                got[mode].append(one(node, mode, Path(tmp)))
    print(f"{a.pods} pods, {want} pod containers, {a.rounds} rounds interleaved (contend watch -t k8s: --no-ebpf)")
    print("| names from | named / pod containers | start s, median [min, max] | the DaemonSet mounts |")
    print("|---|---|---|---|")
    for mode, runs in got.items():
        named = sorted({n for n, _ in runs})
        starts = [s for _, s in runs]
        print(f"| {mode} | {'/'.join(map(str, named))} / {want} | {statistics.median(starts):.2f} "
              f"[{min(starts):.2f}, {max(starts):.2f}] | {ASKS[mode]} |")


if __name__ == "__main__":
    main()
