"""The guard's configuration: a YAML file and/or command-line flags, validated with pydantic.

Every error is one line naming where (file or flag) and what (exit 2)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import yaml
from pydantic import Field, ValidationError, ValidationInfo, field_validator

from ..diskuse import MIN_CAP
from ..spec import SpecError, Strict, format_error, yaml_problem
from .policy import POLICIES, PolicyName
from .settings import knob
from .targets import check_selector

# what a disk can deliver, bytes/s: a capacity outside these is a typo or a broken calibration, and a
# capacity of 0 would cap every target at the floor; MIN_CAP is the lowest cap the guard ever sets
MIN_CAPACITY, MAX_CAPACITY = 1e6, 1e12
UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 1 << 10, "mi": 1 << 20, "gi": 1 << 30}


def parse_rate(text: str | float | int) -> float:
    """'800M', '1.5G', '500Mi', 1e9 → bytes/s (decimal units, as fio's; 'i' for binary)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            return float(text)
        except OverflowError:  # YAML's 400-digit integer: too big for any disk (issue 52 L4)
            return math.inf
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*([kKmMgGtT]i?)?[bB]?(?:/s)?\s*", str(text))
    if not m:
        raise ValueError(f"not a rate: {text!r} (e.g. 800M, 1.5G, 500Mi)")
    return float(m.group(1)) * UNITS[(m.group(2) or "").lower()]


def check_capacity(v: float) -> float:
    if not (isinstance(v, (int, float)) and math.isfinite(v) and MIN_CAPACITY <= v <= MAX_CAPACITY):
        raise ValueError(f"must be a rate from 1M to 1T bytes/s, got {v!r}")
    return float(v)


def cap_floor(share: float, told: float, believed: float) -> float:
    """No cap below `share` × the disk's capacity: the one told or the policy's estimate (nan: it has none), whichever
    is lower, and never below MIN_CAP. A number told is a starting point: told 2 x, a floor of 0.02 of it was 0.3 of
    the estimate the disk showed, and held the IOPS-bound neighbour there at 2.5 x its calm rate, the victim at 0.88
    (guard-told-mixed, docs/results/archive.md 2026-12-02)."""
    basis = told if math.isnan(believed) else min(told, believed)
    return max(MIN_CAP, share * basis) if math.isfinite(basis) else MIN_CAP


# a disk's capacity not told: the policy learns it (inf through the guard and its policy; "auto" in a config)
AUTO = "auto"


def sees_direct(direct_view: bool | None, capacity: float) -> bool:
    """Whether the guard sees a direct writer within its cap as charged on a disk told `capacity` (inf: told
    nothing): as the settings say, else only where told nothing (GuardSettings.direct_view)."""
    return direct_view if direct_view is not None else not math.isfinite(capacity)


class GuardSettings(Strict):
    """The guard's tunables, shared by `contend guard` and guard studies: each field's default, bounds and meaning
    are its row of the settings table (settings.KNOBS); None is the policy's own."""

    period_ms: int | None = knob("period_ms")
    window: int = knob("window")
    p: float | None = knob("p")
    floor: float = knob("floor")
    hysteresis: float | None = knob("hysteresis")
    backoff: float | None = knob("backoff")
    climb: float | None = knob("climb")
    latency_ms: float | None = knob("latency_ms")
    # io.cost's linear model: a 4 KiB random write costs what the disk's bandwidth / its 4 KiB IOPS does; usage,
    # capacity and caps are in these bytes. None: from the disk's calibration (else diskuse.DEFAULT_IO_BYTES)
    io_bytes: float | None = knob("io_bytes")
    # None: on for a disk the guard is told nothing of, off for one told a number (sees_direct; diskuse.settle)
    direct_view: bool | None = knob("direct_view")


class Disk(Strict):
    device: str = Field(pattern=r"^[0-9]+:[0-9]+$")  # MAJ:MIN of a whole disk
    capacity: float  # bytes/s (reads + writes) the disk delivers; "auto" (inf): the policy learns it

    @field_validator("capacity", mode="before")
    @classmethod
    def _rate(cls, v):
        if isinstance(v, str) and v.strip().lower() == AUTO:
            return math.inf
        return check_capacity(parse_rate(v))


class TargetSel(Strict):
    target: str
    weight: float = Field(default=1.0, gt=0, le=1000)

    @field_validator("target")
    @classmethod
    def _known(cls, v: str) -> str:
        return check_selector(v)


class GuardConfig(GuardSettings):
    policy: PolicyName = "contend"
    targets: list[TargetSel] = Field(min_length=1)
    disks: list[Disk] = []  # empty: the calibrated experiment disk and its capacity
    dry_run: bool = False
    metrics: str = Field(default="127.0.0.1:9731", pattern=r"^(off|[^:]*:[0-9]+)$")  # Prometheus; "off"
    alert_cmd: str = ""  # run by the shell on every alert raised or cleared (CONTEND_ALERT_* in its env)
    rescan_s: float = Field(default=1.0, gt=0, le=3600)  # how often selectors are resolved again
    # at start, how long a named target that does not exist yet (cgroup:PATH, docker:NAME) is waited for
    wait_s: float = Field(default=60.0, ge=0, le=86_400)

    @field_validator("disks")
    @classmethod
    def _told_where_needed(cls, v: list[Disk], info: ValidationInfo) -> list[Disk]:
        policy = info.data.get("policy", "contend")
        if POLICIES[policy].needs_capacity:
            for i, d in enumerate(v):
                if not math.isfinite(d.capacity):
                    raise ValueError(f"[{i}].capacity: {AUTO} needs a policy that learns the disk (contend, hybrid): "
                                     f"{policy} divides a capacity it is told")
        return v

    @field_validator("targets", mode="before")
    @classmethod
    def _short_targets(cls, v):
        if isinstance(v, list):
            return [{"target": t} if isinstance(t, str) else t for t in v]
        return v


def load(path: Path | None, overrides: dict, source_flags: str = "command line") -> GuardConfig:
    """The config file (if any) with the flags given on top."""
    doc: dict = {}
    source = source_flags
    if path is not None:
        source = str(path)
        try:
            doc = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise SpecError(f"{path}: no such file") from None
        except yaml.YAMLError as e:
            raise SpecError(f"{path}: {yaml_problem(e)}") from None
        if not isinstance(doc, dict):
            raise SpecError(f"{path}: (top): must be a mapping of keys")
    for k, v in overrides.items():
        if v is not None and v != [] and v != ():
            doc[k] = v
            source = source_flags if path is None else f"{path} (with flags)"
    try:
        return GuardConfig.model_validate(doc)
    except ValidationError as e:
        raise SpecError(format_error(source, e)) from None


def default_disks(policy: str = "contend", say=print) -> dict[str, float]:
    """The calibrated experiment disk and its bandwidth; never calibrated: the experiment disk with its capacity
    to learn (inf), or, for a policy that divides a number (static, aridac), calibrated now."""
    from ..doctor import ensure_capacity, load_capacity
    from ..doctor.calibrate import CAPACITY_FILE, device_of
    from ..paths import DATA
    cap = load_capacity()
    if "disk_write_bw_bytes_s" not in cap and not POLICIES[policy].needs_capacity:
        dev = device_of(DATA)
        say(f"no capacity told and {dev} never calibrated: the {policy} policy learns what it delivers from the "
            f"first contention it sees (--capacity {dev}=RATE tells it where to start)")
        return {dev: math.inf}
    cap = ensure_capacity(["disk"], say=say)
    try:
        return {cap["disk_device"]: check_capacity(cap["disk_write_bw_bytes_s"])}
    except ValueError as e:
        raise SpecError(f"{CAPACITY_FILE}: disk_write_bw_bytes_s: {e} (contend doctor --calibrate measures it "
                        f"again; --capacity MAJ:MIN=RATE sets it)") from None
