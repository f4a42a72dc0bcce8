"""The experiment spec: YAML validated with pydantic; every error is one line naming file, field path and rule."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

RESOURCES = ("cpu", "memory", "disk", "network")

# Cells a study does not run, and why (they show as n/a in its tables). Volpert et al. §6.3: memory
# overcommit ends in the OOM killer, "rendering the results useless".
NOT_RUN = {("memory", "overcommit"): "memory overcommit is not run, as in the paper: the OOM killer ends it"}


class SpecError(Exception):
    """Bad input: str(e) is the one line to print (exit 2)."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def unique(items: list, names: list[str], what: str) -> list:
    """items, if no name repeats; else the error names the first repeat's index."""
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ValueError(f"[{i}] {what} {n!r} given twice")
    return items


def known_runtime(name: str, where: str = "") -> str:
    """name, if its runtime (before any "-variant") is one contend drives; else the error, prefixed by where."""
    from ..runtimes import KNOWN
    if name.split("-")[0] not in KNOWN:
        raise ValueError(f"{where}unknown runtime {name!r} (known: {', '.join(KNOWN)})")
    return name


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


class Trial(Strict):
    baseline_s: float = Field(default=5, gt=0, le=3600)
    steps: int = Field(default=6, gt=0, le=1000)
    step_s: float = Field(default=5, gt=0, le=3600)
    bucket_ms: int = Field(default=100, ge=10, le=10_000)


class Capacity(Strict):
    """What 100 % of a resource is, where it is a choice rather than a measurement (CPU and disk are calibrated).

    memory: the pool the study treats as the host's memory (a 24 GiB host need not be filled to learn
    whether a limit holds); network: the bottleneck link contend builds with tc (Volpert: a 1 Gbit/s NIC).
    """

    memory_bytes: int = Field(default=1 << 30, ge=64 << 20, le=1 << 40)
    network_bps: float = Field(default=1e9, ge=1e6, le=1e11)


class Quick(Strict):
    """What --quick replaces: a scaled-down pass of the whole matrix."""

    repetitions: int = Field(default=1, gt=0, le=1000)
    trial: Trial = Trial(baseline_s=2, steps=4, step_s=2)
    capacity: Capacity | None = None


class Probes(Strict):
    cgroup: bool = True
    ebpf: bool = True


class Metrics(Strict):
    threshold: float = Field(default=0.05, gt=0, lt=1)  # change point: drop below (1 - threshold) × baseline
    smooth: int = Field(default=3, ge=1, le=50)  # points in the moving average before change-point search
    trim: float = Field(default=0.25, ge=0, lt=1)  # share of each step skipped as its transient


class Spec(Strict):
    kind: Literal["isolation"] = "isolation"
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: list[str] = Field(min_length=1)
    scenarios: list[Scenario] = Field(min_length=1)  # a standard name, or name, w_a, l_a, w_d, l_d
    resources: list[Literal["cpu", "memory", "disk", "network"]] = Field(min_length=1)
    repetitions: int = Field(default=1, gt=0, le=1000)
    trial: Trial = Trial()
    probes: Probes = Probes()
    metrics: Metrics = Metrics()
    capacity: Capacity = Capacity()
    quick: Quick = Quick()

    @field_validator("runtimes")
    @classmethod
    def _known_runtimes(cls, v: list[str]) -> list[str]:
        for i, name in enumerate(v):
            known_runtime(name, f"[{i}] ")
        return unique(v, v, "runtime")

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

    @field_validator("resources")
    @classmethod
    def _unique_resources(cls, v: list[str]) -> list[str]:
        return unique(v, v, "resource")

    @field_validator("scenarios")
    @classmethod
    def _unique_scenarios(cls, v: list[Scenario]) -> list[Scenario]:
        return unique(v, [s.name for s in v], "scenario")

    def resolved_scenarios(self) -> list[Scenario]:
        return list(self.scenarios)

    def quickened(self) -> "Spec":
        """The --quick variant: the quick section's repetitions, trial and capacity replace the study's."""
        q = self.quick
        update = {"repetitions": q.repetitions, "trial": q.trial, "name": self.name + "-quick"}
        if q.capacity is not None:
            update["capacity"] = q.capacity
        return self.model_copy(update=update)

    def resolved(self) -> dict:
        """The spec with standard scenarios written out: what a results directory keeps."""
        return self.model_dump(mode="json")


class GuardSettings(Strict):
    """The guard's tunables, shared by `contend guard` and guard studies."""

    period_ms: int = Field(default=100, ge=10, le=60_000)  # collector and policy period
    window: int = Field(default=30, ge=1, le=100_000)  # N: periods in a target's lifeline
    p: float = Field(default=0.2, ge=0, le=100)  # elastic ratio P: cap = lifeline × (1 + P)
    floor: float = Field(default=0.02, gt=0, lt=1)  # no cap below this share of the disk's capacity


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


class GuardStudy(Strict):
    """A guard evaluation: every workload under every policy, side by side on this host's disk."""

    kind: Literal["guard"]
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtime: str = "runc"
    policies: list[Literal["none", "static", "aridac", "contend"]] = Field(min_length=1)
    workloads: list[Workload] = Field(min_length=1)
    repetitions: int = Field(default=1, gt=0, le=1000)
    guard: GuardSettings = GuardSettings()
    quick: GuardQuick = GuardQuick()

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, v: str) -> str:
        return known_runtime(v)

    @field_validator("policies")
    @classmethod
    def _unique_policies(cls, v: list[str]) -> list[str]:
        return unique(v, v, "policy")

    @field_validator("workloads")
    @classmethod
    def _unique_workloads(cls, v: list[Workload]) -> list[Workload]:
        return unique(v, [w.name for w in v], "workload")

    def quickened(self) -> "GuardStudy":
        f = self.quick.time_scale
        wl = [w.model_copy(update={"burst_at_s": w.burst_at_s * f, "burst_volume_s": w.burst_volume_s * f,
                                   "tail_s": w.tail_s * f}) for w in self.workloads]
        return self.model_copy(update={"repetitions": self.quick.repetitions, "workloads": wl,
                                       "name": self.name + "-quick"})

    def resolved(self) -> dict:
        return self.model_dump(mode="json")


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


def parse(text: str, source: str = "spec") -> Spec | GuardStudy:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise SpecError(f"{source}:{where}: not valid YAML: {getattr(e, 'problem', e)}") from None
    if not isinstance(doc, dict):
        raise SpecError(f"{source}: (top): must be a mapping of keys, got {type(doc).__name__}")
    model = GuardStudy if doc.get("kind") == "guard" else Spec
    try:
        return model.model_validate(doc)
    except ValidationError as e:
        raise SpecError(format_error(source, e)) from None


def load(path: str | Path) -> Spec | GuardStudy:
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise SpecError(f"{p}: no such file") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise SpecError(f"{p}: cannot read: {e.__class__.__name__}") from None
    return parse(text, str(p))
