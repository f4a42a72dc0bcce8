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
