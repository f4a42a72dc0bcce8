"""What every guard policy is handed each period: each target's usage history and cap, the capacity it is told, the
floor, the device's latency and what it returned last period."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TargetView:
    """One target on one disk: its usage per period (bytes/s, oldest first) and the cap now set."""

    name: str
    usage: np.ndarray
    cap: float | None = None  # None: no cap set
    weight: float = 1.0


@dataclass(frozen=True)
class PolicyInput:
    targets: list[TargetView]
    capacity: float  # bytes/s the disk is told to deliver (configured or calibrated); inf: told nothing
    floor: float  # no cap goes below this
    latency: np.ndarray = field(default_factory=lambda: np.array([]))  # device ms per I/O per period
    state: Any = field(default_factory=dict)  # what the policy returned last period (contend's: a ContendState)
