"""clean: find and remove what contend created on this host and a dead run of it left behind.

Containers of every runtime, bundles and runtime state, cgroups in every hierarchy (tracking ones
included), per-tenant data directories, network namespaces, veths and bridges, and the disk caps of a
guard that did not exit cleanly.

Candidates are found by contend's names; one is removed only if a run of contend recorded it and that run
is dead (owned.py). A live run's objects are in use (`force` removes them anyway); an object with contend's
name that no run recorded (made by hand, or by a contend from before the records) is left alone unless
`unrecorded` is asked for. Guard caps (per guard instance, guard/limiter.py), contend's engine image (by
its recorded id) and the empty `contend` cgroup roots are contend's by records of their own.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable

from .. import owned, runtimes
from ..cgroups import PREFIX, CgroupHost, detect
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
    key: owned.Key | None = None  # its record (owned.py); None: contend's by a record of its own
    owner: owned.Owner | None = None  # the run that recorded it (None: no run did)

    def __str__(self) -> str:
        return f"{self.kind} {self.name}"

    @property
    def status(self) -> str:
        """"dead": a dead run's (or contend's by its own record): clean removes it; "live": a running
        contend's; "unrecorded": contend's name, but no run recorded it."""
        if self.key is None:
            return "dead"
        if self.owner is None:
            return "unrecorded"
        return "live" if self.owner.alive else "dead"

    def why_kept(self) -> str:
        if self.status == "live":
            return f"in use by a running contend ({self.owner}; --force removes it)"
        return "no run of contend recorded it (--unrecorded removes it)"


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
        found += [Leftover(f"{rt.name} container", n, partial(rt.remove_leftover, n), ("container", n))
                  for n in names]
        if isinstance(rt, runtimes.Engine) and rt.engine_running()[0] and rt.image_exists():
            found.append(Leftover(f"{rt.name} image", runtimes.engine.IMAGE, rt.remove_image))
    roots = [r for r in host.roots() if r.is_dir()]
    names = sorted({d.name for r in roots for d in _subdirs(r)})
    found += [Leftover("cgroup", f"{PREFIX}/{n}", partial(_remove_cgroup, host, f"{PREFIX}/{n}"), ("container", n))
              for n in names]
    found += [Leftover("cgroup", str(r), partial(_rmdir, r)) for r in roots if not _subdirs(r)]  # only when empty
    # a runtime's own state goes with its container (leftovers() above); a bundle is its container's
    found += [Leftover("directory", str(d), partial(shutil.rmtree, d, True), ("container", d.name))
              for d in _subdirs(STATE / "bundles") if d.name.startswith(NAME_PREFIX)]
    found += [Leftover("directory", str(d), partial(shutil.rmtree, d, True), ("directory", d.name))
              for d in _subdirs(DATA) if d.name.startswith(NAME_PREFIX)]
    found += _netns() + _links()
    who = owned.owners()
    for item in found:
        item.owner = who.get(item.key) if item.key else None
    # caps, BFQ weights and disk schedulers of a guard that was killed (SIGKILL, a crash), settings of a killed
    # contend protect (cpu.shares, memory.high..., a veth's shaping): restore what was there
    found += [Leftover((f"protect {e['kind']}" if e["kind"] in guard_limiter.NAMED_KINDS else f"guard {e['kind']}")
                       if e else "guard cap",
                       f"{e['cgroup']} {e['device']}".strip() if e else str(f),
                       partial(guard_limiter.remove_leftover, host, f, e)) for f, e in guard_limiter.leftovers()]
    return found


def _netns() -> list[Leftover]:
    if shutil.which("ip") is None:
        return []
    p = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    names = [n for n in (line.split()[0] for line in p.stdout.splitlines() if line.strip()) if NETNS_NAME.match(n)]
    return [Leftover("network namespace", n, partial(remove_netns, n), ("netns", n)) for n in names]


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
    return [Leftover("link", n, partial(_ip_link_delete, n), ("link", n)) for n in names]


def _ip_link_delete(name: str) -> None:
    subprocess.run(["ip", "link", "delete", name], capture_output=True)


def _rmdir(d: Path) -> None:
    try:
        d.rmdir()
    except FileNotFoundError:
        pass


class StudyRunning(Exception):
    """A study holds the host lock: what clean would find is in use (str(e) is the line to print; exit 2)."""


def clean(dry_run: bool = False, say: Callable[[str], None] = print,
          only: Callable[[Leftover], bool] = lambda item: True, force: bool = False,
          unrecorded: bool = False, lock_is_ours: bool = False) -> int:
    """Remove (or with dry_run only list) what dead runs left (those `only` picks); returns how many.

    Refuses (StudyRunning) while a study holds the host lock, unless force: its containers, cgroups and
    namespaces look like a killed study's, and removing them SIGKILLs its tenants mid-trial (a study's own
    sweep before it starts holds the lock: lock_is_ours). Objects a
    live run recorded are listed as in use and kept unless force; objects no run recorded are kept unless
    unrecorded. Runs until a pass finds nothing: removing a container also removes its cgroups, so one
    pass's list can hold items already gone. Then the records of what is gone are dropped.
    """
    holder = "" if force or lock_is_ours else study_running()
    if holder:
        raise StudyRunning(f"a contend study is running on this host ({holder}): what it created is in use; "
                           "wait for it or stop it (--force removes it anyway)")
    host = detect()
    wanted = {"dead", *(["live"] if force else []), *(["unrecorded"] if unrecorded else [])}

    def find_picked() -> tuple[list[Leftover], list[Leftover]]:
        found = [x for x in find(host) if only(x)]
        return [x for x in found if x.status in wanted], [x for x in found if x.status not in wanted]
    first, kept = find_picked()
    for item in kept:
        say(f"left alone: {item}: {item.why_kept()}")
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
        items = find_picked()[0]
        if not items:
            break
    for item in items:
        say(f"still there: {item}")
    owned.prune({x.key for x in find(host) if x.key})
    return len(first)
