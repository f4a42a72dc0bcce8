"""guard: adaptive disk I/O isolation on live cgroups (DESIGN §6): collector → policy → limiter."""
from __future__ import annotations

from .config import GuardConfig, parse_rate
from .daemon import Guard, Period
from .policy import POLICIES, Decision, PolicyInput, TargetView, make
from .targets import TargetError

__all__ = ["Decision", "Guard", "GuardConfig", "POLICIES", "Period", "PolicyInput", "TargetError", "TargetView",
           "default_disks", "make", "parse_rate"]


def default_disks(say=print) -> dict[str, float]:
    """The calibrated experiment disk and its bandwidth (calibrated now if it never was)."""
    from ..doctor import ensure_capacity
    from ..doctor.calibrate import CAPACITY_FILE
    from ..spec import SpecError
    from .config import check_capacity
    cap = ensure_capacity(["disk"], say=say)
    try:
        return {cap["disk_device"]: check_capacity(cap["disk_write_bw_bytes_s"])}
    except ValueError as e:
        raise SpecError(f"{CAPACITY_FILE}: disk_write_bw_bytes_s: {e} (contend doctor --calibrate measures it "
                        f"again; --capacity MAJ:MIN=RATE sets it)") from None
