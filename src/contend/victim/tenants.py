"""The containers of one victim trial, watched from the host; whatever happens, nothing of them is left."""
from __future__ import annotations

import subprocess
import time
import uuid
from pathlib import Path

from .. import owned, runtimes
from ..cgroups import CgroupHost, Limits
from ..probes.base import Sample, Target
from ..probes.device import DeviceSampler
from ..probes.sampler import CgroupSampler, oom_events
from ..runtimes import Container, ContainerSpec, RuntimeError_
from ..runtimes.base import last_line, signals_deferred
from ..runtimes.security import DEFAULT_CAPS


class Tenants:
    """`with Tenants(runtime, {"a": limits, …}, host) as t:` every tenant a container with its own data
    directory on the experiment device (its /data); the cgroup counters of all (and the disk's own
    counters, given `device`) sampled every `period` s from `start_sampling()` on; events kept with the same
    clock. On leaving, the containers and their data directories (attack files included) are removed."""

    def __init__(self, runtime: str, limits: dict[str, Limits], host: CgroupHost | None = None,
                 device: str | None = None, period: float = 0.1, caps: dict[str, tuple[str, ...]] | None = None,
                 userns: bool = True):
        self.rt = runtimes.get(runtime, host)
        self.limits = limits
        self.caps = caps or {}  # capabilities a tenant's load needs beyond the defaults (runtimes/security.py)
        self.userns = userns
        self.uid = uuid.uuid4().hex[:6]
        self.c: dict[str, Container] = {}
        self.data: dict[str, Path] = {t: owned.data_dir(self.uid, t) for t in limits}
        self.device, self.period = device, period
        self.clock0 = time.monotonic()
        self.samplers: list = []
        self.events: list[tuple] = []  # (t, tenant, kind, detail)

    def __enter__(self) -> "Tenants":
        try:
            for tenant, lim in self.limits.items():
                self.data[tenant].mkdir(parents=True, exist_ok=True)
                self.c[tenant] = self.rt.create(ContainerSpec(
                    f"{self.uid}-{tenant}", lim, self.data[tenant],
                    caps=tuple(dict.fromkeys((*DEFAULT_CAPS, *self.caps.get(tenant, ())))), userns=self.userns))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        with signals_deferred():
            self.stop_sampling()
            for c in self.c.values():
                self.rt.delete(c)
            for d in self.data.values():
                owned.remove_data_dir(d)

    def now(self) -> float:
        return time.monotonic() - self.clock0

    def event(self, tenant: str, kind: str, detail: str, t: float | None = None) -> None:
        self.events.append((self.now() if t is None else t, tenant, kind, detail))

    def start_sampling(self) -> None:
        targets = [Target(t, c.cgroup, c.tracking) for t, c in self.c.items()]
        self.samplers = [CgroupSampler(targets, self.period, self.clock0).start()]
        if self.device:
            self.samplers.append(DeviceSampler(self.device, self.period, self.clock0).start())

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
            check: bool = True, error: type[Exception] = RuntimeError_) -> subprocess.CompletedProcess:
        """argv inside the tenant to its end. check: a non-zero exit raises `error`, saying what exited
        and its last line."""
        p = self.rt.run(self.c[tenant], argv, timeout=timeout)
        if check and p.returncode != 0:
            why = last_line(p.stderr or p.stdout)[:200]
            raise error(f"{what or argv[0]} in {tenant} exited {p.returncode}" + (f": {why}" if why else ""))
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
