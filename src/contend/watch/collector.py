"""One Frame per period from the live host: each watched container's cgroup counters (v1 or v2), its PSI and
eBPF identity in the unified tree (on a hybrid host the unified cgroup its processes are in), the disks'
own counters and the host's PSI."""
from __future__ import annotations

import math
import os
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..cgroups import PREFIX, Cgroup, CgroupHost, Stats, V2Cgroup, mirror
from ..cgroups.base import (
    KeptOpen,
    mirror_members,
    open_files_budget,
    read_pressure,
    read_some_total_s,
    read_text,
    read_usage_ns,
)
from ..diskuse import device_counters, latency_ms, settle
from ..guard.targets import Resolved
from .runq import RunqProbe, Taken
from .signals import HOST, Frame
from .topdown import TopDown

SKIP_DISKS = ("loop", "ram", "zram", "sr", "fd", "nbd", "dm-", "md")


def whole_disks() -> list[str]:
    """MAJ:MIN of every whole disk on the host (not loop, ram, optical or mapper devices)."""
    out = []
    for d in sorted(Path("/sys/block").iterdir()):
        if d.name.startswith(SKIP_DISKS):
            continue
        try:
            out.append((d / "dev").read_text().strip())
        except OSError:
            continue
    return out


def unified_of(host: CgroupHost, cg: Cgroup, relpath: str) -> V2Cgroup | None:
    """The unified cgroup a container's processes are in: its own on v2; on a hybrid host the one most of its
    processes are in, if not the root (systemd's or docker's mirror, contend's tracking cgroup)."""
    if host.unified is None:
        return None
    if host.mode == "v2":
        return V2Cgroup(relpath, host.unified)
    seen: Counter[str] = Counter()
    for pid in cg.members()[:16]:
        try:
            for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
                if line.startswith("0::"):
                    seen[line[3:].strip("/")] += 1
        except OSError:
            continue
    path = seen.most_common(1)[0][0] if seen else ""
    return V2Cgroup(path, host.unified) if path else None


def descendant_ids(d: Path) -> tuple[str, ...]:
    """The inodes (bpftrace's `cgroup` ids) of a unified cgroup and every cgroup below it."""
    out = []
    for root, _dirs, _files in os.walk(d):
        try:
            out.append(str(os.stat(root).st_ino))
        except OSError:
            continue
    return tuple(out)


@dataclass
class Watched:
    name: str
    relpath: str
    cgroup: Cgroup
    unified: V2Cgroup | None
    cgid: str  # the unified cgroup's inode: bpftrace's `cgroup` ("" without one)
    ids: tuple[str, ...] = ()  # its inode and its descendants' (lxc runs a container's tasks in a child cgroup)
    own: V2Cgroup | None = None  # a contend container's tracking cgroup on a hybrid host, its processes mirrored
    # its CPU quota and memory limit, read again every REFRESH_S (not every period: they seldom change)
    ceilings: tuple[float | None, int | None] = (None, None)
    net_pid: int = 0  # a process in its own network namespace, found again every REFRESH_S (0: none)
    netns: str = ""  # that namespace's inode: the eBPF TCP RTT's key
    found_at: float = -math.inf  # when the above were found (time.monotonic)


def host_netns() -> int:
    """The network namespace contend watch runs in: the host's (/proc/1's may not be ours to read)."""
    return os.stat("/proc/self/ns/net").st_ino


def netns_pid(cg: Cgroup, host_ns: int) -> tuple[int, int]:
    """(a process of the container's in its network namespace, that namespace's inode): of those its processes
    are in, other than the host's, the one with the most interfaces but lo (gVisor's gofer sits in an empty
    one beside its sentry's). (0, 0): none, or it shares the host's (its traffic cannot be told from the
    host's)."""
    best, best_ns, most = 0, 0, 0
    seen: set[int] = set()
    for pid in cg.members()[:16]:
        try:
            ns = os.stat(f"/proc/{pid}/ns/net").st_ino
            if ns == host_ns or ns in seen:
                continue
            seen.add(ns)
            n = sum(1 for ln in read_text(f"/proc/{pid}/net/dev").splitlines()[2:]
                    if ln.partition(":")[0].strip() != "lo")
        except OSError:
            continue
        if n > most or not best:
            best, best_ns, most = pid, ns, n
    return best, best_ns


def net_counters(pid: int) -> tuple[int, int, int, int]:
    """(bytes, drops, TCP segments sent, TCP segments retransmitted) of a process's network namespace, every
    interface but lo (OSError: the process is gone). Not what its sockets hold to send: /proc/net/tcp walks
    the kernel's whole connection table, 4.6 ms a read here."""
    nbytes = drops = 0
    for line in read_text(f"/proc/{pid}/net/dev").splitlines()[2:]:
        dev, _, rest = line.partition(":")
        f = rest.split()
        if dev.strip() != "lo" and len(f) >= 12:
            nbytes += int(f[0]) + int(f[8])
            drops += int(f[3]) + int(f[11])
    out = retrans = 0
    head = None
    for line in read_text(f"/proc/{pid}/net/snmp").splitlines():
        if line.startswith("Tcp:"):
            if head is None:
                head = line.split()
            else:
                row = dict(zip(head, line.split()))
                out, retrans = int(row.get("OutSegs", 0)), int(row.get("RetransSegs", 0))
    return nbytes, drops, out, retrans


def net_signals(now: tuple[int, ...], before: tuple[int, ...], dt: float) -> dict[str, float]:
    """net_bytes, net_drops, net_retrans from two readings of net_counters (nan without both)."""
    if not now or not before:
        return {"net_bytes": math.nan, "net_drops": math.nan, "net_retrans": math.nan}
    d = [max(0, a - b) for a, b in zip(now, before)]
    return {"net_bytes": d[0] / dt, "net_drops": d[1] / dt,
            "net_retrans": d[3] / d[2] if d[2] >= 100 * dt else math.nan}


def psi_totals(pressure: dict[str, float]) -> dict[str, float]:
    """cpu/memory/io 'some' totals in seconds, from a parsed PSI."""
    return {res: pressure[f"{res}.some.total_us"] * 1e-6 for res in ("cpu", "memory", "io")
            if f"{res}.some.total_us" in pressure}


HOST_PSI = tuple((res, f"/proc/pressure/{res}") for res in ("cpu", "memory", "io"))  # paths made once


def host_psi() -> dict[str, float]:
    out: dict[str, float] = {}
    for res, path in HOST_PSI:
        out.update(read_pressure(path, res))
    return psi_totals(out)


def cpu_ticks() -> tuple[float, float, float] | None:
    """(busy, stolen, all) CPU-seconds of the host since boot (/proc/stat's first line: busy is user, nice,
    system, irq and softirq; stolen the hypervisor's; all of them with idle and iowait)."""
    try:
        f = [int(x) for x in read_text("/proc/stat").split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal (guest time is inside user already)
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(f[:7]) - f[3] - f[4]) / hz, f[7] / hz, sum(f[:8]) / hz


def busy_cpu_s() -> float | None:
    """CPU-seconds the host has spent busy since boot, stolen time not counted."""
    t = cpu_ticks()
    return None if t is None else t[0]


def by_victim(pairs: dict[tuple[str, str], float], by_id: dict[str, str], dt: float) -> dict[str, dict[str, float]]:
    """Counts by (victim cgroup id, other cgroup id) as per-second rates by watched victim and by the other's
    container name (`host`: a cgroup no watched container has)."""
    out: dict[str, dict[str, float]] = {}
    for (vid, oid), n in pairs.items():
        victim = by_id.get(vid)
        if victim is not None:
            by = out.setdefault(victim, {})
            other = by_id.get(oid, HOST)
            by[other] = by.get(other, 0.0) + n / dt
    return out


# the signals a resource's unreadable counter makes unknown (nan) rather than 0
UNREAD = {"disk": ("io_bytes", "io_wbytes", "io_ios", "io_wait_ms"),
          "memory": ("mem", "mem_max", "mem_high", "oom_kill", "majfault", "refault", "dirty")}


def resource_of(path: str) -> str:
    """The resource a cgroup file counts (by its name: memory.*, blkio.* and io.*)."""
    name = os.path.basename(path)
    return "memory" if name.startswith("memory.") else "disk"


PSI = ("cpu", "memory", "io")

# what contend watch reads of a container every period is cheap (CPU use, throttling, PSI: at most 5 files on a
# hybrid host, read from the top of the tree down: TopDown); its memory, disk and network counters (9 files more)
# are read every DETAIL_EVERY periods while the node is calm, each container in its turn, and every period while
# anyone may suffer on those (wants_detail): what judging a symptom needs, the suspects' use, is then read in the
# same period
DETAIL_EVERY = 5
# a known container's unified cgroup, eBPF ids, limits and network namespace are found again this often, not at
# every 5-s rescan (a new one at once): with 110 pods, finding them all took 130 ms of the watch's CPU each time
REFRESH_S = 30.0
IDLE_OK = 30.0  # a container that did not run keeps its memory and disk counters unread up to this long
DETAIL_PSI = 0.01  # a container's memory or I/O stall share at which every container's detail is read
DETAIL_RTT_MS = 2.0  # a container's TCP round trip at which too (the network rule's floor)
DETAIL_KEYS = ("mem", "mem_max", "mem_high", "oom_kill", "majfault", "refault", "io_bytes", "io_wbytes", "io_ios",
               "io_limited", "dirty", "net_bytes", "net_drops", "net_retrans")
DETAIL_UNKNOWN = dict.fromkeys(DETAIL_KEYS, math.nan)  # before a container's second reading


def wants_detail(cheap: dict[str, dict[str, float]], hot: bool) -> bool:
    """Whether every container's memory, disk and network counters are read this period (pure): a verdict on
    one of those is active (`hot`), or a container's memory or I/O stall or TCP round trip is up, or its PSI is
    unknown (then nothing says the node is calm)."""
    if hot:
        return True
    for c in cheap.values():
        mem, io, rtt = c.get("mem_psi", math.nan), c.get("io_psi", math.nan), c.get("net_rtt_ms", math.nan)
        if not (math.isfinite(mem) and math.isfinite(io)) or mem > DETAIL_PSI or io > DETAIL_PSI or rtt > DETAIL_RTT_MS:
            return True
    return False


def idle_unmoved(used: float | None, used_then: float, st: Stats, age: float) -> bool:
    """Whether a container's memory and disk counters, read `age` seconds ago when its CPU time was `used_then`
    (ns), are still what they were, its CPU time now `used` (pure; None: not asked). A cgroup whose tasks ran
    for no nanosecond (cpuacct.usage, cpu.stat's usage: exact, top-down) submitted no I/O, faulted no page and
    charged no memory: its I/O counters count at submission, in the submitting task (io_uring's workers are its
    threads); its faults and charges are its tasks' own. Except its dirty pages, written back later without it
    (cgroup v2 charges that writeback to it): a container holding any is read. Its memory in use can still fall
    (reclaimed): it is read again after IDLE_OK seconds. Its network counters are not judged here."""
    return (used is not None and used == used_then and age < IDLE_OK and st.memory_dirty == 0
            and not st.unreadable)


def detail_signals(st: Stats, p: Stats, dt: float) -> tuple[dict[str, float], str, float]:
    """A container's memory and disk signals from two readings `dt` apart (pure), its busiest disk ("" for
    none) and the bytes/s it moved there. A counter not read is unknown (nan), not 0: nobody "rose" by it."""
    rates = {d: ((c.rbytes + c.wbytes) - (p.io[d].rbytes + p.io[d].wbytes) if d in p.io else 0,
                 c.wbytes - p.io[d].wbytes if d in p.io else 0,
                 (c.rios + c.wios) - (p.io[d].rios + p.io[d].wios) if d in p.io else 0) for d, c in st.io.items()}
    busiest = max(rates, key=lambda d: rates[d][0], default="")
    out = {
        "mem": float(st.memory_current),
        "mem_max": max(0, st.memory_events.get("max", 0) - p.memory_events.get("max", 0)) / dt,
        # v2: breaches of its memory.high (a hold's: protect/actuators.py); none on v1
        "mem_high": max(0, st.memory_events.get("high", 0) - p.memory_events.get("high", 0)) / dt,
        "oom_kill": max(0, st.memory_events.get("oom_kill", 0) - p.memory_events.get("oom_kill", 0)) / dt,
        "majfault": max(0, st.memory_majfaults - p.memory_majfaults) / dt,
        "refault": max(0, st.memory_refaults - p.memory_refaults) / dt,
        "io_bytes": max(0, sum(r[0] for r in rates.values())) / dt,
        "io_wbytes": max(0, sum(r[1] for r in rates.values())) / dt,
        "io_ios": max(0, sum(r[2] for r in rates.values())) / dt,
        "io_limited": 0.0,
        "dirty": float(st.memory_dirty),
    }
    for res, keys in UNREAD.items():
        if any(resource_of(f) == res for f in (*st.unreadable, *p.unreadable)):
            for k in keys:
                out[k] = math.nan
    return out, busiest, (rates[busiest][0] / dt if busiest else 0.0)


class WatchCollector:
    def __init__(self, host: CgroupHost, disks: list[str] | None = None, ebpf: bool = True,
                 clock0: float | None = None, net_rtt: bool = True, period: float = 0.5):
        self.host = host
        self.disks = disks if disks is not None else whole_disks()
        self.watched: dict[str, Watched] = {}
        self.runq: RunqProbe | None = None  # its probes, once attached
        self._launched: RunqProbe | None = None  # bpftrace compiling them, not waited for yet (attach)
        self._read_once = False  # the first reading made (it sets the counters' start, eBPF's or not)
        self.problems: list[str] = []
        self.probe_cpu_s = 0.0  # CPU-seconds bpftrace used once attached (its start aside), once closed
        self.notices: list[dict] = []  # events of its own (unreadable counters), taken by the watcher
        self._told: set[tuple[str, str, str]] = set()
        if ebpf:
            # the kernel's maps printed twice a period (each print walks every map key by key: a period's
            # worth of pairs four times a second cost bpftrace more than the counting did)
            # launched here, waited for by attach(): the first scan and reading are made while it compiles
            self._launched = RunqProbe(min(max(period / 2, 0.1), 1.0), net_rtt=net_rtt)
            self._launched.launch()
        try:  # interrupted from here on (Ctrl-C, SIGTERM), the probe started above goes too
            # the cheap reading before: (when, (CPU ns, periods, periods throttled), PSI totals)
            self._prev: dict[str, tuple[float, tuple[float, int, int], dict[str, float]]] = {}
            mounts = [str(p) for p in (*host.v1.values(), *([host.unified] if host.unified else []))]
            # CPU time and PSI of every container, read from the top down: a calm node's are mostly not read
            self._usage = TopDown(read_usage_ns, mounts)
            self._leafs: dict[str, tuple[Cgroup, V2Cgroup | None, str, dict[str, str]]] = {}  # _leaf_files
            self._leaves: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
            self._psi = TopDown(read_some_total_s, mounts)
            # the detail reading before: (when its cgroup counters were read, them, its CPU ns then, when its
            # network counters were read, them)
            self._dprev: dict[str, tuple[float, Stats, float, float, tuple[int, ...]]] = {}
            self._dout: dict[str, dict[str, float]] = {}  # the detail signals last read
            self._slot: dict[str, int] = {}  # each container's turn among DETAIL_EVERY periods
            self._round = 0
            self.hot = False  # a verdict on memory, disk or network is active (the watcher says, each period)
            self.detailed = 0  # containers whose detail was due in the last period
            self.idle = 0  # of which the cgroup counters were not read: no CPU time since they last were (IDLE_OK)
            if said := host.count_disks(f"watch-{os.getpid()}"):  # the watched containers' are not contend's
                self.problems.append(said)
            self._host_ns = host_netns()
            self._dev: dict[str, tuple[int, int, int]] = {d: device_counters(d) for d in self.disks}
            self._credit: dict[str, float] = {}  # charged to the watched, not written by the disks yet (settle)
            self._mirrored: dict[str, frozenset[int]] = {}  # each own container's processes mirrored last period
            self._tasks: dict[str, int | None] = {}  # and its task count then (Cgroup.task_count)
            self._files = KeptOpen(limit=open_files_budget())
            self._host_psi = host_psi()
            self._ticks = cpu_ticks()
            self._t = time.monotonic()
        except BaseException:
            if self._launched is not None:
                self._launched.stop()
            raise
        self.clock0 = self._t if clock0 is None else clock0  # frames' t: seconds since then

    def attach(self) -> None:
        """Waits for the eBPF probes to attach (they compile meanwhile); what could not attach is in `problems`."""
        runq, self._launched = self._launched, None
        if runq is None:
            return
        runq.wait_attached()
        self.problems += runq.problems
        if runq.attached:
            self.runq = runq
        else:
            runq.stop()

    def set_targets(self, targets: dict[str, Resolved]) -> None:
        """The containers to watch now (rescanned by the caller); their unified cgroups found again."""
        out = {}
        now = time.monotonic()
        for name, r in targets.items():
            old = self.watched.get(name)
            if old is not None and old.relpath == r.relpath and old.cgid and now - old.found_at < REFRESH_S:
                out[name] = old  # found lately: kept as found (a contend container's new processes are mirrored
                continue  # every period, in _collect)
            w = self._identify(old) if old is not None and old.relpath == r.relpath else \
                self._identify(Watched(name, r.relpath, self.host.cgroup(r.relpath), None, ""))
            try:
                w.ceilings = w.cgroup.ceilings()
                w.net_pid, ns = netns_pid(w.cgroup, self._host_ns)
                w.netns = str(ns)
            except OSError:
                pass
            w.found_at = now
            out[name] = w
        # a name whose cgroup changed (a restarted pod container keeps its name, issue 95 L3) starts its counters
        # anew: its old cgroup's readings are no start for the new one's
        moved = {n for n, w in out.items() if n in self.watched and self.watched[n].relpath != w.relpath}
        for kept in (self._prev, self._dprev, self._dout, self._slot, self._tasks):
            for gone in (set(kept) - set(out)) | (moved & set(kept)):
                kept.pop(gone)
        for gone in set(self._mirrored) - set(out):
            self._mirrored.pop(gone)
        self._files.sweep()  # a container gone: its files closed
        self.watched = out

    def _identify(self, w: Watched) -> Watched:
        """Its unified cgroup and eBPF id, found again (a container's first processes may come later)."""
        own = self._own(w)
        if w.cgid and (self.host.mode == "v2" or own is not None) and w.unified is not None:
            return Watched(w.name, w.relpath, w.cgroup, w.unified, w.cgid, descendant_ids(w.unified.dir), own,
                           w.ceilings)
        try:
            u = own if own is not None else unified_of(self.host, w.cgroup, w.relpath)
            cgid = str(u.inode()) if u is not None and u.exists() else ""
        except OSError:
            u, cgid = None, ""
        if not cgid:  # no process inside now (between two loads): it keeps the one it had
            return w
        return Watched(w.name, w.relpath, w.cgroup, u, cgid, descendant_ids(u.dir) if u is not None else (cgid,),
                       own, w.ceilings)

    def _own(self, w: Watched) -> V2Cgroup | None:
        """A container of contend's own on a hybrid host: its tracking cgroup, its processes mirrored there as
        its sampler does in a study (an exec'd load lands in the runtime's v1 cgroups only). None for any
        other container, on v2, and while it has no tracking cgroup."""
        own = self.host.tracking(w.relpath) if w.relpath.startswith(PREFIX + "/") else None
        if own is None or not own.exists():
            return None
        try:
            mirror(w.cgroup, own)
        except OSError:
            pass
        return own if self.host.mode == "hybrid" else None

    def close(self) -> None:
        self._files.close()
        if self._launched is not None:  # closed before its probes were waited for
            self._launched.stop()
            self._launched = None
        if self.runq is not None:
            self.probe_cpu_s = self.runq.cpu_seconds() - self.runq.start_cpu_s
            self.runq.stop()


    def collect(self) -> Frame:
        with self._files.active():  # the same few hundred files every period: kept open (KeptOpen)
            return self._collect()

    def _collect(self) -> Frame:
        now = time.monotonic()
        dt = max(now - self._t, 1e-3)
        self._t = now
        self.watched = {n: w if w.cgid else self._identify(w) for n, w in self.watched.items()}
        for name, w in self.watched.items():
            if w.own is not None:  # every period: a load exec'd since lands in the v1 cgroups only
                n = w.cgroup.task_count()  # its processes listed again only when their count moved
                if n is not None and n == self._tasks.get(name) and name in self._mirrored:
                    continue
                try:
                    self._mirrored[name] = mirror_members(w.cgroup, w.own, self._mirrored.get(name, frozenset()))
                    self._tasks[name] = n
                except OSError:
                    pass
        if self._read_once:  # the first reading only starts the counters: it does not wait for the probes
            self.attach()
        self._read_once = True
        k = self.runq.take() if self.runq is not None else Taken()
        by_id = {i: n for n, w in self.watched.items() for i in w.ids}
        files = self._leaf_files()
        usage = self._usage.totals(self._leaves[0])
        psi = self._psi.totals(self._leaves[1])
        cheap: dict[str, dict[str, float]] = {}
        for name, w in self.watched.items():
            used = usage[files[name][2]]
            if used is None:
                continue  # gone between scan and now
            totals = {r: x for r, f in files[name][3].items() if (x := psi[f]) is not None}
            try:
                # the kernel's counts per second of the ticks they cover, not of the frame: a frame of half a
                # period (the watcher's second look) takes one tick of two, or none
                waited = k.rate(sum(k.waited.get(i, 0.0) for i in w.ids)) if self.runq is not None and w.ids \
                    else math.nan
                sig = self._cheap(name, w, now, waited, used, totals)
            except OSError:
                continue  # gone between scan and now
            if sig is not None:
                # no ACK this period, or no eBPF: nan (a container without TCP traffic has no RTT)
                sig["net_rtt_ms"] = k.rtt_ms.get(w.netns, math.nan) if w.net_pid else math.nan
                cheap[name] = sig
        self._round += 1
        # without the eBPF round trip, a container's network harm shows only in its counters: read every period
        rtt = self.runq is not None and "tcp_rtt" in self.runq.attached
        every = wants_detail(cheap, self.hot) or (not rtt and any(w.net_pid for w in self.watched.values()))
        self.detailed = self.idle = 0
        containers: dict[str, dict[str, float]] = {}
        for name, w in self.watched.items():
            slot = self._slot.setdefault(name, len(self._slot) % DETAIL_EVERY)  # each in its turn: cost spread
            due = every or name not in self._dout or (self._round + slot) % DETAIL_EVERY == 0
            try:
                # while calm, a container that ran for no nanosecond since its counters were read is not read
                detail = self._detail(name, w, now, due, usage[files[name][2]] if not every else None)
            except OSError:
                continue
            self.detailed += due
            if name in cheap:
                sig = containers[name] = {**cheap[name], **detail}
                ios = sig["io_ios"]
                sig["io_wait_ms"] = sig["io_psi"] * 1e3 / ios if ios >= 1 and math.isfinite(sig["io_psi"]) else math.nan
        span = k.span if self.runq is not None else dt
        return Frame(now - self.clock0, dt, containers, by_victim(k.preemptions, by_id, span),
                     self._host(dt, containers), by_victim(k.took, by_id, span))

    def _leaf_files(self) -> dict[str, tuple[Cgroup, V2Cgroup | None, str, dict[str, str]]]:
        """Each watched container's cgroups, CPU-time file and PSI files (by resource), and in `_leaves` the sets
        of them TopDown reads: made again only where a container's cgroups changed (at 110 pods the 440 paths and
        their sets made each period were a tenth of the loop)."""
        kept, changed = self._leafs, len(self._leafs) != len(self.watched)
        for name, w in self.watched.items():
            f = kept.get(name)
            if f is None or f[0] is not w.cgroup or f[1] is not w.unified:
                kept[name] = (w.cgroup, w.unified, w.cgroup.usage_file(),
                              {} if w.unified is None else {r: w.unified.pressure_file(r) for r in PSI})
                changed = True
        if changed:
            for gone in set(kept) - set(self.watched):
                del kept[gone]
            self._leaves = (frozenset(f[2] for f in kept.values()),
                            frozenset(p for f in kept.values() for p in f[3].values()))
        return kept

    def _cheap(self, name: str, w: Watched, now: float, waited: float, used: float,
               psi: dict[str, float]) -> dict[str, float] | None:
        """Its signals read every period: CPU use (`used`, ns) and throttling, run-queue delay (`waited`, s/s:
        eBPF's; nan without it), PSI (`psi`, its totals; None: its first)."""
        quota, mem_limit = w.ceilings
        # its own quota's throttling (read only with one: without, its counts stay 0)
        st = (used, *w.cgroup.throttling()) if quota is not None else (used, 0, 0)
        prev = self._prev.get(name)
        self._prev[name] = (now, st, psi)
        if prev is None:
            return None
        dt = max(now - prev[0], 1e-3)
        p = prev[1]
        periods = st[1] - p[1]
        out = {
            "cpu": max(0, st[0] - p[0]) * 1e-9 / dt,
            "cpu_quota": quota if quota is not None else math.nan,
            "throttled": (st[2] - p[2]) / periods if periods > 0 else 0.0,
            "rq_delay": waited,
            "mem_limit": float(mem_limit) if mem_limit is not None else math.nan,
        }
        for res, key in (("cpu", "cpu_psi"), ("memory", "mem_psi"), ("io", "io_psi")):
            out[key] = max(0.0, psi[res] - prev[2][res]) / dt if res in psi and res in prev[2] else math.nan
        return out

    def _detail(self, name: str, w: Watched, now: float, due: bool, used: float | None = None) -> dict[str, float]:
        """Its memory, disk and network signals: read now when `due`, else those of its last reading (their
        rates over the periods since the one before; an OOM kill counted once, where it was read). `used`: its
        CPU time now (ns), when its cgroup counters may be left unread if it did not run since they were read."""
        if not due:
            return {**self._dout.get(name, DETAIL_UNKNOWN), "oom_kill": 0.0}
        prev = self._dprev.get(name)
        if prev is not None and idle_unmoved(used, prev[2], prev[1], now - prev[0]):
            self.idle += 1
            t_st, st, used_then = prev[:3]  # unread: they are what they were (rates 0, levels kept)
            out = detail_signals(st, st, 1.0)[0]
        else:
            t_st, st, used_then = now, w.cgroup.stats(cpu=False), (math.nan if used is None else used)
            for path, why in st.unreadable.items():  # its CPU's read apart (_cheap)
                self._unreadable(name, path, why, now)
            out = {}
        net: tuple[int, ...] = ()
        if w.net_pid:  # a namespace's packets move without its processes running: read whenever due
            try:
                net = net_counters(w.net_pid)
            except (OSError, ValueError):
                w.net_pid = 0  # gone: found again at the next rescan
        self._dprev[name] = (t_st, st, used_then, now, net)
        if prev is None:
            return DETAIL_UNKNOWN
        if not out:
            out, busiest, moved = detail_signals(st, prev[1], max(now - prev[0], 1e-3))
            if busiest and moved > 0:  # bytes/s on its busiest disk: at 0.9 of its own throttle there, held by it
                lim = w.cgroup.io_limits().get(busiest)
                cap = sum(x for x in (lim.rbps, lim.wbps) if x) if lim is not None else 0
                out["io_limited"] = 1.0 if cap and moved >= 0.9 * cap else 0.0
            if out["mem_max"] > 0:  # at a limit set since the last rescan (a hold's): its value read now, not nan
                w.ceilings = w.cgroup.ceilings()
                out["mem_limit"] = float(w.ceilings[1]) if w.ceilings[1] is not None else math.nan
        out.update(net_signals(net, prev[4], max(now - prev[3], 1e-3)))
        self._dout[name] = out
        return out

    def _unreadable(self, name: str, path: str, why: str, now: float) -> None:
        """An `unreadable` event, once per container, file and error."""
        if (name, path, why) in self._told:
            return
        self._told.add((name, path, why))
        self.notices.append({"t": round(now - self.clock0, 3), "event": "unreadable", "victim": name,
                             "resource": resource_of(path), "kind": "unreadable", "culprit": "", "confidence": 0.0,
                             "since": round(now - self.clock0, 3),
                             "why": f"{path}: {why}: its {resource_of(path)} use is unknown",
                             "suspects": [], "culprits": [], "evidence": {}})

    def take_notices(self) -> list[dict]:
        out, self.notices = self.notices, []
        return out

    def _host(self, dt: float, containers: dict[str, dict[str, float]]) -> dict[str, float]:
        out: dict[str, float] = {}
        written, busiest = 0.0, (-1, "")
        for d in self.disks:
            cur = device_counters(d)
            prev = self._dev.get(d, cur)
            self._dev[d] = cur
            written += max(0, cur[2] - prev[2]) / dt
            ios = cur[0] - prev[0]
            if ios > busiest[0]:
                busiest = (ios, d)
                out["disk_latency_ms"] = latency_ms(prev, cur)
                out["disk_ios"] = ios / dt
        if self.disks:
            charged = sum(c.get("io_wbytes", 0.0) for c in containers.values())
            held = sum(c.get("dirty", 0.0) for c in containers.values())
            st = settle(self._credit, {"": charged * dt}, written * dt, {"": held})
            self._credit = st.credit
            out["unattributed_wbytes"] = st.unattributed / dt
        ticks = cpu_ticks()
        if ticks is not None and self._ticks is not None:
            used = sum(c.get("cpu", 0.0) for c in containers.values())
            (busy, stolen, every), (busy0, stolen0, every0) = ticks, self._ticks
            out["cpu_other"] = max(0.0, (busy - busy0) / dt - used)
            out["steal"], out["cpus"] = (stolen - stolen0) / dt, (every - every0) / dt
        self._ticks = ticks
        psi = host_psi()
        for res, key in (("cpu", "cpu_psi"), ("memory", "mem_psi"), ("io", "io_psi")):
            if res in psi and res in self._host_psi:
                out[key] = max(0.0, psi[res] - self._host_psi[res]) / dt
        self._host_psi = psi
        return out
