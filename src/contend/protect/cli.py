"""`contend protect`: contend watch with --protect, its options the watch's (docs/protect.md)."""
from __future__ import annotations

import inspect
from typing import Any, Optional, cast

from ..watch.cli import watch


def _opt(name: str):
    """The watch's option of that name (its flags, default and help): protect's are the watch's own."""
    return inspect.signature(watch).parameters[name].default


def protect(target: list[str] = _opt("target"), period: float = _opt("period"),
            duration: Optional[float] = _opt("duration"), as_json: bool = _opt("as_json"),
            metrics: str = _opt("metrics"), ebpf: bool = _opt("ebpf"), capacity: list[str] = _opt("capacity"),
            cri: list[str] = _opt("cri"), resource: list[str] = _opt("resource"), dry_run: bool = _opt("dry_run"),
            victims: list[str] = _opt("victims"),
            confirm: float = _opt("confirm"), release: float = _opt("release"), cpu_floor: float = _opt("cpu_floor"),
            memory_floor: str = _opt("memory_floor"), net_floor: float = _opt("net_floor")):
    """Protect victims from the neighbours the watch blames: when a container is harmed on CPU, memory, disk or
    network and the blame names culprits with shares, hold them back on that resource in proportion (CPU weight,
    then a quota; memory.high; the guard's disk caps; a token bucket on what it sends, at its veth's host side),
    after the blame lasted --confirm seconds, until the victim is whole; give it back step by step once the
    culprit stops pressing; put every setting back on exit (`contend clean` after a kill). Never acts on a
    container at its own limit, an unexplained harm or the host. Each action is one JSON line on stderr
    (docs/protect.md)."""
    given = dict(target=target, period=period, duration=duration, as_json=as_json, metrics=metrics, ebpf=ebpf,
                 capacity=capacity, cri=cri, resource=resource, dry_run=dry_run, victims=victims, confirm=confirm,
                 release=release,
                 cpu_floor=cpu_floor, memory_floor=memory_floor, net_floor=net_floor)
    rest = {n: p.default.default for n, p in inspect.signature(watch).parameters.items()
            if n not in given and n != "protect"}
    return cast(Any, watch)(**given, **rest, protect=True)  # (typer's defaults are OptionInfo to mypy)
