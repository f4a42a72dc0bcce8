"""The guard study's spec (kind: guard): workloads × policies, Aridac."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from ...guard.config import GuardSettings
from ...spec.base import Strict, StudyKind, known_runtime, no_repeats


class Workload(Strict):
    """Aridac §5.1: a victim writing steadily, a neighbour at the same rate that bursts (10×) with a fixed
    amount of I/O, then stops (workload 1) or returns to its rate (workload 2). Rates are fractions of the
    calibrated disk bandwidth."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    victim: float = Field(default=0.2, gt=0, le=1)
    neighbour: float = Field(default=0.2, ge=0, le=1)
    burst: float = Field(default=10, gt=1, le=1000)  # × the neighbour's rate while it bursts
    burst_at_s: float = Field(default=10, gt=0, le=3600)
    burst_volume_s: float = Field(default=8, gt=0, le=3600)  # the burst's I/O, in seconds of full bandwidth
    after: Literal["stop", "steady"] = "stop"
    tail_s: float = Field(default=8, gt=0, le=3600)
    max_s: float = Field(default=300, gt=0, le=86_400)  # no run lasts longer, whatever the policy


class GuardQuick(Strict):
    repetitions: int = Field(default=1, gt=0, le=1000)
    time_scale: float = Field(default=0.4, gt=0, le=1)  # burst_at_s, burst_volume_s and tail_s × this


class GuardStudy(StudyKind):
    """A guard evaluation: every workload under every policy, side by side on this host's disk."""

    kind: Literal["guard"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtime: str = "runc"
    policies: Annotated[list[Literal["none", "static", "aridac", "contend"]], Field(min_length=1),
                        no_repeats("policy")]
    workloads: Annotated[list[Workload], Field(min_length=1), no_repeats("workload", by_name=True)]
    repetitions: int = Field(default=1, gt=0, le=1000)
    guard: GuardSettings = GuardSettings()
    quick: GuardQuick = GuardQuick()

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, v: str) -> str:
        return known_runtime(v)

    def quickened(self) -> "GuardStudy":
        f = self.quick.time_scale
        wl = [w.model_copy(update={"burst_at_s": w.burst_at_s * f, "burst_volume_s": w.burst_volume_s * f,
                                   "tail_s": w.tail_s * f}) for w in self.workloads]
        return self.quick_with(repetitions=self.quick.repetitions, workloads=wl)
