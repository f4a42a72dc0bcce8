"""Runtimes: runc, crun, runsc, lxc, docker/podman engines and kata behind one interface."""
from __future__ import annotations

import uuid
from collections.abc import Callable

from ..cgroups import CgroupHost
from .base import (
    Availability,
    ContainerSpec,
    Runtime,
    RuntimeFailed,
    failure,
    signals_deferred,
)
from .builds import BUILDS, built, why_not_built
from .engine import Engine, Kata
from .lxc import Lxc
from .oci import Crun, OciRuntime, Runc, Runsc, Youki

KNOWN = ("runc", "crun", "runsc", "lxc", "kata", "docker", "podman", *BUILDS)
# (each a concrete adapter; typed by what get() calls: its host)
SIMPLE: dict[str, Callable[[CgroupHost | None], Runtime]] = {"runc": Runc, "crun": Crun, "runsc": Runsc,
                                                             "lxc": Lxc, "kata": Kata}
# a built release's adapter (youki: only contend's own build)
ADAPTERS: dict[str, Callable[[CgroupHost | None], OciRuntime]] = {"runc": Runc, "crun": Crun, "runsc": Runsc,
                                                                   "youki": Youki}


def get(name: str, host: CgroupHost | None = None) -> Runtime:
    """A runtime by name; docker/podman take an OCI runtime after a dash (docker-runsc); a built release has
    its version after an at sign (runc@1.5.2: the runc adapter driving contend's own build)."""
    if name in SIMPLE:
        return SIMPLE[name](host)
    if name in BUILDS:
        b = BUILDS[name]
        rt = ADAPTERS[b.base](host)
        rt.name, rt.binary = name, str(b.binary)  # its own state root (STATE/name) and its own binary
        if b.args:
            rt.global_args = list(b.args)
        return rt
    engine, _, oci = name.partition("-")
    if engine in ("docker", "podman"):
        return Engine(engine, oci or None, host)
    raise KeyError(name)


def all_runtimes(host: CgroupHost | None = None) -> list[Runtime]:
    return [get(n, host) for n in KNOWN]


def availability(rt: Runtime, try_run: bool = True) -> Availability:
    """Is the runtime there, which version, and does it really run a container here (and if not, why)."""
    a = Availability(rt.name, rt.found(), rt.version() if rt.found() else "")
    if rt.name in BUILDS and not built(BUILDS[rt.name]):
        a.found, a.runs, a.reason = False, False, why_not_built(BUILDS[rt.name])
        return a
    if isinstance(rt, Kata):
        a.runs, a.reason = False, rt.why_not()
        return a
    if isinstance(rt, Engine):
        ok, why = rt.engine_running()
        if not ok:
            a.runs, a.reason = False, why
            return a
    if not a.found:
        a.runs, a.reason = False, f"{rt.binary} not installed"
        return a
    if not try_run:
        return a
    spec = ContainerSpec(f"doctor-{rt.name}-{uuid.uuid4().hex[:6]}")
    try:
        c = rt.create(spec)
        p = rt.run(c, ["/usr/bin/true"], timeout=30)
        a.runs = p.returncode == 0
        a.reason = "" if a.runs else failure(f"{rt.name} exec in {spec.name}", rt.name, p.returncode, p.stderr)
    except (RuntimeFailed, OSError) as e:
        a.runs, a.reason = False, str(e)[:300]
    finally:
        with signals_deferred():
            rt.remove_leftover(spec.name)
    return a
