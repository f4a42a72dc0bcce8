"""clean: find and remove everything contend ever created on this host, by its prefix.

Containers of every runtime, bundles and runtime state, cgroups in every hierarchy (tracking ones
included), per-tenant data directories, network namespaces, veths and bridges, and the disk caps of a
guard that did not exit cleanly.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from .. import runtimes
from ..cgroups import PREFIX, CgroupHost, detect, remove_tree
from ..guard import limiter as guard_limiter
from ..hostlock import study_running
from ..network import remove_netns
from ..paths import DATA, STATE
from ..runtimes import NAME_PREFIX

LINK_PREFIX = "contend"  # interface names are at most 15 characters: contend + 8
# the exact shapes network/ gives its names (a bridge, a sink port, a tenant's port and its peer: contend,
# a letter, the link's 6 hex digits; a namespace: contend-, the trial's hex uid, a tenant): a link or a
# namespace that merely starts with "contend" is somebody else's
LINK_NAME = re.compile(r"^contend[a-z][0-9a-f]{6}$")
NETNS_NAME = re.compile(r"^contend-[0-9a-f]{6,32}-[a-z][a-z0-9-]{0,30}$")


@dataclass
class Leftover:
    kind: str
    name: str
    remove: Callable[[], None]

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"


def _subdirs(d: Path) -> list[Path]:
    """Directories in d; [] when d (or one of them) vanishes meanwhile (a runtime finishing its teardown)."""
    try:
        return sorted(p for p in d.iterdir() if p.is_dir())
    except OSError:
        return []


def _remove_cgroup(host: CgroupHost, relpath: str) -> None:
    """A container's cgroup in every hierarchy, its tracking cgroup included: processes killed, dirs gone."""
    for g in (host.cgroup(relpath), host.tracking(relpath)):
        if g is not None:
            g.remove()


def find(host: CgroupHost | None = None) -> list[Leftover]:
    host = host or detect()
    found: list[Leftover] = []
    for rt in runtimes.all_runtimes(host):
        try:
            names = rt.leftovers()
        except (OSError, subprocess.SubprocessError):
            continue
        found += [Leftover(f"{rt.name} container", n, partial(rt.remove_leftover, n)) for n in names]
        if isinstance(rt, runtimes.Engine) and rt.engine_running()[0] and rt.image_exists():
            found.append(Leftover(f"{rt.name} image", runtimes.engine.IMAGE, rt.remove_image))
    roots = [r for r in host.roots() if r.is_dir()]
    names = sorted({d.name for r in roots for d in _subdirs(r)})
    found += [Leftover("cgroup", f"{PREFIX}/{n}", partial(_remove_cgroup, host, f"{PREFIX}/{n}")) for n in names]
    found += [Leftover("cgroup", str(r), partial(remove_tree, r)) for r in roots]
    for base in (STATE / "bundles", DATA):  # a runtime's own state: its leftovers() above
        found += [Leftover("directory", str(d), partial(shutil.rmtree, d, True))
                  for d in _subdirs(base) if d.name.startswith(NAME_PREFIX)]
    found += _netns() + _links()
    # caps of a guard that was killed (SIGKILL, a crash): restore what was there before them
    found += [Leftover("guard cap", f"{e['cgroup']} {e['device']}" if e else str(f),
                       partial(guard_limiter.remove_leftover, host, f, e)) for f, e in guard_limiter.leftovers()]
    return found


def _netns() -> list[Leftover]:
    if shutil.which("ip") is None:
        return []
    p = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    names = [n for n in (line.split()[0] for line in p.stdout.splitlines() if line.strip()) if NETNS_NAME.match(n)]
    return [Leftover("network namespace", n, partial(remove_netns, n)) for n in names]


def _links() -> list[Leftover]:
    if shutil.which("ip") is None:
        return []
    p = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    names = []
    for line in p.stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            name = parts[1].strip().split("@")[0]
            if LINK_NAME.match(name):
                names.append(name)
    return [Leftover("link", n, partial(subprocess.run, ["ip", "link", "delete", n], capture_output=True))
            for n in names]


class StudyRunning(Exception):
    """A study holds the host lock: what clean would find is in use (str(e) is the line to print; exit 2)."""


def clean(dry_run: bool = False, say: Callable[[str], None] = print,
          only: Callable[[Leftover], bool] = lambda item: True, force: bool = False) -> int:
    """Remove (or with dry_run only list) every leftover (those `only` picks); returns how many there were.

    Refuses (StudyRunning) while a study holds the host lock, unless force: its containers, cgroups and
    namespaces look like a killed study's, and removing them SIGKILLs its tenants mid-trial.
    Runs until a pass finds nothing: removing a container also removes its cgroups, so one pass's
    list can hold items already gone.
    """
    holder = "" if force else study_running()
    if holder:
        raise StudyRunning(f"a contend study is running on this host ({holder}): what it created is in use; "
                           "wait for it or stop it (--force removes it anyway)")
    host = detect()

    def find_picked() -> list[Leftover]:
        return [x for x in find(host) if only(x)]
    first = find_picked()
    if dry_run:
        for item in first:
            say(f"would remove {item}")
        return len(first)
    items = first
    for _ in range(3):
        for item in items:
            if item.kind == "directory" and not Path(item.name).exists():
                continue  # went with its container
            say(f"removing {item}")
            try:
                item.remove()
            except OSError as e:
                say(f"  could not: {e}")
        items = find_picked()
        if not items:
            break
    for item in items:
        say(f"still there: {item}")
    return len(first)
