"""LXC through lxc-execute (lxc-init as pid 1) and lxc-attach, with a config written per container."""
from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from ..cgroups import Limits
from . import base
from .base import Container, ContainerSpec, Runtime, RuntimeFailed
from .rootfs import host_binds, make_rootfs
from .security import DENIED, MASKED_PATHS, NOFILE, READONLY_PATHS, pids_limit, secrets

# every device denied but those runc allows a container (null, zero, full, tty, console, ptmx, random, urandom,
# pts), as lxc's own common.conf does; lxc otherwise leaves devices.list at `a *:* rwm` (issue 52 L1)
DEVICES = (("deny", "a"), *(("allow", f"c {d} rwm") for d in ("1:3", "1:5", "1:7", "5:0", "5:1", "5:2", "1:8",
                                                             "1:9", "136:*")))


def lxc_cgroup_keys(limits: Limits, v2: bool) -> list[tuple[str, str]]:
    """Limits as lxc.cgroup.* (v1) or lxc.cgroup2.* (v2) keys."""
    keys: list[tuple[str, str]] = [(f"devices.{k}", v) for k, v in DEVICES]
    if v2:
        if limits.cpu is not None:
            keys.append(("cpu.max", f"{int(limits.cpu * limits.cpu_period_us)} {limits.cpu_period_us}"))
        if limits.memory is not None:
            keys.append(("memory.max", str(limits.memory)))
        for lim in limits.io:
            from ..cgroups.v2 import io_max_line
            keys.append(("io.max", io_max_line(lim)))
        keys.append(("pids.max", str(pids_limit(limits.pids))))
        return [(f"lxc.cgroup2.{k}", v) for k, v in keys]
    if limits.cpu is not None:
        keys.append(("cpu.cfs_period_us", str(limits.cpu_period_us)))
        keys.append(("cpu.cfs_quota_us", str(int(limits.cpu * limits.cpu_period_us))))
    if limits.memory is not None:
        keys.append(("memory.limit_in_bytes", str(limits.memory)))
    for lim in limits.io:
        for name, val in (("read_bps", lim.rbps), ("write_bps", lim.wbps),
                          ("read_iops", lim.riops), ("write_iops", lim.wiops)):
            if val:
                keys.append((f"blkio.throttle.{name}_device", f"{lim.device} {val}"))
    keys.append(("pids.max", str(pids_limit(limits.pids))))
    return [(f"lxc.cgroup.{k}", v) for k, v in keys]


def lxc_seccomp() -> str:
    """lxc's own profile format (version 2): the fallback denials of security.py. (lxc cannot take the
    OCI profile; its syntax for argument rules differs.)"""
    return "2\ndenylist\n[all]\n" + "".join(f"{name} errno 1\n" for name in DENIED)


class Lxc(Runtime):
    name = "lxc"
    binary = "lxc-execute"

    @property
    def lxcpath(self) -> Path:
        return base.STATE / "lxc"

    def version(self) -> str:
        p = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        return p.stdout.strip()

    def config(self, spec: ContainerSpec, rootfs: Path, cg_relpath: str, seccomp_file: Path) -> str:
        lines = [
            ("lxc.uts.name", spec.name),
            ("lxc.rootfs.path", f"dir:{rootfs}"),
            ("lxc.rootfs.options", "ro"),
            ("lxc.autodev", "1"),
            ("lxc.mount.auto", "proc:mixed sys:ro"),
            # a network trial starts lxc-execute inside the tenant's namespace: "none" shares it
            ("lxc.net.0.type", "empty" if spec.netns is None else "none"),
            ("lxc.no_new_privs", "1"),
            ("lxc.cap.keep", " ".join(c.removeprefix("CAP_").lower() for c in spec.caps)),
            # no lxc.apparmor.profile: where AppArmor runs, lxc confines the container with its default
            ("lxc.seccomp.profile", str(seccomp_file)),
            ("lxc.prlimit.nofile", str(NOFILE)),
            # lxc places the payload below <hierarchy>/<dir>; monitor cgroups get their own prefix
            ("lxc.cgroup.dir.container", cg_relpath),
            ("lxc.cgroup.dir.monitor", cg_relpath + "-monitor"),
            ("lxc.cgroup.relative", "0"),
            ("lxc.mount.entry", "tmpfs tmp tmpfs rw,nosuid,nodev,mode=1777 0 0"),
            ("lxc.mount.entry", "tmpfs run tmpfs rw,nosuid,nodev,mode=755 0 0"),
        ]
        for src in host_binds():
            lines.append(("lxc.mount.entry", f"{src} {src.lstrip('/')} none ro,bind,nosuid,nodev 0 0"))
        # the host's secrets, and runc's masked paths of /proc and /sys (after lxc.mount.auto's mounts, which
        # entries follow), masked as runc masks them; runc's read-only ones bound read-only (proc:mixed covers
        # /proc/sys and /proc/sysrq-trigger; /proc/irq & co. are the host's own, not namespaced): issue 52 M3
        for p in (*secrets(), *(m for m in MASKED_PATHS if Path(m).exists())):
            lines.append(("lxc.mount.entry", f"tmpfs {p.lstrip('/')} tmpfs ro,nosuid,nodev,noexec,size=0 0 0"
                          if Path(p).is_dir() else f"/dev/null {p.lstrip('/')} none ro,bind 0 0"))
        for p in READONLY_PATHS:
            if Path(p).is_dir():
                lines.append(("lxc.mount.entry", f"{p} {p.lstrip('/')} none ro,bind,nosuid,nodev,noexec 0 0"))
        if spec.data_dir is not None:
            lines.append(("lxc.mount.entry", f"{spec.data_dir} data none rw,bind,nosuid,nodev 0 0"))
        lines += lxc_cgroup_keys(spec.limits, self.host.mode == "v2")
        lines.append(("lxc.environment", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"))
        lines.append(("lxc.environment", "HOME=/tmp"))
        return "".join(f"{k} = {v}\n" for k, v in lines)

    def _start(self, spec: ContainerSpec) -> Container:
        cg, tracking = self.cgroups_for(spec.name)
        cdir = self.lxcpath / spec.name
        cdir.mkdir(parents=True, exist_ok=True)
        rootfs = make_rootfs(cdir / "rootfs")
        (cdir / "seccomp").write_text(lxc_seccomp())
        (cdir / "config").write_text(self.config(spec, rootfs, cg.relpath, cdir / "seccomp"))
        c = Container(spec.name, cg, tracking)
        base.remember_netns(cdir, spec.netns)
        base.check(self.tool(self.binary, spec.name, "-f", str(cdir / "config"), "-o", str(cdir / "lxc.log"), "-l",
                        "ERROR", "-d", "--", *spec.command),
              f"lxc-execute {spec.name}", stdin=subprocess.DEVNULL)
        self._wait_running(spec.name)
        if tracking is not None and tracking.dir not in cg.dirs():
            # hybrid host: lxc-attach puts what it runs into <container>/.lxc of the unified tree, so that
            # leaf is the id eBPF sees; the container's init joins it too (no controllers there to mind)
            leaf = self.host.tracking(f"{tracking.relpath}/.lxc")
            assert leaf is not None  # a hybrid host has the unified tree (tracking is not None above)
            leaf.create()
            c.tracking = leaf
        self.track(c)
        return c

    def tool(self, tool: str, name: str, *args: str) -> list[str]:
        """An lxc tool for one container: inside the container's network namespace when it has one (lxc's
        command socket is an abstract socket of that namespace)."""
        return [*base.in_netns(self.lxcpath / name), tool, "-n", name, "-P", str(self.lxcpath), *args]

    def _wait_running(self, name: str, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = subprocess.run(self.tool("lxc-info", name, "-s", "-H"), capture_output=True, text=True)
            if p.stdout.strip() == "RUNNING":
                return
            time.sleep(0.1)
        log = self.lxcpath / name / "lxc.log"
        tail = base.last_line(log.read_text()) if log.exists() else ""
        raise RuntimeFailed(f"lxc {name}: not running after {timeout}s {tail}".strip())

    def exec_argv(self, c: Container, argv: list[str]) -> list[str]:
        return [*self.tool("lxc-attach", c.name, "--clear-env", "-v", "PATH=/usr/sbin:/usr/bin", "-v", "HOME=/tmp"),
                "--",
                # lxc-attach keeps the caller's cwd (or /, read-only here): start in /tmp
                "/bin/sh", "-c", 'cd /tmp && exec "$@"', "sh", *argv]

    def leftovers(self) -> list[str]:
        return [d.name for d in base.entries(self.lxcpath) if d.name.startswith(base.NAME_PREFIX)]

    def _remove(self, name: str) -> None:
        subprocess.run(self.tool("lxc-stop", name, "-k"), capture_output=True, timeout=30)
        # lxc-execute's monitor tears down on its own after the stop, racing with us: kill it (and its cgroup)
        # first, then the container's, and only then remove the files it could still write
        self.forget_cgroups(name + "-monitor")
        self.forget_cgroups(name)
        shutil.rmtree(self.lxcpath / name, ignore_errors=True)
