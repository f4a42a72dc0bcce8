"""The experiment spec: YAML validated with pydantic; every error is one line naming file, field path and rule."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import (AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator,
                      model_validator)

RESOURCES = ("cpu", "memory", "disk", "network")

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

    def quick_with(self, **update):
        """The --quick variant: `update` (the kind's quick section) replaces the study's, the name says so."""
        return self.revised(**update, name=self.name + "-quick")

    def repeated(self, n: int):
        """--repetitions N (a kind whose repetitions mean something else overrides this)."""
        return self.revised(repetitions=n)

    def revised(self, **update):
        """A copy with `update`, validated again as a whole (model_copy alone skips every bound: -n 5000
        would pass). Raises pydantic's ValidationError."""
        new = self.model_copy(update=update)
        return type(self).model_validate(new.model_dump(by_alias=True))

    def resolved(self) -> dict:
        """Every value the spec resolved to: what a results directory keeps."""
        return self.model_dump(mode="json", by_alias=True)


def first_change(old, new, path: str = "") -> str:
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


SIZE = r"^[0-9]+[KMGT]?$"


def size_bytes(text: str) -> int:
    """"4G" -> 4 GiB in bytes (K, M, G, T: powers of 1024, as sysbench and fio read them)."""
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    return int(text[:-1]) * mult[text[-1]] if text[-1] in mult else int(text)


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
    def _window_left(self):
        if self.trim + self.trim_end >= 0.9:
            raise ValueError("trim + trim_end must leave at least 10 % of each step")
        return self


class Spec(StudyKind):
    kind: Literal["isolation"] = "isolation"
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: Runtimes
    # a standard name, or name, w_a, l_a, w_d, l_d
    scenarios: Annotated[list[Scenario], Field(min_length=1), no_repeats("scenario", by_name=True)]
    resources: Annotated[list[Literal[RESOURCES]], Field(min_length=1), no_repeats("resource")]
    repetitions: int = Field(default=1, gt=0, le=1000)
    trial: Trial = Trial()
    probes: Probes = Probes()
    metrics: Metrics = Metrics()
    capacity: Capacity = Capacity()
    quick: Quick = Quick()

    @field_validator("scenarios", mode="before")
    @classmethod
    def _standard_scenarios(cls, v):
        if not isinstance(v, list):
            return v
        out = []
        for i, s in enumerate(v):
            if isinstance(s, str):
                if s not in STANDARD:
                    raise ValueError(f"[{i}] unknown scenario {s!r} (standard: {', '.join(STANDARD)}; "
                                     "or give name, w_a, l_a, w_d, l_d)")
                s = STANDARD[s].model_dump()
            out.append(s)
        return out



    def resolved_scenarios(self) -> list[Scenario]:
        return list(self.scenarios)

    def quickened(self) -> "Spec":
        """The --quick variant: the quick section's repetitions, trial and capacity replace the study's."""
        q = self.quick
        return self.quick_with(repetitions=q.repetitions, trial=q.trial,
                               **({"capacity": q.capacity} if q.capacity is not None else {}))


class GuardSettings(Strict):
    """The guard's tunables, shared by `contend guard` and guard studies."""

    # collector and policy period; None: the policy's own (aridac 1000 ms as its authors' code, else 100)
    period_ms: int | None = Field(default=None, ge=10, le=60_000)
    window: int = Field(default=30, ge=1, le=100_000)  # N: periods in a target's lifeline
    # elastic ratio P: cap = lifeline × (1 + P); None: the policy's own (aridac 0.35, contend 0.2)
    p: float | None = Field(default=None, ge=0, le=100)
    floor: float = Field(default=0.02, gt=0, lt=1)  # no cap below this share of the disk's capacity
    # a cap in force is rewritten only when the policy moves it by more than this share (0: every move)
    hysteresis: float = Field(default=0.0, ge=0, lt=1)


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


class ContainerLimits(Strict):
    cpus: float = Field(default=2, gt=0, le=1024)  # paper: 2 vCPUs
    memory: str = Field(default="4G", pattern=SIZE)  # paper: 4 GB

    @property
    def memory_bytes(self) -> int:
        return size_bytes(self.memory)


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


class ParallelStudy(StudyKind):
    """CoPTS: every benchmark isolated and in N concurrent containers per runtime; for each count N, N
    processes each launch `containers_per_process` containers one after another (CoPTS's y), each running
    the benchmark `runs_per_container` times (z)."""

    kind: Literal["parallel"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: Runtimes
    benchmarks: Annotated[list[Literal[BENCHMARK_NAMES]], Field(min_length=1), no_repeats("benchmark")]
    counts: list[int] = Field(min_length=1)  # concurrent containers; 1 is the isolated run
    containers_per_process: int = Field(default=1, gt=0, le=10_000)
    runs_per_container: int = Field(default=1, gt=0, le=10_000)
    limits: ContainerLimits = ContainerLimits()
    sizes: Sizes = Sizes()
    run_timeout_s: float = Field(default=3600, gt=0, le=86_400)  # one benchmark run, before it counts as failed
    quick: ParallelQuick = ParallelQuick()


    _counts = field_validator("counts")(classmethod(lambda cls, v: check_counts(v)))

    def quickened(self) -> "ParallelStudy":
        q = self.quick
        return self.quick_with(counts=q.counts, sizes=q.sizes,
                               containers_per_process=q.containers_per_process, runs_per_container=q.runs_per_container)

    def repeated(self, n: int) -> "ParallelStudy":
        """--repetitions N: the runs per container (CoPTS's z)."""
        return self.revised(runs_per_container=n)



RULES = {
    "greater_than": "must be > {gt}",
    "greater_than_equal": "must be >= {ge}",
    "less_than": "must be < {lt}",
    "less_than_equal": "must be <= {le}",
    "extra_forbidden": "unknown key",
    "missing": "required",
    "too_short": "must have at least {min_length} item(s)",
    "string_pattern_mismatch": "must match {pattern}",
    "literal_error": "must be one of {expected}",
}


def _path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z0-9_-]+", str(part)):
            out += ("." if out else "") + str(part)
        else:  # a key with spaces, dots, newlines…: quoted, so the line stays one line and unambiguous
            out += f"[{str(part)!r}]"
    return out


def format_error(source: str, e: ValidationError) -> str:
    return _format_error(source, e).replace("\n", "\\n")


def _format_error(source: str, e: ValidationError) -> str:
    err = e.errors(include_url=False)[0]
    rule = RULES.get(err["type"])
    msg = rule.format(**err.get("ctx", {})) if rule else err["msg"]
    if err["type"] == "value_error":
        msg = str(err["ctx"]["error"]) if "ctx" in err else err["msg"].removeprefix("Value error, ")
        if msg.startswith("["):  # an index in a list validator's message belongs to the path
            idx, _, msg = msg.partition("] ")
            return f"{source}: {_path(err['loc'])}{idx}]: {msg}"
    path = _path(err["loc"])
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return f"{source}: {path or '(top)'}: {msg[0].lower() + msg[1:] if msg else msg}{more}"


from .victim import DiskFillStudy, OltpStudy  # noqa: E402  (they build on the models above)

KINDS = {"guard": GuardStudy, "parallel": ParallelStudy, "diskfill": DiskFillStudy, "oltp": OltpStudy}
AnySpec = Spec | GuardStudy | ParallelStudy | DiskFillStudy | OltpStudy


def yaml_problem(e: yaml.YAMLError) -> str:
    """A YAML error in one line: 'line N: not valid YAML: what' (PyYAML's own text spans several)."""
    mark = getattr(e, "problem_mark", None)
    what = getattr(e, "problem", None) or getattr(e, "reason", None) or str(e).splitlines()[0]
    return f"{f'line {mark.line + 1}: ' if mark else ''}not valid YAML: {' '.join(str(what).split())}"


def parse(text: str, source: str = "spec") -> AnySpec:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise SpecError(f"{source}: {yaml_problem(e)}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: (top): must be a mapping of keys, got {type(doc).__name__}")
    kind = doc.get("kind")
    model = KINDS.get(kind, Spec) if isinstance(kind, str) else Spec  # anything else: Spec says what kind may be
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise SpecError(format_error(source, e)) from None


def load(path: str | Path) -> AnySpec:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{p}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise SpecError(f"{p}: cannot read: {e.__class__.__name__}") from None
    return parse(text, str(p))


def dump(spec: AnySpec) -> str:
    """The spec as every value it resolved to (quick pass and repetitions applied): what spec.yaml of a
    results directory holds, and what a cluster's pods are given; load() of it gives the same study."""
    return yaml.safe_dump(spec.resolved(), sort_keys=False)


def digest(spec: AnySpec) -> str:
    """Which study this is: two specs with the same digest plan the same trials with the same settings."""
    return hashlib.sha256(json.dumps(spec.resolved(), sort_keys=True, default=str).encode()).hexdigest()[:16]
