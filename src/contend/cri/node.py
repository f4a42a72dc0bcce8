"""A Kubernetes node's runtime without the kubelet: a containerd of contend's own (Debian's package, its CRI
plugin) on its own socket and state, and pods made through the CRI as a kubelet makes them: a sandbox per pod
in the cgroup the kubelet's cgroupfs driver gives it (kubepods/<qos>/pod<uid>), its containers beside it.
For the tests and benches of the watch on a node (there is no cluster here, and no image registry: the one
image, a static pause and the mount points, is built here and imported)."""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from ..cgroups import detect
from ..paths import HOME, STATE
from ..runtimes.base import RuntimeFailed, check
from ..runtimes.rootfs import add_skeleton, host_binds
from ..tools import run_tool
from . import api_pb2 as api
from .client import Cri, CriError

IMAGE = "contend.local/node:1"  # the sandbox's image and every container's (their programs are the host's /usr)
PAUSE_SOURCE = Path(__file__).parent / "pause.c"
NAMESPACE = "k8s.io"  # containerd's namespace for the CRI's images and containers
CONFIG = """version = 2
root = "{root}"
state = "{state}"
[grpc]
  address = "{sock}"
[ttrpc]
  address = "{sock}.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{image}"
  disable_apparmor = true
  # the sandbox's oom_score_adj (-998) no lower than containerd's own: lowering it needs CAP_SYS_RESOURCE, which
  # root does not hold on every host (this VM's does not)
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{state}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{root}/no-cni"
    conf_dir = "{root}/no-cni"
"""


@dataclass
class Pod:
    id: str
    namespace: str
    name: str
    uid: str
    cgroup: str  # its cgroup parent, relative to the hierarchies' roots
    config: api.PodSandboxConfig


def pause_binary(cache: Path = HOME / "tools") -> Path:
    """The sandbox's process, compiled static once per version of its source."""
    out = cache / f"contend-pause-{hashlib.sha256(PAUSE_SOURCE.read_bytes()).hexdigest()[:12]}"
    if not out.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.tmp")
        run_tool([shutil.which("cc") or "cc", "-O2", "-static", "-o", str(tmp), str(PAUSE_SOURCE)],
                 "building the pod sandbox's pause", timeout=120)
        tmp.rename(out)
    return out


def image_archive(pause: Path) -> bytes:
    """IMAGE as a docker-archive tarball (what `ctr images import` takes): one layer of /pause, the mount points
    and the usr-merge links."""
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as tar:
        add_skeleton(tar)
        info = tarfile.TarInfo("pause")
        data = pause.read_bytes()
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
    blob = layer.getvalue()
    config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Entrypoint": ["/pause"]},
                         "rootfs": {"type": "layers", "diff_ids": [f"sha256:{hashlib.sha256(blob).hexdigest()}"]}})
    cfg_name = f"{hashlib.sha256(config.encode()).hexdigest()}.json"
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in (("layer.tar", blob), (cfg_name, config.encode()),
                           ("manifest.json", json.dumps([{"Config": cfg_name, "RepoTags": [IMAGE],
                                                          "Layers": ["layer.tar"]}]).encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def process_runs(pid: int) -> bool:
    """The process runs still (a zombie waiting for its parent to reap it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


class CriNode:
    """containerd with its CRI plugin, started for a block (`with CriNode() as node:`) and stopped after with
    every pod it made, the cgroups the pods left and its state."""

    def __init__(self, home: Path = HOME / "cri-node", state: Path = STATE / "cri-node"):
        self.home, self.state = home, state
        self.sock = state / "containerd.sock"
        self.proc: subprocess.Popen | None = None
        self.cri: Cri | None = None
        self.pods: list[Pod] = []
        self.host = detect()
        # as a kubelet keeps them: each pod's logs in pods/<ns>_<pod>_<uid>/<container>/<attempt>.log and a link to
        # each in containers/<pod>_<ns>_<container>-<id>.log (what `contend watch --pod-names logs` reads)
        self.logs = state / "logs"
        self.attempts: dict[tuple[str, str], int] = {}  # (pod id, container) -> its last attempt
        self._made: list[str] = []  # cgroups (relative) that did not exist before a pod of ours

    @property
    def endpoint(self) -> str:
        return f"unix://{self.sock}"

    def __enter__(self) -> "CriNode":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self, timeout: float = 30.0) -> None:
        if shutil.which("containerd") is None or shutil.which("ctr") is None:
            raise RuntimeFailed("containerd is not installed (make setup installs docker.io, which brings it)")
        for d in (self.home, self.state):
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        conf = self.state / "config.toml"
        conf.write_text(CONFIG.format(root=self.home / "root", state=self.state / "state", sock=self.sock,
                                      image=IMAGE))
        log = open(self.state / "containerd.log", "w")
        self.proc = subprocess.Popen(["containerd", "--config", str(conf)], stdout=log, stderr=log,
                                     start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeFailed(f"containerd exited ({self.proc.returncode}): see {self.state}/containerd.log")
            try:
                if self.sock.exists():
                    self.cri = Cri(self.endpoint, timeout=10)
                    self.cri.version()
                    break
            except CriError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeFailed(f"containerd's CRI did not answer within {timeout:g} s")
            time.sleep(0.2)
        check(["ctr", "-a", str(self.sock), "-n", NAMESPACE, "images", "import", "-"], "importing the node's image",
              input=image_archive(pause_binary()), text=False, stdin=subprocess.PIPE, timeout=120)

    def _cgroup_parent(self, qos: str, uid: str) -> str:
        parent = "kubepods" if qos == "guaranteed" else f"kubepods/{qos}"
        return f"{parent}/pod{uid}"

    def _note_cgroups(self, rel: str) -> None:
        """Remember each level of a pod's cgroup that is not there yet (it is ours to remove)."""
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            mirror = self.host.tracking(sub) if self.host.mode == "hybrid" else None
            if sub not in self._made and not (self.host.cgroup(sub).exists() or (mirror and mirror.exists())):
                self._made.append(sub)

    def run_pod(self, namespace: str, name: str, qos: str = "burstable", labels: dict[str, str] | None = None) -> Pod:
        """A pod sandbox, as a kubelet with the cgroupfs driver makes one (on the node's network: there is no
        CNI here)."""
        assert self.cri is not None and qos in ("guaranteed", "burstable", "besteffort")
        uid = str(uuid.uuid4())
        cg = self._cgroup_parent(qos, uid)
        self._note_cgroups(cg)
        # no hostname: on the node's network the pod has the node's UTS namespace
        config = api.PodSandboxConfig(
            metadata=api.PodSandboxMetadata(name=name, uid=uid, namespace=namespace, attempt=0),
            log_directory=str(self.logs / "pods" / f"{namespace}_{name}_{uid}"), labels=labels or {},
            linux=api.LinuxPodSandboxConfig(
                cgroup_parent="/" + cg,  # absolute, as the kubelet gives it (relative: below containerd's own)
                security_context=api.LinuxSandboxSecurityContext(
                    namespace_options=api.NamespaceOption(network=api.NODE),
                    seccomp=api.SecurityProfile(profile_type=api.SecurityProfile.RuntimeDefault))))
        r = self.cri.call("RunPodSandbox", api.RunPodSandboxRequest(config=config))
        pod = Pod(r.pod_sandbox_id, namespace, name, uid, cg, config)
        self.pods.append(pod)
        return pod

    def run(self, pod: Pod, name: str, command: list[str], caps: tuple[str, ...] = (),
            binds: tuple[str, ...] = (), seccomp: str = "RuntimeDefault", data: Path | None = None) -> str:
        """A container of the pod running `command` (a program of the host's /usr, bound read-only), as strict as
        runc's defaults: no capabilities (but `caps`), no new privileges, the runtime's seccomp profile, a
        read-only root; `binds`: more host paths, read-only; `seccomp`: RuntimeDefault or Unconfined; `data`: a
        host directory at /data, writable (a pod's volume on the node's disk)."""
        assert self.cri is not None
        attempt = self.attempts[(pod.id, name)] = self.attempts.get((pod.id, name), -1) + 1
        scratch = self.state / "scratch" / pod.uid / f"{name}.{attempt}"  # its /tmp and working directory
        scratch.mkdir(parents=True, mode=0o700)
        (Path(pod.config.log_directory) / name).mkdir(parents=True, exist_ok=True)
        mounts = [api.Mount(container_path=p, host_path=p, readonly=True) for p in (*host_binds(), *binds)]
        cfg = api.ContainerConfig(
            metadata=api.ContainerMetadata(name=name, attempt=attempt), image=api.ImageSpec(image=IMAGE),
            command=command, working_dir="/tmp", log_path=f"{name}/{attempt}.log",
            mounts=[*mounts, api.Mount(container_path="/tmp", host_path=str(scratch)),
                    *([api.Mount(container_path="/data", host_path=str(data))] if data is not None else [])],
            linux=api.LinuxContainerConfig(security_context=api.LinuxContainerSecurityContext(
                capabilities=api.Capability(drop_capabilities=["ALL"], add_capabilities=list(caps)),
                no_new_privs=True, readonly_rootfs=True,
                seccomp=api.SecurityProfile(profile_type=getattr(api.SecurityProfile, seccomp)))))
        cid = self.cri.call("CreateContainer", api.CreateContainerRequest(
            pod_sandbox_id=pod.id, config=cfg, sandbox_config=pod.config)).container_id
        self.cri.call("StartContainer", api.StartContainerRequest(container_id=cid))
        links = self.logs / "containers"
        links.mkdir(parents=True, exist_ok=True)
        # the kubelet cuts a link's name at 255 characters (kuberuntime's logSymlink): a long one loses its id's end
        (links / (f"{pod.name}_{pod.namespace}_{name}-{cid}"[:251] + ".log")).symlink_to(
            Path(pod.config.log_directory) / name / f"{attempt}.log")
        return cid

    def restart(self, pod: Pod, name: str, cid: str, command: list[str], **kw) -> str:
        """A container of the pod that ended, made again as the kubelet restarts one (a crash loop): the old one
        removed, the same name with the next attempt, a new id and cgroup."""
        assert self.cri is not None
        self.cri.call("StopContainer", api.StopContainerRequest(container_id=cid, timeout=0))
        self.cri.call("RemoveContainer", api.RemoveContainerRequest(container_id=cid))
        return self.run(pod, name, command, **kw)

    def log(self, pod: Pod, name: str) -> str:
        """What a container of the pod wrote last (the CRI's log format: time, stream, tag, line)."""
        try:
            attempt = self.attempts.get((pod.id, name), 0)
            return (Path(pod.config.log_directory) / name / f"{attempt}.log").read_text(errors="replace")
        except OSError:
            return ""

    def remove_pod(self, pod: Pod) -> None:
        assert self.cri is not None
        self.cri.call("StopPodSandbox", api.StopPodSandboxRequest(pod_sandbox_id=pod.id))
        self.cri.call("RemovePodSandbox", api.RemovePodSandboxRequest(pod_sandbox_id=pod.id))
        self.pods.remove(pod)
        for link in (self.logs / "containers").glob(f"{pod.name}_{pod.namespace}_*"):  # the kubelet's GC
            link.unlink(missing_ok=True)

    def shims(self) -> list[int]:
        """The shims this node's containerd started (their command line names its socket: `-address SOCK`)."""
        mine = ["-address", str(self.sock)]
        out = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                argv = (d / "cmdline").read_bytes().decode(errors="replace").split("\0")
            except OSError:
                continue
            named = any(argv[i:i + 2] == mine for i in range(len(argv)))
            if named and Path(argv[0]).name.startswith("containerd-shim"):
                out.append(int(d.name))
        return out

    def stop(self) -> None:
        """Every pod removed, containerd stopped, the cgroups its pods left removed (deepest first)."""
        if self.cri is not None:
            for pod in list(self.pods):
                try:
                    self.remove_pod(pod)
                except CriError:
                    pass
            self.cri.close()
            self.cri = None
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None
        # shims run in sessions of their own and outlive containerd: where the CRI could not remove a pod (it
        # stopped answering), its shim would wait for a containerd that is gone, for ever
        shims = self.shims()
        for pid in shims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 5
        while any(process_runs(p) for p in shims) and time.monotonic() < deadline:
            time.sleep(0.05)
        for rel in sorted(self._made, key=lambda r: -r.count("/")):
            self.host.cgroup(rel).remove()
            if self.host.mode == "hybrid" and (mirror := self.host.tracking(rel)) is not None:
                mirror.remove()  # runc made it in the unified tree too
        self._made.clear()
        # the state (sockets, the shims' bundles) is transient; the imported image stays in home for next time
        shutil.rmtree(self.state, ignore_errors=True)
