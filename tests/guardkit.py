"""What the guard's real tests share, on a v1/hybrid host and in the v2 guest: a direct writer in a
cgroup under a guard running in a thread."""
from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from contend.cgroups import Cgroup, CgroupHost
from contend.guard import Guard, GuardConfig


@dataclass
class Watched:
    during: list[float]  # caps seen on the cgroup while the writer ran (bytes/s, writes)
    after_writer: float | None  # the cap once the writer had been idle a while
    after_exit: object  # the cgroup's throttle on the disk after the guard stopped
    records: list
    log: str

    def trace(self, last: int = 50) -> str:
        """The guard's last periods (seconds, each target's use and cap in MB/s) and what it said of the disk: what a
        failed assertion shows."""
        said = [ln for ln in self.log.splitlines() if '"capacity"' in ln or '"alert"' in ln]
        return "\n".join([*said, *(f"{r.t:7.2f} use {[round(u / 1e6, 2) for u in r.usage.values()]} "
                                   f"cap {[None if c is None else round(c / 1e6, 2) for c in r.caps.values()]}"
                                   for r in self.records[-last:])])


def write_under_guard(host: CgroupHost, cg: Cgroup, device: str, target: str, capacity: float,
                      mbytes: int = 600, policy: str = "contend", idle_s: float = 3.5, mode: str = "direct",
                      idle_periods: int = 0) -> Watched:
    """dd `mbytes` MiB of writes to target from inside cg while a guard guards cg on device. `mode` direct:
    O_DIRECT writes; fsync: buffered writes then dd's fsync, whose writeback dd submits in its own cgroup;
    buffered: writes into the page cache, then an fsync of target from this process's cgroup, not cg (as the
    kernel's flusher writes them back: from outside the writer's cgroup). `idle_periods`: the idle time after the
    writer is that many of the guard's periods instead (at most a minute): what a lifeline forgets is counted in
    periods, and in the slow v2 guest 3.5 s was under 30 of them (CI, 2026-11-28: the cap half way down)."""
    cfg = GuardConfig(targets=[{"target": f"cgroup:{cg.relpath}"}], policy=policy, metrics="off")
    log = io.StringIO()
    g = Guard(cfg, {device: capacity}, host, log=log, record=True)
    g.scan(strict=True)
    stop = threading.Event()
    th = threading.Thread(target=g.run, args=(stop,))
    th.start()
    seen: list[float] = []
    try:
        # the writer starts once the guard has decided twice: a cold first period (imports, a slow guest)
        # would otherwise let the whole write through before any cap exists
        deadline = time.monotonic() + 30
        while len(g.records) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        p = subprocess.Popen(["dd", "if=/dev/zero", f"of={target}", "bs=1M", f"count={mbytes}",
                              *{"direct": ["oflag=direct"], "fsync": ["conv=fsync"]}.get(mode, [])],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=lambda: cg.add_pid(os.getpid()))
        while p.poll() is None:
            lim = cg.io_limits().get(device)
            if lim is not None and lim.wbps:
                seen.append(float(lim.wbps))
            time.sleep(0.1)
        assert p.returncode == 0, p.stderr.read()
        if mode == "buffered":
            subprocess.run(["sync", target], check=True)
        if idle_periods:
            n0, deadline = len(g.records), time.monotonic() + 60
            while len(g.records) < n0 + idle_periods and time.monotonic() < deadline:
                time.sleep(0.05)
        else:
            time.sleep(idle_s)
        lim = cg.io_limits().get(device)
        after = float(lim.wbps) if lim is not None and lim.wbps else None
    finally:
        stop.set()
        th.join(timeout=10)
    return Watched(seen, after, cg.io_limits().get(device), g.records, log.getvalue())


def kill_guard_with_caps(cg: Cgroup, device: str) -> None:
    """Start `contend guard` on cg, wait for its first cap, SIGKILL it: the cap stays behind."""
    before = cg.io_limits().get(device)  # a user's own throttle, say
    p = subprocess.Popen([sys.executable, "-m", "contend.cli", "guard", "-t", f"cgroup:{cg.relpath}",
                          "--capacity", f"{device}=200M", "--metrics", "off"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # 90 s: in the emulated (TCG) cgroup v2 guest, with no bytecode cache on its read-only root, the guard's
        # Python start alone takes tens of seconds (30 s was missed on a fresh clone); the cap is what is tested
        deadline = time.monotonic() + 90
        while cg.io_limits().get(device) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        assert cg.io_limits().get(device) != before, "the guard set no cap"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert cg.io_limits().get(device)  # SIGKILL: nothing could remove it
