"""The one trial lifecycle every kind of study uses: its tenants' data directories and containers (and their
network link) made, watched from the host, and whatever happens, nothing of them left."""
from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from . import owned, runtimes
from .cgroups import PREFIX, CgroupHost, Limits
from .failures import TRIAL_FAILURES, reason
from .faults import checkpoint
from .measured import StepWindow
from .network import Link
from .probes import BpftraceProbes
from .probes.base import Sample, Target
from .probes.device import DeviceSampler
from .probes.sampler import CgroupSampler, HostCpuSampler, oom_events
from .runtimes import Container, ContainerSpec, RuntimeFailed
from .runtimes.base import signals_deferred
from .runtimes.security import DEFAULT_CAPS
from .store import TrialRecord
from .tools import failure


@dataclass
class TrialResult:
    record: TrialRecord
    steps: list[StepWindow] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)  # (t, tenant, kind, detail)


@contextmanager
def recorded(rec: TrialRecord, stands: Callable[[], bool] = lambda: False) -> Iterator[TrialRecord]:
    """`with recorded(rec):` the one place a trial's outcome is written. The body sets `rec.status = "ok"` when
    it ends well; one of TRIAL_FAILURES fails the trial with its reason (the study goes on), unless `stands()`
    says what was measured before it still stands (the trial is then "ok", the reason kept); anything else
    ends the study. Either way the record gets its end time."""
    try:
        yield rec
    except TRIAL_FAILURES as e:
        rec.status, rec.reason = ("ok" if stands() else "failed"), reason(e)
    finally:
        rec.ended_at = time.time()


def reset_host(resource: str) -> None:
    """What a previous trial left in the kernel's caches must not help or hurt this one (the paper resets
    its servers between runs): write back and drop the page cache before disk and memory trials."""
    if resource in ("disk", "memory"):
        os.sync()
        try:
            Path("/proc/sys/vm/drop_caches").write_text("3\n")
        except OSError:
            pass  # not allowed here (a container without /proc/sys write): the trial runs on


class Tenants:
    """`with Tenants(runtime, {"a": limits, …}, host) as t:` every tenant a container with its own data
    directory on the experiment device (its /data), in its own network namespace when given a `link` (brought
    up first, taken down after the containers); from `start_sampling()` on, the cgroup counters of all (and
    the disk's own counters, given `device`; the eBPF probes named in `ebpf`; the whole host's CPUs, given
    `host_cpu`) sampled every `period` s, events kept with the same clock. On leaving, whatever happened and
    with signals deferred, the containers, the link and the data directories (attack files included) are
    removed."""

    def __init__(self, runtime: str, limits: dict[str, Limits], host: CgroupHost | None = None,
                 device: str | None = None, period: float = 0.1, caps: dict[str, tuple[str, ...]] | None = None,
                 userns: bool = True, link: Link | None = None, ebpf: tuple[str, ...] = (), cgroup: bool = True,
                 shared: Limits | None = None, host_cpu: bool = False):
        self.rt = runtimes.get(runtime, host)
        self.limits = dict(limits)  # (add and remove change it)
        # a limit all tenants share (as a pod's containers do), set on contend's parent cgroup while they live;
        # it goes when they do (the parent is removed with the last container, whatever happened)
        self.shared = shared
        self.caps = caps or {}  # capabilities a tenant's load needs beyond the defaults (runtimes/security.py)
        self.userns = userns
        self.link = link
        self.uid = link.uid if link is not None else uuid.uuid4().hex[:8]
        self.c: dict[str, Container] = {}
        self.data: dict[str, Path] = {t: owned.data_dir(self.uid, t) for t in limits}
        self.device, self.period, self.ebpf, self.cgroup = device, period, ebpf, cgroup
        self.host_cpu = host_cpu  # the whole host's CPUs sampled too (busy, stolen): what happened outside the tenants
        self.clock0 = time.monotonic()
        self.samplers: list = []
        self.events: list[tuple] = []  # (t, tenant, kind, detail)
        self._lock = threading.Lock()  # add and remove, from several threads

    def __enter__(self) -> "Tenants":
        try:
            if self.link is not None:
                self.link.up()
            for tenant, lim in self.limits.items():
                self.data[tenant].mkdir(parents=True, exist_ok=True)
                self.c[tenant] = self.rt.create(self._spec(tenant, lim))
            if self.shared is not None:
                self.rt.host.cgroup(PREFIX).set_limits(self.shared)
            if self.c:  # (a block whose tenants come later, with add, reaches it there)
                checkpoint("containers")
        except BaseException:
            self.__exit__()
            raise
        return self

    def _spec(self, tenant: str, lim: Limits) -> ContainerSpec:
        return ContainerSpec(
            f"{self.uid}-{tenant}", lim, self.data[tenant],
            # on the link: its port's namespace (a tenant not on it: a namespace of its own, lo alone)
            netns=self.link.ports[tenant].netns_path if self.link is not None and tenant in self.link.ports else None,
            caps=tuple(dict.fromkeys((*DEFAULT_CAPS, *self.caps.get(tenant, ())))), userns=self.userns)

    # A tenant may also come and go while the trial runs (the parallel suite's containers, from several threads):
    # `directory` first when its /data is to hold something before it starts, `add`, then `remove`; leaving the
    # block removes whatever is left of them, as of the rest.
    def directory(self, tenant: str) -> Path:
        """A tenant's data directory (its /data), made."""
        with self._lock:
            if tenant not in self.data:
                self.data[tenant] = owned.data_dir(self.uid, tenant)  # recorded once, before it is made
            d = self.data[tenant]
        d.mkdir(parents=True, exist_ok=True)
        return d

    def add(self, tenant: str, lim: Limits) -> Container:
        """A tenant more: its container, started now."""
        self.directory(tenant)
        c = self.rt.create(self._spec(tenant, lim))
        with self._lock:
            self.limits[tenant], self.c[tenant] = lim, c
        checkpoint("containers")
        return c

    def remove(self, tenant: str) -> None:
        """A tenant gone before the others: its container and data directory removed now."""
        with self._lock:
            c, d = self.c.pop(tenant, None), self.data.pop(tenant, None)
            self.limits.pop(tenant, None)
        try:
            if c is not None:
                self.rt.delete(c)
        finally:  # also when the removal raised (a cgroup still busy as its processes die)
            if d is not None:
                owned.remove_data_dir(d)

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            checkpoint("teardown")
            self.stop_sampling()
            if self.shared is not None and self.shared.memory is not None:
                try:
                    self.rt.host.cgroup(PREFIX).clear_memory_limit()
                except OSError:
                    pass  # the parent is gone already: so is its limit
            for c in self.c.values():
                self.rt.delete(c)
            if self.link is not None:
                self.link.down()  # after the containers: runsc's commands run inside their namespaces
            for d in self.data.values():
                owned.remove_data_dir(d)

    def now(self) -> float:
        return time.monotonic() - self.clock0

    def event(self, tenant: str, kind: str, detail: str, t: float | None = None) -> None:
        self.events.append((self.now() if t is None else t, tenant, kind, detail))

    def start_sampling(self, restart_clock: bool = False) -> None:
        """The samplers on; restart_clock: t = 0 is now (the trial's clock starts with its samples)."""
        if restart_clock:
            self.clock0 = time.monotonic()
        targets = [Target(t, c.cgroup, c.tracking, sync=partial(self.rt.track, c),
                          netdev=self.link.ports[t].host_dev if self.link is not None else None)
                   for t, c in self.c.items()]
        if self.cgroup:
            sampler = CgroupSampler(targets, self.period, self.clock0)
            if said := self.rt.host.count_disks(f"count-{os.getpid()}"):
                sampler.problems.append(said)
            self.samplers.append(sampler.start())
        if self.ebpf:
            self.samplers.append(BpftraceProbes(targets, self.period, self.clock0, wanted=self.ebpf).start())
        if self.device:
            self.samplers.append(DeviceSampler(self.device, self.period, self.clock0).start())
        if self.host_cpu:
            self.samplers.append(HostCpuSampler(self.period, self.clock0).start())

    def probe_facts(self) -> dict:
        """What the samplers attached to, and what they could not (and why): kept with the trial's facts."""
        return {"attached": [a for p in self.samplers for a in getattr(p, "attached", [])],
                "tracepoints": {k: v for p in self.samplers for k, v in getattr(p, "tracepoints", {}).items()},
                "missing": [why for p in self.samplers for why in p.problems]}

    def stop_sampling(self) -> list[Sample]:
        """The samples since start_sampling; the OOM kills among them become events too."""
        out: list[Sample] = []
        for s in self.samplers:
            out += s.stop()
        self.samplers = []
        self.events += oom_events(out)
        return out

    def exec(self, tenant: str, argv: list[str], **popen) -> subprocess.Popen:
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        popen.setdefault("text", True)
        return self.rt.exec(self.c[tenant], argv, **popen)

    def run(self, tenant: str, argv: list[str], timeout: float | None = 600, what: str = "",
            check: bool = True, error: type[Exception] = RuntimeFailed) -> subprocess.CompletedProcess:
        """argv inside the tenant to its end. check: a non-zero exit raises `error`, saying what exited
        and its last line."""
        p = self.rt.run(self.c[tenant], argv, timeout=timeout)
        if check and p.returncode != 0:
            raise error(failure(f"{what or argv[0]} in {tenant}", os.path.basename(argv[0]), p.returncode,
                                p.stderr or p.stdout))
        return p

    def kill(self, tenant: str, names: str) -> None:
        """Kill the processes inside the tenant whose names match the regex `names` (what an exec started:
        killing its host-side client does not end it)."""
        self.run(tenant, ["pkill", "-KILL", "-x", names], timeout=30, check=False)


def stop(procs: list[subprocess.Popen]) -> None:
    """Kill the host-side clients of commands running in a container, and wait for them."""
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        try:
            p.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            pass
