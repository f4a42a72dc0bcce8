"""The guard study's spec (kind: guard): workloads × policies, Aridac."""
from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Annotated, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator

from ...guard.config import GuardSettings
from ...guard.policy import POLICIES, PolicyName
from ...guard.settings import CAPS, NAMES, reads
from ...spec.base import Strict, StudyKind, known_runtime, no_repeats

BLOCK = r"^[1-9][0-9]{0,5}[kKmM]?$"  # a block size as fio reads it: 512, 4k, 1M


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
    # how the neighbour writes: direct (O_DIRECT: each write charged to it when submitted) or buffered (into the
    # page cache, each job ending with an fsync; the kernel writes the pages back: on cgroup v1 charged to no
    # cgroup, so no cap holds them and the guard says escape; on v2 charged to the neighbour and held by its cap)
    neighbour_io: Literal["direct", "buffered"] = "direct"
    # each tenant's I/O (fio's bs, rw and iodepth); the paper's: the victim sequential 256 KiB 4 deep, the
    # neighbour sequential 1 MiB 32 deep. Small random blocks one at a time make a latency-bound victim; 4 KiB
    # random writes 32 deep an IOPS-bound neighbour (issue 55). A buffered neighbour has no depth
    victim_block: str = Field(default="256k", pattern=BLOCK)
    victim_pattern: Literal["write", "randwrite", "read", "randread"] = "write"
    victim_depth: int = Field(default=4, ge=1, le=256)
    neighbour_block: str = Field(default="1M", pattern=BLOCK)
    neighbour_pattern: Literal["write", "randwrite"] = "write"
    neighbour_depth: int = Field(default=32, ge=1, le=256)
    tail_s: float = Field(default=8, gt=0, le=3600)
    max_s: float = Field(default=300, gt=0, le=86_400)  # no run lasts longer, whatever the policy


class GuardQuick(Strict):
    repetitions: int = Field(default=1, gt=0, le=1000)
    time_scale: float = Field(default=0.4, gt=0, le=1)  # burst_at_s, burst_volume_s and tail_s × this


# a study's settings: `capacity` is the study's (the capacity the guard is told, × the calibration), the others the
# guard's own (guard/settings.py's table); each policy reads some, and a sweep over one it does not read runs it once
SETTINGS = ("capacity", *NAMES)
READS: dict[str, tuple[str, ...]] = {p: ("capacity", *reads(p)) if p in CAPS else reads(p) for p in POLICIES}
MAX_CAPACITY = 10  # × the calibration: the guard told of a disk ten times faster caps nothing


@dataclass(frozen=True)
class Variant:
    """A policy at one point of the study's sweep: its label (the policy's name, then `@setting=value,...`
    where swept: `contend@p=0.5`), the policy, and the settings it runs with beyond the study's guard:."""

    label: str
    policy: str
    settings: dict = field(default_factory=dict)


class GuardSpec(StudyKind):
    """A guard evaluation: every workload under every policy, side by side on this host's disk."""

    kind: Literal["guard"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtime: str = "runc"
    policies: Annotated[list[PolicyName], Field(min_length=1),
                        no_repeats("policy")]
    workloads: Annotated[list[Workload], Field(min_length=1), no_repeats("workload", by_name=True)]
    repetitions: int = Field(default=1, gt=0, le=1000)
    guard: GuardSettings = GuardSettings()
    # the capacity the guard is told, × the calibrated disk bandwidth (the workloads' rates stay fractions of
    # the calibration): static caps at capacity / n, contend's estimate starts from it and never climbs past it;
    # 0: told nothing (contend and hybrid learn the disk; in a sweep, static and aridac skip that point)
    capacity: float = Field(default=1.0, ge=0, le=MAX_CAPACITY)
    # the tuning sweep: each policy that reads a setting runs once per value (per combination of the swept
    # settings it reads), each run between two under none as any other; the report draws the frontier
    sweep: dict[str, Annotated[list[float], Field(min_length=1, max_length=20), no_repeats("value")]] = {}
    quick: GuardQuick = GuardQuick()

    @field_validator("sweep")
    @classmethod
    def _sweep_settings(cls, v: dict, info: ValidationInfo) -> dict:
        """Each value a setting the guard would take (a window of 0.5 periods is not)."""
        base = info.data.get("guard", GuardSettings()).model_dump()
        for k, values in v.items():
            if k not in SETTINGS:
                raise ValueError(f"{k}: not a setting (one of {', '.join(SETTINGS)})")
            for i, x in enumerate(values):
                if k == "capacity":
                    if not 0 <= x <= MAX_CAPACITY:
                        raise ValueError(f"{k}[{i}]: must be >= 0 (0: told nothing) and <= {MAX_CAPACITY} "
                                         "(× the calibration)")
                    continue
                try:
                    GuardSettings.model_validate({**base, k: x})
                except ValidationError as e:
                    raise ValueError(f"{k}[{i}]: {e.errors()[0]['msg']}") from None
        return v

    @field_validator("capacity")
    @classmethod
    def _told_where_needed(cls, v: float, info: ValidationInfo) -> float:
        if v == 0:
            divide = [p for p in info.data.get("policies", []) if POLICIES[p].needs_capacity]
            if divide:
                raise ValueError(f"0 (told nothing) needs policies that learn the disk (contend, hybrid): "
                                 f"{', '.join(divide)} divide a capacity they are told")
        return v

    def variants(self) -> list[Variant]:
        """Every policy at every point of the sweep it reads, in the order of `policies:` (told nothing,
        capacity 0, only for the policies that can learn the disk)."""
        out = []
        for policy in self.policies:
            keys = [k for k in self.sweep if k in READS[policy]]
            for values in product(*(self.sweep[k] for k in keys)):
                point = dict(zip(keys, values))
                if point.get("capacity") == 0 and POLICIES[policy].needs_capacity:
                    continue
                settings = GuardSettings.model_validate(
                    {**self.guard.model_dump(), **{k: x for k, x in point.items() if k != "capacity"}})
                swept = {k: float(x) if k == "capacity" else getattr(settings, k) for k, x in point.items()}
                label = policy + ("@" + ",".join(f"{k}={x:g}" for k, x in swept.items()) if swept else "")
                out.append(Variant(label, policy, swept))
        return out

    def variant(self, label: str) -> Variant:
        return next(v for v in self.variants() if v.label == label)

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, v: str) -> str:
        return known_runtime(v)

    def quickened(self) -> "GuardSpec":
        f = self.quick.time_scale
        wl = [w.model_copy(update={"burst_at_s": w.burst_at_s * f, "burst_volume_s": w.burst_volume_s * f,
                                   "tail_s": w.tail_s * f}) for w in self.workloads]
        return self.quick_with(repetitions=self.quick.repetitions, workloads=wl)
