"""The parallel suite's spec (kind: parallel): runtimes × benchmarks × container counts, CoPTS."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, field_validator

from ...spec.base import SIZE, ContainerLimits, Runtimes, Strict, StudyKind, no_repeats, unique


class LinpackSizes(Strict):
    n: int = Field(default=600, ge=2, le=20_000)  # matrix order (paper 600)
    min_seconds: float = Field(default=10, ge=0, le=3600)  # solve repeatedly for at least this long


class NoploopSizes(Strict):
    count: float = Field(default=6e9, ge=100, le=1e13)  # instructions (paper 6 billion)


class StreamSizes(Strict):
    mib_per_array: float | Literal["auto"] = "auto"  # auto: 4 × the last-level cache (STREAM's rule)
    ntimes: int = Field(default=10, ge=2, le=1000)

    @field_validator("mib_per_array")
    @classmethod
    def _positive(cls, v):
        if v != "auto" and not 0.01 <= v <= 1 << 20:
            raise ValueError("must be auto or between 0.01 and 1048576 (MiB)")
        return v


class SysbenchCpuSizes(Strict):
    max_prime: int = Field(default=20_000, ge=3, le=10**8)
    events: int = Field(default=20_000, ge=1, le=10**9)


class SysbenchMemorySizes(Strict):
    block: str = Field(default="1K", pattern=SIZE)  # paper: 1 KB blocks
    total: str = Field(default="100G", pattern=SIZE)  # paper: 100 GB


class PidigitsSizes(Strict):
    digits: int = Field(default=200_000, ge=10, le=10**8)


class FioSizes(Strict):
    size: str = Field(default="256M", pattern=SIZE)
    seconds: int = Field(default=10, ge=1, le=3600)


class Sizes(Strict):
    """Each benchmark's work per run (CoPTS §3; scaled where the paper's would take hours on a small host)."""

    linpack: LinpackSizes = LinpackSizes()
    noploop: NoploopSizes = NoploopSizes()
    stream: StreamSizes = StreamSizes()
    sysbench_cpu: SysbenchCpuSizes = Field(default=SysbenchCpuSizes(), alias="sysbench-cpu")
    sysbench_memory: SysbenchMemorySizes = Field(default=SysbenchMemorySizes(), alias="sysbench-memory")
    pidigits: PidigitsSizes = PidigitsSizes()
    fio: FioSizes = FioSizes()
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def of(self, benchmark: str) -> dict:
        return getattr(self, benchmark.replace("-", "_")).model_dump()


BENCHMARK_NAMES = ("linpack", "noploop", "stream", "sysbench-cpu", "sysbench-memory", "pidigits", "fio")


def check_counts(v: list[int]) -> list[int]:
    """Container counts of a parallel study (and of its quick pass): 1 to 1000, no repeats, 1 among them."""
    for i, n in enumerate(v):
        if not 1 <= n <= 1000:
            raise ValueError(f"[{i}] must be between 1 and 1000 containers, got {n}")
    unique(v, [str(n) for n in v], "count")
    if 1 not in v:
        raise ValueError("must include 1: the isolated run everything is normalised to")
    return sorted(v)


class ParallelQuick(Strict):
    counts: list[int] = Field(default=[1, 2, 4], min_length=1)
    _counts = field_validator("counts")(classmethod(lambda cls, v: check_counts(v)))
    containers_per_process: int = Field(default=1, gt=0, le=10_000)
    runs_per_container: int = Field(default=2, gt=0, le=10_000)
    sizes: Sizes = Sizes()


class ParallelSpec(StudyKind):
    """CoPTS: every benchmark isolated and in N concurrent containers per runtime; for each count N, N
    processes each launch `containers_per_process` containers one after another (CoPTS's y), each running
    the benchmark `runs_per_container` times (z)."""

    kind: Literal["parallel"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: Runtimes
    benchmarks: Annotated[list[Literal[BENCHMARK_NAMES]], Field(min_length=1),  # type: ignore[valid-type]
                          no_repeats("benchmark")]  # (a Literal over a tuple: pydantic expands it, mypy cannot)
    counts: list[int] = Field(min_length=1)  # concurrent containers; 1 is the isolated run
    containers_per_process: int = Field(default=1, gt=0, le=10_000)
    runs_per_container: int = Field(default=1, gt=0, le=10_000)
    limits: ContainerLimits = ContainerLimits()
    sizes: Sizes = Sizes()
    run_timeout_s: float = Field(default=3600, gt=0, le=86_400)  # one benchmark run, before it counts as failed
    quick: ParallelQuick = ParallelQuick()


    _counts = field_validator("counts")(classmethod(lambda cls, v: check_counts(v)))

    def quickened(self) -> "ParallelSpec":
        q = self.quick
        return self.quick_with(counts=q.counts, sizes=q.sizes,
                               containers_per_process=q.containers_per_process, runs_per_container=q.runs_per_container)

    def repeated(self, n: int) -> "ParallelSpec":
        """--repetitions N: the runs per container (CoPTS's z)."""
        return self.revised(runs_per_container=n)
