"""The disk-fill study's spec (kind: diskfill, Kim et al. WISA 2025): a disk-fill attack on a measuring
neighbour."""
from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from ...spec.base import SIZE, ContainerLimits, Runtimes, Strict, StudyKind, size_bytes

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
MARGIN = r"^([0-9]{1,2}(\.[0-9]+)?%|[0-9]+[KMGT]?)$"  # "10%" of the file system, or a size ("20G")


class AttackFiles(Strict):
    """The total of the attackers' files, as a multiple of the host's memory (the paper: 32 GB, within
    memory, and 128 GB, well beyond it). Each attacker writes its share as one file. An attack left out
    (null) is not run; at least one is."""

    fits_memory: float | None = Field(default=0.5, gt=0, lt=1, alias="fits-memory")
    beyond_memory: float | None = Field(default=1.5, gt=1, le=100, alias="beyond-memory")
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @model_validator(mode="after")
    def _one(self) -> "AttackFiles":
        if self.fits_memory is None and self.beyond_memory is None:
            raise ValueError("at least one of fits-memory and beyond-memory must be given")
        return self

    def multiples(self) -> dict[str, float]:
        return {k: v for k, v in (("fits-memory", self.fits_memory), ("beyond-memory", self.beyond_memory))
                if v is not None}


class VictimIO(Strict):
    """What D measures: fio random reads and random writes side by side, direct I/O, on files of its own."""

    block: str = Field(default="4k", pattern=r"^[0-9]+[kKmM]?$")
    file: str = Field(default="1G", pattern=SIZE)  # each of its two files
    seconds: float = Field(default=10, gt=0, le=3600)  # one measurement
    iodepth: int = Field(default=1, ge=1, le=256)


class DiskFillQuick(Strict):
    repetitions: int = Field(default=1, gt=0, le=1000)
    files: AttackFiles = AttackFiles.model_validate({"fits-memory": 0.25, "beyond-memory": 1.25})
    victim: VictimIO = VictimIO(file="256M", seconds=5)


class DiskFillSpec(StudyKind):
    """Containers A, B, C (the attackers) and D (the victim), each limited to `limits`. Per runtime and
    repetition: D measured with the attackers idle (baseline), then while they write the files of each size."""

    kind: Literal["diskfill"]
    name: str = Field(pattern=NAME)
    description: str = ""
    runtimes: Runtimes
    limits: ContainerLimits = ContainerLimits(cpus=1, memory="1G")  # paper: 1 CPU, 1 GB each
    attackers: int = Field(default=3, ge=1, le=16)
    files: AttackFiles = AttackFiles()
    victim: VictimIO = VictimIO()
    settle_s: float = Field(default=1, ge=0, le=600)  # from the attackers' start to D's measurement
    attack_timeout_s: float = Field(default=1800, gt=0, le=86_400)  # an attack's writers are stopped after this
    free_margin: str = Field(default="10%", pattern=MARGIN)  # what an attack must leave free
    repetitions: int = Field(default=3, gt=0, le=1000)
    quick: DiskFillQuick = DiskFillQuick()

    def quickened(self) -> "DiskFillSpec":
        q = self.quick
        return self.quick_with(repetitions=q.repetitions, files=q.files, victim=q.victim)

    @field_validator("free_margin")
    @classmethod
    def _some_margin(cls, v: str) -> str:
        if float(v.rstrip("%KMGT")) <= 0:
            raise ValueError("must leave some space free (> 0): a full disk stops the host, not only the victim")
        return v

    def margin_bytes(self, fs_bytes: int) -> int:
        """The free space an attack must leave on the experiment device."""
        m = self.free_margin
        return int(float(m[:-1]) / 100 * fs_bytes) if m.endswith("%") else size_bytes(m)
