"""The host's cgroup layout (v1, hybrid or v2), detected once from /proc/mounts."""
from __future__ import annotations

import gzip
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .base import PREFIX, Cgroup
from .v1 import V1Cgroup, v1_hierarchies
from .v2 import V2Cgroup


@dataclass
class CgroupHost:
    """What this host's cgroups look like. mode is "v1", "hybrid" or "v2"."""

    mode: str
    v1: dict[str, Path] = field(default_factory=dict)  # controller -> hierarchy mount
    unified: Path | None = None  # cgroup2 mount (v2 root, or the hybrid's unified tree)

    def cgroup(self, relpath: str) -> Cgroup:
        """The cgroup that holds limits and kernel counters for a container."""
        if self.mode == "v2":
            assert self.unified is not None  # a v2 host's root is its unified tree
            return V2Cgroup(relpath, self.unified)
        return V1Cgroup(relpath, self.v1)

    def tracking(self, relpath: str) -> V2Cgroup | None:
        """A cgroup in the unified tree whose inode is the bpftrace `cgroup` id of its tasks.

        On v2 it is the container's own cgroup; on a hybrid host a controller-less mirror
        (as systemd keeps one); on pure v1 there is none, and eBPF attribution by cgroup is not possible.
        """
        if self.unified is None:
            return None
        return V2Cgroup(relpath, self.unified)

    def controllers(self) -> list[str]:
        if self.mode == "v2":
            assert self.unified is not None
            return (self.unified / "cgroup.controllers").read_text().split()
        return sorted(self.v1)

    def count_disks(self, name: str) -> str:
        """On a v1 or hybrid host, every disk's v1 I/O counters on (v1.count_io), from a cgroup of contend's own made
        for that alone (`name`, under contend's prefix): the containers' own are their runtime's, and until then a
        fresh host's cgroups read 0 bytes on a disk nobody has throttled (the first three runs of a guard study read
        0 MB/s for a victim writing 127: docs/results/archive.md 2026-12-02). "" when done (or nothing to do), else why
        not."""
        if self.mode not in ("v1", "hybrid"):
            return ""
        own = self.cgroup(f"{PREFIX}/{name}")
        try:
            own.create()
        except OSError as e:
            return f"could not turn the disks' I/O counters on ({e}): disk use may read 0"
        finally:
            own.remove()
        return ""

    def roots(self) -> list[Path]:
        """Every directory below which contend's cgroups live (for `contend clean`)."""
        bases = set(self.v1.values())
        if self.unified is not None:
            bases.add(self.unified)
        return sorted(b / PREFIX for b in bases)


def detect(mounts: str | None = None) -> CgroupHost:
    if mounts is None:
        mounts = Path("/proc/mounts").read_text()
    v1 = v1_hierarchies(mounts)
    unified = None
    for line in mounts.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            unified = Path(parts[1])
            break
    if not v1 and unified is not None:
        mode = "v2"
    elif v1 and unified is not None:
        mode = "hybrid"
    elif v1:
        mode = "v1"
    else:
        mode = "none"
    return CgroupHost(mode=mode, v1=v1, unified=unified)


def kernel_option(name: str, configs: Sequence[str | Path] | None = None) -> tuple[bool | None, str]:
    """Whether the running kernel was built with CONFIG_<name> (=y or =m), and the config that says so: the first
    readable of /proc/config.gz and /boot/config-<release>. (None, ""): no config to read, so cannot tell (a
    cgroup's files may still: see guard.daemon.iolatency_missing)."""
    for path in configs or ("/proc/config.gz", f"/boot/config-{os.uname().release}"):
        try:
            raw = Path(path).read_bytes()
            text = (gzip.decompress(raw) if str(path).endswith(".gz") else raw).decode(errors="replace")
        except (OSError, EOFError, gzip.BadGzipFile):
            continue
        return re.search(rf"^CONFIG_{re.escape(name)}=[ym]$", text, re.M) is not None, str(path)
    return None, ""
