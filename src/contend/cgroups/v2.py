"""cgroup v2: one directory in the unified hierarchy, controllers enabled from the root down."""
from __future__ import annotations

from pathlib import Path

from .base import (
    Cgroup,
    IoCounters,
    IoLimit,
    Limits,
    Stats,
    read_fields,
    read_int,
    read_keyed,
    read_pressure,
    read_procs,
    read_some_total_s,
    read_text,
    write,
)

WANTED = ("cpu", "memory", "io", "pids")


# the memory.stat lines stats() reads
MEMORY_STAT = ("file_dirty", "file_writeback", "pgmajfault", "workingset_refault_file", "workingset_refault_anon")


class V2Cgroup(Cgroup):
    def __init__(self, relpath: str, root: Path = Path("/sys/fs/cgroup")):
        super().__init__(relpath)
        self.root = Path(root)
        self.dir = self.root / self.relpath
        self._files: dict[str, str] = {}

    def _f(self, name: str) -> str:
        """A file of this cgroup (its path made once: samplers read it often)."""
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = str(self.dir / name)
        return f

    def dirs(self) -> list[Path]:
        return [self.dir]

    def create(self) -> None:
        # enable the wanted controllers in every ancestor's subtree_control, top down
        node = self.root
        for part in Path(self.relpath).parts:
            self._enable_controllers(node)
            node = node / part
            node.mkdir(exist_ok=True)

    def _enable_controllers(self, node: Path) -> None:
        try:
            available = (node / "cgroup.controllers").read_text().split()
            enabled = (node / "cgroup.subtree_control").read_text().split()
        except OSError:
            return
        missing = [c for c in WANTED if c in available and c not in enabled]
        if missing:
            write(node / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))

    def controllers(self) -> list[str]:
        try:
            return (self.dir / "cgroup.controllers").read_text().split()
        except OSError:
            return []

    def set_limits(self, limits: Limits) -> None:
        if limits.cpu is not None:
            write(self.dir / "cpu.max", f"{int(limits.cpu * limits.cpu_period_us)} {limits.cpu_period_us}")
        if limits.memory is not None:
            write(self.dir / "memory.max", str(limits.memory))
        for lim in limits.io:
            write(self.dir / "io.max", io_max_line(lim))
        if limits.pids is not None:
            write(self.dir / "pids.max", str(limits.pids))

    def control(self, name: str) -> Path:
        return self.dir / name

    def clear_io_limits(self, device: str) -> None:
        write(self.dir / "io.max", io_max_line(IoLimit(device)))

    def _weight_file(self, mechanism: str) -> Path:
        return self.dir / {"bfq": "io.bfq.weight", "cost": "io.weight", "latency": "io.latency"}[mechanism]

    def clear_memory_limit(self) -> None:
        write(self.dir / "memory.max", "max")

    def io_limits(self) -> dict[str, IoLimit]:
        out: dict[str, IoLimit] = {}
        try:
            lines = (self.dir / "io.max").read_text().splitlines()
        except OSError:
            return out
        for line in lines:
            dev, *fields = line.split()
            vals = {}
            for f in fields:
                k, _, v = f.partition("=")
                vals[k] = None if v == "max" else int(v)
            out[dev] = IoLimit(dev, **vals)
        return out

    def stats(self, detail: bool = True, cpu: bool = True) -> Stats:
        s = Stats()
        if cpu:
            cs = read_keyed(self._f("cpu.stat"))
            s.cpu_usage_ns = cs.get("usage_usec", 0) * 1000
            s.nr_periods, s.nr_throttled = cs.get("nr_periods", 0), cs.get("nr_throttled", 0)
            s.throttled_ns = cs.get("throttled_usec", 0) * 1000
        if not detail:
            return s
        s.memory_current = read_int(self._f("memory.current"))
        s.memory_peak = read_int(self._f("memory.peak"))
        s.memory_events = read_keyed(self._f("memory.events"))
        ms = read_fields(self._f("memory.stat"), MEMORY_STAT)
        s.memory_dirty = ms.get("file_dirty", 0) + ms.get("file_writeback", 0)
        s.memory_writeback = ms.get("file_writeback", 0)
        s.memory_majfaults = ms.get("pgmajfault", 0)
        s.memory_refaults = ms.get("workingset_refault_file", 0) + ms.get("workingset_refault_anon", 0)
        s.io = parse_io_stat(self._f("io.stat"), s.unreadable)
        if cpu:
            s.pressure = self.pressure()
        return s

    def usage_file(self) -> str:
        return self._f("cpu.stat")

    def throttling(self) -> tuple[int, int]:
        cs = read_keyed(self._f("cpu.stat"))
        return cs.get("nr_periods", 0), cs.get("nr_throttled", 0)

    def pressure_file(self, resource: str) -> str:
        """Its PSI file of cpu, memory or io (read_some_total_s reads its `some` total)."""
        return self._f(f"{resource}.pressure")

    def ceilings(self) -> tuple[float | None, int | None]:
        try:
            quota, period = (self.dir / "cpu.max").read_text().split()
        except (OSError, ValueError):
            quota, period = "max", "100000"
        try:
            mem = (self.dir / "memory.max").read_text().strip()
        except OSError:
            mem = "max"
        return (int(quota) / int(period) if quota != "max" else None), (int(mem) if mem != "max" else None)

    def some_totals(self) -> dict[str, float]:
        """Seconds some of its tasks stalled on cpu, memory and io since it was made (PSI `some` totals; a
        resource whose file is unreadable is left out)."""
        out = {}
        for res in ("cpu", "memory", "io"):
            if (v := read_some_total_s(self.pressure_file(res))) is not None:
                out[res] = v
        return out

    def pressure(self) -> dict[str, float]:
        """PSI of this cgroup (present in every v2 cgroup, controllers or not)."""
        out: dict[str, float] = {}
        for res in ("cpu", "memory", "io"):
            out.update(read_pressure(self._f(f"{res}.pressure"), res))
        return out

    def procs(self) -> list[int]:
        return sorted(set(read_procs(self.dir)))

    def add_pid(self, pid: int) -> None:
        write(self.dir / "cgroup.procs", str(pid))

    def inode(self) -> int:
        """The cgroup id that bpftrace's `cgroup` builtin reports for tasks in this cgroup."""
        return self.dir.stat().st_ino


def io_max_line(lim: IoLimit) -> str:
    def v(x: int | None) -> str:
        return "max" if not x else str(x)
    return f"{lim.device} rbps={v(lim.rbps)} wbps={v(lim.wbps)} riops={v(lim.riops)} wiops={v(lim.wiops)}"


def parse_io_stat(path: Path | str, unreadable: dict[str, str] | None = None) -> dict[str, IoCounters]:
    """io.stat's counters by device; a file that cannot be read (the io controller off in the parent's
    subtree_control: no io.stat at all) goes to `unreadable` with why, and reads as no devices."""
    out: dict[str, IoCounters] = {}
    try:
        lines = read_text(path).splitlines()
    except OSError as e:
        if unreadable is not None:
            unreadable[str(path)] = e.strerror or type(e).__name__
        return out
    for line in lines:
        dev, *fields = line.split()
        vals = dict(f.split("=", 1) for f in fields if "=" in f)
        out[dev] = IoCounters(**{k: int(vals.get(k, 0)) for k in ("rbytes", "wbytes", "rios", "wios")})
    return out
