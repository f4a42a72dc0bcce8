"""A disk's I/O scheduler, as /sys/dev/block/MAJ:MIN/queue/scheduler shows and sets it: the one in force (the
bracketed name), those offered, and a switch (BFQ's weights exist only while BFQ is a disk's scheduler); and
the disk's io.cost controller (cgroup v2's root io.cost.qos), which io.weight needs."""
from __future__ import annotations

import re
from pathlib import Path

SYS_BLOCK = Path("/sys/dev/block")
DEVICE = re.compile(r"^[0-9]+:[0-9]+$")


def _file(device: str, sys_block: Path = SYS_BLOCK) -> Path:
    if not DEVICE.fullmatch(device):
        raise ValueError(f"not a block device MAJ:MIN: {device!r}")
    return sys_block / device / "queue" / "scheduler"


def offered(device: str, sys_block: Path = SYS_BLOCK) -> list[str]:
    """The schedulers a whole disk offers ([] for a partition or a device that is not there)."""
    try:
        return _file(device, sys_block).read_text().replace("[", "").replace("]", "").split()
    except OSError:
        return []


def current(device: str, sys_block: Path = SYS_BLOCK) -> str:
    """The scheduler in force ("" where there is none to read)."""
    try:
        m = re.search(r"\[([^\]]+)\]", _file(device, sys_block).read_text())
    except OSError:
        return ""
    return m.group(1) if m else ""


def switch(device: str, name: str, sys_block: Path = SYS_BLOCK) -> None:
    """Make `name` the disk's scheduler; a clear ValueError when the disk does not offer it."""
    have = offered(device, sys_block)
    if name not in have:
        raise ValueError(f"disk {device}: no {name} scheduler offered here ({' '.join(have) or 'none'}); "
                         f"`modprobe {name}` may add it")
    _file(device, sys_block).write_text(name)


TUNABLE = re.compile(r"^[a-z_]{1,32}$")


def tune(device: str, tunables: dict[str, int], sys_block: Path = SYS_BLOCK) -> None:
    """Set the scheduler's own tunables (queue/iosched/NAME), e.g. BFQ's slice_idle; they go with the scheduler
    when it is switched away."""
    base = _file(device, sys_block).parent / "iosched"
    for name, value in tunables.items():
        if not TUNABLE.fullmatch(name) or type(value) is not int:
            raise ValueError(f"not a scheduler tunable: {name!r}={value!r}")
        (base / name).write_text(str(value))


QOS_KEYS = ("enable", "ctrl", "rpct", "rlat", "wpct", "wlat", "min", "max")
QOS_VALUE = re.compile(r"^[a-z0-9.]{1,16}$")


def iocost_qos(device: str, root: Path) -> dict[str, str] | None:
    """The disk's line of io.cost.qos in the v2 root `root` as {key: value}; None where it has none (io.cost
    was never configured on it: off)."""
    _file(device)  # refuses what is not MAJ:MIN
    try:
        lines = (root / "io.cost.qos").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        dev, *kv = line.split()
        if dev == device:
            return dict(x.split("=", 1) for x in kv if "=" in x)
    return None


def set_iocost(device: str, root: Path, qos: dict[str, str] | None) -> None:
    """io.cost on the disk as `qos` says: None is off (a line, once there, cannot be removed); ctrl=auto keeps
    the kernel's own parameters, ctrl=user writes them all."""
    _file(device)
    q = qos or {"enable": "0"}
    if set(q) - set(QOS_KEYS) or not all(QOS_VALUE.fullmatch(v) for v in q.values()):
        raise ValueError(f"not an io.cost.qos setting: {q!r}")
    keys = ("enable", "ctrl") if q.get("ctrl", "auto") == "auto" else QOS_KEYS
    (root / "io.cost.qos").write_text(" ".join([device, *(f"{k}={q[k]}" for k in keys if k in q)]))
