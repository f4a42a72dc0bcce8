"""stress-ng as a rate-controlled load: a level (fraction of host capacity) becomes workers × duty cycle."""
from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from pathlib import Path

import yaml


class LoadGenerator(ABC):
    resource: str = ""

    @abstractmethod
    def argv(self, level: float, seconds: float, out: str, tenant: str = "") -> list[str]:
        """The command that applies `level` (fraction of the resource's host capacity) for `seconds`,
        writing its own report to `out` (a path inside the container)."""

    @abstractmethod
    def guest(self, report: Path) -> dict[str, float]:
        """What the workload itself reported (the guest view), read from the host side of `out`."""

    def prepare(self) -> list[str] | None:
        """A command run once in each tenant before the baseline (e.g. laying out a file), or None."""
        return None


def read_json(report: Path) -> dict:
    try:
        doc = json.loads(report.read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


class CpuStress(LoadGenerator):
    """stress-ng cpu with --cpu-load: one worker per started CPU, each busy level/workers of the time."""

    resource = "cpu"
    method = "matrixprod"  # one fixed method, so bogo ops are comparable between steps

    def __init__(self, ncpu: int):
        self.ncpu = ncpu

    def workers(self, level: float) -> tuple[int, int]:
        cpus = level * self.ncpu
        n = max(1, math.ceil(cpus - 1e-9))
        return n, max(1, min(100, round(100 * cpus / n)))

    def argv(self, level: float, seconds: float, out: str, tenant: str = "") -> list[str]:
        n, pct = self.workers(level)
        return ["stress-ng", "--cpu", str(n), "--cpu-load", str(pct), "--cpu-method", self.method,
                "--timeout", f"{seconds:g}s", "--metrics-brief", "--yaml", out]

    def guest(self, report: Path) -> dict[str, float]:
        try:
            doc = yaml.safe_load(report.read_text())
        except (OSError, yaml.YAMLError):
            return {}
        for m in (doc or {}).get("metrics") or []:
            if m.get("stressor") == "cpu":
                return {"bogo_ops_s": float(m.get("bogo-ops-per-second-real-time", 0.0))}
        return {}
