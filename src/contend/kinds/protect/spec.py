"""The protect study's spec (kind: protect): runtimes × cases × modes × repetitions, each trial detect's."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from ...spec.base import Strict, no_repeats
from ..detect.spec import DetectQuick, DetectSpec, DetectTrial

Mode = Literal["none", "protect", "fixed"]
CaseName = Literal["cpu", "disk", "memory", "cache", "network", "cpu+cpu", "cpu+disk", "disk+disk", "harmony",
                   "own-quota", "own-memory", "idle"]


class ProtectOptions(Strict):
    """contend protect as the study runs it (its CLI's options)."""

    confirm_s: float = Field(default=1.0, ge=0, le=60)
    release_s: float = Field(default=10.0, ge=0, le=3600)
    cpu_floor: float = Field(default=0.1, gt=0, le=64)
    net_floor_bps: float = Field(default=1e6, gt=0)
    resources: Annotated[list[Literal["cpu", "memory", "disk", "network"]], Field(min_length=1),
                         no_repeats("resource")] = ["cpu", "memory", "disk", "network"]


class FixedPolicy(Strict):
    """The fixed policy of the kind people deploy: every tenant but the victim (the best-effort ones) held from
    the trial's start to a static CPU quota, a static memory limit, static disk caps and a static rate on what it
    sends (a token bucket on its link), whatever happens (a Koordinator-like suppression of best-effort pods,
    without its watermark's feedback)."""

    cpus: float = Field(default=0.5, gt=0, le=64)
    memory_bytes: int = Field(default=128 << 20, ge=16 << 20)  # a static memory limit (memory.max, v1 limit_in_bytes)
    disk_bps: float = Field(default=100e6, gt=0)
    net_bps: float = Field(default=50e6, gt=0)


class ProtectSpec(DetectSpec):
    """detect's cases with contend protect, a fixed policy and no action side by side."""

    kind: Literal["protect"]  # type: ignore[assignment]
    cases: Annotated[list[CaseName], Field(min_length=1), no_repeats("case")]  # type: ignore[assignment]
    modes: Annotated[list[Mode], Field(min_length=1), no_repeats("mode")] = ["none", "protect", "fixed"]
    protect: ProtectOptions = ProtectOptions()
    fixed: FixedPolicy = FixedPolicy()
    trial: DetectTrial = DetectTrial(baseline_s=8, jitter_s=2, attack_s=16, tail_s=3)
    quick: DetectQuick = DetectQuick(trial=DetectTrial(baseline_s=6, jitter_s=1, attack_s=10, tail_s=2))
