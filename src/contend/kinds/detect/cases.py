"""What each case runs: every tenant's limits and load, and whether a known antagonist hurts the victim.

Three tenants per trial: the victim (an abiding load from the start), a bystander (a light steady load, so a
detector has someone else to blame wrongly), and noisy. In an antagonist case noisy's load starts at the
trial's change time: the known answer is victim ← noisy via the case's resource. In a control case the change
must produce no blame: noisy adds a load that fits beside the others (harmony), or the victim starts a load
beyond its own CPU quota or memory limit (own-quota, own-memory), or nothing runs at all (idle).

A multi-antagonist case (cpu+cpu, cpu+disk, disk+disk; issue 51) adds a fourth tenant, noisy2, a second
antagonist of another size that joins a third of the way into the attack: both hurt the victim at once, and the
known answer is who took more of what the victim lost (the cgroups' own CPU time or disk bytes, read by the
study: metrics.coverage).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from ...cgroups import Limits

TENANTS = ("victim", "bystander", "noisy")  # every case's; a multi-antagonist case's noisy2 besides
JOIN = 1 / 3  # where in the attack a second antagonist joins


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
    warm: tuple[str, ...] = ()  # the tenants whose files are read once through the page cache after their layout
    # (a working set held, charged to them)
    link_bps: float | None = None  # the tenants on a shared link of this capacity (network/link.py), or none
    joins: dict[str, float] = field(default_factory=dict)  # an at_change load starting this far into the attack

    @property
    def tenants(self) -> tuple[str, ...]:
        return TENANTS + tuple(n for n in self.at_change if n not in TENANTS)

    @property
    def antagonists(self) -> tuple[str, ...]:
        """The known culprits, in the order they start (none in a control)."""
        return tuple(sorted(self.at_change, key=lambda n: self.joins.get(n, 0.0))) if self.antagonist else ()

    def tenant_limits(self) -> dict[str, Limits]:
        return {t: self.limits.get(t, Limits()) for t in self.tenants}


LIGHT = stress_cpu(1, 10)
BYSTANDER_LOAD = stress_cpu(1, 2)  # one in ten of a study's extra bystanders (spec `bystanders`); the rest sleep


def bystanders(n: int) -> dict[str, Load | None]:
    """A study's `n` extra bystanders by name (by001, …), each with its load from the start (None: asleep)."""
    return {f"by{i + 1:03d}": BYSTANDER_LOAD if i % 10 == 0 else None for i in range(n)}
VICTIM_READS = ("--direct=1", "--rw=randread", "--bs=4k", "--ioengine=psync")  # a disk victim: 4 KiB, one at a time
BIG_WRITES = ("--direct=1", "--rw=write", "--bs=1M", "--ioengine=libaio", "--iodepth=32")
LINK_BPS = 200e6
DISK_FILES = {"victim": "256M", "bystander": "64M", "noisy": "1G"}
MEMORY_FILE = "512M"  # the victim's working set in the memory cases
CACHE_FILE = "2G"  # the cache case's noisy reader's file: more than its pod holds
CACHE_IOPS = 40000  # the cache case's victim: 4 KiB reads a second, what the page cache serves on a fraction of a CPU

CASES: dict[str, Case] = {c.name: c for c in (
    # the victim wants both CPUs; noisy takes half of them
    Case("cpu", "cpu", True, {"victim": stress_cpu(2), "bystander": LIGHT}, {"noisy": stress_cpu(2)}),
    # the victim reads 4 KiB blocks one at a time; noisy writes 1 MiB blocks 32 deep
    Case("disk", "disk", True,
         {"victim": fio("victim", DISK_FILES["victim"], *VICTIM_READS),
          "bystander": fio("bystander", DISK_FILES["bystander"], *VICTIM_READS, "--rate_iops=200")},
         {"noisy": fio("noisy", DISK_FILES["noisy"], *BIG_WRITES)},
         files=DISK_FILES),
    # the three share a 1 GiB limit (a pod's). The victim reads its 512 MiB file at random through the page
    # cache, at a rate that leaves CPU to spare; noisy takes 768 MiB of anonymous memory and holds it (no swap
    # here: only the victim's cache can give way), so the victim's pages are reclaimed and read again
    Case("memory", "memory", True,
         {"victim": fio("victim", MEMORY_FILE, "--rw=randread", "--bs=4k", "--ioengine=psync",
                        "--rate_iops=4000", "--invalidate=0"),
          "bystander": LIGHT},
         {"noisy": stress_hold(768)}, files={"victim": MEMORY_FILE}, shared=Limits(memory=1 << 30),
         warm=("victim",)),
    # a pod of 768 MiB, the victim's reads faster than its disk could serve them (from the page cache it gets
    # every read it asks for); noisy reads a file of 2 GiB at random through the page cache: what it reads takes
    # the pod's memory as cache, the victim's pages are reclaimed and read again from the disk (its 40k reads/s
    # fell to 17k within 2 s, host cgroups, 2026-12-07). Unlike the anonymous memory of the case above, a cache
    # the kernel can take back (contend protect's memory cell: docs/protect.md)
    Case("cache", "memory", True,
         {"victim": fio("victim", MEMORY_FILE, "--rw=randread", "--bs=4k", "--ioengine=psync",
                        f"--rate_iops={CACHE_IOPS}", "--invalidate=0"),
          "bystander": LIGHT},
         {"noisy": fio("noisy", CACHE_FILE, "--rw=randread", "--bs=64k", "--ioengine=psync", "--invalidate=0")},
         files={"victim": MEMORY_FILE, "noisy": CACHE_FILE}, shared=Limits(memory=768 << 20), warm=("victim",)),
    # everyone fits beside the others with room: 1 + 0.1 + 0.2 of the host's two CPUs (at 1 + 0.3 + 0.3 the
    # bystander waited 0.11-0.15 s per second once noisy started: a real harm, rightly blamed on noisy)
    # on a shared 200 Mbit/s link, the victim sends at 120 and the bystander at 10; noisy floods it on two
    # connections: the bottleneck's queue overflows and everybody's segments are lost and sent again
    Case("network", "network", True, {"victim": AgentLoad(120e6), "bystander": AgentLoad(10e6)},
         {"noisy": AgentLoad(1e9, connections=2)}, link_bps=LINK_BPS),
    # two CPU antagonists of different size: noisy a whole CPU, noisy2 0.4 of one, joining later
    Case("cpu+cpu", "cpu", True, {"victim": stress_cpu(2), "bystander": LIGHT},
         {"noisy": stress_cpu(1), "noisy2": stress_cpu(1, 40)}, joins={"noisy2": JOIN}),
    # the scene: a CPU hog, then a disk writer (1 MiB direct writes, 16 deep) that also takes some CPU
    Case("cpu+disk", "cpu", True, {"victim": stress_cpu(2), "bystander": LIGHT},
         {"noisy": stress_cpu(1), "noisy2": fio("noisy2", "1G", "--direct=1", "--rw=write", "--bs=1M",
                                                "--ioengine=libaio", "--iodepth=16")},
         files={"noisy2": "1G"}, joins={"noisy2": JOIN}),
    # two disk writers of different size: noisy's 1 MiB writes 32 deep, then noisy2's 8 deep (about a fifth of
    # the bytes; 64 KiB writes 4 deep beside noisy moved 0.5 % of them, a second antagonist in name only)
    Case("disk+disk", "disk", True,
         {"victim": fio("victim", DISK_FILES["victim"], *VICTIM_READS),
          "bystander": fio("bystander", DISK_FILES["bystander"], *VICTIM_READS, "--rate_iops=200")},
         {"noisy": fio("noisy", DISK_FILES["noisy"], *BIG_WRITES),
          "noisy2": fio("noisy2", "512M", "--direct=1", "--rw=write", "--bs=1M", "--ioengine=libaio",
                        "--iodepth=8")},
         files={**DISK_FILES, "noisy2": "512M"}, joins={"noisy2": JOIN}),
    Case("harmony", "cpu", False, {"victim": stress_cpu(1), "bystander": LIGHT}, {"noisy": stress_cpu(1, 20)}),
    # the victim's own quota holds it: it waits on the run queue, and nobody else is to blame
    Case("own-quota", "cpu", False, {"bystander": LIGHT}, {"victim": stress_cpu(1)},
         limits={"victim": Limits(cpu=0.5)}),
    # the victim allocates twice its own memory limit: reclaim, OOM kills, its own doing
    Case("own-memory", "memory", False, {"bystander": LIGHT}, {"victim": stress_vm(256)},
         limits={"victim": Limits(memory=128 << 20)}),
    Case("idle", "none", False, {}, {}),
)}
