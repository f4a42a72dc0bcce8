"""docker / podman engines (used when one is installed and its daemon answers), and Kata through containerd.

An engine runs an image, so the offline rootfs is imported once as the image `contend/hostfs`
(`docker import` of a tarball with the mount points and usr-merge symlinks; the host's /usr and /etc are
bound read-only at run time, as for the other runtimes).
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from ..paths import HOME
from .base import NAME_PREFIX, STATE, Container, ContainerSpec, Runtime, RuntimeFailed, check, last_line
from .rootfs import add_skeleton, host_binds
from .security import NOFILE, pids_limit, secrets

IMAGE = "contend/hostfs:1"
# the ids of the images contend imported, per engine: only those are contend's to use and remove (an image of
# that name contend did not import is somebody else's), and only containers made from them are its leftovers
OWNED_IMAGES = HOME / "engine-images.json"


def rootfs_tarball() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        add_skeleton(tar)
    return buf.getvalue()


def device_node(majmin: str) -> str:
    """/dev path of a block device (engines take paths, not MAJ:MIN)."""
    for line in Path(f"/sys/dev/block/{majmin}/uevent").read_text().splitlines():
        if line.startswith("DEVNAME="):
            return "/dev/" + line.split("=", 1)[1]
    raise RuntimeFailed(f"no device node for {majmin}")


class Engine(Runtime):
    """docker or podman; `oci_runtime` picks the engine's --runtime (runc, runsc, crun...) if set."""

    no_netns = ("network trials are not run: an engine container gets the engine's own network, "
                   "not a namespace on contend's bottleneck link")

    def __init__(self, binary: str, oci_runtime: str | None = None, host=None):
        super().__init__(host)
        self.binary = binary
        self.oci_runtime = oci_runtime
        self.name = binary if oci_runtime is None else f"{binary}-{oci_runtime}"

    def version(self) -> str:
        p = subprocess.run([self.binary, "version", "--format", "{{.Server.Version}}"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() if p.returncode == 0 else ""

    def engine_running(self) -> tuple[bool, str]:
        if not self.found():
            return False, f"{self.binary} not installed"
        p = subprocess.run([self.binary, "info"], capture_output=True, text=True, timeout=15)
        if p.returncode != 0:
            start = " (start it: systemctl start docker, or contend run --start-engines)" \
                if self.binary == "docker" else ""
            return False, f"{self.binary} engine not running{start}: {last_line(p.stderr or p.stdout) or p.returncode}"
        return True, ""

    def ensure_image(self) -> None:
        if self.image_exists():
            return
        if self._image_id():
            raise RuntimeFailed(f"{self.binary}: an image {IMAGE} exists that contend did not import: remove or "
                                "retag it (contend runs only the image it made)")
        check([self.binary, "import", "-", IMAGE], f"{self.binary} import", input=rootfs_tarball(), text=False,
              stdin=subprocess.PIPE)
        self._own({*self._owned(), self._image_id()})

    def _image_id(self, ref: str = IMAGE) -> str:
        p = subprocess.run([self.binary, "image", "inspect", "--format", "{{.Id}}", ref], capture_output=True,
                           text=True, timeout=30)
        return p.stdout.strip() if p.returncode == 0 else ""

    def _owned(self) -> set[str]:
        try:
            return set(json.loads(OWNED_IMAGES.read_text()).get(self.binary, []))
        except (OSError, ValueError, AttributeError):
            return set()

    def _own(self, ids: set[str]) -> None:
        try:
            doc = json.loads(OWNED_IMAGES.read_text())
        except (OSError, ValueError):
            doc = {}
        doc = doc if isinstance(doc, dict) else {}
        doc[self.binary] = sorted(i for i in ids if i)
        OWNED_IMAGES.parent.mkdir(parents=True, exist_ok=True)
        tmp = OWNED_IMAGES.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, OWNED_IMAGES)

    def _start(self, spec: ContainerSpec) -> Container:
        self.ensure_image()
        lim = spec.limits
        args = [self.binary, "run", "-d", "--name", spec.name, "--hostname", spec.name, "--label", "contend=1",
                "--read-only",
                "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--tmpfs", "/tmp", "-w", "/tmp",
                "--cgroup-parent", "/contend"]
        args += [a for c in spec.caps for a in ("--cap-add", c.removeprefix("CAP_"))]
        args += ["--ulimit", f"nofile={NOFILE}:{NOFILE}", "--pids-limit", str(pids_limit(lim.pids))]
        if self.oci_runtime:
            args += ["--runtime", self.oci_runtime]
        if spec.netns:
            raise RuntimeFailed(f"{self.name}: {self.no_netns}")
        args += ["--network", "none"]
        if lim.cpu is not None:
            args += ["--cpus", str(lim.cpu)]
        if lim.memory is not None:
            args += ["--memory", str(lim.memory)]
        for io_lim in lim.io:
            dev = device_node(io_lim.device)
            for flag, val in (("--device-read-bps", io_lim.rbps), ("--device-write-bps", io_lim.wbps),
                              ("--device-read-iops", io_lim.riops), ("--device-write-iops", io_lim.wiops)):
                if val:
                    args += [flag, f"{dev}:{val}"]
        for src in host_binds():
            args += ["-v", f"{src}:{src}:ro"]
        for p in secrets():  # masked as runc masks them
            args += ["--tmpfs", f"{p}:ro,size=0"] if Path(p).is_dir() else ["-v", f"/dev/null:{p}:ro"]
        if spec.data_dir is not None:
            args += ["-v", f"{spec.data_dir}:/data"]
        cid = check(args + [IMAGE, *spec.command], f"{self.name} run {spec.name}").stdout.strip()
        cg, tracking = self.cgroups_for(cid)  # the engine names cgroups by container id
        c = Container(spec.name, cg, tracking)
        self.track(c)
        return c

    def exec_argv(self, c: Container, argv: list[str]) -> list[str]:
        return [self.binary, "exec", "-i", c.name, *argv]  # -i: stdin reaches the process (the load agent)

    def leftovers(self) -> list[str]:
        if not self.found() or not self.engine_running()[0]:
            return []
        p = subprocess.run([self.binary, "ps", "-a", "--filter", "label=contend=1", "--format", "{{.Names}}"],
                           capture_output=True, text=True)
        names = [n for n in p.stdout.split() if n.startswith(NAME_PREFIX)]
        owned = self._owned()
        if not names or not owned:
            return []
        # a label and a name anyone can give: contend's containers are those made from the image it imported
        p = subprocess.run([self.binary, "inspect", "--format", "{{.Name}} {{.Image}}", *names], capture_output=True,
                           text=True)
        return sorted(n.lstrip("/") for n, _, image in (line.partition(" ") for line in p.stdout.splitlines())
                      if image.strip() in owned)

    def _remove(self, name: str) -> None:
        p = subprocess.run([self.binary, "inspect", "--format", "{{.Id}}", name], capture_output=True, text=True)
        subprocess.run([self.binary, "rm", "-f", name], capture_output=True, timeout=60)
        if p.returncode == 0:
            self.forget_cgroups(p.stdout.strip())  # cgroups are named by id; contend's parents go with the last
        if not self.leftovers():
            self.remove_image()  # the last of contend's containers: leave no image behind either

    def image_exists(self) -> bool:
        """contend's own image is there (one of that name it did not import is not)."""
        return bool(self._image_id()) and self._image_id() in self._owned()

    def remove_image(self) -> None:
        """contend's own image, by id (without -f: an image another contend run's container still uses stays)."""
        if not self.image_exists():
            return
        iid = self._image_id()
        if subprocess.run([self.binary, "rmi", iid], capture_output=True, timeout=60).returncode == 0:
            self._own(self._owned() - {iid})


@contextlib.contextmanager
def docker_session(timeout: float = 30):
    """A docker engine while the block runs: the host's if one answers ("host"), else Debian's dockerd
    started here and stopped after ("started"; DESIGN §5: `--iptables=false`, no bridge: contend's containers
    have no network), or None when there is none to start or it does not come up."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None or shutil.which("docker") is None:
        yield None
        return
    if subprocess.run(["docker", "info"], capture_output=True).returncode == 0:
        yield "host"
        return
    STATE.mkdir(parents=True, exist_ok=True)  # root's own directory: not a name in /tmp anyone could take first
    log = os.fdopen(os.open(STATE / "dockerd.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w")
    proc = subprocess.Popen(["dockerd", "--iptables=false", "--ip-forward=false", "--bridge=none"],
                            stdout=log, stderr=log, start_new_session=True)
    deadline = time.monotonic() + timeout
    while subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            yield None
            return
        time.sleep(0.5)
    try:
        yield "started"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


DETECTED_ONLY = "detected only: contend has no kata driver (containerd and its shim) yet, its trials are n/a"


class Kata(Runtime):
    """Kata Containers needs containerd and its shim (containerd-shim-kata-v2); driven through `ctr`.

    Nothing of it is packaged for this host's distribution, so on most hosts this reports itself absent.
    """

    name = "kata"
    binary = "containerd-shim-kata-v2"

    def version(self) -> str:
        if not self.found():
            return ""
        p = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return p.stdout.strip().splitlines()[0] if p.stdout else ""

    def why_not(self) -> str:
        """Always a reason: contend only detects kata, even where it is installed."""
        need = [b for b in ("containerd", "ctr", self.binary) if shutil.which(b) is None]
        return (f"{DETECTED_ONLY}; " + (f"not installed here: {', '.join(need)}" if need else "installed here"))

    def _start(self, spec: ContainerSpec) -> Container:
        raise RuntimeFailed(f"kata: {self.why_not()}")

    def exec_argv(self, c: Container, argv: list[str]) -> list[str]:
        raise RuntimeFailed("kata: not available")

    def leftovers(self) -> list[str]:
        return []

    def _remove(self, name: str) -> None:
        return None
