"""How often the cgroup v2 guest stalls (issue 56): boots of scripts/cgroup2-guest.sh with each vCPU count,
interleaved, counted by how each boot ended.

Under qemu's TCG each vCPU is a host thread, beside qemu's main loop (which serves the 9p root the guest reads
everything from) and whatever else the host runs. On a 2-CPU host two busy vCPUs leave the main loop and the host
no CPU of their own, and a vCPU that waits long enough stalls RCU in the guest (the issue's
`rcu_preempt self-detected stall … kthread starved`). Each boot runs what the guest's tests do, in little: every
vCPU busy (stress-ng --cpu 0) while Python imports contend and a few thousand files are read over 9p, for
`--seconds`. Beside it on the host, `--host-load` CPUs of stress-ng stand for the host's own work (the pytest
process and contend's samplers in a real run; more on a shared CI machine).

An outcome is `ok`, `stall` (the guest's kernel panicked on an RCU stall, soft lockup or hung task), `silent` (its
console fell silent past the bound) or `timeout`. Prints each boot, then per vCPU count: stalls per boot and the
median boot time.

    sudo .venv/bin/python bench/guest_stalls.py [--boots 20] [--smp 2 1] [--host-load 1] [--seconds 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GUEST_DIR = Path("/var/cache/contend/cgroup2-guest")
# the harness's own reasons (tests/test_cgroup2_guest.py: STALLS)
sys.path.insert(0, str(ROOT / "tests"))
from test_cgroup2_guest import STALLS  # noqa: E402


def outcome(rc: int, console: str) -> str:
    if any(s in console for s in STALLS[:-1]):
        return "stall"
    if rc == 3 or STALLS[-1] in console:
        return "silent"
    if rc == 124:
        return "timeout"
    return "ok" if rc == 0 else f"rc={rc}"


def boot(smp: int, seconds: int) -> tuple[str, float, str]:
    script = GUEST_DIR / "stall-probe.sh"  # on the host's disk: the guest cannot see the host's tmpfs
    script.write_text(
        "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/tmp TMPDIR=/run/tmp\n"
        f"cd {ROOT}\n"
        f"stress-ng --cpu 0 --timeout {seconds}s --quiet &\n"
        f"end=$(( $(date +%s) + {seconds} ))\n"
        "while [ $(date +%s) -lt $end ]; do\n"
        "  .venv/bin/python -c 'import contend.cli' || exit 1\n"
        "  find /usr/lib/python3 -name '*.py' | head -2000 | xargs cat > /dev/null\n"
        "done\nwait\n")
    env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GUEST_SMP": str(smp), "GUEST_TIMEOUT": str(seconds + 400)}
    t0 = time.monotonic()
    p = subprocess.run([str(ROOT / "scripts/cgroup2-guest.sh"), "run", str(script)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    took = time.monotonic() - t0
    why = next((ln.strip() for ln in p.stdout.splitlines() if any(s in ln for s in STALLS)), "")
    return outcome(p.returncode, p.stdout), took, why


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--boots", type=int, default=20, help="boots per vCPU count")
    ap.add_argument("--smp", type=int, nargs="+", default=[2, 1], help="the vCPU counts, interleaved")
    ap.add_argument("--host-load", type=int, default=1, help="host CPUs kept busy by stress-ng throughout")
    ap.add_argument("--seconds", type=int, default=40, help="the guest's busy time per boot")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("guest_stalls.py: run as root (qemu's 9p export of / and the guest's cache)")
    if a.boots < 1 or a.seconds < 1 or a.host_load < 0 or any(s < 1 for s in a.smp):
        sys.exit("guest_stalls.py: --boots, --seconds and --smp must be > 0, --host-load >= 0")
    subprocess.run([str(ROOT / "scripts/cgroup2-guest.sh"), "build"], check=True)
    load = (subprocess.Popen(["stress-ng", "--cpu", str(a.host_load), "--quiet"]) if a.host_load else None)
    print(f"{a.boots} boots per vCPU count {a.smp}, interleaved; host load {a.host_load} CPU(s); "
          f"{os.cpu_count()} host CPUs", flush=True)
    results: dict[int, list[tuple[str, float]]] = {s: [] for s in a.smp}
    try:
        for i in range(a.boots):
            order = a.smp[i % len(a.smp):] + a.smp[:i % len(a.smp)]
            for smp in order:
                what, took, why = boot(smp, a.seconds)
                results[smp].append((what, took))
                print(f"boot {i + 1:2d} smp={smp} {what:8s} {took:6.1f} s {why[:110]}", flush=True)
    finally:
        if load:
            load.terminate()
            load.wait()
    for smp, rs in results.items():
        bad = [w for w, _ in rs if w != "ok"]
        print(f"smp={smp}: {len(bad)} of {len(rs)} boots stalled or failed ({', '.join(bad) or 'none'}); "
              f"median boot {statistics.median(t for _, t in rs):.1f} s")


if __name__ == "__main__":
    main()
