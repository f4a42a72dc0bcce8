"""One study at a time on a host, and how `contend clean` tells a running study's objects from a dead one's.

The lock is an flock on STATE/study.lock: the kernel drops it when its holder dies however it dies, so a
lock never outlives its study and no PID (reused, or seen from another PID namespace) is trusted.
"""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from .paths import STATE

LOCK = "study.lock"


class HostBusy(Exception):
    """Another study holds the host (str(e) is the one line to print; exit 2)."""


def host_lock(directory: Path):
    """One study at a time on a host: a second one would disturb the first's measurements, and only so can
    the leftovers of a killed study be told from a running one's. Returns the held lock (keep it open)."""
    STATE.mkdir(parents=True, exist_ok=True)
    fd = os.open(STATE / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    f = os.fdopen(fd, "r+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        who = f.read().strip() or "its pid unknown"
        f.close()
        raise HostBusy(f"another contend study is running on this host ({who}): wait for it, or stop it") from None
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()}, results in {directory}")
    f.flush()
    return f


def held(lock: Path) -> bool:
    """Does a live process hold an flock on this file? (False when the file is missing or nobody holds it.)"""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def study_running() -> str:
    """Who holds the study lock now ("pid N, results in DIR"), or "" when no study runs."""
    try:
        fd = os.open(STATE / LOCK, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return ""
    with os.fdopen(fd) as f:
        try:
            fcntl.flock(f, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return ""
        except BlockingIOError:
            return f.read().strip() or "its pid unknown"
