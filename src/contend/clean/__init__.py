"""clean: what contend made and a dead run left behind, found by prefix and removed (leftovers.py; the ledger
is owned.py)."""
from .leftovers import (
    LINK_NAME,
    LINK_PREFIX,
    NETNS_NAME,
    Leftover,
    StudyRunning,
    clean,
    find,
)

__all__ = ["clean", "find", "Leftover", "LINK_NAME", "LINK_PREFIX", "NETNS_NAME", "StudyRunning"]
