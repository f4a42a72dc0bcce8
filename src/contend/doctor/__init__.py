"""doctor: what this host offers (runtimes, cgroups, eBPF, load generators, disks), and calibration."""
from .calibrate import CAPACITY_FILE, calibrate, ensure_capacity, load_capacity
from .facts import facts

__all__ = ["CAPACITY_FILE", "calibrate", "load_capacity", "ensure_capacity", "facts"]
