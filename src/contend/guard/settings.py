"""The guard's settings, in one table: every surface is made from it. `contend guard`'s options (`options`), the
config file's and a guard study's `guard:` keys (config.GuardSettings, its fields' bounds and descriptions), a
study's sweep keys and which policy reads which (`reads`), the policy's constructor (`policy_args`) and what the
guard's log and a study's records say a policy ran with (`POLICY_ARGS`). A knob is written here once; its help is its
documentation (`contend guard --help`, docs/guard.md's table is checked against it).

Knobs that were measured and not kept (`rise`, `spread`, `patience`, `memory`, off by default until 2026-12-07) are
gone; what they did is in docs/results/archive.md."""
from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Optional

# the policies that cap, adapting: what reads the period, the window, P and the disk's views
ADAPTIVE = ("aridac", "contend", "hybrid")
ESTIMATES = ("contend", "hybrid")  # the policies with contend's capacity estimate
CAPS = ("static", *ADAPTIVE)  # every policy that sets caps


@dataclass(frozen=True)
class Knob:
    name: str
    type: type  # int, float or bool
    help: str
    reads: tuple[str, ...]  # the policies it changes (a sweep over it runs only these)
    default: Any = None  # None: the policy's own (its class's field)
    bounds: dict[str, float] = field(default_factory=dict)  # pydantic's ge, gt, le, lt
    policy: bool = False  # passed to the policy's constructor (else the guard's own: its period, floor, views)
    flags: tuple[str, ...] = ()  # the option's names, where not --NAME


KNOBS: tuple[Knob, ...] = (
    Knob("period_ms", int, "Collector and policy period, ms (default: 1000 for aridac, as its authors' code "
         "samples; else 100).", ADAPTIVE, bounds={"ge": 10, "le": 60_000}),
    Knob("window", int, "N: periods in a target's lifeline (default 30).", ADAPTIVE, 30, {"ge": 1, "le": 100_000},
         policy=True),
    Knob("p", float, "P: elastic ratio, cap = lifeline × (1 + P) (default: contend 0.2; aridac 0.35, its code's "
         "ELASTIC; the paper's text says 0.2).", ADAPTIVE, bounds={"ge": 0, "le": 100}, policy=True, flags=("--p",)),
    Knob("floor", float, "No cap below this share of the capacity (default 0.02).", CAPS, 0.02,
         {"gt": 0, "lt": 1}),
    Knob("hysteresis", float, "contend/hybrid: a cap in force is rewritten only when the policy moves it by more "
         "than this share (default 0.05; 0: every move).", ESTIMATES, bounds={"ge": 0, "lt": 1}),
    Knob("backoff", float, "contend/hybrid: after a pre-emption the capacity estimate drops to this × what the "
         "disk delivered (default 0.9).", ESTIMATES, bounds={"gt": 0, "le": 1}, policy=True),
    Knob("climb", float, "contend/hybrid: the estimate's growth a period while nobody is pre-empted, × the "
         "capacity (default 0.01; ten times slower near the level that hurt).", ESTIMATES,
         bounds={"gt": 0, "le": 1}, policy=True),
    Knob("latency_ms", float, "iolatency: the io.latency target of the targets weighted heaviest, ms (default 5; "
         "set it 10-15 % above their latency alone).", ("iolatency",), bounds={"ge": 0.001, "le": 10_000},
         policy=True),
    Knob("io_bytes", float, "What one I/O costs beside its bytes, in bytes: usage is bytes + IOs × this, and a cap "
         "bounds IOs/s as well (cap / (this + 4 KiB)). Default: the disk's calibration (1M write bandwidth / 4K "
         "write IOPS - 4 KiB), else 12 KiB; 0: bytes/s alone.", CAPS, bounds={"ge": 0, "le": 1 << 30}),
    Knob("direct_view", bool, "See a target writing around the page cache, within its cap, as its cgroup was "
         "charged, not as its share of what the disk wrote (default: the direct view on a disk told nothing, the "
         "share on one told a --capacity; measured in docs/results/archive.md 2026-12-03).", ADAPTIVE,
         flags=("--direct-view/--share-view",)),
)
BY_NAME = {k.name: k for k in KNOBS}
NAMES = tuple(BY_NAME)
POLICY_ARGS = tuple(k.name for k in KNOBS if k.policy)  # the policy's constructor's
# those a policy has its own default for (None in the settings): the guard's log and a study's records say its value
POLICY_OWN = tuple(k.name for k in KNOBS if k.policy and k.default is None)


def reads(policy: str) -> tuple[str, ...]:
    """The settings a policy reads, in the table's order."""
    return tuple(k.name for k in KNOBS if policy in k.reads)


def policy_args(policy: str, settings: dict[str, Any]) -> dict[str, Any]:
    """The settings given (not None) that the policy's constructor takes."""
    return {k: v for k, v in settings.items() if k in POLICY_ARGS and policy in BY_NAME[k].reads and v is not None}


def knob(name: str) -> Any:
    """A GuardSettings field from the table: its default, bounds and description."""
    from pydantic import Field
    k = BY_NAME[name]
    return Field(default=k.default, description=k.help, **k.bounds)  # type: ignore[call-overload]


def options(func: Callable) -> Callable:
    """A typer command with one option per knob, where its parameter `settings` stands (each None unless given):
    the command receives them as that one dict."""
    import typer
    hints = typing.get_type_hints(func)
    kw_only = inspect.Parameter.KEYWORD_ONLY  # typer passes every option by name
    params: list[inspect.Parameter] = []
    for p in inspect.signature(func).parameters.values():
        if p.name == "settings":
            params += [inspect.Parameter(k.name, kw_only, default=typer.Option(None, *k.flags, help=k.help),
                                         annotation=Optional[k.type]) for k in KNOBS]
        else:
            params.append(p.replace(kind=kw_only, annotation=hints.get(p.name, p.annotation)))

    @functools.wraps(func)
    def command(**kw: Any) -> Any:
        return func(settings={k: kw.pop(k) for k in NAMES}, **kw)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # typer reads the signature above, not the function's own
    return command
