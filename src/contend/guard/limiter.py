"""The guard's limiter: caps as io.max (v2) or blkio.throttle (v1) on a target's cgroup, whole disk.

Before its first cap on a (cgroup, disk) the limiter notes the throttle that was there (a user's own
`docker run --device-write-bps`, say) in a state file; releasing restores it. The state file outlives a
guard killed with SIGKILL, so `contend clean` can restore what such a guard left (`leftovers`).
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from ..cgroups import CgroupHost, IoLimit, Limits
from ..paths import STATE

GUARD_STATE = STATE / "guard"


def cap_limit(device: str, cap: float, original: IoLimit | None) -> IoLimit:
    """A cap bounds reads and writes each; a user's own bps throttle stays if tighter, its IOPS ones stay."""
    o = original or IoLimit(device)
    c = max(1, int(cap))
    return IoLimit(device, rbps=min(c, o.rbps or c), wbps=min(c, o.wbps or c), riops=o.riops, wiops=o.wiops)


class Limiter:
    def __init__(self, host: CgroupHost, dry_run: bool = False, state_dir: Path | None = None):
        self.host = host
        self.dry_run = dry_run
        self.state_file = (state_dir or GUARD_STATE) / f"{os.getpid()}.json"
        self.originals: dict[tuple[str, str], IoLimit | None] = {}  # (cgroup relpath, device) -> before
        self.caps: dict[tuple[str, str], int] = {}  # what is written now, so an unchanged cap is not rewritten

    def apply(self, relpath: str, device: str, cap: float | None) -> None:
        key = (relpath, device)
        if cap is None:
            self.release(relpath, device)
            return
        if self.dry_run:
            return
        cg = self.host.cgroup(relpath)
        if key not in self.originals:
            self.originals[key] = cg.io_limits().get(device)
            self._save()
        lim = cap_limit(device, cap, self.originals[key])
        if self.caps.get(key) != lim.wbps:
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

    def _save(self) -> None:
        if self.dry_run:
            return
        self.state_file.parent.mkdir(parents=True, exist_ok=True)
        doc = {"pid": os.getpid(), "caps": [{"cgroup": rel, "device": dev,
                                             "original": asdict(o) if o else None}
                                            for (rel, dev), o in self.originals.items()]}
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.state_file)


def restore(host: CgroupHost, relpath: str, device: str, original: IoLimit | None) -> None:
    cg = host.cgroup(relpath)
    if not cg.exists():
        return
    cg.clear_io_limits(device)
    if original is not None:
        cg.set_limits(Limits(io=(original,)))


def _alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"contend" in cmdline


def leftovers(state_dir: Path | None = None) -> list[tuple[Path, dict]]:
    """Caps of guards that are not running any more: (state file, its entry) each."""
    out = []
    base = state_dir or GUARD_STATE
    if not base.is_dir():
        return out
    for f in sorted(base.glob("*.json")):
        try:
            doc = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            out.append((f, {}))
            continue
        if _alive(int(doc.get("pid", 0))) and int(doc.get("pid", 0)) != os.getpid():
            continue
        out += [(f, entry) for entry in doc.get("caps", [])] or [(f, {})]
    return out


def remove_leftover(host: CgroupHost, state_file: Path, entry: dict) -> None:
    if entry:
        o = entry.get("original")
        restore(host, entry["cgroup"], entry["device"], IoLimit(**o) if o else None)
    state_file.unlink(missing_ok=True)
