"""What the guard protects: target selectors resolved to cgroups, again and again while it runs.

Selectors:
  cgroup:PATH        a cgroup, as a path in a hierarchy (/sys/fs/cgroup/blkio/x/y) or relative (x/y);
                     a glob (cgroup:kubepods*/*/*pod*) names every cgroup it matches, as they come and go
  docker:NAME        a docker container by name or id;  docker:label=KEY[=VALUE]  every one with the label;
                     docker:*  every running one
  podman:NAME        the same for podman
  contend            every container contend started (its cgroups below contend/)
"""
from __future__ import annotations

import glob
import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..cgroups import PREFIX, CgroupHost
from ..cgroups.base import confined


class TargetError(Exception):
    """A selector that names nothing (at start) or cannot be read: str(e) is the one line to print."""


class TargetPending(TargetError):
    """A selector naming one cgroup or container that does not exist (yet): a guard started before the
    containers it protects waits for it."""


@dataclass(frozen=True)
class Resolved:
    name: str  # what logs and metrics call it
    relpath: str  # its cgroup, relative to each hierarchy's root
    weight: float = 1.0


SELECTOR = re.compile(r"^(cgroup:.+|docker:.+|podman:.+|contend)$")


def check_selector(sel: str) -> str:
    if not SELECTOR.match(sel):
        raise ValueError(f"unknown target {sel!r} (cgroup:PATH, docker:NAME, docker:label=K=V, podman:..., contend)")
    if sel.startswith("cgroup:") and ".." in Path(sel[len("cgroup:"):].strip()).parts:
        raise ValueError(f"target {sel!r}: must stay inside the cgroup hierarchy (no '..')")
    return sel


def cgroup_relpath(host: CgroupHost, path: str) -> str:
    """A cgroup given as a path in any hierarchy, or relative to the roots, as a relpath."""
    p = path.strip()
    mounts = [*host.v1.values(), *([host.unified] if host.unified else [])]
    for m in sorted(mounts, key=lambda m: -len(str(m))):
        if p == str(m) or p.startswith(str(m) + "/"):
            return confined(p[len(str(m)):])
    return confined(p)


def pid_relpath(host: CgroupHost, pid: int) -> str:
    """The cgroup a process lives in: the blkio hierarchy's on v1/hybrid, the unified one on v2."""
    want = "blkio" if host.mode != "v2" else ""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if (want and want in controllers.split(",")) or (not want and controllers == ""):
            return path.strip("/")
    raise TargetError(f"process {pid} has no {want or 'unified'} cgroup")


def _engine(binary: str, what: str) -> list[tuple[str, int]]:
    """(name, pid) of the engine's running containers a selector names."""
    if shutil.which(binary) is None:
        raise TargetError(f"{binary}:{what}: {binary} is not installed")
    if what.startswith("label=") or what == "*":
        p = subprocess.run([binary, "ps", "-q", *(["--filter", what] if what != "*" else [])], capture_output=True,
                           text=True, timeout=15)
        if p.returncode != 0:
            raise TargetError(f"{binary}:{what}: {p.stderr.strip() or 'engine not answering'}")
        ids = p.stdout.split()
    else:
        ids = [what]
    if not ids:
        return []
    p = subprocess.run([binary, "inspect", *ids], capture_output=True, text=True, timeout=15)
    if p.returncode != 0 and not (what.startswith("label=") or what == "*"):
        raise TargetPending(f"{binary}:{what}: no such container")
    try:
        docs = json.loads(p.stdout or "[]")
    except json.JSONDecodeError:
        return []
    return [(d["Name"].lstrip("/"), int(d["State"]["Pid"])) for d in docs if d.get("State", {}).get("Pid")]


def resolve(host: CgroupHost, selector: str, weight: float = 1.0) -> list[Resolved]:
    """The cgroups a selector names now. A `cgroup:` that does not exist is an error; engine selectors
    by label, and `contend`, may name nothing for a while."""
    kind, _, what = selector.partition(":")
    try:
        return _resolve(host, kind, what, selector, weight)
    except ValueError as e:  # a path that would leave the hierarchy
        raise TargetError(str(e)) from None
    except (OSError, subprocess.TimeoutExpired) as e:  # the engine hung, or a cgroup file vanished
        raise TargetError(f"{selector}: {e}") from None


def _resolve(host: CgroupHost, kind: str, what: str, selector: str, weight: float) -> list[Resolved]:
    if kind == "cgroup" and glob.has_magic(what):
        return [Resolved(rel, rel, weight) for rel in glob_cgroups(host, cgroup_relpath(host, what))]
    if kind == "cgroup":
        rel = cgroup_relpath(host, what)
        if not rel or not host.cgroup(rel).exists():
            raise TargetPending(f"cgroup:{what}: no such cgroup")
        return [Resolved(rel, rel, weight)]
    if kind in ("docker", "podman"):
        out = []
        for name, pid in _engine(kind, what):
            try:
                out.append(Resolved(name, pid_relpath(host, pid), weight))
            except (OSError, TargetError):
                continue  # exited meanwhile
        if not out and not (what.startswith("label=") or what == "*"):
            raise TargetPending(f"{selector}: not running")
        return out
    if kind == "contend":
        return [Resolved(rel.split("/")[-1], rel, weight) for rel in contend_cgroups(host)]
    raise TargetError(f"unknown target {selector!r}")


def glob_cgroups(host: CgroupHost, pattern: str) -> list[str]:
    """The cgroups a glob matches now (relative paths), in the hierarchy that throttles I/O."""
    base = io_hierarchy(host)
    if base is None:
        return []
    return sorted(str(d.relative_to(base)) for d in base.glob(pattern) if d.is_dir())


def io_hierarchy(host: CgroupHost) -> Path | None:
    """Where I/O caps are set: blkio on v1 and hybrid hosts, the unified tree on v2."""
    return host.v1.get("blkio") if host.mode != "v2" else host.unified


def contend_cgroups(host: CgroupHost) -> list[str]:
    """Container cgroups below contend/ in the hierarchy that throttles I/O (not the tracking ones)."""
    base = io_hierarchy(host)
    if base is None or not (base / PREFIX).is_dir():
        return []
    return sorted(f"{PREFIX}/{d.name}" for d in (base / PREFIX).iterdir() if d.is_dir())
