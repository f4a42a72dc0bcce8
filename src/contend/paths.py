"""Where contend keeps things on a host. Every entry below these carries contend's prefix (`contend clean`)."""
import os
from pathlib import Path

STATE = Path(os.environ.get("CONTEND_STATE", "/run/contend"))  # transient: bundles, runtime state
HOME = Path(os.environ.get("CONTEND_HOME", "/var/lib/contend"))  # kept: capacity.json
DATA = HOME / "data"  # per-tenant data directories, on the experiment device


def free_space(path: Path) -> tuple[int, int]:
    """(free, total) bytes of the file system `path` is on, or would be on once made (it need not exist)."""
    while not path.exists():
        path = path.parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize


def open_new(path: Path, mode: str = "w", perm: int = 0o644, **kw):
    """`path` opened for writing (truncated) without following a link at its end: contend writes as root into
    results directories others may share (a report.html linked to /etc/shadow must not overwrite it; issue 52,
    M1). The mode bits are set on the open file, never through a path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, perm)
    try:
        os.fchmod(fd, perm)
        return os.fdopen(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise


def write_text(path: Path, text: str) -> None:
    with open_new(path) as f:
        f.write(text)


def open_existing(path: Path, mode: str = "r", **kw):
    """A file contend did not write, opened for reading without following a link at its end, and only if it is
    a regular file (issue 52, M2: a link to a root-only file must not be copied out)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        import stat
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        return os.fdopen(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise


def copy_plain(src: Path, dest: Path) -> None:
    """A regular file's contents only (no owner or mode bits), neither end followed if a link: the file read is
    the one checked (its descriptor's), and dest gets 0644 on its own descriptor."""
    import shutil
    with open_existing(src, "rb") as a, open_new(dest, "wb") as b:
        shutil.copyfileobj(a, b)
