"""What the guard protects: target selectors resolved to cgroups, again and again while it runs.

Selectors:
  cgroup:PATH        a cgroup, as a path in a hierarchy (/sys/fs/cgroup/blkio/x/y) or relative (x/y);
                     a glob (cgroup:kubepods*/*/*pod*) names every cgroup it matches, as they come and go
  docker:NAME        a docker container by name or id;  docker:label=KEY[=VALUE]  every one with the label;
                     docker:*  every running one
  podman:NAME        the same for podman
  contend            every container contend started (its cgroups below contend/)
  k8s:               every pod's containers on this Kubernetes node, named namespace/pod/container through the
                     node's CRI (contend.cri); k8s:NAMESPACE/* (or NAMESPACE/POD, a glob in each part) some of
                     them; k8s:label=KEY=VALUE those of the pods with the label. Without a CRI, k8s: names every
                     pod container by its cgroup's path, and the others name nothing
"""
from __future__ import annotations

import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..cgroups import PREFIX, CgroupHost
from ..cgroups.base import confined
from ..cri.client import Cri, PodContainer, container_id, qos_class
from ..cri.logs import PodLogs
from ..failures import Failure


class TargetError(Failure):
    """A selector that names nothing (at start) or cannot be read: str(e) is the one line to print."""


class TargetPending(TargetError):
    """A selector naming one cgroup or container that does not exist (yet): a guard started before the
    containers it protects waits for it."""


@dataclass(frozen=True)
class Resolved:
    name: str  # what logs and metrics call it
    relpath: str  # its cgroup, relative to each hierarchy's root
    weight: float = 1.0
    qos: str = ""  # a Kubernetes pod's QoS class (Guaranteed, Burstable, BestEffort)


SELECTOR = re.compile(r"^(cgroup:.+|docker:.+|podman:.+|contend|k8s:.*)$")
K8S = re.compile(r"^(|label=[^=]+=.*|[^/=]+(/[^/]+){0,2})$")  # all; label=K=V; NAMESPACE[/POD[/CONTAINER]]


def check_selector(sel: str) -> str:
    if not SELECTOR.match(sel):
        raise ValueError(f"unknown target {sel!r} (cgroup:PATH, docker:NAME, docker:label=K=V, podman:..., contend, "
                         "k8s:, k8s:NAMESPACE/*, k8s:label=K=V)")
    if sel.startswith("k8s:") and not K8S.match(sel[len("k8s:"):]):
        raise ValueError(f"target {sel!r}: k8s: takes nothing, NAMESPACE/* (NAMESPACE[/POD[/CONTAINER]], globs) or "
                         "label=KEY=VALUE")
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


def resolve(host: CgroupHost, selector: str, weight: float = 1.0, cri: Cri | PodLogs | None = None) -> list[Resolved]:
    """The cgroups a selector names now. A `cgroup:` that does not exist is an error; engine selectors
    by label, `contend` and `k8s:` may name nothing for a while. `k8s:` asks `cri` (a CriError from it is the
    caller's to say: it may name the pods by their paths instead, with cri=None)."""
    kind, _, what = selector.partition(":")
    try:
        if kind == "k8s":
            return k8s_targets(host, what, weight, cri)
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


def k8s_targets(host: CgroupHost, what: str, weight: float, cri: Cri | PodLogs | None) -> list[Resolved]:
    """The pod containers a k8s: selector names: by the CRI's names (or the kubelet's links: cri.logs), each
    matched to its cgroup by its id; without either, every one by its cgroup's path (`k8s:` alone: a selection
    needs the names)."""
    cgroups = pod_cgroups(host)
    if cri is None:
        if what:
            raise TargetError(f"k8s:{what}: no CRI runtime answers here, so pods have no names to select by")
        return [Resolved(rel, rel, weight, qos_class(rel)) for rel in sorted(cgroups.values())]
    if what.startswith("label=") and isinstance(cri, PodLogs):
        raise TargetError(f"k8s:{what}: {cri.endpoint} name pods but carry no labels (--pod-names cri)")
    out = {}
    for c in cri.running():
        cid = c.id if c.id in cgroups else _by_prefix(c.id, cgroups)
        if cid and k8s_match(what, c):
            out[cid] = Resolved(c.name, cgroups[cid], weight, qos_class(cgroups[cid]))
    return sorted(out.values(), key=lambda r: r.name)


def _by_prefix(cid: str, cgroups: dict[str, str]) -> str:
    """The one container id that starts with `cid` (a kubelet's link cut at 255 characters lost the end of its
    id), '' for none or several."""
    if len(cid) >= 64:
        return ""
    found = [k for k in cgroups if k.startswith(cid)]
    return found[0] if len(found) == 1 else ""


def k8s_match(what: str, c: PodContainer) -> bool:
    if what.startswith("label="):
        key, _, value = what[len("label="):].partition("=")
        return c.labels.get(key) == value
    want = what.split("/") if what else []
    return all(fnmatch.fnmatchcase(have, w) for have, w in zip(c.name.split("/", 2), want))


def pod_cgroups(host: CgroupHost, depth: int = 5) -> dict[str, str]:
    """Every pod container's cgroup below kubepods (either cgroup driver), by the container's id (the pods'
    sandboxes are among them: the CRI names only containers)."""
    base = io_hierarchy(host)
    out: dict[str, str] = {}
    if base is None:
        return out
    level = [e.path for e in os.scandir(base) if e.name.startswith("kubepods") and e.is_dir()]
    for _ in range(depth):
        below = []
        for d in level:
            try:
                entries = [e for e in os.scandir(d) if e.is_dir(follow_symlinks=False)]
            except OSError:  # removed while walked: a pod that ended
                continue
            for e in entries:
                if cid := container_id(e.name):
                    out[cid] = os.path.relpath(e.path, base)
                else:
                    below.append(e.path)
        level = below
    return out


def pods_token(host: CgroupHost) -> tuple:
    """Something that changes when a pod's cgroup comes or goes, read in a file or two: the number of cgroups below
    each kubepods* of the unified tree (its cgroup.stat; a pod that goes while another comes in the same moment
    is seen at the next rescan). Without a unified tree (pure v1), the container ids themselves (a walk)."""
    if host.unified is None:
        return tuple(sorted(pod_cgroups(host)))
    out = []
    for d in sorted(host.unified.glob("kubepods*")):
        try:
            stat = (d / "cgroup.stat").read_text()
        except OSError:
            continue
        out.append((d.name, next((ln.split()[1] for ln in stat.splitlines() if ln.startswith("nr_descendants ")), "")))
    return tuple(out)


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
