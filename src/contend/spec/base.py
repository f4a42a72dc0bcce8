"""What every kind of spec is made of: the strict base model, its errors, runtimes, scenarios, trials, sizes."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any, Self

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from ..resources import NAMES as RESOURCES
from ..units import SIZE, size_bytes

__all__ = ["RESOURCES", "SIZE", "size_bytes"]  # re-exported: a spec's resources and sizes are read with it

# Cells a study does not run, and why (they show as n/a in its tables). Volpert et al. §6.3: memory
# overcommit ends in the OOM killer, "rendering the results useless".
NOT_RUN = {("memory", "overcommit"): "memory overcommit is not run, as in the paper: the OOM killer ends it"}


class SpecError(Exception):
    """Bad input: str(e) is the one line to print (exit 2)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StudyKind(Strict):
    """What every kind of study's spec has and does."""
    # a trial that fails (a runtime error, a load generator that dies, a probe that cannot attach, an OOM kill)
    # is run again up to this many times before it is recorded as failed
    retries: int = Field(default=1, ge=0, le=10)
    # runc runs each container in a user namespace of its own, its root an unprivileged host uid
    # (docs/security.md); false: as host root, for a load that needs it
    userns: bool = True
    if TYPE_CHECKING:  # every kind's model has them, each with its own rule (a Literal kind, a name's pattern)
        kind: str
        name: str

    def quick_with(self, **update: Any) -> Self:
        """The --quick variant: `update` (the kind's quick section) replaces the study's, the name says so."""
        return self.revised(**update, name=self.name + "-quick")

    def repeated(self, n: int) -> Self:
        """--repetitions N (a kind whose repetitions mean something else overrides this)."""
        return self.revised(repetitions=n)

    def revised(self, **update: Any) -> Self:
        """A copy with `update`, validated again as a whole (model_copy alone skips every bound: -n 5000
        would pass). Raises pydantic's ValidationError."""
        new = self.model_copy(update=update)
        return type(self).model_validate(new.model_dump(by_alias=True))

    def resolved(self) -> dict:
        """Every value the spec resolved to: what a results directory keeps."""
        return self.model_dump(mode="json", by_alias=True)


def first_change(old: object, new: object, path: str = "") -> str:
    """Where two resolved specs first differ, as 'path: old → new' ('' when they are the same)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for k in [*old, *(k for k in new if k not in old)]:
            change = first_change(old.get(k), new.get(k), f"{path}.{k}" if path else str(k))
            if change:
                return change
        return ""
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new)):
            change = first_change(a, b, f"{path}[{i}]")
            if change:
                return change
        return ""
    return "" if old == new else f"{path or '(top)'}: {json.dumps(old)} → {json.dumps(new)}"


def unique(items: list, names: list[str], what: str) -> list:
    """items, if no name repeats; else the error names the first repeat's index."""
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ValueError(f"[{i}] {what} {n!r} given twice")
    return items


def no_repeats(what: str, by_name: bool = False) -> AfterValidator:
    """A list field's rule: no item (by_name: no item's name) given twice."""
    return AfterValidator(lambda v: unique(v, [x.name for x in v] if by_name else v, what))


def known_runtime(name: str, where: str = "") -> str:
    """name, if its runtime (before any "-variant") is one contend drives; else the error, prefixed by where."""
    from ..runtimes import KNOWN
    if name not in KNOWN and name.split("-")[0] not in KNOWN:
        raise ValueError(f"{where}unknown runtime {name!r} (known: {', '.join(n for n in KNOWN if n != 'kata')}; "
                         "kata is detected only, never run)")
    return name


def known_runtimes(v: list[str]) -> list[str]:
    """A spec's runtimes: each one contend drives, none twice."""
    for i, name in enumerate(v):
        known_runtime(name, f"[{i}] ")
    return unique(v, v, "runtime")


Runtimes = Annotated[list[str], Field(min_length=1), AfterValidator(known_runtimes)]


class Scenario(Strict):
    """Volpert Table 1: workloads w as a fraction of the tenant's limit l, limits as a fraction of capacity."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    w_a: float = Field(gt=0, le=2)
    l_a: float = Field(gt=0, le=1)
    w_d: float = Field(gt=0, le=4)
    l_d: float = Field(gt=0, le=1)

    @property
    def abiding_level(self) -> float:
        return self.w_a * self.l_a

    @property
    def disruptive_level(self) -> float:
        return self.w_d * self.l_d


STANDARD = {
    "harmony": Scenario(name="harmony", w_a=1.0, l_a=0.5, w_d=1.0, l_d=0.5),
    "escape": Scenario(name="escape", w_a=1.0, l_a=0.5, w_d=1.5, l_d=0.5),
    "overcommit": Scenario(name="overcommit", w_a=1.0, l_a=0.5, w_d=1.0, l_d=0.75),
    "steal": Scenario(name="steal", w_a=0.5, l_a=0.5, w_d=1.0, l_d=0.75),
}


def check_disk_block(v: str) -> str:
    if size_bytes(v) % 4096 or not 4096 <= size_bytes(v) <= 4 << 20:
        raise ValueError(f"must be a multiple of 4K from 4K to 4M (direct I/O), got {v}")
    return v


class Trial(Strict):
    baseline_s: float = Field(default=5, gt=0, le=3600)
    steps: int = Field(default=6, gt=0, le=1000)
    step_s: float = Field(default=5, gt=0, le=3600)
    bucket_ms: int = Field(default=100, ge=10, le=10_000)


class Capacity(Strict):
    """What 100 % of a resource is, where it is a choice rather than a measurement (CPU and disk are calibrated).

    memory: the pool the study treats as the host's memory (a 24 GiB host need not be filled to learn
    whether a limit holds); network: the bottleneck link contend builds with tc (Volpert: a 1 Gbit/s NIC);
    disk_block: the block size of the disk load's random writes, and so the unit of the disk's calibrated
    IOPS (Volpert: 4K on a SATA SSD rated by its random-write IOPS; where 4K writes run out of CPU before
    the disk saturates, as on this project's 2-vCPU VM, a larger block makes the device the contended resource).
    """

    memory_bytes: int = Field(default=1 << 30, ge=64 << 20, le=1 << 40)
    network_bps: float = Field(default=1e9, ge=1e6, le=1e11)
    disk_block: Annotated[str, Field(pattern=SIZE), AfterValidator(check_disk_block)] = "4K"


class Quick(Strict):
    """What --quick replaces: a scaled-down pass of the whole matrix."""

    repetitions: int = Field(default=1, gt=0, le=1000)
    trial: Trial = Trial(baseline_s=2, steps=4, step_s=2)
    capacity: Capacity | None = None


class Probes(Strict):
    cgroup: bool = True
    ebpf: bool = True


class Metrics(Strict):
    # the change point (docs/metrics.md): a step is out of the baseline's band when it is more than `threshold`
    # of the baseline below it and a one-sided Welch t-test of its buckets against the baseline's rejects at `alpha`
    threshold: float = Field(default=0.05, gt=0, lt=1)
    alpha: float = Field(default=0.01, gt=0, lt=0.5)
    trim: float = Field(default=0.25, ge=0, lt=1)  # share of each step's window skipped at its start (transient)
    trim_end: float = Field(default=0.05, ge=0, lt=1)  # and at its end (the hand-over to the next level)

    @model_validator(mode="after")
    def _window_left(self) -> Self:
        if self.trim + self.trim_end >= 0.9:
            raise ValueError("trim + trim_end must leave at least 10 % of each step")
        return self


class ContainerLimits(Strict):
    cpus: float = Field(default=2, gt=0, le=1024)  # paper: 2 vCPUs
    memory: str = Field(default="4G", pattern=SIZE)  # paper: 4 GB

    @property
    def memory_bytes(self) -> int:
        return size_bytes(self.memory)
