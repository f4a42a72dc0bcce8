"""What a hold's level sets, per resource: the control model's levels (model.py) made cgroup settings.

Every setting goes through the guard's Limiter (`set_setting`): what the file held is noted in a state file
before the first write and put back on exit, and `contend clean` puts back what a killed run left. A level of
0 puts everything back.

- **cpu**: levels up to WEIGHT_UPTO lower the culprit's weight (cgroup v2 cpu.weight, v1 cpu.shares)
  geometrically from what it had to the least (1 / 2): work-conserving, it only matters while the victim wants
  the CPU. Above, while the victim still waits, a CFS quota too (cpu.max / cpu.cfs_quota_us), geometrically from
  the host's CPUs (or its own quota) down to the operator's floor, never below it.
- **memory**: cgroup v2 memory.high, from the culprit's memory when first held down to the floor, geometrically
  (as the other actuators: the first steps take the most): the kernel reclaims its pages (its page cache first)
  and slows its allocations, and never OOM-kills for it. Cgroup v1 has no memory.high, and its soft limit is read
  only when the whole host runs short (a harm under a pod's shared limit is not one it acts on):
  memory.limit_in_bytes, a hard limit the kernel reclaims the culprit's page cache to (a write it cannot reclaim
  to fails, EBUSY, and kills nothing), never set closer than ANON_HEADROOM above what it cannot give back
  (anonymous and shared memory, no swap here) and raised every period as that grows (`keep`): its own
  allocations meet the limit only if they grow by more than ANON_HEADROOM within one period.
- **network**: what the culprit sends, shaped on the host side of its veth (network/shape.py: an ingress
  redirect to an IFB of contend's, a token bucket there), geometrically from the rate it sent when first held
  down to the operator's floor: for a container with a veth of its own (contend's link, an engine's bridge), never
  one on the host's network.
- **disk**: the guard (watch/handoff.py) engaged while any disk hold is: its policy caps the disk's users, and a
  held culprit's cap is squeezed further by its level, geometrically from the policy's cap (or what it uses, where
  the policy leaves it uncapped) down to SQUEEZE_LEAST of it: the policy keeps every lifeline, the hold answers for
  a victim the policy's division leaves short (a 4 KiB reader beside a writer of 1 MiB blocks: docs/results/guard.md).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from ..cgroups import CgroupHost
from ..cgroups.base import read_fields
from ..guard.limiter import Limiter, read_setting
from ..guard.targets import Resolved

WEIGHT_UPTO = 0.5  # the levels a weight alone serves
PRESS_WAIT = 0.1  # s/s: a held culprit waiting this long for a CPU per second would take it again
ANON_HEADROOM = 64 << 20  # a v1 hard limit is never set closer than this above a culprit's anonymous memory
NET_PRESS = 0.8  # a held culprit sending at this share of its rate or more presses against it
SQUEEZE_LEAST = 0.02  # a disk hold at level 1: the guard's cap on the culprit scaled by this


@dataclass(frozen=True)
class Setting:
    """One file a hold changed: what it read before and what it holds now (None: put back)."""

    file: str
    before: str | None
    after: str | None


def geometric(top: float, least: float, x: float) -> float:
    """From top (x = 0) down to least (x = 1), geometrically."""
    x = min(1.0, max(0.0, x))
    return top * (least / top) ** x if top > least > 0 else least


@dataclass
class CpuActuator:
    limiter: Limiter
    host: CgroupHost
    floor_cpus: float = 0.1
    resource: str = "cpu"
    # relpath -> (its weight, its CPUs, its CFS period in µs) when first held
    base: dict[str, tuple[int, float, int]] = field(default_factory=dict)

    def _files(self, rel: str) -> tuple[str, str, int, int]:
        """(weight file, quota file, the weight's default, its least) on this cgroup's hierarchy."""
        if self.host.cgroup(rel).control("cpu.weight").exists():
            return "cpu.weight", "cpu.max", 100, 1
        return "cpu.shares", "cpu.cfs_quota_us", 1024, 2

    def apply(self, target: Resolved, level: float, sig: dict[str, float]) -> list[Setting]:
        rel = target.relpath
        wfile, qfile, default, least = self._files(rel)
        if level <= 0:
            self.base.pop(rel, None)
            return [Setting(f, self.limiter.set_setting(rel, f, None), None) for f in (qfile, wfile)]
        if rel not in self.base:
            cg = self.host.cgroup(rel)
            own, _ = cg.ceilings()
            had = self.limiter.set_setting(rel, wfile, None)  # read, nothing set yet
            # the CFS period it has: cpu.max's second field, v1's cpu.cfs_period_us
            us = (read_setting(cg.control("cpu.max" if qfile == "cpu.max" else "cpu.cfs_period_us")) or "").split()
            self.base[rel] = (int(had) if had and had.isdigit() else default, own or float(os.cpu_count() or 1),
                              int(us[-1]) if us and us[-1].isdigit() else 100_000)
        w0, cpus, period = self.base[rel]
        weight = max(least, round(geometric(w0, least, level / WEIGHT_UPTO)))
        out = [Setting(wfile, self.limiter.set_setting(rel, wfile, str(weight)), str(weight))]
        if level <= WEIGHT_UPTO:
            return out + [Setting(qfile, self.limiter.set_setting(rel, qfile, None), None)]
        quota = max(self.floor_cpus, geometric(cpus, self.floor_cpus, (level - WEIGHT_UPTO) / (1 - WEIGHT_UPTO)))
        text = f"{int(quota * period)} {period}" if qfile == "cpu.max" else str(int(quota * period))
        return out + [Setting(qfile, self.limiter.set_setting(rel, qfile, text), text)]

    def presses(self, target: Resolved, sig: dict[str, float]) -> bool:
        """It waits for a CPU (or its quota stops it): released, it would take the CPU again."""
        wait = sig.get("rq_delay", math.nan)
        wait = wait if math.isfinite(wait) else sig.get("cpu_psi", math.nan)
        return (math.isfinite(wait) and wait >= PRESS_WAIT) or sig.get("throttled", 0.0) >= 0.2


@dataclass
class MemoryActuator:
    limiter: Limiter
    host: CgroupHost
    floor_bytes: int = 64 << 20
    resource: str = "memory"
    base: dict[str, float] = field(default_factory=dict)  # relpath -> its memory when first held
    high: dict[str, int] = field(default_factory=dict)  # relpath -> the level's bytes (before the anon floor)
    set_to: dict[str, int] = field(default_factory=dict)  # relpath -> what its file holds now

    def _file(self, rel: str) -> str:
        return "memory.high" if self.host.cgroup(rel).control("memory.high").exists() else "memory.limit_in_bytes"

    def anon(self, rel: str) -> int:
        """What of its memory the kernel cannot take back here (no swap): anonymous and shared memory."""
        ms = read_fields(self.host.cgroup(rel).control("memory.stat"),
                         ("anon", "shmem", "total_rss", "total_shmem"))
        return ms.get("anon", 0) + ms.get("shmem", 0) + ms.get("total_rss", 0) + ms.get("total_shmem", 0)

    def _write(self, rel: str, f: str) -> list[Setting]:
        value = self.high[rel]
        if f == "memory.limit_in_bytes":  # a hard limit: never where its own allocations would hit it
            value = max(value, self.anon(rel) + ANON_HEADROOM)
        if self.set_to.get(rel) == value:
            return []
        self.set_to[rel] = value
        return [Setting(f, self.limiter.set_setting(rel, f, str(value)), str(value))]

    def apply(self, target: Resolved, level: float, sig: dict[str, float]) -> list[Setting]:
        rel, f = target.relpath, self._file(target.relpath)
        mem = sig.get("mem", math.nan)
        if level <= 0:
            for d in (self.base, self.high, self.set_to):
                d.pop(rel, None)
            return [Setting(f, self.limiter.set_setting(rel, f, None), None)]
        if rel not in self.base:
            known = math.isfinite(mem) and mem > 0
            self.base[rel] = mem if known else float(self.host.cgroup(rel).stats().memory_current)
        top = max(self.floor_bytes, self.base[rel])
        self.high[rel] = int(max(self.floor_bytes, geometric(top, self.floor_bytes, level)))
        return self._write(rel, f)

    def keep(self, target: Resolved) -> list[Setting]:
        """Every period a hold stands: a v1 hard limit raised at once to the culprit's anonymous memory grown
        (the kernel would OOM-kill it at the limit, which contend never causes; v2's memory.high only slows it)."""
        rel = target.relpath
        if rel not in self.high or (f := self._file(rel)) != "memory.limit_in_bytes":
            return []
        return self._write(rel, f)

    def presses(self, target: Resolved, sig: dict[str, float]) -> bool:
        """It keeps charging pages at its setting: the kernel reclaimed it there this period (v1: its limit's
        failure count rose; v2: memory.high's events). A culprit whose load ended holds its cache, not presses."""
        return target.relpath in self.high and (sig.get("mem_max", 0.0) > 0 or sig.get("mem_high", 0.0) > 0)


@dataclass
class NetworkActuator:
    limiter: Limiter
    host: CgroupHost
    floor_bps: float = 1e6
    resource: str = "network"
    devs: dict[str, list[str]] = field(default_factory=dict)  # relpath -> its veths' host sides, when first held
    base: dict[str, float] = field(default_factory=dict)  # relpath -> the bits/s it sent when first held
    rate: dict[str, float] = field(default_factory=dict)  # relpath -> the bits/s it is held to now

    def _veths(self, rel: str) -> list[str]:
        from ..network import peers
        for pid in self.host.cgroup(rel).members():
            try:
                found = peers(pid)
            except OSError:
                continue  # it ended: the next one
            if found:
                return found
        raise ValueError("it has no veth of its own on the host (it shares the host's network, or its link is no "
                         "veth): never touched")

    def apply(self, target: Resolved, level: float, sig: dict[str, float]) -> list[Setting]:
        rel = target.relpath
        before = _bits(self.rate.get(rel))
        if level <= 0:
            self.base.pop(rel, None)
            self.rate.pop(rel, None)
            devs = self.devs.pop(rel, [])
            for dev in devs:
                self.limiter.set_shape(rel, dev, None)
            return [Setting(f"tc {dev}", before, None) for dev in devs]
        if rel not in self.devs:
            self.devs[rel] = self._veths(rel)
        if rel not in self.base:
            sent = sig.get("net_bytes", math.nan) * 8
            self.base[rel] = sent if math.isfinite(sent) and sent > self.floor_bps else 1e9
        bps = self.rate[rel] = max(self.floor_bps, geometric(self.base[rel], self.floor_bps, level))
        for dev in self.devs[rel]:
            self.limiter.set_shape(rel, dev, bps)
        return [Setting(f"tc {dev}", before, _bits(bps)) for dev in self.devs[rel]]

    def presses(self, target: Resolved, sig: dict[str, float]) -> bool:
        rate = self.rate.get(target.relpath)
        sent = sig.get("net_bytes", math.nan) * 8
        return rate is not None and math.isfinite(sent) and sent >= NET_PRESS * rate


def _bits(x: float | None) -> str | None:
    return None if x is None else f"{x / 1e6:.1f} Mbit/s"


class DiskActuator:
    """The guard as the disk's actuator: engaged while any disk hold is (its policy then caps the disk's users,
    every container's lifeline kept), disengaged it sets nothing and learns the lifelines."""

    resource = "disk"

    def __init__(self, handoff=None):
        self.handoff = handoff  # a started watch.handoff.GuardHandoff, its own latch unused; None: --dry-run
        self.levels: dict[str, float] = {}

    def apply(self, target: Resolved, level: float, sig: dict[str, float]) -> list[Setting]:
        before = self.handoff.caps().get(target.name) if self.handoff is not None else None
        if level > 0:
            self.levels[target.name] = level
        else:
            self.levels.pop(target.name, None)
        squeeze = geometric(1.0, SQUEEZE_LEAST, level)
        if self.handoff is not None:
            if level > 0:
                self.handoff.guard.squeeze[target.name] = squeeze
            else:
                self.handoff.guard.squeeze.pop(target.name, None)
            self.handoff.engaged = bool(self.levels)
        return [Setting("io.max", _rate(before), f"the guard's cap × {squeeze:.2f}" if level > 0 else None)]

    def presses(self, target: Resolved, sig: dict[str, float]) -> bool:
        return self.handoff is not None and self.handoff.pressed(target.name)


def _rate(x: float | None) -> str | None:
    return None if x is None else f"{x / 1e6:.0f} MB/s"
