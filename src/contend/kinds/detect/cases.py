"""What each case runs: every tenant's limits and load, and whether a known antagonist hurts the victim.

Three tenants per trial: the victim (an abiding load from the start), a bystander (a light steady load, so a
detector has someone else to blame wrongly), and noisy. In an antagonist case noisy's load starts at the
trial's change time: the known answer is victim ← noisy via the case's resource. In a control case the change
must produce no blame: noisy adds a load that fits beside the others (harmony), or the victim starts a load
beyond its own CPU quota or memory limit (own-quota, own-memory), or nothing runs at all (idle).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ...cgroups import Limits

TENANTS = ("victim", "bystander", "noisy")


@dataclass(frozen=True)
class AgentLoad:
    """contend's load agent sending over TCP to the link's sink, paced at `bps` bits/s, on `connections`
    connections (a network case's load: it needs the trial's link)."""

    bps: float
    connections: int = 1


Load = Callable[[float], list[str]] | AgentLoad  # seconds → argv, or an agent


def stress_cpu(workers: int, load_pct: int = 100) -> Load:
    return lambda s: ["stress-ng", "--cpu", str(workers), *(["--cpu-load", str(load_pct)] if load_pct < 100 else []),
                      "--timeout", f"{math.ceil(s)}s"]


def stress_vm(mbytes: int) -> Load:
    return lambda s: ["stress-ng", "--vm", "1", "--vm-bytes", f"{mbytes}M", "--vm-keep", "--timeout",
                      f"{math.ceil(s)}s"]


def stress_hold(mbytes: int) -> Load:
    """Take mbytes of anonymous memory, touch it once, and hold it, asleep (little CPU: a memory antagonist)."""
    return lambda s: ["stress-ng", "--vm", "1", "--vm-bytes", f"{mbytes}M", "--vm-keep", "--vm-hang", "0",
                      "--timeout", f"{math.ceil(s)}s"]


def fio(tenant: str, size: str, *options: str) -> Load:
    return lambda s: ["fio", f"--name={tenant}", f"--filename=/data/{tenant}.dat", f"--size={size}", *options,
                      "--time_based", f"--runtime={math.ceil(s)}"]


@dataclass(frozen=True)
class Case:
    name: str
    resource: str  # the antagonist's resource, or the one a control's change is on
    antagonist: bool
    at_start: dict[str, Load]  # loads from the trial's start to its end
    at_change: dict[str, Load]  # loads from the change time, for the attack's length
    limits: dict[str, Limits] = field(default_factory=dict)  # a tenant not named: no limit
    # each tenant's data file and its size, laid out before the watcher starts (a layout's writes are nobody's
    # charge); /data/<tenant>.dat
    files: dict[str, str] = field(default_factory=dict)
    shared: Limits | None = None  # a memory limit the three share (a pod's), on contend's parent cgroup
    warm: bool = False  # the files read once through the page cache after their layout (a working set held)
    link_bps: float | None = None  # the tenants on a shared link of this capacity (network/link.py), or none

    def tenant_limits(self) -> dict[str, Limits]:
        return {t: self.limits.get(t, Limits()) for t in TENANTS}


LIGHT = stress_cpu(1, 10)
LINK_BPS = 200e6
DISK_FILES = {"victim": "256M", "bystander": "64M", "noisy": "1G"}
MEMORY_FILE = "512M"  # the bystander's steady load in the CPU cases

CASES: dict[str, Case] = {c.name: c for c in (
    # the victim wants both CPUs; noisy takes half of them
    Case("cpu", "cpu", True, {"victim": stress_cpu(2), "bystander": LIGHT}, {"noisy": stress_cpu(2)}),
    # the victim reads 4 KiB blocks one at a time; noisy writes 1 MiB blocks 32 deep
    Case("disk", "disk", True,
         {"victim": fio("victim", DISK_FILES["victim"], "--direct=1", "--rw=randread", "--bs=4k", "--ioengine=psync"),
          "bystander": fio("bystander", DISK_FILES["bystander"], "--direct=1", "--rw=randread", "--bs=4k",
                           "--ioengine=psync", "--rate_iops=200")},
         {"noisy": fio("noisy", DISK_FILES["noisy"], "--direct=1", "--rw=write", "--bs=1M", "--ioengine=libaio",
                       "--iodepth=32")},
         files=DISK_FILES),
    # the three share a 1 GiB limit (a pod's). The victim reads its 512 MiB file at random through the page
    # cache, at a rate that leaves CPU to spare; noisy takes 768 MiB of anonymous memory and holds it (no swap
    # here: only the victim's cache can give way), so the victim's pages are reclaimed and read again
    Case("memory", "memory", True,
         {"victim": fio("victim", MEMORY_FILE, "--rw=randread", "--bs=4k", "--ioengine=psync",
                        "--rate_iops=4000", "--invalidate=0"),
          "bystander": LIGHT},
         {"noisy": stress_hold(768)}, files={"victim": MEMORY_FILE}, shared=Limits(memory=1 << 30),
         warm=True),
    # everyone fits beside the others with room: 1 + 0.1 + 0.2 of the host's two CPUs (at 1 + 0.3 + 0.3 the
    # bystander waited 0.11-0.15 s per second once noisy started: a real harm, rightly blamed on noisy)
    # on a shared 200 Mbit/s link, the victim sends at 120 and the bystander at 10; noisy floods it on two
    # connections: the bottleneck's queue overflows and everybody's segments are lost and sent again
    Case("network", "network", True, {"victim": AgentLoad(120e6), "bystander": AgentLoad(10e6)},
         {"noisy": AgentLoad(1e9, connections=2)}, link_bps=LINK_BPS),
    Case("harmony", "cpu", False, {"victim": stress_cpu(1), "bystander": LIGHT}, {"noisy": stress_cpu(1, 20)}),
    # the victim's own quota holds it: it waits on the run queue, and nobody else is to blame
    Case("own-quota", "cpu", False, {"bystander": LIGHT}, {"victim": stress_cpu(1)},
         limits={"victim": Limits(cpu=0.5)}),
    # the victim allocates twice its own memory limit: reclaim, OOM kills, its own doing
    Case("own-memory", "memory", False, {"bystander": LIGHT}, {"victim": stress_vm(256)},
         limits={"victim": Limits(memory=128 << 20)}),
    Case("idle", "none", False, {}, {}),
)}
