"""eBPF probes through bpftrace, attributed per container by the cgroup v2 id of its tracking cgroup.

Each probe is one small program with one purpose; the kernel side aggregates into maps keyed by
`cgroup`, user space reads them once per bucket. On a hybrid host the key is the inode of the
container's tracking cgroup in the unified tree (DESIGN §5).
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..pageout import give_back
from .base import Sample, Target

TRACEFS = Path("/sys/kernel/tracing")
BTF = Path("/sys/kernel/btf/vmlinux")  # the kernel's types, for probes that read its structures


@dataclass(frozen=True)
class Probe:
    name: str
    tracepoint: str  # category:event that must exist
    maps: dict[str, str]  # map name -> quantity it yields (per second, or a level)
    scale: dict[str, float]
    program: str  # {tenants}: a predicate true for the tenants' cgroups
    key: str = "cgroup"  # what the maps are keyed by first: "cgroup" (v2 id) or "netdev" (interface name)
    level: bool = False  # a level (kept, summed over the key's other fields), not a rate (cleared per bucket)
    btf: bool = False  # reads kernel structures: needs the kernel's BTF (/sys/kernel/btf/vmlinux)
    # a rate map never cleared: user space takes the difference of its totals from one tick to the next.
    # bpftrace's clear() is asynchronous, done by its user space some time after the print() before it, so
    # what the kernel adds in between is lost (bpftrace issues #277 and #3578: "the user is racing with clear()")
    cumulative: bool = False

    @property
    def source(self) -> str:
        """What it attaches to, as doctor and a trial's facts say it."""
        return self.tracepoint + (" + BTF" if self.btf else "")


# a block event of a data write: its rwbs starts with W, or F (a preflush) then W (blk_fill_rwbs)
WRITES = 'strncmp(args->rwbs, "W", 1) == 0 || strncmp(args->rwbs, "FW", 2) == 0'

# the CPU time the scheduler has charged the current task (its sum_exec_runtime, read through the kernel's
# BTF), plus 1 so that a known task that has not run yet is not a missing key; the same clock cpuacct and
# cpu.stat charge a cgroup from: a VM's steal time left out (the hypervisor ran someone else)
RUNTIME = "$r = curtask->se.sum_exec_runtime + 1; if (@rt[tid]) { @cpu_ns[cgroup] = sum($r - @rt[tid]); }"

CATALOGUE = (
    # time on CPU, as the kernel charges it: at every switch the outgoing task (still `current`) is charged
    # the runtime it added since it was last seen; a 100 Hz tick charges the running task too, or a task that
    # never yields would only be counted when it finally does (lumps of seconds instead of 100 ms buckets).
    # The tenants' tasks only (a map entry per task: bpftrace's maps hold 4096). A task forked while the
    # probe runs is known from its first wake-up (runtime 0); one older than the probe, or mirrored into a
    # tenant's tracking cgroup since, from its first switch or tick; a dead one is forgotten at its last
    # switch (TASK_DEAD, 0x80)
    Probe("cpu", "sched:sched_switch", {"cpu_ns": "cpu"}, {"cpu_ns": 1e-9},
          "tracepoint:sched:sched_wakeup_new /{tenants}/ { @rt[args->pid] = 1; }"
          f" tracepoint:sched:sched_switch /tid && ({{tenants}})/ {{ {RUNTIME}"
          " if (args->prev_state & 0x80) { delete(@rt[tid]); } else { @rt[tid] = $r; } }"
          f" profile:hz:100 /tid && ({{tenants}})/ {{ {RUNTIME} @rt[tid] = $r; }}", btf=True, cumulative=True),
    # without the kernel's BTF: the wall time since the CPU's last switch or tick. A VM's steal time is
    # counted too (cpuacct leaves it out: 2.6 % of a spinning CPU here in one 5 s run, docs/metrics.md)
    Probe("cpu", "sched:sched_switch", {"cpu_ns": "cpu"}, {"cpu_ns": 1e-9},
          "tracepoint:sched:sched_switch, profile:hz:100 { $n = nsecs;"
          " if (@last[cpu]) { @cpu_ns[cgroup] = sum($n - @last[cpu]); } @last[cpu] = $n; }", cumulative=True),
    # data writes issued by the container's own tasks (writeback by kernel threads is not theirs; a bio that
    # blk-throttle held back is submitted later by its kernel worker, in no tenant's cgroup: the eBPF disk
    # view misses it, metrics' ebpf_coverage says how much): requests as they start, and the bytes of bios
    # the block layer merged into a request already started. Writes only, as the host view's io_wbytes: a
    # discard (a truncate or unlink on a filesystem mounted with -o discard) carries a length but moves no
    # data, and the kernel charges it as Discard, not Write (a truncating dd counted 2.5x its writes here).
    # block_io_start is Linux 6.5's (the accounting start, in the submitter's context)
    Probe("block", "block:block_io_start", {"blk_bytes": "blk_bytes_s", "blk_ios": "blk_ios_s"},
          {"blk_bytes": 1.0, "blk_ios": 1.0},
          f"tracepoint:block:block_io_start /{WRITES}/"
          " { @blk_bytes[cgroup] = sum(args->bytes); @blk_ios[cgroup] = count(); }"
          f" tracepoint:block:block_bio_backmerge, tracepoint:block:block_bio_frontmerge /{WRITES}/"
          " { @blk_bytes[cgroup] = sum(args->nr_sector * 512); }", cumulative=True),
    # before 6.5 (Debian 12's 6.1, Ubuntu 22.04's 5.15): every bio as its task submits it; a bio merged into
    # another's request is not a request of its own. (block_rq_issue is no substitute: a request is often
    # issued from kblockd or another task's unplug, whose cgroup is not the submitter's.)
    Probe("block", "block:block_bio_queue", {"blk_bytes": "blk_bytes_s", "blk_ios": "blk_ios_s"},
          {"blk_bytes": 1.0, "blk_ios": 1.0},
          f"tracepoint:block:block_bio_queue /{WRITES}/ {{ @blk_bytes[cgroup] = sum(args->nr_sector * 512);"
          " @blk_ios[cgroup] = sum(1); }"
          f" tracepoint:block:block_bio_backmerge, tracepoint:block:block_bio_frontmerge /{WRITES}/"
          " { @blk_ios[cgroup] = sum(-1); }", cumulative=True),
    # resident anonymous and shmem memory per process of a tenant (not mapped files: those pages are the
    # host's page cache, charged to whoever read them first; not swap entries), as its own tasks change
    # it; the kernel's last updates at exit come from a context that is no longer the process's, so user
    # space drops the entries of processes that are gone (key: cgroup, pid, member)
    Probe("memory", "kmem:rss_stat", {"rss": "rss_bytes"}, {"rss": 1.0},
          "tracepoint:kmem:rss_stat /args->curr && (args->member == 1 || args->member == 3) && ({tenants})/"
          " { @rss[cgroup, pid, args->member] = args->size; }", level=True),
    # bytes a tenant sent, as its veth's host side receives them (Volpert used XDP there; bpftrace cannot
    # attach XDP or tc programs, the receive tracepoint sees the same packets)
    Probe("net", "net:netif_receive_skb", {"net_bytes": "net_bytes_s"}, {"net_bytes": 1.0},
          "tracepoint:net:netif_receive_skb /strncmp(str(args->name), \"contend\", 7) == 0/"
          " { @net_bytes[str(args->name)] = sum(args->len); }", key="netdev", cumulative=True),
)


def bpftrace_unusable() -> str:
    """'' when bpftrace can run here (tracefs mounted if it was not), else why not."""
    if shutil.which("bpftrace") is None:
        return "bpftrace not installed"
    return ensure_tracefs()


def ensure_tracefs() -> str:
    """Mount tracefs if it is not; return '' or why it cannot be."""
    if (TRACEFS / "events").is_dir():
        return ""
    p = subprocess.run(["mount", "-t", "tracefs", "tracefs", str(TRACEFS)], capture_output=True, text=True)
    return "" if p.returncode == 0 else f"tracefs not mountable: {p.stderr.strip()}"


def tracepoint_exists(tp: str) -> bool:
    cat, _, ev = tp.partition(":")
    return (TRACEFS / "events" / cat / ev).is_dir()


def offered(p: Probe) -> bool:
    """Does this kernel offer what the variant needs: its tracepoint, and its BTF where it reads structures?"""
    return tracepoint_exists(p.tracepoint) and (not p.btf or BTF.is_file())


def choose(catalogue: tuple[Probe, ...] = CATALOGUE) -> dict[str, Probe | None]:
    """Each probe name's first variant this kernel offers (None: no variant here)."""
    out: dict[str, Probe | None] = {}
    for p in catalogue:
        if out.get(p.name) is None:
            out[p.name] = p if offered(p) else None
    return out


def variants(name: str, catalogue: tuple[Probe, ...] = CATALOGUE) -> str:
    return " or ".join(dict.fromkeys(q.tracepoint for q in catalogue if q.name == name))


def probe_catalogue() -> list[tuple[str, bool, str, str]]:
    """(probe, attachable, tracepoint used, reason) for doctor."""
    why = bpftrace_unusable()
    out = []
    for name, p in choose().items():
        reason = why or ("" if p else f"no tracepoint {variants(name)} in this kernel")
        out.append((name, not reason, p.source if p else "", reason))
    return out


def script(probes: list[Probe], period_ms: int, tenant_ids: Sequence[str] = ()) -> str:
    tenants = " || ".join(f"cgroup == {i}" for i in tenant_ids) or "1"
    body = "\n".join(p.program.replace("{tenants}", tenants) for p in probes)
    prints = " ".join(f"print(@{m});" + ("" if p.level or p.cumulative else f" clear(@{m});")
                      for p in probes for m in p.maps)
    # "end" closes a tick's prints: a reader that takes totals between two ticks takes whole ticks only
    return f'{body}\ninterval:ms:{period_ms} {{ printf("tick %lld\\n", nsecs); {prints} printf("end\\n"); }}\n'


# bpftrace's compiler, mapped from these libraries: used to build the programs, never again once they are
# attached (the maps are printed by bpftrace's own code)
COMPILER_LIBS = ("/libLLVM", "/libclang")


def give_back_compiler(pid: int) -> int:
    """Pages out what a bpftrace process holds of its compiler's libraries once its probes are attached: 60-70
    MiB of its 110 resident here. Bytes advised (pageout.give_back)."""
    return give_back(pid, COMPILER_LIBS)


# what bpftrace's compiling freed goes back to the system, not kept in its heap: 8 MiB of the 40 it kept (glibc's
# dynamic mmap threshold otherwise rises to the largest block freed, and everything below it stays in the heap)
MALLOC_TUNABLES = "glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=131072"


def bpftrace_env() -> dict[str, str]:
    """bpftrace's environment: ours, its malloc told to give freed memory back (a user's own tunables win)."""
    own = os.environ.get("GLIBC_TUNABLES")
    return {**os.environ, "GLIBC_TUNABLES": MALLOC_TUNABLES + (f":{own}" if own else "")}


def _raise_memlock() -> None:
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass


class BpftraceProbes:
    source = "ebpf"

    def __init__(self, targets: list[Target], period: float = 0.1, clock0: float | None = None,
                 wanted: tuple[str, ...] = ("cpu", "block", "memory", "net"), catalogue: tuple[Probe, ...] = CATALOGUE):
        self.targets = targets
        self.period = period
        self.clock0 = time.monotonic() if clock0 is None else clock0
        self.samples: list[Sample] = []
        self.problems: list[str] = []  # what could not attach, and why
        self.attached: list[str] = []
        self.tracepoints: dict[str, str] = {}  # probe -> the tracepoint its variant for this kernel uses
        self.wanted = wanted
        self.catalogue = catalogue
        self._proc: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._ids: dict[str, str] = {}
        self._ready: threading.Event | None = None  # set by _read when attached; None: not launched, or waited for

    def start(self, timeout: float = 30) -> "BpftraceProbes":
        return self.launch().wait_attached(timeout)

    def launch(self) -> "BpftraceProbes":
        """bpftrace started, compiling its program (half a second to a second): wait_attached() waits for it."""
        probes = self._attachable()
        if not probes:
            return self
        self._ids = {str(t.tracking.inode()): t.tenant for t in self.targets if t.tracking is not None}
        self._devs = {t.netdev: t.tenant for t in self.targets if t.netdev}
        missing = [t.tenant for t in self.targets if t.tracking is None]
        if missing:
            self.problems.append(f"no cgroup v2 id for {', '.join(missing)} (pure v1 host): not attributed")
        self._proc = subprocess.Popen(
            ["bpftrace", "-f", "json", "-B", "line", "-e", script(probes, int(self.period * 1000), list(self._ids))],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_raise_memlock,
            env=bpftrace_env(), start_new_session=True)  # stopped by us, not by the terminal's Ctrl-C
        self._ready = ready = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(probes, ready), daemon=True, name="bpftrace")
        self._thread.start()
        return self

    def wait_attached(self, timeout: float = 30) -> "BpftraceProbes":
        """Until the probes launch() started are attached, or `timeout` (then `problems` says why, none attached)."""
        if self._proc is None or self._ready is None:
            return self
        ready, self._ready = self._ready, None
        try:
            attached = ready.wait(timeout)
        except BaseException:  # Ctrl-C or SIGTERM while bpftrace compiles: it is in a session of its own
            self._stop_proc()
            raise
        if not attached or self._proc.poll() is not None:
            err = self._stop_proc()
            self.problems.append(f"bpftrace did not attach: {err or 'timed out'}")
            self.attached, self.tracepoints = [], {}
        else:
            give_back_compiler(self._proc.pid)
        return self

    def _attachable(self) -> list[Probe]:
        why = bpftrace_unusable()
        if why:
            self.problems.append(f"{why}: no eBPF probes")
            return []
        out = []
        for name, p in choose(self.catalogue).items():
            if name not in self.wanted:
                continue
            if p is not None:
                out.append(p)
            else:
                self.problems.append(f"probe {name}: tracepoint {variants(name, self.catalogue)} not in this kernel")
        return out

    def _read(self, probes: list[Probe], ready: threading.Event) -> None:
        scale = {m: s for p in probes for m, s in p.scale.items()}
        quantity = {m: q for p in probes for m, q in p.maps.items()}
        of = {m: p for p in probes for m in p.maps}
        last_ns: int | None = None
        stamp, dt = 0.0, self.period
        printed: set[str] = set()  # the maps this tick printed already
        totals_before: dict[tuple[str, str], float] = {}  # (map, tenant) -> a cumulative map's last total
        assert self._proc and self._proc.stdout
        for line in self._proc.stdout:
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:
                continue
            kind = msg.get("type")
            if kind == "attached_probes":
                self.attached = [p.name for p in probes]
                self.tracepoints = {p.name: p.source for p in probes}
                ready.set()
            elif kind == "printf" and str(msg.get("data", "")).startswith("tick"):
                if last_ns is not None:  # the bucket before is complete: bpftrace prints no empty map,
                    for m in quantity.keys() - printed:  # so one it did not print was zero for every tenant
                        ids = self._devs if of[m].key == "netdev" else self._ids
                        self.samples += [Sample(stamp, t, self.source, quantity[m], 0.0) for t in ids.values()]
                stamp, dt, last_ns = tick(str(msg["data"]), last_ns, self.period, self.clock0)
                printed.clear()
            elif kind == "map":
                for name, by_key in msg["data"].items():
                    m = name.lstrip("@")
                    if m not in quantity or not isinstance(by_key, dict) or m in printed:
                        continue  # a map again before the next tick: bpftrace's dump at exit, a part-bucket
                    printed.add(m)
                    probe = of[m]
                    ids = self._devs if probe.key == "netdev" else self._ids
                    totals = per_tenant(by_key, ids, alive=probe.level)
                    for tenant, value in totals.items():  # a tenant absent from a map used nothing
                        if probe.cumulative:  # this bucket's share of the total
                            value, totals_before[(m, tenant)] = value - totals_before.get((m, tenant), 0.0), value
                        per = 1.0 if probe.level else dt
                        self.samples.append(Sample(stamp, tenant, self.source, quantity[m], value * scale[m] / per))

    def _stop_proc(self) -> str:
        if self._proc is None:
            return ""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        err = self._proc.stderr.read() if self._proc.stderr else ""
        lines = [ln for ln in err.strip().splitlines() if "RLIMIT_MEMLOCK" not in ln]
        return lines[-1] if lines else ""

    def stop(self) -> list[Sample]:
        self._stop_proc()
        if self._thread is not None:
            self._thread.join(timeout=5)
        return self.samples


def tick(line: str, last_ns: int | None, period: float, clock0: float) -> tuple[float, float, int]:
    """(stamp, dt, ns) of bpftrace's "tick <nsecs>": the bucket's length and middle from the kernel's own
    clock (nsecs is CLOCK_MONOTONIC, as time.monotonic), never from when the line was read: a reader that
    falls behind reads several ticks at once, and their read times would make buckets of ~0 s (rates
    thousands of times too high)."""
    ns = int(line.split()[1])
    dt = (ns - last_ns) / 1e9 if last_ns is not None and ns > last_ns else period
    return ns / 1e9 - dt / 2 - clock0, dt, ns


def per_tenant(by_key: dict[str, float], ids: dict[str, str], alive: bool = False) -> dict[str, float]:
    """A printed map's values summed per tenant: a key is "<id>" or "<id>,<more fields>". With `alive`,
    the second field is a pid and the entries of processes that have exited are left out."""
    out = {tenant: 0.0 for tenant in ids.values()}
    for key, value in by_key.items():
        fields = str(key).split(",")
        tenant = ids.get(fields[0])
        if tenant is None or not isinstance(value, (int, float)):
            continue
        if alive and len(fields) > 1 and not os.path.exists(f"/proc/{fields[1]}"):
            continue
        out[tenant] += value
    return out


PROBE_TYPES = {
    "tracepoint": "tracepoint:sched:sched_switch",
    "kprobe": "kprobe:vfs_read",
    "software": "software:cpu-clock:1000000",
    "hardware": "hardware:cycles:1000000",
    "interval": "interval:ms:1",
}


def attach_test(probe: str, timeout: float = 20) -> tuple[bool, str]:
    """Really attach one probe with bpftrace and exit at its first hit (or after 200 ms)."""
    prog = f"{probe} {{ exit(); }} interval:ms:200 {{ exit(); }}"
    try:
        p = subprocess.run(["bpftrace", "-e", prog], capture_output=True, text=True, timeout=timeout,
                           preexec_fn=_raise_memlock)
    except subprocess.TimeoutExpired:
        return False, "timed out"
    except FileNotFoundError:
        return False, "bpftrace not installed"
    errs = [ln for ln in p.stderr.strip().splitlines() if "RLIMIT_MEMLOCK" not in ln and ln.strip()]
    if p.returncode == 0 and "Attaching" in p.stdout:
        return True, ""
    return False, (errs[0][:160] if errs else f"exit {p.returncode}")


def probe_types() -> dict[str, tuple[bool, str]]:
    """Which bpftrace probe types attach on this host (doctor), tried in parallel."""
    from concurrent.futures import ThreadPoolExecutor
    why = bpftrace_unusable()
    if why:
        return {k: (False, why) for k in PROBE_TYPES}
    with ThreadPoolExecutor(len(PROBE_TYPES)) as ex:
        res = dict(zip(PROBE_TYPES, ex.map(attach_test, PROBE_TYPES.values())))
    return res
