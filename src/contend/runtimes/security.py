"""What a contend container may do: at least as little as `runc spec`'s defaults allow (docs/security.md).

- capabilities: runc spec's three (AUDIT_WRITE, KILL, NET_BIND_SERVICE); a load that needs more says which
  (the database victim: CHOWN, SETUID, SETGID, to run its server as its own user);
- runc spec's masked and read-only paths;
- RLIMIT_NOFILE 1024 (runc spec's) and a pids limit unless the trial sets one;
- a seccomp profile: the containers/common default (podman's version of Docker's, as Debian's
  golang-github-containers-common installs it at /usr/share/containers/seccomp.json), resolved for this
  architecture and the container's capabilities, with DENIED denied outright: podman's profile allows some of
  them (mount, unshare, setns, keyctl, reboot, ...) for rootless nested containers and leaves them to the
  capability checks, where Docker's denies them. Without that file: every syscall but DENIED;
- a user namespace (runc): the container's uid 0 is host uid USERNS_BASE, so what escapes the
  container's mounts (a host file bound in, a data directory) is reached as an unprivileged host user, not
  as root. One range for every container, as Docker's userns-remap does; a study that needs its loads to be
  host root sets `userns: false`.
"""
from __future__ import annotations

import json
import platform
from pathlib import Path

DEFAULT_CAPS = ("CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE")
MASKED_PATHS = ("/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
                "/sys/devices/virtual/powercap")
# the host's /etc is bound in read-only: what of it a container's root must not read (password hashes, host
# keys), masked as runc masks its paths (a file by /dev/null, a directory by an empty read-only tmpfs)
HOST_SECRETS = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/ssh", "/etc/ssl/private",
                "/etc/sudoers", "/etc/sudoers.d")
READONLY_PATHS = ("/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger")
NOFILE = 1024
DEFAULT_PIDS = 4096  # a fork bomb in a tenant stops here, not at the host's limit

PROFILE = Path("/usr/share/containers/seccomp.json")
GO_ARCH = {"x86_64": "amd64", "aarch64": "arm64", "ppc64le": "ppc64le", "s390x": "s390x"}
# syscalls no load of contend's makes and that reach the host kernel's most dangerous paths (Docker's profile
# denies each to a container without CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_BOOT, CAP_SYS_TIME, ...)
DENIED = ("acct", "add_key", "bpf", "clock_settime", "delete_module", "finit_module", "fsconfig", "fsmount",
          "fsopen", "fspick", "init_module", "iopl", "ioperm", "kexec_file_load", "kexec_load", "keyctl",
          "lookup_dcookie", "mount", "move_mount", "name_to_handle_at", "open_by_handle_at", "open_tree",
          "perf_event_open", "pivot_root", "quotactl", "reboot", "request_key", "setns", "settimeofday",
          "swapoff", "swapon", "umount2", "unshare", "userfaultfd")


# host uids [USERNS_BASE, USERNS_BASE + USERNS_SIZE) are containers' uids 0..65535: far above any user's uid and
# any /etc/subuid range a distribution hands out (100000 + 65536 k); `userns_clash` checks this host's
USERNS_BASE = 1 << 30
USERNS_SIZE = 65536


def userns_mappings() -> dict:
    """The OCI config's uid and gid mappings."""
    m = [{"containerID": 0, "hostID": USERNS_BASE, "size": USERNS_SIZE}]
    return {"uidMappings": m, "gidMappings": m}


def userns_clash(files: tuple[str, ...] = ("/etc/passwd", "/etc/group", "/etc/subuid", "/etc/subgid")) -> str:
    """Which of this host's users, groups or subordinate id ranges overlap contend's range ('' if none): a
    container would then own that user's files."""
    top = USERNS_BASE + USERNS_SIZE
    for f in files:
        try:
            lines = Path(f).read_text().splitlines()
        except OSError:
            continue
        for n, line in enumerate(lines, 1):
            fields = line.split(":")
            try:
                lo, size = (int(fields[2]), 1) if Path(f).name in ("passwd", "group") else \
                    (int(fields[1]), int(fields[2]))
            except (IndexError, ValueError):
                continue
            if lo < top and lo + size > USERNS_BASE:
                return f"{f}:{n}: {fields[0]} overlaps host uids {USERNS_BASE}-{top - 1}"
    return ""


def secrets() -> list[str]:
    """The HOST_SECRETS this host has (a mask needs its target to exist)."""
    return [p for p in HOST_SECRETS if Path(p).exists()]


def pids_limit(pids: int | None) -> int:
    return DEFAULT_PIDS if pids is None else pids


def oci_seccomp(profile: dict, caps: set[str], arch: str) -> dict:
    """A containers/common (Docker-format) profile as the OCI runtime spec's linux.seccomp, for a container
    with `caps` on `arch` (Go's name: amd64, arm64): rules whose `includes` the container does not meet, or
    whose `excludes` it does, are left out, as Docker resolves them."""
    native = {"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64"}.get(arch, "SCMP_ARCH_" + arch.upper())
    archs = next(([a["architecture"], *a.get("subArchitectures", [])] for a in profile.get("archMap", [])
                  if a["architecture"] == native), [])
    out: dict = {"defaultAction": profile["defaultAction"], "architectures": archs, "syscalls": []}
    if "defaultErrnoRet" in profile:
        out["defaultErrnoRet"] = profile["defaultErrnoRet"]
    for rule in profile.get("syscalls", []):
        inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
        if (inc.get("arches") and arch not in inc["arches"]) or arch in (exc.get("arches") or ()):
            continue
        if not set(inc.get("caps") or ()) <= caps or set(exc.get("caps") or ()) & caps:
            continue
        if inc.get("minKernel"):  # rules for newer kernels than the profile's baseline: this host decides
            if _kernel() < tuple(int(x) for x in inc["minKernel"].split(".")[:2]):
                continue
        r = {"names": list(rule.get("names") or [rule["name"]]), "action": rule["action"]}
        if rule.get("args"):
            r["args"] = [{k: a[k] for k in ("index", "value", "valueTwo", "op") if k in a} for a in rule["args"]]
        if rule.get("errnoRet") is not None:
            r["errnoRet"] = rule["errnoRet"]
        out["syscalls"].append(r)
    return deny(out, DENIED)


def deny(profile: dict, names: tuple[str, ...]) -> dict:
    """`names` out of every other rule, and one rule that denies them (EPERM). (libseccomp refuses two rules
    with different actions for one syscall, so the others must lose them.)"""
    rules = []
    for r in profile["syscalls"]:
        r = {**r, "names": [n for n in r["names"] if n not in names]}
        if r["names"]:
            rules.append(r)
    rules.append({"names": list(names), "action": "SCMP_ACT_ERRNO", "errnoRet": 1})
    return {**profile, "syscalls": rules}


def fallback_seccomp() -> dict:
    """Without the containers/common profile: allow all but DENIED (EPERM)."""
    return deny({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []}, DENIED)


def seccomp(caps: tuple[str, ...]) -> dict:
    """The profile for a container with `caps` on this host."""
    try:
        profile = json.loads(PROFILE.read_text())
    except (OSError, ValueError):
        return fallback_seccomp()
    return oci_seccomp(profile, set(caps), GO_ARCH.get(platform.machine(), platform.machine()))


def _kernel() -> tuple[int, int]:
    major, minor = platform.release().split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)
