"""Giving back the pages of libraries a long-running process needed only to start (process_madvise with
MADV_PAGEOUT, Linux 5.10): bpftrace's compiler once its probes are attached, the watch's own CRI client, TLS and
option parsing once it runs. Clean file pages only: the kernel drops them and reads them back from the disk should
the process ever touch them again; pages another process also maps are skipped (it would just read them back),
and nothing of a process's own memory goes. Best effort: where the kernel or the process says no, nothing is
given and nothing fails."""
from __future__ import annotations

import ctypes
import os

_SYS_PROCESS_MADVISE, _MADV_PAGEOUT = 440, 21  # the same number on every architecture (asm-generic)


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]  # noqa: RUF012 - ctypes' own layout


def mappings(pid: int, libs: tuple[str, ...]) -> list[tuple[int, int]]:
    """The (start, length) of each of the process's mappings of a file whose path contains one of `libs`."""
    out = []
    try:
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and any(lib in parts[5] for lib in libs):
                    lo, hi = (int(x, 16) for x in parts[0].split("-"))
                    out.append((lo, hi - lo))
    except (OSError, ValueError):
        return []
    return out


def give_back(pid: int, libs: tuple[str, ...]) -> int:
    """Pages out the process's mappings of the libraries `libs` (parts of their paths). Bytes advised; 0 where
    it has none, or the kernel or the process says no."""
    ranges = [_IoVec(lo, n) for lo, n in mappings(pid, libs)]
    if not ranges:
        return 0
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return 0
    try:
        iov = (_IoVec * len(ranges))(*ranges)
        done = ctypes.CDLL(None, use_errno=True).syscall(_SYS_PROCESS_MADVISE, fd, iov, len(ranges), _MADV_PAGEOUT, 0)
        return max(0, done)
    finally:
        os.close(fd)
