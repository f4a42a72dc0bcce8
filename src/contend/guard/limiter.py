"""The guard's limiter: caps as io.max (v2) or blkio.throttle (v1) on a target's cgroup, whole disk.

Before its first cap on a (cgroup, disk) the limiter notes the throttle that was there (a user's own
`docker run --device-write-bps`, say) in a state file; releasing restores it. The state file outlives a
guard killed with SIGKILL, so `contend clean` can restore what such a guard left (`leftovers`).

Each guard's state is named by a random instance id, never by its PID (in a DaemonSet every guard is PID 1
of its pod), and a guard holds an flock on `<id>.lock` while it lives: the kernel drops it when the guard
dies however it dies, in whatever PID namespace, so a live guard is never taken for a dead one. A guard
restarted after a SIGKILL takes over its predecessor's record of what was there before any cap.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import re
import uuid
from dataclasses import asdict, fields
from pathlib import Path

from ..cgroups import CgroupHost, IoLimit, Limits
from ..hostlock import held
from ..paths import STATE
from .config import MIN_CAP

GUARD_STATE = STATE / "guard"


def cap_limit(device: str, cap: float, original: IoLimit | None) -> IoLimit:
    """A cap bounds reads and writes each; a user's own bps throttle stays if tighter, its IOPS ones stay."""
    o = original or IoLimit(device)
    c = max(MIN_CAP, int(cap))
    return IoLimit(device, rbps=min(c, o.rbps or c), wbps=min(c, o.wbps or c), riops=o.riops, wiops=o.wiops)


class Limiter:
    def __init__(self, host: CgroupHost, dry_run: bool = False, state_dir: Path | None = None,
                 hysteresis: float = 0.0):
        self.host = host
        self.dry_run = dry_run
        # a cap in force is written again only when it moves by more than this share of it: every write of a
        # throttle restarts the group's slice in the kernel (blk-throttle's tg_conf_updated)
        self.hysteresis = hysteresis
        self.state_dir = state_dir or GUARD_STATE
        self.instance = uuid.uuid4().hex
        self.state_file = self.state_dir / f"{self.instance}.json"
        self._lock: int | None = None  # the fd of <instance>.lock, held while this guard lives
        self.originals: dict[tuple[str, str], IoLimit | None] = {}  # (cgroup relpath, device) -> before
        self.caps: dict[tuple[str, str], int] = {}  # what is written now, so an unchanged cap is not rewritten

    def apply(self, relpath: str, device: str, cap: float | None) -> None:
        key = (relpath, device)
        if cap is not None and math.isnan(cap):
            return  # no decision: the cap in force stays
        if cap is None or math.isinf(cap):
            self.release(relpath, device)
            return
        if self.dry_run:
            return
        cg = self.host.cgroup(relpath)
        if key not in self.originals:
            dead = _dead_record(self.state_dir, relpath, device)
            # a guard killed before us capped this: what was there before *its* cap is the original
            self.originals[key] = dead[1] if dead else cg.io_limits().get(device)
            self._save()
            if dead:
                _forget(dead[0], relpath, device)
        lim = cap_limit(device, cap, self.originals[key])
        now = self.caps.get(key)
        if now is None or abs(lim.wbps - now) > self.hysteresis * now:
            cg.set_limits(Limits(io=(lim,)))
            self.caps[key] = lim.wbps

    def release(self, relpath: str, device: str) -> None:
        key = (relpath, device)
        self.caps.pop(key, None)
        if key not in self.originals:
            return
        restore(self.host, relpath, device, self.originals.pop(key))
        self._save()

    def release_target(self, relpath: str) -> None:
        for rel, dev in [k for k in self.originals if k[0] == relpath]:
            self.release(rel, dev)

    def release_all(self) -> None:
        for rel, dev in list(self.originals):
            try:
                self.release(rel, dev)
            except OSError:
                self.originals.pop((rel, dev), None)  # the cgroup is gone, and its caps with it
        self.caps.clear()
        self.state_file.unlink(missing_ok=True)
        if self._lock is not None:
            self.state_file.with_suffix(".lock").unlink(missing_ok=True)
            os.close(self._lock)
            self._lock = None

    def _save(self) -> None:
        if self.dry_run:
            return
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self._lock is None:
            self._lock = os.open(self.state_file.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(self._lock, fcntl.LOCK_EX)
        _write_state(self.state_file, {"instance": self.instance, "pid": os.getpid(), "caps": [
            {"cgroup": rel, "device": dev, "original": asdict(o) if o else None}
            for (rel, dev), o in self.originals.items()]})


def _write_state(path: Path, doc: dict) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)


def restore(host: CgroupHost, relpath: str, device: str, original: IoLimit | None) -> None:
    cg = host.cgroup(relpath)
    if not cg.exists():
        return
    cg.clear_io_limits(device)
    if original is not None:
        cg.set_limits(Limits(io=(original,)))


def _alive(state_file: Path) -> bool:
    """Is the guard that wrote this state running? It holds an flock on <id>.lock while it lives (a state
    from before instance ids has no lock: its guard is taken for dead)."""
    return held(state_file.with_suffix(".lock"))


DEVICE = re.compile(r"^[0-9]+:[0-9]+$")
LIMIT_FIELDS = {f.name for f in fields(IoLimit)} - {"device"}


def _entry(raw) -> dict:
    """A state entry as restore needs it, or {} when it is not one contend wrote (a traversal in its cgroup,
    a newline in its device, a value that is not a rate): such an entry is dropped, never acted on."""
    try:
        rel, dev, o = raw["cgroup"], raw["device"], raw.get("original")
        if not (isinstance(rel, str) and isinstance(dev, str) and DEVICE.match(dev)) or ".." in Path(rel).parts:
            return {}
        if o is not None and not (isinstance(o, dict) and o.get("device") == dev and set(o) - {"device"} <= LIMIT_FIELDS
                                  and all(v is None or (type(v) is int and v > 0)
                                          for k, v in o.items() if k != "device")):
            return {}
        return {"cgroup": rel.strip("/"), "device": dev, "original": o}
    except (TypeError, KeyError, AttributeError):
        return {}


def leftovers(state_dir: Path | None = None) -> list[tuple[Path, dict]]:
    """Caps of guards that are not running any more: (state file, its entry) each; ({}) for a state file
    with nothing valid to restore, which is only removed."""
    out = []
    base = state_dir or GUARD_STATE
    if not base.is_dir():
        return out
    for f in sorted(base.glob("*.json")):
        if f.is_symlink() or _alive(f):
            continue
        try:
            caps = json.loads(f.read_text()).get("caps", [])
            entries = [_entry(e) for e in caps] if isinstance(caps, list) else []
        except (OSError, ValueError, AttributeError):
            entries = []
        out += [(f, e) for e in entries if e] or [(f, {})]
    return out


def _dead_record(state_dir: Path, relpath: str, device: str) -> tuple[Path, IoLimit | None] | None:
    """The original a dead guard recorded for (cgroup, device), and its state file."""
    for f, e in leftovers(state_dir):
        if e and e["cgroup"] == relpath.strip("/") and e["device"] == device:
            return f, IoLimit(**e["original"]) if e["original"] else None
    return None


def _forget(state_file: Path, relpath: str, device: str) -> None:
    """Drop one entry from a dead guard's state (a successor took it over); the file goes with its last."""
    rest = [e for f, e in leftovers(state_file.parent)
            if f == state_file and e and (e["cgroup"], e["device"]) != (relpath.strip("/"), device)]
    if rest:
        _write_state(state_file, {"caps": rest})
    else:
        remove_leftover(None, state_file, {})


def remove_leftover(host: CgroupHost | None, state_file: Path, entry: dict) -> None:
    """Restore what one dead guard's entry recorded (an {} entry: nothing), then remove its state file."""
    if entry and host is not None:
        o = entry.get("original")
        restore(host, entry["cgroup"], entry["device"], IoLimit(**o) if o else None)
    state_file.unlink(missing_ok=True)
    state_file.with_suffix(".lock").unlink(missing_ok=True)
