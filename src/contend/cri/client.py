"""A CRI client that reads: which pods and containers run on this node, with their names (gRPC over the
runtime's unix socket, the generated `api_pb2`). A pod's cgroups are named after the container's id and the
pod's uid by either of the kubelet's cgroup drivers, so a cgroup path is matched to a container by them."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

# where containerd and CRI-O listen by default (what a kubelet's --container-runtime-endpoint names)
DEFAULT_ENDPOINTS = ("unix:///run/containerd/containerd.sock", "unix:///var/run/crio/crio.sock")
TIMEOUT_S = 2.0
ID = re.compile(r"(?:^|[-_:])([0-9a-f]{64})(?:\.scope)?$")  # a container's id at the end of its cgroup's name
POD_UID = re.compile(r"pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?$")
QOS = ("besteffort", "burstable")  # below kubepods: guaranteed pods sit directly in kubepods


class CriError(Exception):
    """No runtime answered at the endpoint: str(e) is the one line to print."""


@dataclass(frozen=True)
class PodContainer:
    """A running container of a pod, by the names Kubernetes gives them."""

    id: str
    namespace: str
    pod: str
    container: str
    pod_uid: str
    labels: dict[str, str] = field(default_factory=dict, hash=False, compare=False)  # the pod's

    @property
    def name(self) -> str:
        return f"{self.namespace}/{self.pod}/{self.container}"


def container_id(cgroup: str) -> str:
    """The container id a cgroup's path ends in ('' for none): `…/pod<uid>/<id>` (cgroupfs driver),
    `…/cri-containerd-<id>.scope` or `crio-<id>.scope` (systemd driver)."""
    m = ID.search(PurePosixPath(cgroup).name)
    return m[1] if m else ""


def qos_class(cgroup: str) -> str:
    """A pod cgroup's QoS class from where the kubelet put it: Guaranteed, Burstable or BestEffort ('' when the
    path is not below kubepods)."""
    parts = PurePosixPath(cgroup).parts
    if not parts or not parts[0].startswith("kubepods"):
        return ""
    for p in parts[1:3]:
        for q in QOS:
            if p in (q, f"kubepods-{q}.slice"):
                return {"besteffort": "BestEffort", "burstable": "Burstable"}[q]
    return "Guaranteed"


class Cri:
    """One runtime's CRI endpoint (`unix:///path`)."""

    def __init__(self, endpoint: str, timeout: float = TIMEOUT_S):
        # gRPC and the generated code are imported here, by a watch of pods only: a quarter of a second and
        # megabytes that `contend watch -t contend` does not pay
        import grpc

        from . import api_pb2
        from .api_pb2_grpc import RuntimeServiceStub
        if not endpoint.startswith("unix://"):
            raise CriError(f"--cri {endpoint!r}: must be unix:///path/to/socket")
        self.api, self.rpc_error = api_pb2, grpc.RpcError
        self.endpoint, self.timeout = endpoint, timeout
        self.channel = grpc.insecure_channel(endpoint)
        self.rt = RuntimeServiceStub(self.channel)

    def call(self, method: str, request):
        try:
            return getattr(self.rt, method)(request, timeout=self.timeout)
        except self.rpc_error as e:
            detail = e.details() if hasattr(e, "details") else str(e)  # type: ignore[attr-defined]
            raise CriError(f"CRI at {self.endpoint}: {method}: {detail}") from None

    def version(self) -> str:
        v = self.call("Version", self.api.VersionRequest())
        return f"{v.runtime_name} {v.runtime_version} (CRI {v.runtime_api_version})"

    def running(self) -> list[PodContainer]:
        """Every running container of every ready pod sandbox."""
        api = self.api
        ready = api.PodSandboxFilter(state=api.PodSandboxStateValue(state=api.SANDBOX_READY))
        pods = {p.id: p for p in self.call("ListPodSandbox", api.ListPodSandboxRequest(filter=ready)).items}
        running = api.ContainerFilter(state=api.ContainerStateValue(state=api.CONTAINER_RUNNING))
        out = []
        for c in self.call("ListContainers", api.ListContainersRequest(filter=running)).containers:
            pod = pods.get(c.pod_sandbox_id)
            if pod is None:
                continue
            out.append(PodContainer(c.id, pod.metadata.namespace, pod.metadata.name, c.metadata.name,
                                    pod.metadata.uid, dict(pod.labels)))
        return out

    def close(self) -> None:
        self.channel.close()


def connect(endpoints: tuple[str, ...] | list[str] = DEFAULT_ENDPOINTS) -> Cri:
    """The first endpoint whose runtime answers; CriError naming each that did not."""
    why = []
    for e in endpoints:
        cri = Cri(e)
        try:
            cri.version()
            return cri
        except CriError as err:
            cri.close()
            why.append(str(err))
    raise CriError("no CRI runtime answered: " + "; ".join(why))
