"""runc, crun and runsc: driven through their own CLIs from generated OCI bundles."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .base import (
    NAME_PREFIX,
    STATE,
    Container,
    ContainerSpec,
    Runtime,
    RuntimeFailed,
    check,
    entries,
    failure,
    in_netns,
    remember_netns,
    run_atomic,
)
from .rootfs import oci_config, write_bundle
from .security import USERNS_BASE, userns_clash

BUNDLES = STATE / "bundles"


class OciRuntime(Runtime):
    global_args: list[str] = []
    does_userns = True  # a user namespace from the config's mappings (security.py)

    @property
    def root(self) -> Path:
        return STATE / self.name

    def cli(self, *args: str) -> list[str]:
        return [self.binary, "--root", str(self.root), *self.global_args, *args]

    def cli_for(self, name: str, *args: str) -> list[str]:
        """The command for one container (runsc in a network trial runs it in the container's namespace)."""
        return self.cli(*args)

    def version(self) -> str:
        p = subprocess.run([self.binary, "--version"], capture_output=True, text=True)
        # "runc version 1.1.5", "youki version: 0.7.0"
        return p.stdout.splitlines()[0].split("version")[-1].strip(" :") if p.returncode == 0 else ""

    def bundle_dir(self, name: str) -> Path:
        return BUNDLES / name

    def _start(self, spec: ContainerSpec) -> Container:
        cg, tracking = self.cgroups_for(spec.name)
        bundle = self.bundle_dir(spec.name)
        # not in a network trial: runc 1.1.5's exec joins the user namespace first, then cannot enter the
        # network namespace contend made ("failed to setns into net namespace: operation not permitted")
        userns = spec.userns and self.does_userns and not spec.netns
        if userns and (clash := userns_clash()):
            raise RuntimeFailed(f"{self.name}: no user namespace for {spec.name}: {clash} (or set userns: false)")
        if userns and spec.data_dir is not None:
            os.chown(spec.data_dir, USERNS_BASE, USERNS_BASE)  # the container's root writes it
        write_bundle(bundle, oci_config(spec.name, spec.command, spec.limits, cg.relpath, spec.data_dir,
                                        self.config_netns(spec), spec.caps, userns))
        self.root.mkdir(parents=True, exist_ok=True)
        c = Container(spec.name, cg, tracking)
        log = bundle / "init.log"
        # the container's init inherits these fds: a pipe would keep us waiting for its EOF
        with open(log, "w") as out:
            p = run_atomic(self.cli_for(spec.name, "create", "--bundle", str(bundle), spec.name),
                           stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        if p.returncode != 0:
            raise RuntimeFailed(failure(f"{self.name} create {spec.name}", self.name, p.returncode, log.read_text()))
        self.track(c)
        check(self.cli_for(spec.name, "start", spec.name), f"{self.name} start {spec.name}")
        return c

    def config_netns(self, spec: ContainerSpec) -> str | None:
        return str(spec.netns) if spec.netns else None

    exec_args: list[str] = []

    def exec_argv(self, c: Container, argv: list[str]) -> list[str]:
        return self.cli_for(c.name, "exec", *self.exec_args, c.name, *argv)

    def leftovers(self) -> list[str]:
        names: set[str] = set()
        if self.root.is_dir():
            p = subprocess.run(self.cli("list", "-q"), capture_output=True, text=True)
            names.update(n for n in p.stdout.split() if n.startswith(NAME_PREFIX))
            names.update(self.state_owner(d.name) for d in entries(self.root) if d.name.startswith(NAME_PREFIX))
        return sorted(names)

    @staticmethod
    def state_owner(entry: str) -> str:
        """The container an entry of the runtime's root belongs to (runc/crun: a directory named after it;
        runsc: files `<id>_sandbox:<id>.state` and `.lock`)."""
        return entry.split("_sandbox:")[0]

    def state_entries(self, name: str) -> list[Path]:
        return [d for d in entries(self.root) if self.state_owner(d.name) == name]

    def _remove(self, name: str) -> None:
        subprocess.run(self.cli_for(name, "kill", name, "KILL"), capture_output=True)
        subprocess.run(self.cli_for(name, "delete", "--force", name), capture_output=True, timeout=60)
        self.forget_cgroups(name)
        for entry in self.state_entries(name):  # state left by a killed runtime (or by runsc itself)
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        shutil.rmtree(self.bundle_dir(name), ignore_errors=True)


class Runc(OciRuntime):
    name = "runc"
    binary = "runc"


class Crun(OciRuntime):
    """crun refuses a hybrid host; in a private mount namespace without the unified mount it sees pure v1."""

    name = "crun"
    binary = "crun"
    global_args = ["--cgroup-manager=cgroupfs"]
    exec_args = ["--no-new-privs", "--cwd", "/tmp"]  # crun exec does not take these from config.json
    # crun 1.8.1 in a user namespace drops nosuid and nodev from the /data bind (its mount options read
    # rw,relatime only): not traded for the namespace until that is understood (docs/security.md)
    does_userns = False

    def cli(self, *args: str) -> list[str]:
        base = super().cli(*args)
        if self.host.mode != "hybrid":
            return base
        unified = str(self.host.unified)
        return ["unshare", "-m", "--propagation", "private", "sh", "-c",
                f'umount {unified} 2>/dev/null; exec "$@"', "crun-hybrid", *base]


class Runsc(OciRuntime):
    """gVisor. The ptrace platform (KVM here is PVM and hangs); no network unless asked.

    In a network trial the sandbox runs in the tenant's namespace with --network=host (gVisor's hostinet:
    the sandbox uses the kernel's stack of that namespace). Its own netstack (--network=sandbox) cannot
    start here: Debian's runsc (2022) takes every namespace of this kernel for the root one ("cannot run
    with network enabled in root network namespace", fixed upstream). The sandbox's control socket is an
    abstract socket of that namespace, so every runsc command for the container runs inside it too.
    """

    name = "runsc"
    binary = "runsc"
    does_userns = False  # the load's uid 0 acts on gVisor's sentry, not on the host kernel (docs/security.md)
    global_args = ["--platform=ptrace"]

    def config_netns(self, spec: ContainerSpec) -> str | None:
        return "" if spec.netns else None

    def _start(self, spec: ContainerSpec) -> Container:
        remember_netns(self.bundle_dir(spec.name), spec.netns)
        return super()._start(spec)

    def cli_for(self, name: str, *args: str) -> list[str]:
        enter = in_netns(self.bundle_dir(name))
        return [*enter, *self.cli("--network=host" if enter else "--network=none", *args)]


class Youki(OciRuntime):
    """youki, the Rust OCI runtime: runc's CLI (create/start/exec/kill/delete) on its own cgroup code.

    Two findings of youki 0.7.0 on this host (docs/runtimes.md): in a user namespace it cannot mask
    /etc/ssl/private ("cannot re-open … with O_DIRECTORY": the host's 0700 directory is closed to the mapped
    root), so it runs without one, as crun does; and `youki exec` does not apply the container's seccomp
    filter (its tenant builder keeps the namespaces, cgroups path and personality of the spec, not its
    seccomp): contend's loads, exec'd, run with the capabilities, no_new_privs, masks and limits of the
    container but without the filter. tests/test_runtimes.py checks the second, to notice a fix.
    """

    name = "youki"
    binary = "youki"
    does_userns = False
    exec_args = ["--cwd", "/tmp"]  # youki exec starts in / (read-only here), not in config.json's cwd
