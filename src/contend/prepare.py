"""How `contend run`, `contend trial` and `contend cluster render` prepare a study: the spec loaded once (its
quick pass and repetitions applied), a study to resume checked against its directory, the results directory
and the host checked, the host lock held, docker's engine started when asked. Every refusal is one line, exit 2."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .terminal import console, fail

if TYPE_CHECKING:
    from .study import Study

QUICK_HELP = "The spec's quick pass (as contend run --quick)."
REPS_HELP = "Override the spec's repetitions (as contend run -n)."


@contextmanager
def engines(spec, start: bool):
    """docker's engine for the study when asked (--start-engines) and SPEC names docker: the host's if it
    runs, else one started here and stopped when the block ends (runtimes.engine.docker_session)."""
    if not (start and any(r.split("-")[0] == "docker" for r in getattr(spec, "runtimes", ()))):
        yield
        return
    from .runtimes.engine import docker_session
    with docker_session() as engine:
        if engine == "started":
            console.print("started dockerd for this study; it stops when the study ends", highlight=False)
        elif engine is None:
            console.print("[yellow]dockerd could not be started here: docker's trials will be n/a[/yellow]")
        yield


LOCK = []  # the host lock, held until contend exits


def hold_host(directory: Path) -> None:
    """One study per host (exit 2 if another runs), and what a killed one left removed first."""
    from .hostlock import HostBusy, host_lock
    from .study import remove_stale
    try:
        LOCK.append(host_lock(directory))
    except HostBusy as e:
        fail(str(e))
    remove_stale(say=lambda s: console.print(s, highlight=False))


def resumed(directory: Path, spec_path: Optional[Path], quick: bool, repetitions: Optional[int],
             out: Optional[Path]) -> tuple[object, frozenset, Study]:
    """The spec of a results directory to continue, the trials it finished and its study, built once (exit 2
    when it cannot be)."""
    from .kinds import load
    from .spec import SpecError, first_change
    from .store import DB, Store
    if out is not None and out != directory:
        fail(f"--out {out}: a resumed study stays in its directory ({directory})")
    if not (directory / "spec.yaml").is_file() or not (directory / DB).is_file():
        fail(f"{directory}: not a results directory of contend run (no spec.yaml or {DB})")
    try:
        kept = load(directory / "spec.yaml")
    except SpecError as e:
        fail(str(e))
    if spec_path is None:
        if quick or repetitions is not None:
            fail("--quick and -n apply to a SPEC; to resume, give the same SPEC and options, or neither")
        spec = kept
    else:
        spec = load_spec(spec_path, quick, repetitions)
        change = first_change(kept.resolved(), spec.resolved())
        if change:
            fail(f"{spec_path}: not the study in {directory}: {change} (a resumed study must be the same; "
                 "start a new one with another --out)")
    from .kinds import study_for
    study = fanned_out(study_for(spec, directory, console), directory, "cannot be resumed")
    try:
        with Store(directory, read_only=True) as store:
            done = frozenset(t["trial_id"] for t in store.trials())
    except Exception as e:  # duckdb: locked by a running study, not a database
        fail(f"{directory}: cannot open the store: {str(e).splitlines()[0]}")
    return spec, done, study


def say_plan(spec, directory: Path, done: frozenset) -> None:
    """--dry-run: the spec checked as a run checks it (the host's preflight too), the plan said."""
    from .kinds import study_for
    from .spec import SpecError
    study = study_for(spec, directory, console)
    try:
        study.preflight()
    except SpecError as e:
        fail(str(e))
    if study.fans_out:
        planned = {t for t, _ in study.trials()}
        todo = f"{len(planned - done)} of {len(planned)} trials to run"
    else:
        todo = "its trials adapt to what they measure"
    console.print(f"{spec.name} (kind {spec.kind}): valid; {todo}; results would go to {directory} "
                  f"(dry run: nothing started)", highlight=False, soft_wrap=True)


def load_spec(path: Path, quick: bool, repetitions: Optional[int]):
    """The spec as the study will run it (exit 2 with one line when it is not valid)."""
    from .kinds import load
    from .spec import SpecError
    try:
        spec = load(path)
    except SpecError as e:
        fail(str(e))
    from pydantic import ValidationError

    from .spec import format_error
    for flag, change in (("--quick", quick and (lambda s: s.quickened())),
                         (f"-n {repetitions}", repetitions is not None and (lambda s: s.repeated(repetitions)))):
        if not change:
            continue
        try:
            spec = change(spec)
        except ValidationError as e:  # the quick section or N does not fit the study's bounds
            fail(format_error(f"{path} ({flag})", e))
        except ValueError as e:
            fail(f"{path} ({flag}): {' '.join(str(e).split())}")
    return spec


def study_of(spec, directory: Path, resumed: Study | None = None) -> Study:
    """The study of a spec's kind, writing to an empty results directory (or `resumed`, the one continued in its
    own), checked against this host."""
    from .kinds import study_for
    from .spec import SpecError
    if resumed is None and directory.exists() and any(directory.iterdir()):
        fail(f"{directory}: results directory exists and is not empty (choose another --out)")
    made = directory.absolute()  # checked, not made: nothing is written before the host lock is held
    while not made.exists():
        made = made.parent
    if not os.access(made, os.W_OK):  # a read-only checkout as the working directory, say (EROFS binds root too)
        fail(f"{directory}: cannot make the results directory: {made} is not writable (choose another --out)")
    study = resumed or study_for(spec, directory, console)
    try:
        study.preflight()  # checks that need the host (e.g. free disk space): before anything is started
    except SpecError as e:
        fail(str(e))
    return study



def fanned_out(study, where: Path, doing: str = "does not run trial by trial"):
    """The study, if its trials can run one by one, on any host or after an interruption (exit 2 otherwise)."""
    if not study.fans_out:
        fail(f"{where}: kind {study.spec.kind} {doing}: its trials depend on each other (the repetitions adapt)")
    return study


