"""The detect study's spec (kind: detect): runtimes × cases × repetitions, each trial's shape."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...spec.base import Runtimes, Strict, StudyKind, no_repeats

CaseName = Literal["cpu", "memory", "cache", "disk", "network", "cpu+cpu", "cpu+disk", "disk+disk", "harmony",
                   "own-quota", "own-memory", "idle"]


class DetectTrial(Strict):
    """A trial's clock: the victim's load from 0; the antagonist (or the control's change) at a random time in
    [baseline_s, baseline_s + jitter_s), for attack_s; then tail_s with it stopped."""

    baseline_s: float = Field(default=8, ge=2, le=600)
    jitter_s: float = Field(default=4, ge=0, le=600)
    attack_s: float = Field(default=8, gt=0, le=3600)
    tail_s: float = Field(default=4, ge=0, le=600)
    period_s: float = Field(default=1.0, ge=0.1, le=10)  # the watcher's period


class DetectQuick(Strict):
    repetitions: int = Field(default=1, gt=0, le=1000)
    trial: DetectTrial = DetectTrial(baseline_s=5, jitter_s=2, attack_s=6, tail_s=2)


class DetectSpec(StudyKind):
    """contend watch against injected antagonists with a known answer, per runtime."""

    kind: Literal["detect"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: Runtimes
    cases: Annotated[list[CaseName], Field(min_length=1), no_repeats("case")]
    repetitions: int = Field(default=3, gt=0, le=1000)
    trial: DetectTrial = DetectTrial()
    seed: int = 1  # the antagonists' start times are drawn from it (the same spec, the same times)
    ebpf: bool = True  # the watcher's run-queue probe (off: CPU pressure only)
    net_rtt: bool = True  # with ebpf, its TCP round-trip probe (off: retransmissions and drops only)
    quick: DetectQuick = DetectQuick()
    # this many more containers of the runtime beside each trial's tenants, watched too (a node's other pods:
    # issue 54): asleep, one in ten a light CPU load (BYSTANDER_LOAD); 0: the case's tenants alone
    bystanders: int = Field(default=0, ge=0, le=250)

    def quickened(self) -> "DetectSpec":
        return self.quick_with(repetitions=self.quick.repetitions, trial=self.quick.trial)
