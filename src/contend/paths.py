"""Where contend keeps things on a host. Every entry below these carries contend's prefix (`contend clean`)."""
import os
import re
from pathlib import Path

STATE = Path(os.environ.get("CONTEND_STATE", "/run/contend"))  # transient: bundles, runtime state
HOME = Path(os.environ.get("CONTEND_HOME", "/var/lib/contend"))  # kept: capacity.json
DATA = HOME / "data"  # per-tenant data directories, on the experiment device


# a name that becomes a file or directory name (a trial id, a tenant, a runtime, a workload, a benchmark): data
# from a store, a spec or an archive, so never a path (issue 95 H1: a trial id `../../etc/logrotate.d/x` in a
# merged store made root write /etc/logrotate.d/x.jsonl). Letters, digits and `_ . @ = + , -`, starting with a
# letter or digit (so never `.`, `..` or an option), at most 200 characters
NAME = re.compile(r"[A-Za-z0-9][\w.@=+,-]{0,199}\Z", re.ASCII)


class BadName(ValueError):
    """A name that would not stay one file name: str(e) is the one line to print."""


class Refused(OSError):
    """A directory below a results directory that is a link or not a directory: str(e) is the one line."""


def check_name(value: object, where: str = "") -> str:
    """`value` if it is a NAME, else BadName saying where it came from."""
    if isinstance(value, str) and NAME.match(value):
        return value
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    raise BadName(f"{where + ': ' if where else ''}{shown} is not a name contend writes as a file (letters, digits "
                  "and _.@=+,- only, at most 200, first a letter or digit)")


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
    return _file(os.open(path, NEW, perm), mode, perm, **kw)


NEW = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC  # a file contend writes anew


def _file(fd: int, mode: str, perm: int, **kw):
    """A descriptor contend opened to write, its mode bits set on it (never through a path), as a file object."""
    try:
        os.fchmod(fd, perm)
        return os.fdopen(fd, mode, **kw)
    except BaseException:
        os.close(fd)
        raise


def write_text(path: Path, text: str) -> None:
    with open_new(path) as f:
        f.write(text)


def _component(part: str) -> str:
    if part in ("", ".", "..") or "/" in part or "\0" in part:
        raise BadName(f"{part!r}: not one component of a path")
    return part


def open_dir(root: Path, *parts: str) -> int:
    """A descriptor of root/parts[0]/…, each directory below `root` made (0755) where missing and entered without
    following a link (O_NOFOLLOW | O_DIRECTORY at every step, by descriptor): a planted `figures -> /etc` in a
    results directory is refused, never written through (issue 95 L2). `root` itself is the caller's to name."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            _component(part)
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                below = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as e:
                raise Refused(f"{root.joinpath(*parts[:i + 1])}: not a directory of contend's "
                              f"({os.strerror(e.errno or 0)}): refused, nothing written through it") from None
            os.close(fd)
            fd = below
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_under(root: Path, *parts: str, mode: str = "w", perm: int = 0o644, **kw):
    """root/parts…/file opened for writing (truncated): the directories as `open_dir` enters them, the file
    without following a link at its end, its mode set on its descriptor."""
    *dirs, name = parts
    d = open_dir(root, *dirs)
    try:
        fd = os.open(_component(name), NEW, perm, dir_fd=d)
    finally:
        os.close(d)
    return _file(fd, mode, perm, **kw)


def write_under(root: Path, *parts: str, text: str) -> Path:
    with open_under(root, *parts) as f:
        f.write(text)
    return root.joinpath(*parts)


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
