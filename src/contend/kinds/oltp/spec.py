"""The database victim's spec (kind: oltp, Xavier et al. PDP 2015): a database under a disruptor."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from ...spec.base import SIZE, Runtimes, Strict, StudyKind, no_repeats

NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"


DATABASES = ("postgresql", "mariadb")
DISRUPTORS = ("cpu-bomb", "memory-bomb", "disk-bomb")


class OltpLoad(Strict):
    """The client: `clients` connections at a fixed rate, `rate` × the TPS this database reached unthrottled
    under this runtime (measured first, in the cell's first repetition)."""

    clients: int = Field(default=4, ge=1, le=1000)
    rate: float = Field(default=0.7, gt=0, le=1)
    seconds: float = Field(default=20, gt=0, le=3600)  # one measurement
    warmup_s: float = Field(default=3, ge=0, le=600)  # before a window: the client (base), the disruptor
    pause_s: float = Field(default=3, ge=0, le=600)  # after a disruptor is stopped: the database recovers
    calibrate_s: float = Field(default=10, gt=0, le=3600)


class OltpScale(Strict):
    """The data each database holds: pgbench's scale factor; sysbench's tables × rows."""

    pgbench_scale: int = Field(default=10, ge=1, le=100_000)
    sysbench_tables: int = Field(default=4, ge=1, le=1000)
    sysbench_table_size: int = Field(default=50_000, ge=100, le=10**9)


class Repetitions(Strict):
    """Repeat until the 95 % interval of every measured TPS is within ±ci_pct % of its mean (PDP 2015: "a
    confidence interval of at least 95 %"), at least `min` and at most `max` times."""

    min: int = Field(default=3, ge=1, le=1000)
    max: int = Field(default=10, ge=1, le=1000)
    ci_pct: float = Field(default=2, gt=0, le=100)

    @model_validator(mode="after")
    def _order(self) -> "Repetitions":
        if self.max < self.min:
            raise ValueError(f"max ({self.max}) must be >= min ({self.min})")
        return self


class OltpQuick(Strict):
    repetitions: Repetitions = Repetitions(min=2, max=2)
    load: OltpLoad = OltpLoad(seconds=6, warmup_s=2, pause_s=2, calibrate_s=5)
    scale: OltpScale = OltpScale(pgbench_scale=5, sysbench_table_size=20_000)


class OltpSpec(StudyKind):
    """A database server (the victim) in one container, a disruptor in the other; each gets `share` of the
    host's CPUs, of the memory pool and of the disk's calibrated bandwidth and IOPS (the paper: half)."""

    kind: Literal["oltp"]
    name: str = Field(pattern=NAME)
    description: str = ""
    runtimes: Runtimes
    # (a Literal over a tuple: pydantic expands it, mypy cannot)
    databases: Annotated[list[Literal[DATABASES]], Field(min_length=1), no_repeats("database")]  # type: ignore[valid-type]
    disruptors: Annotated[list[Literal[DISRUPTORS]], Field(min_length=1),  # type: ignore[valid-type]
                          no_repeats("disruptor")]
    share: float = Field(default=0.5, gt=0, le=1)
    memory_pool: str | None = Field(default=None, pattern=SIZE)  # "all memory"; default: the host's RAM
    load: OltpLoad = OltpLoad()
    scale: OltpScale = OltpScale()
    repetitions: Repetitions = Repetitions()
    quick: OltpQuick = OltpQuick()

    def quickened(self) -> "OltpSpec":
        q = self.quick
        return self.quick_with(repetitions=q.repetitions, load=q.load, scale=q.scale)

    def repeated(self, n: int) -> "OltpSpec":
        """--repetitions N: exactly N (the interval rule off)."""
        return self.revised(repetitions=self.repetitions.model_copy(update={"min": n, "max": n}))
