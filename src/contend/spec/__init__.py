"""The experiment spec: YAML validated with pydantic; every error is one line naming file, field path and rule.

The models of each kind are in their modules (base: what every kind shares); which model a document is read
with is the kind registry's (`contend.kinds.load`), so this package knows no study.
"""
from __future__ import annotations

from .base import (
                   NOT_RUN,
                   RESOURCES,
                   SIZE,
                   STANDARD,
                   Capacity,
                   ContainerLimits,
                   Metrics,
                   Probes,
                   Quick,
                   Runtimes,
                   Scenario,
                   SpecError,
                   Strict,
                   StudyKind,
                   Trial,
                   first_change,
                   known_runtime,
                   known_runtimes,
                   no_repeats,
                   size_bytes,
                   unique,
)
from .document import digest, dump, format_error, load_as, parse_as, yaml_problem
from .guard import GuardQuick, GuardSettings, GuardStudy, Workload
from .isolation import Spec
from .parallel import BENCHMARK_NAMES, ParallelQuick, ParallelStudy, Sizes
from .victim import DiskFillStudy, OltpStudy

__all__ = ["BENCHMARK_NAMES", "NOT_RUN", "RESOURCES", "SIZE", "STANDARD", "Capacity", "ContainerLimits",
           "DiskFillStudy", "GuardQuick", "GuardSettings", "GuardStudy", "Metrics", "OltpStudy", "ParallelQuick",
           "ParallelStudy", "Probes", "Quick", "Runtimes", "Scenario", "Sizes", "Spec", "SpecError", "Strict",
           "StudyKind", "Trial", "Workload", "digest", "dump", "first_change", "format_error", "known_runtime",
           "known_runtimes", "load_as", "no_repeats", "parse_as", "size_bytes", "unique", "yaml_problem"]
