"""Pods named without the CRI's socket: the kubelet's links in /var/log/containers.

For every container it starts, the kubelet makes `/var/log/containers/<pod>_<namespace>_<container>-<id>.log`, a
link to `/var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart>.log` (kuberuntime's legacyLogSymlink; the name
cut at 255 characters, so a long one may lose the end of the id). Their names and targets (readlink, never
followed) say which container id is which namespace/pod/container, read from a directory any user may list.

The CRI's socket names pods too, but whoever may connect(2) to it may RunPodSandbox a privileged pod with the
node's / mounted: a read-only mount of a socket does not stop connect, which needs write permission on the file
only (issue 95 M1). The links need nothing but a read-only mount of one directory; what they lack is the pods'
labels, so `k8s:label=K=V` needs the socket (`--pod-names cri`).
"""
from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

from .client import CriError, PodContainer

KUBELET_LINKS = "/var/log/containers"
# <pod>_<namespace>_<container>-<id>.log: pod names are DNS subdomains, namespaces and containers DNS labels, so
# none holds `_`; the id is 64 hex digits, or fewer where the kubelet cut the name at 255 characters
LINK = re.compile(r"(?P<pod>[^_/]+)_(?P<ns>[^_/]+)_(?P<ctr>[^_/]+)-(?P<id>[0-9a-f]{1,64})\.log\Z")
TARGET = re.compile(r"(?P<ns>[^_/]+)_(?P<pod>[^_/]+)_(?P<uid>[0-9a-f-]{36})\Z")


def from_link(name: str, target: str) -> PodContainer | None:
    """One link's container (pure): its id (maybe a prefix) from the link's name; namespace, pod, uid and
    container from its target where that has the kubelet's shape (a name cut at 255 characters lost its end),
    else from the name. None for anything else."""
    m = LINK.match(name)
    if m is None:
        return None
    ns, pod, ctr, uid = m["ns"], m["pod"], m["ctr"], ""
    t = PurePosixPath(target)
    if len(t.parts) >= 3 and (where := TARGET.match(t.parent.parent.name)):
        ns, pod, uid, ctr = where["ns"], where["pod"], where["uid"], t.parent.name
    return PodContainer(m["id"], ns, pod, ctr, uid)


class PodLogs:
    """The kubelet's links as a source of pod names, with the reading half of `Cri`'s interface."""

    def __init__(self, directory: str = KUBELET_LINKS):
        self.directory = directory
        self.endpoint = f"the kubelet's links in {directory}"

    def version(self) -> str:
        return "no socket, no labels"

    def running(self) -> list[PodContainer]:
        """Every container the links name (also some that ended: only those with a cgroup are watched)."""
        out = []
        try:
            entries = list(os.scandir(self.directory))
        except OSError as err:
            raise CriError(f"{self.directory}: {err.strerror or err}") from None
        for link in entries:
            try:
                target = os.readlink(link.path)
            except OSError:  # not a link (or gone meanwhile): the name alone
                target = ""
            c = from_link(link.name, target)
            if c is not None:
                out.append(c)
        return out

    def close(self) -> None:
        pass
