"""The one cgroup interface contend uses, whatever the host's hierarchy (DESIGN §4)."""
from __future__ import annotations

import os
import re
import resource
import signal
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "contend"  # every cgroup contend creates lives below <hierarchy>/contend/
# a cgroup's weight on a disk, by the mechanism that reads it; io.latency's "weight" is its target in µs
WEIGHT_MAX = {"bfq": 1000, "cost": 10000, "latency": 10_000_000}


@dataclass(frozen=True)
class IoLimit:
    """A throttle on one block device ("MAJ:MIN"); None means unlimited."""

    device: str
    rbps: int | None = None
    wbps: int | None = None
    riops: int | None = None
    wiops: int | None = None

    def __post_init__(self) -> None:
        # written into io.max / blkio.throttle.*: a newline or a second device must never reach them
        if not re.fullmatch(r"[0-9]+:[0-9]+", self.device):
            raise ValueError(f"not a block device MAJ:MIN: {self.device!r}")
        for v in (self.rbps, self.wbps, self.riops, self.wiops):
            if v is not None and not (type(v) is int and v > 0):
                raise ValueError(f"{self.device}: not a throttle: {v!r}")


@dataclass(frozen=True)
class Limits:
    cpu: float | None = None  # CPUs (1.0 = one full core), enforced as a CFS quota
    memory: int | None = None  # bytes
    io: tuple[IoLimit, ...] = ()
    pids: int | None = None
    cpu_period_us: int = 100_000


@dataclass
class IoCounters:
    rbytes: int = 0
    wbytes: int = 0
    rios: int = 0
    wios: int = 0


@dataclass
class Stats:
    """A snapshot of a cgroup's counters. Cumulative counters only grow; the sampler takes differences."""

    cpu_usage_ns: int = 0
    nr_periods: int = 0
    nr_throttled: int = 0
    throttled_ns: int = 0
    memory_current: int = 0
    memory_peak: int = 0
    memory_events: dict[str, int] = field(default_factory=dict)  # max/oom/oom_kill hits
    # page cache the cgroup dirtied that is not on the disk yet (dirty + under writeback): its buffered writes,
    # which the kernel writes back later, on cgroup v1 from flusher threads charged to no container
    memory_dirty: int = 0
    memory_writeback: int = 0  # of which under writeback: submitted, not on the disk yet (queued or in flight)
    memory_majfaults: int = 0  # major page faults of its tasks, cumulative (a page read back from disk or swap)
    memory_refaults: int = 0  # evicted pages of its own read back while still in use (workingset refaults), cumulative
    io: dict[str, IoCounters] = field(default_factory=dict)  # by "MAJ:MIN"
    pressure: dict[str, float] = field(default_factory=dict)  # e.g. {"cpu.some.total_us": ...}
    net_bytes: int | None = None  # what the tenant sent, from its veth's counter (network trials; not a cgroup's)
    # a counter file that could not be read, with why: its counters are unknown, not 0 (a reader says so)
    unreadable: dict[str, str] = field(default_factory=dict)


def confined(relpath: str) -> str:
    """A cgroup's path relative to each hierarchy's root, refused if it could leave it (`..`): contend
    writes limits there as root, and cgroup:../../../tmp would have been /tmp."""
    rel = relpath.strip().strip("/")
    if ".." in Path(rel).parts or "\0" in rel:
        raise ValueError(f"cgroup {relpath!r}: must stay inside the cgroup hierarchy (no '..')")
    return rel


class Cgroup(ABC):
    """One container's cgroup: relpath is the same in every hierarchy (e.g. contend/ct-abc)."""

    def __init__(self, relpath: str):
        self.relpath = confined(relpath)

    @abstractmethod
    def dirs(self) -> list[Path]:
        """Every directory that makes up this cgroup (one per v1 hierarchy, one on v2)."""

    @abstractmethod
    def create(self) -> None: ...

    @abstractmethod
    def set_limits(self, limits: Limits) -> None: ...

    @abstractmethod
    def clear_io_limits(self, device: str) -> None: ...

    @abstractmethod
    def control(self, name: str) -> Path:
        """One of its control files by name (cpu.weight, memory.high...), in its controller's hierarchy on v1."""

    @abstractmethod
    def clear_memory_limit(self) -> None:
        """No memory limit here any more (a shared one, set on contend's parent for one trial)."""

    @abstractmethod
    def io_limits(self) -> dict[str, IoLimit]:
        """The I/O throttles set on this cgroup, by device."""

    def io_weights(self, mechanism: str = "bfq") -> dict[str, int]:
        """The per-device weights set on this cgroup for BFQ ("bfq") or io.cost ("cost"), or its io.latency
        targets in µs ("latency"); a device absent has the cgroup's default weight (no latency target)."""
        try:
            return parse_weights(read_text(self._weight_file(mechanism)))
        except (OSError, ValueError):
            return {}

    def set_io_weight(self, device: str, weight: int | None, mechanism: str = "bfq") -> None:
        """This cgroup's weight on one disk, for BFQ (1-1000; the file exists while the disk's scheduler is BFQ,
        and the weight goes with the scheduler) or io.cost (1-10000, cgroup v2), or its io.latency target
        (µs, cgroup v2); None: back to the default (no target)."""
        IoLimit(device)  # refuses what is not MAJ:MIN
        top = WEIGHT_MAX[mechanism]
        if weight is not None and not (type(weight) is int and 1 <= weight <= top):
            raise ValueError(f"{device}: not a {mechanism} weight (1-{top}): {weight!r}")
        if mechanism == "latency":
            write(self._weight_file(mechanism), f"{device} target={'max' if weight is None else weight}")
        else:
            write(self._weight_file(mechanism), f"{device} {'default' if weight is None else weight}")

    @abstractmethod
    def _weight_file(self, mechanism: str) -> Path:
        """bfq: blkio.bfq.weight_device (v1) or io.bfq.weight (v2); cost: io.weight and latency: io.latency
        (v2 only, else ValueError). `MAJ:MIN N` lines in each, `MAJ:MIN target=N` in io.latency."""

    @abstractmethod
    def stats(self, detail: bool = True, cpu: bool = True) -> Stats:
        """Its counters now. detail=False: its CPU's alone (use and throttling; no memory, I/O or pressure);
        cpu=False: all but its CPU's and its PSI (contend watch reads those apart, every period:
        collector.DETAIL_EVERY)."""

    @abstractmethod
    def usage_file(self) -> str:
        """The file of its CPU time, its descendants' counted (read_usage_ns reads it): cpuacct.usage on v1,
        cpu.stat on v2."""

    @abstractmethod
    def throttling(self) -> tuple[int, int]:
        """(periods, periods throttled) of its own CPU quota (both 0 without one: a quota above it throttles its
        own cgroup, not this one)."""

    @abstractmethod
    def ceilings(self) -> tuple[float | None, int | None]:
        """Its own CPU quota (CPUs) and memory limit (bytes) as set now; None where there is none."""

    @abstractmethod
    def procs(self) -> list[int]: ...

    def members(self) -> list[int]:
        """The processes, read where that is cheapest (the sampler asks every bucket)."""
        return self.procs()

    @abstractmethod
    def add_pid(self, pid: int) -> None: ...

    def exists(self) -> bool:
        return any(d.is_dir() for d in self.dirs())

    def task_count(self) -> int | None:
        """How many tasks it and its descendants hold now, where one file says it (v1's pids.current): a cheap
        sign that a process came or went. None: not known this way."""
        return None

    def kill_all(self, timeout: float = 5.0) -> None:
        """SIGKILL every process inside, until the cgroup is empty (or timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.procs()
            if not pids:
                return
            for pid in pids:
                if pid <= 0 or pid == os.getpid():  # procs() never gives these; a bad kill here is fatal
                    continue
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def remove(self) -> None:
        """Kill what is left and remove every directory, deepest first, and contend's own parent if now empty."""
        self.kill_all()
        for d in self.dirs():
            remove_tree(d)
            if d.parent.name == PREFIX:
                try:
                    d.parent.rmdir()
                except OSError:
                    pass  # another container of contend's still lives there


def remove_tree(d: Path) -> None:
    """rmdir a cgroup directory and its children (cgroupfs only allows rmdir, bottom up)."""
    if not d.is_dir():
        return
    for child in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        _rmdir(child)
    _rmdir(d)


def _rmdir(d: Path) -> None:
    for _ in range(50):
        try:
            d.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.05)  # EBUSY while the last task exits
    d.rmdir()


UNLIMITED_BYTES = 1 << 60  # v1 writes "no memory limit" as a page-rounded LONG_MAX


def read_text(path: Path | str) -> str:
    """A kernel file's text, read with the bare system calls: a sampler reads a dozen such files per cgroup a
    period, contend watch 260 a second with 20 containers (a cpu.stat: 8.1 µs, 9.4 through an unbuffered file
    object, more in text mode; bench/kernel_reads.py). In a thread where a KeptOpen is active, through it."""
    kept = getattr(_thread, "kept", None)
    if kept is not None:
        return kept.read(path)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _read_from(fd)
    finally:
        os.close(fd)


READ = 65536


def _read_from(fd: int, again: bool = False, whole: bool = False) -> str:
    """To the end (a kernel file can be longer than one read: cgroup.procs); `again`: from offset 0, for a
    file read before; `whole`: a read shorter than asked is the end (a cgroup file written by one `show`,
    KeptOpen.read), else the end is a read that returns nothing."""
    chunks, at = [], 0
    while chunk := (os.pread(fd, READ, at) if again else os.read(fd, READ)):
        chunks.append(chunk)
        at += len(chunk)
        if whole and len(chunk) < READ:
            break
    return b"".join(chunks).decode()


_thread = threading.local()


def open_files_budget(most: int = 16384, spare: int = 512) -> int:
    """How many kernel files a loop may keep open: the soft RLIMIT_NOFILE raised toward its hard one (up to `most`
    + `spare`), less `spare` for everything else (sockets, pipes, bpftrace's). A node's 250 pods are some 3,000
    files a period; past the budget, files are opened and closed each read (four times the cost)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = most + spare if hard == resource.RLIM_INFINITY else min(hard, most + spare)
    if soft != resource.RLIM_INFINITY and soft < want:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
            soft = want
        except (ValueError, OSError):
            pass
    return max(64, min(most, (soft if soft != resource.RLIM_INFINITY else most + spare) - spare))


class KeptOpen:
    """Kernel files kept open and read again from their start: the kernel writes a cgroup's, PSI's or /proc's
    file anew for each read at offset 0, so a loop that reads the same files every period saves their open and
    close (a cpu.stat: 2.0 µs against 8.1, bench/kernel_reads.py). For one thread: read_text goes through it
    inside `with kept.active()`.

    - A file that fails to read is closed and its error raised (a removed cgroup's file: ENODEV), opened again
      at its next read (a container restarted under the same path).
    - `sweep()` closes the files not read since the last sweep (containers gone); `close()` all of them.
    - Process lists are never kept: v1 keeps a cgroup.procs' list with the open file and serves it again for a
      second after its last read, where a new open lists the processes of now.
    - Beyond `limit` files, read as read_text does (the descriptors are the process's, 1024 by default)."""

    NEVER = ("cgroup.procs", "tasks", "cgroup.threads")
    # a cgroup file other than those lists is written whole by one `show` into a buffer grown until it fits, and
    # a read gets all of it that fits in the read: one shorter than asked is the end, and the read that would
    # return nothing is saved (1.2 µs of the 4.2 a kept cpu.pressure took here; /proc/kallsyms, by contrast,
    # hands back 4 KiB a read of its megabytes)
    WHOLE = ("/sys/fs/cgroup/",)

    def __init__(self, limit: int = 512):
        self.limit = limit
        self.fds: dict[str, int] = {}
        self._read: set[str] = set()

    def read(self, path: Path | str) -> str:
        key = os.fspath(path)
        fd = self.fds.get(key)
        if fd is None:
            fd = os.open(key, os.O_RDONLY | os.O_CLOEXEC)
            if len(self.fds) >= self.limit or os.path.basename(key) in self.NEVER:
                try:
                    return _read_from(fd)
                finally:
                    os.close(fd)
            self.fds[key] = fd
        self._read.add(key)
        try:
            return _read_from(fd, again=True, whole=key.startswith(self.WHOLE))
        except OSError:
            self._drop(key)
            raise

    def sweep(self) -> None:
        for key in set(self.fds) - self._read:
            self._drop(key)
        self._read.clear()

    def close(self) -> None:
        for key in list(self.fds):
            self._drop(key)

    def _drop(self, key: str) -> None:
        self._read.discard(key)
        fd = self.fds.pop(key, None)
        if fd is not None:
            os.close(fd)

    @contextmanager
    def active(self) -> Iterator[None]:
        _thread.kept = self
        try:
            yield
        finally:
            _thread.kept = None


def read_int(path: Path | str, default: int = 0) -> int:
    try:
        text = read_text(path).strip()
    except (FileNotFoundError, OSError):
        return default
    if text == "max":
        return -1
    try:
        return int(text)
    except ValueError:
        return default


def read_keyed(path: Path | str) -> dict[str, int]:
    """Parse 'key value' lines (cpu.stat, memory.events, memory.oom_control)."""
    out: dict[str, int] = {}
    try:
        text = read_text(path)
    except (FileNotFoundError, OSError):
        return out
    words = text.split()
    if len(words) == 2 * text.count("\n"):  # every line a key and a value: memory.stat's 50 at once
        try:
            return {k: int(v) for k, v in zip(words[::2], words[1::2])}
        except ValueError:
            pass
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def read_fields(path: Path | str, keys: tuple[str, ...]) -> dict[str, int]:
    """Only these keys of a 'key value' file, found rather than every line parsed (memory.stat: 5 of its 70
    lines, a period's detail of every container; a key absent or unreadable is left out)."""
    try:
        text = "\n" + read_text(path)
    except OSError:
        return {}
    out = {}
    for k in keys:
        i = text.find(f"\n{k} ")
        if i >= 0:
            j = i + len(k) + 2
            e = text.find("\n", j)
            try:
                out[k] = int(text[j:e if e >= 0 else len(text)])
            except ValueError:
                pass
    return out


def read_usage_ns(path: str) -> int | None:
    """A usage_file's CPU time in ns (None: unreadable): v1's cpuacct.usage, or v2's cpu.stat usage_usec."""
    try:
        text = read_text(path)
        if not path.endswith("cpu.stat"):
            return int(text)
        i = text.index("usage_usec ") + 11
        return int(text[i:text.index("\n", i)]) * 1000
    except (OSError, ValueError):
        return None


def read_some_total_s(path: Path | str) -> float | None:
    """A PSI file's `some` total, in seconds (None: unreadable): all contend watch needs of it, read without
    parsing the rest (its first `total=`: `some` is the first line)."""
    try:
        text = read_text(path)
    except OSError:
        return None
    i = text.find("total=")
    if i < 0:
        return None
    j = text.find("\n", i)
    try:
        return int(text[i + 6:j if j >= 0 else len(text)]) * 1e-6
    except ValueError:
        return None


def read_pressure(path: Path | str, resource: str) -> dict[str, float]:
    """Parse a PSI file: 'some avg10=0.00 avg60=0.00 avg300=0.00 total=123'."""
    out: dict[str, float] = {}
    try:
        lines = read_text(path).splitlines()
    except (FileNotFoundError, OSError):
        return out
    for line in lines:
        kind, *fields = line.split()
        for f in fields:
            key, _, val = f.partition("=")
            name = "total_us" if key == "total" else key
            out[f"{resource}.{kind}.{name}"] = float(val)
    return out


def parse_weights(text: str) -> dict[str, int]:
    """'default 100' and 'MAJ:MIN N' lines (blkio.bfq.weight_device, io.bfq.weight, io.weight) or
    'MAJ:MIN target=N' (io.latency): the per-device ones."""
    out = {}
    for line in text.splitlines():
        dev, _, w = line.partition(" ")
        w = w.removeprefix("target=")
        if re.fullmatch(r"[0-9]+:[0-9]+", dev) and w.strip().isdigit():
            out[dev] = int(w)
    return out


def read_procs(d: Path) -> list[int]:
    """Processes in d and every cgroup below it (lxc-attach, for one, uses a child cgroup). os.walk, not
    Path.rglob: the sampler calls this every bucket, and rglob costs several times more CPU."""
    pids: list[int] = []
    for root, _dirs, _files in os.walk(d):
        try:
            pids.extend(parse_pids(read_text(os.path.join(root, "cgroup.procs"))))
        except OSError:
            pass
    return pids


def parse_pids(text: str) -> list[int]:
    """The pids of a cgroup.procs file. v2 writes 0 for a dying task and for one outside the reader's PID
    namespace: never a process to signal (kill(0, ...) is the caller's own process group)."""
    return [p for p in map(int, text.split()) if p > 0]


def write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def mirror(cg: Cgroup, tracking: Cgroup) -> None:
    """Put a container's processes into its tracking cgroup in the unified tree as well (a hybrid host: the
    v2 id that eBPF and PSI know them by; exec'd processes land in the runtime's v1 cgroups only). Processes
    move with their future children; already-forked ones move here. Nothing to do on v2, where the two are
    one."""
    if any(d in cg.dirs() for d in tracking.dirs()):
        return
    if not tracking.exists():
        tracking.create()
    mirror_members(cg, tracking)


def mirror_members(cg: Cgroup, tracking: Cgroup, mirrored: frozenset[int] = frozenset()) -> frozenset[int]:
    """mirror()'s work alone, for a caller that checked the two once (contend watch, every period). Returns the
    processes it found; a caller that passes them back as `mirrored` next time skips reading the tracking cgroup
    while no new process came (the watch's loop, 20 containers a second: that read was a quarter of it). A
    mirrored process stays in the tracking cgroup: only a new pid can be missing there."""
    pids = frozenset(cg.members())
    if pids <= mirrored:
        return pids
    inside = set(tracking.members())
    for pid in pids - inside:
        try:
            tracking.add_pid(pid)
        except OSError:
            pass  # exited meanwhile
    return pids
