"""Where contend keeps things on a host. Every entry below these carries contend's prefix (`contend clean`)."""
import os
from pathlib import Path

STATE = Path(os.environ.get("CONTEND_STATE", "/run/contend"))  # transient: bundles, runtime state
HOME = Path(os.environ.get("CONTEND_HOME", "/var/lib/contend"))  # kept: capacity.json
DATA = HOME / "data"  # per-tenant data directories, on the experiment device
