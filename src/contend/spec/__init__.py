"""The experiment spec: YAML validated with pydantic; every error is one line naming file, field path and rule.

What every kind's model shares (base.py) and how a document is read (document.py); each kind's own model is in
its folder (`contend.kinds.<kind>.spec`), and which model a document is read with is the registry's
(`contend.kinds.load`), so this package knows no study.
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

__all__ = ["NOT_RUN", "RESOURCES", "SIZE", "STANDARD", "Capacity", "ContainerLimits",
           "Metrics",
           "Probes", "Quick", "Runtimes", "Scenario", "SpecError", "Strict",
           "StudyKind", "Trial", "digest", "dump", "first_change", "format_error", "known_runtime",
           "known_runtimes", "load_as", "no_repeats", "parse_as", "size_bytes", "unique", "yaml_problem"]
