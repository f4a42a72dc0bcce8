"""cgroup v1 (also the v1 half of a hybrid host): one directory per controller hierarchy."""
from __future__ import annotations

import os
from pathlib import Path

from .base import (
    UNLIMITED_BYTES,
    Cgroup,
    IoCounters,
    IoLimit,
    Limits,
    Stats,
    read_fields,
    read_int,
    read_keyed,
    read_procs,
    read_text,
    write,
)

# the controllers contend needs, and those it only keeps tidy (so `clean` finds everything)
NEEDED = ("cpu", "cpuacct", "memory", "blkio", "pids")
# the disks whose v1 I/O counters this process has turned on, by MAJ:MIN and diskseq: a disk removed and added again
# under its number (a loop device, a volume attached again) is a new disk that blk-throttle has not started on
_COUNTING: set[tuple[str, str]] = set()


def count_io(blkio_dir: Path) -> None:
    """Turn on every disk's v1 I/O counters (blkio.throttle.io_service_*), from a cgroup of contend's own.

    Since Linux 6.9 blk-throttle starts on a disk at its first throttle rule, and the v1 counters are kept by
    it: until some cgroup on the host has had a rule on a disk, every cgroup reads 0 bytes on it, however much
    it wrote (a fresh machine's detect pass missed every disk antagonist so). Writing "MAJ:MIN 0" to a
    cgroup's read_bps_device starts it on that disk and sets no rule (0 is "none" in v1); a new cgroup has
    no rule to lose. The disk stays counted until it goes away."""
    for dev in sorted(Path("/sys/block").glob("*/dev")):
        try:
            mm = dev.read_text().strip()
            seq = dev.with_name("diskseq")  # since Linux 5.15; without it, the number alone
            disk = (mm, seq.read_text().strip() if seq.exists() else "")
            if disk not in _COUNTING:
                write(blkio_dir / "blkio.throttle.read_bps_device", f"{mm} 0")
                _COUNTING.add(disk)
        except OSError:
            continue  # a device that takes no throttle (gone, or not a request-based disk)


def v1_hierarchies(mounts: str | None = None) -> dict[str, Path]:
    """Map each v1 controller (and name=systemd) to its mount point, from /proc/mounts."""
    if mounts is None:
        mounts = Path("/proc/mounts").read_text()
    out: dict[str, Path] = {}
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) < 4 or parts[2] != "cgroup":
            continue
        for opt in parts[3].split(","):
            if opt in ("rw", "ro", "relatime", "nosuid", "nodev", "noexec", "clone_children"):
                continue
            if opt.startswith("name="):
                opt = opt[len("name="):]
            out.setdefault(opt, Path(parts[1]))
    return out


# the memory.stat lines stats() reads
MEMORY_STAT = ("total_dirty", "total_writeback", "total_pgmajfault", "total_workingset_refault_file",
               "total_workingset_refault_anon")


class V1Cgroup(Cgroup):
    def __init__(self, relpath: str, hierarchies: dict[str, Path] | None = None):
        super().__init__(relpath)
        self.h = hierarchies if hierarchies is not None else v1_hierarchies()
        self._dirs: dict[str, Path] = {}  # the samplers read a dozen files a period: each Path made once
        self._files: dict[str, str] = {}

    def _f(self, controller: str, name: str) -> str:
        """A file of this cgroup in a controller's hierarchy (its path made once: samplers read it often)."""
        key = f"{controller}/{name}"
        f = self._files.get(key)
        if f is None:
            f = self._files[key] = str(self._dir(controller) / name)
        return f

    def _dir(self, controller: str) -> Path:
        d = self._dirs.get(controller)
        if d is None:
            d = self._dirs[controller] = self.h[controller] / self.relpath
        return d

    def dirs(self) -> list[Path]:
        seen: dict[Path, None] = {}
        for mount in self.h.values():
            seen.setdefault(mount / self.relpath, None)
        return list(seen)

    def exists(self) -> bool:
        # strings, not Paths: contend watch asks this of every `cgroup:` target at each rescan
        return any(os.path.isdir(os.path.join(mount, self.relpath)) for mount in self.h.values())

    def task_count(self) -> int | None:
        if "pids" not in self.h:
            return None
        try:
            return int(read_text(self._f("pids", "pids.current")))
        except (OSError, ValueError):
            return None

    def create(self) -> None:
        for d in self.dirs():
            d.mkdir(parents=True, exist_ok=True)
        if "cpuset" in self.h:
            self._inherit_cpuset(self.h["cpuset"], Path(self.relpath))
        if "blkio" in self.h:
            count_io(self._dir("blkio"))

    @staticmethod
    def _inherit_cpuset(mount: Path, rel: Path) -> None:
        """A new v1 cpuset starts with no CPUs and no memory nodes (joining it fails with ENOSPC): copy the
        parent's, top down, as runc does."""
        node = mount
        for part in rel.parts:
            parent, node = node, node / part
            for f in ("cpuset.cpus", "cpuset.mems"):
                if not (node / f).read_text().strip():
                    write(node / f, (parent / f).read_text().strip())

    def set_limits(self, limits: Limits) -> None:
        if limits.cpu is not None:
            cpu = self._dir("cpu")
            write(cpu / "cpu.cfs_period_us", str(limits.cpu_period_us))
            write(cpu / "cpu.cfs_quota_us", str(int(limits.cpu * limits.cpu_period_us)))
        if limits.memory is not None:
            write(self._dir("memory") / "memory.limit_in_bytes", str(limits.memory))
        for lim in limits.io:
            self._set_io(lim)
        if limits.pids is not None:
            write(self._dir("pids") / "pids.max", str(limits.pids))

    def _set_io(self, lim: IoLimit) -> None:
        blk = self._dir("blkio")
        for name, value in (("read_bps", lim.rbps), ("write_bps", lim.wbps),
                            ("read_iops", lim.riops), ("write_iops", lim.wiops)):
            # v1 has no "max": writing 0 removes the rule for that device
            write(blk / f"blkio.throttle.{name}_device", f"{lim.device} {value or 0}")

    def clear_io_limits(self, device: str) -> None:
        self._set_io(IoLimit(device))

    def control(self, name: str) -> Path:
        return self._dir(name.split(".", 1)[0]) / name

    def _weight_file(self, mechanism: str) -> Path:
        if mechanism != "bfq":
            raise ValueError(f"io.{mechanism} weights need cgroup v2 (this cgroup is v1)")
        return self._dir("blkio") / "blkio.bfq.weight_device"

    def clear_memory_limit(self) -> None:
        write(self._dir("memory") / "memory.limit_in_bytes", "-1")

    def io_limits(self) -> dict[str, IoLimit]:
        """The throttles set on this cgroup, by device."""
        found: dict[str, dict[str, int | None]] = {}
        blk = self._dir("blkio")
        for name, key in (("read_bps", "rbps"), ("write_bps", "wbps"),
                          ("read_iops", "riops"), ("write_iops", "wiops")):
            try:
                lines = (blk / f"blkio.throttle.{name}_device").read_text().splitlines()
            except OSError:
                continue
            for line in lines:
                dev, val = line.split()
                found.setdefault(dev, {})[key] = int(val) or None  # 0: no throttle
        return {dev: IoLimit(dev, **vals) for dev, vals in found.items()}

    def stats(self, detail: bool = True, cpu: bool = True) -> Stats:
        s = Stats()
        if cpu:
            s.cpu_usage_ns = read_int(self._f("cpuacct", "cpuacct.usage"))
            cs = read_keyed(self._f("cpu", "cpu.stat"))
            s.nr_periods, s.nr_throttled = cs.get("nr_periods", 0), cs.get("nr_throttled", 0)
            s.throttled_ns = cs.get("throttled_time", 0)
        if not detail:
            return s
        usage = self._f("memory", "memory.usage_in_bytes")
        try:  # a container with no cgroup of its own in the memory hierarchy is unknown there, not 0
            s.memory_current = int(read_text(usage))
        except (OSError, ValueError) as e:
            s.unreadable[usage] = getattr(e, "strerror", None) or type(e).__name__
            s.io = self._io_stats(s.unreadable)
            return s
        s.memory_peak = read_int(self._f("memory", "memory.max_usage_in_bytes"))
        oom = read_keyed(self._f("memory", "memory.oom_control"))
        s.memory_events = {"max": read_int(self._f("memory", "memory.failcnt")), "oom_kill": oom.get("oom_kill", 0)}
        ms = read_fields(self._f("memory", "memory.stat"), MEMORY_STAT)
        s.memory_dirty = ms.get("total_dirty", 0) + ms.get("total_writeback", 0)
        s.memory_writeback = ms.get("total_writeback", 0)
        s.memory_majfaults = ms.get("total_pgmajfault", 0)
        s.memory_refaults = ms.get("total_workingset_refault_file", 0) + ms.get("total_workingset_refault_anon", 0)
        s.io = self._io_stats(s.unreadable)
        return s

    def usage_file(self) -> str:
        return self._f("cpuacct", "cpuacct.usage")

    def throttling(self) -> tuple[int, int]:
        cs = read_keyed(self._f("cpu", "cpu.stat"))
        return cs.get("nr_periods", 0), cs.get("nr_throttled", 0)

    def ceilings(self) -> tuple[float | None, int | None]:
        quota = read_int(self._dir("cpu") / "cpu.cfs_quota_us", -1)
        period = read_int(self._dir("cpu") / "cpu.cfs_period_us", 100_000) or 100_000
        mem = read_int(self._dir("memory") / "memory.limit_in_bytes", UNLIMITED_BYTES)
        return (quota / period if quota > 0 else None), (mem if 0 < mem < UNLIMITED_BYTES else None)

    def _io_stats(self, unreadable: dict[str, str]) -> dict[str, IoCounters]:
        out: dict[str, IoCounters] = {}
        for fname, rkey, wkey in (("blkio.throttle.io_service_bytes_recursive", "rbytes", "wbytes"),
                                  ("blkio.throttle.io_serviced_recursive", "rios", "wios")):
            path = self._f("blkio", fname)
            try:
                lines = read_text(path).splitlines()
            except OSError as e:
                unreadable[str(path)] = e.strerror or type(e).__name__
                continue
            for line in lines:
                parts = line.split()
                if len(parts) != 3:
                    continue
                c = out.setdefault(parts[0], IoCounters())
                if parts[1] == "Read":
                    setattr(c, rkey, int(parts[2]))
                elif parts[1] == "Write":
                    setattr(c, wkey, int(parts[2]))
        return out

    def procs(self) -> list[int]:
        pids: set[int] = set()
        for d in self.dirs():
            pids.update(read_procs(d))
        return sorted(pids)

    def members(self) -> list[int]:
        """A container's processes are in each of its hierarchies: read one, the pids controller's, whose
        directories hold the fewest files to walk."""
        for controller in ("pids", "memory"):
            if controller in self.h:
                return sorted(set(read_procs(self._dir(controller))))
        return self.procs()

    def add_pid(self, pid: int) -> None:
        for d in self.dirs():
            if d.is_dir():
                write(d / "cgroup.procs", str(pid))
