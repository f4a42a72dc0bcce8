"""Root filesystems built offline from the host's own binaries (DESIGN §4), and OCI bundles around them.

The host is merged-usr (/bin, /lib, /lib64, /sbin are symlinks into /usr), so a rootfs is an empty directory
with mount points, read-only binds of /usr and /etc, the same four symlinks, a private /tmp and /data.
"""
from __future__ import annotations

import json
import os
import tarfile
from pathlib import Path

from ..cgroups import Limits
from ..paths import STATE
from .security import DEFAULT_CAPS, MASKED_PATHS, NOFILE, READONLY_PATHS, pids_limit, seccomp, secrets, userns_mappings

RO_BINDS = ("/usr", "/etc")
USR_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
DIRS = ("usr", "etc", "tmp", "data", "proc", "dev", "sys", "run", "var")


def add_skeleton(tar: tarfile.TarFile) -> None:
    """The rootfs's mount points and usr-merge links into an image layer (an engine's image, the CRI node's)."""
    for d in DIRS:
        info = tarfile.TarInfo(d)
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
    for name, target in USR_LINKS.items():
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.SYMTYPE, target
        tar.addfile(info)


def make_rootfs(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for d in DIRS:
        (root / d).mkdir(exist_ok=True)
    for name, target in USR_LINKS.items():
        link = root / name
        if Path("/" + name).is_symlink() and not link.is_symlink():
            link.symlink_to(target)
        elif not Path("/" + name).is_symlink():
            link.mkdir(exist_ok=True)  # not merged-usr: bind the real directory
    return root


def host_binds() -> list[str]:
    binds = list(RO_BINDS)
    for name in USR_LINKS:
        if not Path("/" + name).is_symlink() and Path("/" + name).is_dir():
            binds.append("/" + name)
    return binds


def oci_resources(limits: Limits) -> dict:
    res: dict = {}
    if limits.cpu is not None:
        res["cpu"] = {"quota": int(limits.cpu * limits.cpu_period_us), "period": limits.cpu_period_us}
    if limits.memory is not None:
        res["memory"] = {"limit": limits.memory}
    res["pids"] = {"limit": pids_limit(limits.pids)}
    # every device denied, as `runc spec` writes it; the runtime adds back the few a container needs (/dev/null,
    # zero, full, random, urandom, tty, pts). Without it crun and youki on v1 left `a *:* rwm` (issue 52 L1)
    res["devices"] = [{"allow": False, "access": "rwm"}]
    io: dict = {}
    for lim in limits.io:
        major, minor = (int(x) for x in lim.device.split(":"))
        for key, val in (("throttleReadBpsDevice", lim.rbps), ("throttleWriteBpsDevice", lim.wbps),
                         ("throttleReadIOPSDevice", lim.riops), ("throttleWriteIOPSDevice", lim.wiops)):
            if val:
                io.setdefault(key, []).append({"major": major, "minor": minor, "rate": val})
    if io:
        res["blockIO"] = io
    return res


def secret_masks() -> list[dict]:
    """HOST_SECRETS hidden by mounts of the config's own (gVisor ignores maskedPaths): a file by an empty
    read-only file of contend's, a directory by an empty read-only tmpfs."""
    out = []
    for p in secrets():
        if Path(p).is_dir():
            out.append({"destination": p, "type": "tmpfs", "source": "tmpfs",
                        "options": ["ro", "nosuid", "nodev", "noexec", "size=0"]})
        else:
            out.append({"destination": p, "type": "bind", "source": str(empty_file()), "options": ["bind", "ro"]})
    return out


def empty_file() -> Path:
    f = STATE / "empty"
    if not f.is_file() or f.stat().st_size:
        STATE.mkdir(parents=True, exist_ok=True)
        tmp = STATE / f"empty.{os.getpid()}"
        tmp.write_bytes(b"")
        tmp.chmod(0o444)
        os.replace(tmp, f)
    return f


def oci_config(name: str, command: list[str], limits: Limits, cgroups_path: str,
               data_dir: Path | None, netns: str | None, caps: tuple[str, ...] = DEFAULT_CAPS,
               userns: bool = False) -> dict:
    """An OCI config, as strict as `runc spec`'s (runtimes/security.py); `netns` None: an empty network
    namespace of its own, a path: join that one, "": none of its own (the runtime's caller chose it);
    `userns`: in a user namespace of its own, its root an unprivileged host uid."""
    if userns and netns:  # sysfs is mounted only by the user namespace owning the network namespace
        raise ValueError("a container in a user namespace of its own cannot join a network namespace")
    sysfs = {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]}
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        sysfs,
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
        {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=755"]},
    ]
    for src in host_binds():
        mounts.append({"destination": src, "type": "bind", "source": src,
                       "options": ["rbind", "ro", "nosuid", "nodev"]})
    mounts += secret_masks()
    if data_dir is not None:
        mounts.append({"destination": "/data", "type": "bind", "source": str(data_dir),
                       "options": ["rbind", "rw", "nosuid", "nodev"]})
    namespaces = [{"type": t} for t in ("pid", "ipc", "uts", "mount", *(("user",) if userns else ()))]
    if netns is None:
        namespaces.append({"type": "network"})
    elif netns:
        namespaces.append({"type": "network", "path": netns})
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": 0, "gid": 0},
            "args": command,
            "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/tmp",
                    "LANG=C.UTF-8"],
            "cwd": "/tmp",
            "capabilities": {k: list(caps) for k in ("bounding", "effective", "permitted")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": NOFILE, "soft": NOFILE}],
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": name,
        "mounts": mounts,
        "linux": {
            "cgroupsPath": "/" + cgroups_path,
            "resources": oci_resources(limits),
            "namespaces": namespaces,
            "maskedPaths": list(MASKED_PATHS),
            "readonlyPaths": list(READONLY_PATHS),
            "seccomp": seccomp(caps),
            **(userns_mappings() if userns else {}),
        },
    }


def write_bundle(bundle: Path, config: dict) -> Path:
    make_rootfs(bundle / "rootfs")
    tmp = bundle / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=1))
    os.replace(tmp, bundle / "config.json")
    return bundle
