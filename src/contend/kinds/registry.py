"""The registry: a spec's `kind` → its Study; parse, load and refresh by kind."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ..report.page import Written, read_yaml
from ..spec import StudyKind, load_as, parse_as
from ..store import Store
from ..study import Study
from .detect.study import DetectStudy
from .diskfill.study import DiskFillStudy
from .guard.study import GuardStudy
from .isolation.study import IsolationStudy
from .oltp.study import OltpStudy
from .parallel.study import ParallelStudy
from .protect.study import ProtectStudy

KINDS: dict[str, type[Study]] = {k.kind: k for k in (
    IsolationStudy,  # kind: isolation (the default), Volpert et al.
    ParallelStudy,  # kind: parallel, CoPTS
    GuardStudy,  # kind: guard, the guard judged against Aridac's workloads
    DiskFillStudy,  # kind: diskfill, Kim et al.
    OltpStudy,  # kind: oltp, Xavier et al.
    DetectStudy,  # kind: detect, contend watch against injected antagonists
    ProtectStudy,  # kind: protect, contend protect paired against no action and a fixed policy
)}
MODELS = {name: k.model for name, k in KINDS.items()}


def register(kind: type[Study]) -> None:
    """A kind added at run time, as its line in KINDS above adds it (tests/kinds/echo, a test-only kind, proves the
    recipe of docs/architecture.md with it)."""
    KINDS[kind.kind] = kind
    MODELS[kind.kind] = kind.model


def parse(text: str, source: str = "spec") -> StudyKind:
    """The spec in `text`, as the model of its kind; SpecError (one line) otherwise."""
    return parse_as(MODELS, text, source)


def load(path: str | Path) -> StudyKind:
    """The spec in the file at `path`, as the model of its kind; SpecError (one line) otherwise."""
    return load_as(MODELS, path)


def study_for(spec: StudyKind, directory: Path, console: Console | None) -> Study:
    """The study that runs a spec of its kind."""
    return KINDS[spec.kind](spec, directory, console)


def kind_of(directory: Path) -> type[Study]:
    """The kind of study a results directory holds (spec.yaml says it; a directory without one is an isolation
    study's)."""
    return KINDS.get(read_yaml(directory / "spec.yaml").get("kind", "isolation"), IsolationStudy)


def open_store(directory: Path | str, read_only: bool = False) -> Store:
    """A results directory's store, its trials read with their kind's cells."""
    directory = Path(directory)
    return Store(directory, read_only=read_only, cell=kind_of(directory).cell)


def refresh(directory: Path, store: Store, title: str) -> Written:
    """Everything a results directory shows, from its store, by its kind's report."""
    study = kind_of(directory)
    store.bind(study.cell)  # a directory an older contend wrote is converted here
    return study.report(directory, store, title)


def directions() -> dict[str, int]:
    """Which way is better for every metric any kind's metrics.csv can hold (contend compare): each kind's own
    DIRECTIONS, gathered. Two kinds that name one metric agree on it (tests/test_compare.py)."""
    return {name: d for k in KINDS.values() for name, d in k.directions.items()}


def headlines() -> dict[str, int]:
    """Every kind's headline directions (contend compare)."""
    return {name: d for k in KINDS.values() for name, d in k.headlines().items()}
