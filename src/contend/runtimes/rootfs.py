"""Root filesystems built offline from the host's own binaries (DESIGN §4), and OCI bundles around them.

The host is merged-usr (/bin, /lib, /lib64, /sbin are symlinks into /usr), so a rootfs is an empty directory
with mount points, read-only binds of /usr and /etc, the same four symlinks, a private /tmp and /data.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ..cgroups import Limits

RO_BINDS = ("/usr", "/etc")
USR_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
DIRS = ("usr", "etc", "tmp", "data", "proc", "dev", "sys", "run", "var")


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


# capabilities a workload needs; everything else is dropped (DESIGN §4 security defaults)
CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER", "CAP_SETUID", "CAP_SETGID", "CAP_KILL"]


def oci_resources(limits: Limits) -> dict:
    res: dict = {}
    if limits.cpu is not None:
        res["cpu"] = {"quota": int(limits.cpu * limits.cpu_period_us), "period": limits.cpu_period_us}
    if limits.memory is not None:
        res["memory"] = {"limit": limits.memory}
    if limits.pids is not None:
        res["pids"] = {"limit": limits.pids}
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


def oci_config(name: str, command: list[str], limits: Limits, cgroups_path: str,
               data_dir: Path | None, netns: str | None) -> dict:
    """An OCI config; `netns` None: an empty network namespace of its own, a path: join that one, "":
    none of its own (the runtime's caller chose the namespace)."""
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
        {"destination": "/run", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=755"]},
    ]
    for src in host_binds():
        mounts.append({"destination": src, "type": "bind", "source": src, "options": ["rbind", "ro", "nosuid", "nodev"]})
    if data_dir is not None:
        mounts.append({"destination": "/data", "type": "bind", "source": str(data_dir), "options": ["rbind", "rw"]})
    namespaces = [{"type": t} for t in ("pid", "ipc", "uts", "mount")]
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
            "capabilities": {k: CAPS for k in ("bounding", "effective", "permitted")},
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": name,
        "mounts": mounts,
        "linux": {
            "cgroupsPath": "/" + cgroups_path,
            "resources": oci_resources(limits),
            "namespaces": namespaces,
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    }


def write_bundle(bundle: Path, config: dict) -> Path:
    make_rootfs(bundle / "rootfs")
    tmp = bundle / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=1))
    os.replace(tmp, bundle / "config.json")
    return bundle
