"""runtimes: one interface for runc, crun, runsc, lxc, docker/podman and kata; registry.py picks one by name."""
from .base import (
    NAME_PREFIX,
    STATE,
    Availability,
    Container,
    ContainerSpec,
    Runtime,
    RuntimeFailed,
    last_line,
    signals_deferred,
)
from .builds import BUILDS, built, why_not_built
from .engine import Engine, Kata
from .lxc import Lxc
from .oci import Crun, Runc, Runsc
from .registry import KNOWN, SIMPLE, all_runtimes, availability, get

__all__ = ["BUILDS", "built", "why_not_built", "NAME_PREFIX", "STATE", "Availability", "Container", "ContainerSpec",
           "Engine", "Runtime", "RuntimeFailed", "KNOWN", "get", "availability", "all_runtimes", "last_line",
           "signals_deferred", "Crun", "Kata", "Lxc", "Runc", "Runsc", "SIMPLE"]
