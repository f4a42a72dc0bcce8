"""The guard's limiter: caps as io.max (v2) or blkio.throttle (v1) on a target's cgroup, whole disk; BFQ weights
(io.bfq.weight, blkio.bfq.weight_device) per disk, with the disk's scheduler switched to BFQ for them.

Before its first cap on a (cgroup, disk) the limiter notes the throttle that was there (a user's own
`docker run --device-write-bps`, say) in a state file; releasing restores it. Weights and a disk's scheduler
are noted and restored the same way. The state file outlives a guard killed with SIGKILL, so `contend clean`
can restore what such a guard left (`leftovers`): caps and weights first, the scheduler last.

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
from ..cgroups.base import WEIGHT_MAX, write
from ..diskuse import MIN_CAP, cap_ios
from ..failures import Failure
from ..hostlock import held
from ..network.shape import IFB_NAME, IFNAME, new_ifb, unshape
from ..network.shape import shape as shape_dev
from ..paths import STATE
from . import scheduler

GUARD_STATE = STATE / "guard"


def cap_limit(device: str, cap: float, original: IoLimit | None, io_bytes: float = 0.0) -> IoLimit:
    """A cap (in cost bytes/s: config.io_bytes) bounds reads and writes each, in bytes/s and, with io_bytes, in
    IOs/s: as many of the smallest I/O as the cap pays for. A user's own throttle stays where it is tighter."""
    o = original or IoLimit(device)
    c, n = max(MIN_CAP, int(cap)), cap_ios(cap, io_bytes)
    return IoLimit(device, rbps=min(c, o.rbps or c), wbps=min(c, o.wbps or c), riops=_tighter(n, o.riops),
                   wiops=_tighter(n, o.wiops))


def _tighter(a: int | None, b: int | None) -> int | None:
    return min(a, b) if a and b else a or b


# what a guard may change, in the order it is put back: a cgroup's caps and weights before a disk's scheduler
# (BFQ's weights go with it) and io.cost; each with the key of its list in the state file
KINDS = {"cap": "caps", "weight": "weights", "cost-weight": "cost_weights", "latency-target": "latency_targets",
         "setting": "settings", "shape": "shapes", "scheduler": "schedulers", "iocost": "iocost"}
DISK_KINDS = ("scheduler", "iocost")  # a disk's, not a cgroup's
CGROUP_KINDS = tuple(k for k in KINDS if k not in DISK_KINDS)
# a weight's kind -> the mechanism that reads it (io.latency's "weight": its target, µs)
MECHANISM = {"weight": "bfq", "cost-weight": "cost", "latency-target": "latency"}
KIND_OF = {m: k for k, m in MECHANISM.items()}
# contend protect's settings on a culprit's (or a victim's) cgroup: one control file each, its text as it was put
# back as it was (a "setting" entry's device is the file's name)
SETTINGS = ("cpu.weight", "cpu.shares", "cpu.max", "cpu.cfs_quota_us", "memory.high", "memory.limit_in_bytes",
            "memory.soft_limit_in_bytes", "memory.low")
SETTING_VALUE = re.compile(r"^(max|-1|[0-9]{1,20})( [0-9]{1,10})?$")
# contend protect's network holds: a "shape" entry's device is the culprit's veth (its host side), its original
# the IFB contend made for it (network/shape.py): putting it back deletes what shaping added, nothing was there
NAMED_KINDS = ("setting", "shape")  # kinds whose "device" is a name, not a disk's major:minor


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
        # per kind, (cgroup relpath or "" for a disk's, device) -> what was there before this guard changed it
        self.held: dict[str, dict[tuple[str, str], object]] = {k: {} for k in KINDS}
        self.originals = self.held["cap"]
        # what is written now (bytes/s) and the cap it was written for, so an unchanged cap is not rewritten
        self.caps: dict[tuple[str, str], tuple[int, float]] = {}
        self.weights: dict[tuple[str, str], int | None] = {}  # the weights written now

    def apply(self, relpath: str, device: str, cap: float | None, io_bytes: float = 0.0) -> float | None:
        """Cap a cgroup's use of a disk at `cap` (cost bytes/s; None or inf: no cap, nan: no decision). Returns the
        cap in force after it: with a hysteresis, a cap that moved less than it leaves the one written before."""
        key = (relpath, device)
        if cap is not None and math.isnan(cap):
            return self.caps[key][1] if key in self.caps else None  # no decision: the cap in force stays
        if cap is None or math.isinf(cap):
            self.release(relpath, device)
            return cap
        if self.dry_run:
            return cap
        cg = self.host.cgroup(relpath)
        if key not in self.originals:
            self._take_over("cap", relpath, device, lambda: cg.io_limits().get(device))
        lim = cap_limit(device, cap, self.originals[key], io_bytes)  # type: ignore[arg-type]
        assert lim.wbps is not None  # a cap always bounds the bytes written
        now = self.caps[key][0] if key in self.caps else None
        if now is None or abs(lim.wbps - now) > self.hysteresis * now:
            cg.set_limits(Limits(io=(lim,)))
            self.caps[key] = (lim.wbps, cap)
        return self.caps[key][1]

    def _take_over(self, kind: str, relpath: str, device: str, now):
        """What was there before this guard's first change of (kind, cgroup, disk): what a guard killed before
        us recorded, if one did (then its record is ours), else what is there `now()`; saved before any change."""
        dead = _dead_record(self.state_dir, kind, relpath, device)
        original = dead[1] if dead else now()
        self.held[kind][(relpath, device)] = original
        self._save()  # before the change: a guard killed right after it leaves a record of what to restore
        if dead:
            _forget(dead[0], kind, relpath, device)
        return original

    def use_scheduler(self, device: str, name: str, tunables: dict[str, int] | None = None) -> bool:
        """Make `name` the disk's scheduler while this guard runs (ValueError where it is not offered), with
        its `tunables` where this guard switched it: a scheduler the disk already had keeps its own (they are
        the user's, and a crash could not put them back). Returns whether the tunables were set."""
        if self.dry_run or ("", device) in self.held["scheduler"]:
            return False
        if name not in scheduler.offered(device):
            scheduler.switch(device, name)  # raises, naming what is offered
        if self._take_over("scheduler", "", device, lambda: scheduler.current(device)) == name:
            return False
        scheduler.switch(device, name)
        scheduler.tune(device, tunables or {})
        return True

    def use_iocost(self, device: str) -> None:
        """io.cost on the disk while this guard runs (cgroup v2's root io.cost.qos, the kernel's own model:
        ctrl=auto), so that io.weight shares it; ValueError on a host without it."""
        root = self.host.unified
        if self.host.mode != "v2" or root is None or not (root / "io.cost.qos").exists():
            raise ValueError(f"disk {device}: io.cost needs a cgroup v2 host whose kernel has it (this host: "
                             f"{self.host.mode}); bfq weights work on v1")
        if self.dry_run or ("", device) in self.held["iocost"]:
            return
        self._take_over("iocost", "", device, lambda: scheduler.iocost_qos(device, root))
        scheduler.set_iocost(device, root, {"enable": "1", "ctrl": "auto"})

    def weigh(self, relpath: str, device: str, weight: int | None, mechanism: str = "bfq") -> None:
        """A target's weight on a disk for BFQ or io.cost, or its io.latency target (None: what it had before)."""
        kind = KIND_OF[mechanism]
        key = (relpath, device)
        if self.dry_run or (weight is None and key not in self.held[kind]):
            return
        cg = self.host.cgroup(relpath)
        if key not in self.held[kind]:
            self._take_over(kind, relpath, device, lambda: cg.io_weights(mechanism).get(device))
        want = self.held[kind][key] if weight is None else weight
        if self.weights.get(key) != want:
            cg.set_io_weight(device, want, mechanism)  # type: ignore[arg-type]
            self.weights[key] = want  # type: ignore[assignment]

    def set_setting(self, relpath: str, name: str, value: str | None) -> str | None:
        """One control file of a cgroup (SETTINGS) set to `value` (None: what was there before this run changed
        it); what was there noted first, in the state file. Returns the text the file had before this call."""
        if name not in SETTINGS or (value is not None and not SETTING_VALUE.fullmatch(value)):
            raise ValueError(f"{relpath}: not a setting contend makes: {name} {value!r}")
        cg = self.host.cgroup(relpath)
        key = (relpath, name)
        was = self.held["setting"].get(key)
        now = read_setting(cg.control(name))
        if self.dry_run or (value is None and key not in self.held["setting"]):
            return now
        if key not in self.held["setting"]:
            was = self._take_over("setting", relpath, name, lambda: now)
        want = was if value is None else value
        if want is not None and want != now:
            write(cg.control(name), str(want))
        if value is None:
            self.held["setting"].pop(key, None)
            self._save()
        return now

    def set_shape(self, relpath: str, dev: str, bps: float | None) -> None:
        """What a cgroup's container sends through its veth `dev` held to `bps` bits/s (None: as it was); the IFB
        it goes through noted first, in the state file."""
        key = (relpath, dev)
        if not IFNAME.fullmatch(dev):
            raise ValueError(f"{relpath}: not a device contend shapes: {dev!r}")
        if self.dry_run or (bps is None and key not in self.held["shape"]):
            return
        if bps is None:
            unshape(dev, self.held["shape"].pop(key))  # type: ignore[arg-type]
            self._save()
            return
        if key not in self.held["shape"]:
            self._take_over("shape", relpath, dev, new_ifb)
        shape_dev(dev, self.held["shape"][key], bps)  # type: ignore[arg-type]

    def release(self, relpath: str, device: str) -> None:
        """Put back what this guard changed on one cgroup's use of a disk (its cap and weight)."""
        key = (relpath, device)
        self.caps.pop(key, None)
        self.weights.pop(key, None)
        for kind in CGROUP_KINDS[::-1]:  # weights before the cap
            if key in self.held[kind]:
                put_back(self.host, kind, relpath, device, self.held[kind].pop(key))
                self._save()

    def release_target(self, relpath: str) -> None:
        for rel, dev in {k for kind in CGROUP_KINDS for k in self.held[kind] if k[0] == relpath}:
            self.release(rel, dev)

    def release_all(self) -> None:
        for rel, dev in {k for kind in CGROUP_KINDS for k in self.held[kind]}:
            try:
                self.release(rel, dev)
            except (OSError, Failure):  # the cgroup is gone, and its caps and weights with it (a veth, its shape)
                for kind in CGROUP_KINDS:
                    self.held[kind].pop((rel, dev), None)
        for kind in DISK_KINDS:  # after the weights: BFQ's go with it
            for key, original in list(self.held[kind].items()):
                put_back(self.host, kind, *key, original)
                del self.held[kind][key]
        self.caps.clear()
        self.weights.clear()
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
        doc: dict = {"instance": self.instance, "pid": os.getpid()}
        for kind, key in KINDS.items():
            doc[key] = [{"cgroup": rel, "device": dev,
                         "original": asdict(o) if kind == "cap" and o else o}  # type: ignore[call-overload]
                        for (rel, dev), o in self.held[kind].items()]
        _write_state(self.state_file, doc)


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


def restore_weight(host: CgroupHost, relpath: str, device: str, original: int | None, mechanism: str = "bfq") -> None:
    cg = host.cgroup(relpath)
    # another scheduler took BFQ's weights with it
    if cg.exists() and (mechanism != "bfq" or scheduler.current(device) == "bfq"):
        cg.set_io_weight(device, original, mechanism)


def restore_scheduler(device: str, original: str) -> None:
    if original and scheduler.current(device) not in ("", original):
        scheduler.switch(device, original)


def put_back(host: CgroupHost, kind: str, relpath: str, device: str, original) -> None:
    """What one record says was there before a guard changed it, restored."""
    if kind == "scheduler":
        restore_scheduler(device, original)
    elif kind == "iocost":
        if host.unified is not None and (host.unified / "io.cost.qos").exists():
            scheduler.set_iocost(device, host.unified, original)
    elif kind == "shape":
        unshape(device, original)
    elif kind == "setting":
        cg = host.cgroup(relpath)
        if cg.exists() and original is not None:
            write(cg.control(device), original)
    elif kind in MECHANISM:
        restore_weight(host, relpath, device, original, MECHANISM[kind])
    else:
        restore(host, relpath, device, IoLimit(**original) if isinstance(original, dict) else original)


def read_setting(path: Path) -> str | None:
    """A control file's text as a setting (cpu.max's "max 100000"; None where it is missing or not one)."""
    try:
        text = " ".join(path.read_text().split())
    except OSError:
        return None
    return text if SETTING_VALUE.fullmatch(text) else None


def _alive(state_file: Path) -> bool:
    """Is the guard that wrote this state running? It holds an flock on <id>.lock while it lives (a state
    from before instance ids has no lock: its guard is taken for dead)."""
    return held(state_file.with_suffix(".lock"))


DEVICE = re.compile(r"^[0-9]+:[0-9]+$")
LIMIT_FIELDS = {f.name for f in fields(IoLimit)} - {"device"}


SCHEDULER_NAME = re.compile(r"^[a-z0-9_-]{1,32}$")


def _original_ok(kind: str, dev: str, o) -> bool:
    if kind == "scheduler":
        return isinstance(o, str) and bool(SCHEDULER_NAME.fullmatch(o))
    if kind == "setting":
        return dev in SETTINGS and isinstance(o, str) and bool(SETTING_VALUE.fullmatch(o))
    if kind == "shape":
        return bool(IFNAME.fullmatch(dev)) and isinstance(o, str) and bool(IFB_NAME.fullmatch(o))
    if o is None:
        return True
    if kind in MECHANISM:
        return type(o) is int and 1 <= o <= WEIGHT_MAX[MECHANISM[kind]]
    if kind == "iocost":
        return (isinstance(o, dict) and set(o) <= set(scheduler.QOS_KEYS)
                and all(isinstance(v, str) and scheduler.QOS_VALUE.fullmatch(v) for v in o.values()))
    return (isinstance(o, dict) and o.get("device") == dev and set(o) - {"device"} <= LIMIT_FIELDS
            and all(v is None or (type(v) is int and v > 0) for k, v in o.items() if k != "device"))


def _entry(raw, kind: str = "cap") -> dict:
    """A state entry as restore needs it, or {} when it is not one contend wrote (a traversal in its cgroup,
    a newline in its device, a value that is not a rate, a weight or a scheduler's name): such an entry is
    dropped, never acted on."""
    try:
        rel, dev, o = raw["cgroup"], raw["device"], raw.get("original")
        if not (isinstance(rel, str) and isinstance(dev, str) and (DEVICE.fullmatch(dev) or kind in NAMED_KINDS)) \
                or ".." in Path(rel).parts:
            return {}
        if (kind in DISK_KINDS) == bool(rel.strip("/")) or not _original_ok(kind, dev, o):
            return {}  # a scheduler and io.cost are a disk's, caps and weights a cgroup's
        return {"kind": kind, "cgroup": rel.strip("/"), "device": dev, "original": o}
    except (TypeError, KeyError, AttributeError):
        return {}


def leftovers(state_dir: Path | None = None) -> list[tuple[Path, dict]]:
    """What guards that are not running any more changed: (state file, its entry) each, a file's caps and
    weights before its schedulers (BFQ's weights go with BFQ); ({}) for a state file with nothing valid to
    restore, which is only removed."""
    out: list = []
    base = state_dir or GUARD_STATE
    if not base.is_dir():
        return out
    for f in sorted(base.glob("*.json")):
        if f.is_symlink() or _alive(f):
            continue
        entries = []
        try:
            doc = json.loads(f.read_text())
            for kind, key in KINDS.items():
                got = doc.get(key, [])
                entries += [_entry(e, kind) for e in got] if isinstance(got, list) else []
        except (OSError, ValueError, AttributeError):
            entries = []
        out += [(f, e) for e in entries if e] or [(f, {})]
    return out


def _dead_record(state_dir: Path, kind: str, relpath: str, device: str) -> tuple[Path, object] | None:
    """The original a dead guard recorded for (kind, cgroup, device), and its state file."""
    for f, e in leftovers(state_dir):
        if e and (e["kind"], e["cgroup"], e["device"]) == (kind, relpath.strip("/"), device):
            o = e["original"]
            return f, IoLimit(**o) if kind == "cap" and o else o
    return None


def _forget(state_file: Path, kind: str, relpath: str, device: str) -> None:
    """Drop one entry from a dead guard's state (a successor took it over); the file goes with its last."""
    rest = [e for f, e in leftovers(state_file.parent)
            if f == state_file and e and (e["kind"], e["cgroup"], e["device"]) != (kind, relpath.strip("/"), device)]
    if rest:
        _write_state(state_file, {key: [{k: v for k, v in e.items() if k != "kind"} for e in rest if e["kind"] == kd]
                                  for kd, key in KINDS.items()})
    else:
        remove_leftover(None, state_file, {})


def remove_leftover(host: CgroupHost | None, state_file: Path, entry: dict) -> None:
    """Restore what one dead guard's entry recorded and drop the entry from its state file, which goes with
    its last entry (an {} entry: the file is removed): the others stay recorded for whoever restores them
    (a new study puts a killed guard's scheduler back and leaves its caps to `contend clean`)."""
    if entry:
        if host is not None:
            put_back(host, entry["kind"], entry["cgroup"], entry["device"], entry.get("original"))
        _forget(state_file, entry["kind"], entry["cgroup"], entry["device"])
        return
    state_file.unlink(missing_ok=True)
    state_file.with_suffix(".lock").unlink(missing_ok=True)
