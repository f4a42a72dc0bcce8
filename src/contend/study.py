"""A study: plan → run every item → commit each to the store → metrics → table and report.

The run loop only, the same for every kind (contend.kinds registers the kinds): a kind's trials are run by its
own package, measured data kept by store/, its report written by report/, so each piece stays testable alone.
"""
from __future__ import annotations

import importlib
import itertools
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Callable, TypeVar

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from .doctor import facts
from .faults import checkpoint
from .interrupts import INTERRUPTED
from .paths import DATA, free_space, write_text
from .report.page import Written, fewer_repetitions
from .spec import SpecError, StudyKind, dump
from .store import Cell, Store
from .tenants import TrialResult
from .tools import ToolFailed

Advance = Callable[[float, str], None]  # a running item's progress: share done (0-1), what it does now


def lazy(module: str, name: str) -> Callable:
    """`module.name`, imported when first called: a kind's report draws with matplotlib, whose import (about a
    second) a spec's validation, --help or a trial alone never needs."""
    def call(*args, **kw):
        return getattr(importlib.import_module(module), name)(*args, **kw)
    call.__name__ = call.__qualname__ = name
    return call


Item = TypeVar("Item")  # one item of a kind's plan (a TrialPlan, a tuple of its cell)

class Study:
    """The run loop every kind of study shares: spec.yaml and host.json, each item of its plan run and committed
    to the store as it ends (progress, ETA, retries, --resume, a trial alone), the report however it ends.
    A kind subclasses it (plan, ident, runtime_of, preflight, execute) and registers it in contend.kinds."""

    kind: str = ""  # the spec's `kind`, as the registry knows the kind
    model: type[StudyKind] = StudyKind  # the spec's model
    title = ""  # of the results table
    unit = "trials"
    cell: type[Cell] = Cell  # what one of its trials is, as the store keeps it (a table of the kind's own)
    # the kind's report: writes everything a results directory shows from its store (a pure function of it)
    report: Callable[[Path, Store, str], Written]
    directions: Mapping[str, int]  # which way is better for each metric its metrics.csv can hold

    def __init_subclass__(cls, kind: str, model: type[StudyKind], cell: type[Cell], title: str,
                          report: Callable[[Path, Store, str], Written], directions: Mapping[str, int],
                          unit: str = "trials", **kw):
        """A kind says what it is in its class line:
        `class X(Study, kind=..., model=..., cell=..., title=..., report=..., directions=...)` (directions: which
        way is better for each metric its metrics.csv can hold, its metrics' DIRECTIONS)."""
        super().__init_subclass__(**kw)
        cls.kind, cls.model, cls.cell, cls.title, cls.unit = kind, model, cell, title, unit
        cls.directions = directions
        cls.report = staticmethod(report)

    @staticmethod
    def headlines() -> dict[str, int]:
        """The direction (1 higher is better, -1 lower) of the headline figure of each resource this kind names
        in metrics.csv where the metric's name does not say it (contend compare)."""
        return {}

    def __init__(self, spec: StudyKind, directory: Path, console: Console | None):
        self.spec = spec
        self.dir = directory
        self.console = console or Console()  # (none: a plan read, nothing said)
        self.rows: list[dict] = []
        self.written: Written | None = None  # what the report wrote (its answers, its rows), once it is written
        self.views = "read"  # the views the terminal's tables show (contend run --views)

    # Its trials are independent of each other, so each can run alone on any host (`contend trial run`,
    # a cluster's pods) and the results be merged (`contend cluster collect`). A kind whose trials depend
    # on earlier ones (the oltp victim's adaptive repetitions) says False.
    fans_out = True
    only: str | None = None  # run this trial of the plan and no other (contend trial run)
    done: frozenset = frozenset()  # trial ids already in the store (contend run --resume): not run again

    def plan(self) -> list:
        """The items this study runs, in order; pure (no host needed)."""
        raise NotImplementedError

    def ident(self, item) -> str:
        """An item's trial id, as the store will keep it."""
        return item.id

    def runtime_of(self, item) -> str:
        return item.runtime

    def trials(self) -> list[tuple[str, str]]:
        """(trial id, runtime) of every item of the plan."""
        return [(self.ident(i), self.runtime_of(i)) for i in self.plan()]

    def preflight(self) -> None:
        """Refuse, with a SpecError (exit 2), a study this host cannot take; nothing is started yet."""

    def run(self) -> int:
        """What every study does around its own runs (`execute`): spec.yaml, host.json, the store, and the
        report and exit code however it ends (Ctrl-C keeps what finished)."""
        con = self.console
        self.dir.mkdir(parents=True, exist_ok=True)
        write_text(self.dir / "spec.yaml", dump(self.spec))
        self.failed, self.total, interrupted = 0, 0, False
        stopped = ""  # why the study could not go on: a host tool failed outside any trial (calibration, say)
        store = Store(self.dir, cell=self.cell)
        try:
            checkpoint("start")
            with con.status("looking at this host (a container per runtime)"):
                host_facts = facts(try_runtimes=True, try_probes=False)
            write_text(self.dir / "host.json", json.dumps(host_facts, indent=2))
            checkpoint("host-facts")
            self.execute(store, host_facts)
        except KeyboardInterrupt:
            interrupted = True
        except ToolFailed as e:
            stopped = str(e)
        finally:
            try:
                self.written = finish(con, self.dir, store, f"{self.spec.name}: {self.title}", type(self).report,
                                      self.views)
                self.rows = self.written.rows if self.written is not None else []
            except KeyboardInterrupt:  # every finished trial is in the store already: only the report is missing
                interrupted = True
                con.print(f"[yellow]interrupted[/yellow] while writing the report (contend report {self.dir} "
                          "writes it)", highlight=False)
        if stopped and not interrupted:
            print(f"contend: {stopped}", file=sys.stderr)  # one line, the last one, whatever the terminal
            return 1
        return outcome(con, self.dir, interrupted or INTERRUPTED.is_set(), self.failed, self.total, self.unit)

    def execute(self, store: Store, host_facts: dict) -> None:
        """Every item of the plan, each committed to the store as it ends (run_each)."""
        raise NotImplementedError

    def run_each(self, store: Store, items: list[Item], cost: list[float], header: str,
                 describe: Callable[[Item], str],
                 run_one: Callable[[Item, Advance], TrialResult | None]) -> None:
        """What every kind of study does with its plan: says it (header, the ETA from `cost`, seconds per item),
        runs each item under a progress bar (run_one may `advance` it: share done, what it does now) and
        commits each result to the store as it ends; failed ones are counted and said. An item whose run_one
        returns None was not needed and is not counted."""
        con = self.console
        if self.only is not None or self.done:
            keep = [i for i, item in enumerate(items)
                    if self.ident(item) not in self.done and self.only in (None, self.ident(item))]
            if self.only is not None:
                header = f"{header}; this run: trial {self.only} alone"
            if self.done:
                header = f"{header}; resumed: {len(self.done)} finished trials kept, {len(keep)} to run"
            items, cost = [items[i] for i in keep], [cost[i] for i in keep]
        self.total = len(items)
        done = list(itertools.accumulate(cost, initial=0.0))
        con.print(f"{header}, about {done[-1] / 60:.1f} min; results in {self.dir}", highlight=False)
        with progress_bar(con) as bar:
            task = bar.add_task("starting", total=done[-1], trial=f"0/{len(items)}")
            for i, item in enumerate(items):
                desc = describe(item)
                bar.update(task, completed=done[i], trial=f"{i + 1}/{len(items)}", description=desc)

                def advance(share: float, detail: str, base=done[i], span=cost[i], desc=desc) -> None:
                    bar.update(task, completed=base + span * min(1.0, share), description=f"{desc} {detail}")

                result = self._attempts(item, advance, run_one, desc)
                if result is None:  # not needed after all (e.g. the repetitions already converged)
                    self.total -= 1
                    bar.update(task, completed=done[i + 1])
                    continue
                rec = result.record
                store.add_trial(rec, result.steps, result.samples, result.events)
                if rec.status == "failed":
                    self.failed += 1
                    con.print(f"[red]failed[/red] {rec.trial_id}: {rec.reason}", highlight=False)
                elif rec.status == "ok" and rec.reason:
                    con.print(f"[yellow]partly failed[/yellow] {rec.trial_id}: {rec.reason}", highlight=False)
                bar.update(task, completed=done[i + 1])


    def _attempts(self, item, advance: Advance, run_one, desc: str) -> TrialResult | None:
        """run_one, and again while it fails, up to the spec's `retries`; the failed attempts' reasons stay
        with the result as events (its samples are those of the last attempt)."""
        failed: list[str] = []
        while True:
            if INTERRUPTED.is_set():
                raise KeyboardInterrupt
            checkpoint("trial")
            result = run_one(item, advance)
            if result is None or result.record.status != "failed" or len(failed) >= self.spec.retries:
                break
            failed.append(result.record.reason)
            self.console.print(f"[yellow]failed[/yellow] {desc}: {result.record.reason}; trying again "
                               f"({len(failed)} of {self.spec.retries})", highlight=False)
        if result is not None:
            result.events += [(0.0, "", "attempt-failed", f"attempt {k}: {why}") for k, why in enumerate(failed, 1)]
        return result


def facts_of_trial(host_facts: dict, runtime: dict | None) -> dict:
    """The host facts a trial rested on, kept with it (resctl-bench's sysreqs, DESIGN §8)."""
    return {"kernel": host_facts["host"]["kernel"], "cgroups": host_facts["cgroups"], "runtime": runtime or {},
            "load_generators": host_facts["load_generators"]}


def finish(con: Console, directory: Path, store: Store, title: str,
           report: Callable[[Path, Store, str], Written], views: str = "read") -> Written | None:
    """The end of every run, interrupted or not: the report from what the store holds, printed (the answers
    first); None where no trial finished."""
    try:
        checkpoint("report")
        trials = store.trials()
        written = report(directory, store, title) if trials else None
    finally:
        store.close()
    if written is None:  # an empty table would look like a result
        con.print(f"no trial finished: no table or report written ({directory} keeps the spec and host facts)",
                  highlight=False)
        return None
    con.print(written.terminal(title, views))
    for line in fewer_repetitions(trials):
        con.print(f"[yellow]fewer repetitions[/yellow] {line}", highlight=False)
    con.print(f"metrics: {directory / 'metrics.csv'}\nreport:  {written.path}")
    return written


def outcome(con: Console, directory: Path, interrupted: bool, failed: int, total: int, what: str) -> int:
    """The exit code (130 interrupted, 1 something failed, 0 ok), said in one line."""
    if interrupted:
        con.print(f"[yellow]interrupted[/yellow]: finished {what} are kept in {directory}; "
                  "everything the interrupted one created was removed (check: contend clean --dry-run)\n"
                  f"continue it with: contend run --resume {directory}", highlight=False)
        return 130
    if failed:
        con.print(f"[red]{failed} of {total} {what} failed[/red] (reasons in the table and report)")
        return 1
    return 0


def progress_bar(console: Console) -> Progress:
    """What every long run shows: what runs now, the bar, trial k/n, time spent and the ETA."""
    return Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                    TextColumn("trial {task.fields[trial]}"), TimeElapsedColumn(), TextColumn("ETA"),
                    TimeRemainingColumn(), console=console)


def need_space(need: int, what: str) -> None:
    """Refuse (SpecError, exit 2) a study that would write more to the experiment device than is free."""
    free, _ = free_space(DATA)
    if free < need:
        raise SpecError(f"{DATA}: {what} and only {free / 2**20:.0f} MiB are free (at least "
                        f"{need / 2**20:.0f} MiB needed)")


def unavailable(runtime: str, runnable: dict) -> str:
    """Why doctor found the runtime unable to run a container here ("" = it can, or it was not looked at)."""
    avail = runnable.get(runtime)
    return f"{runtime} not available: {avail['reason']}" if avail is not None and not avail["runs"] else ""


def remove_stale(say: Callable[[str], None]) -> int:
    """What a killed study left (containers, cgroups, data directories, namespaces, links), removed before
    a new one starts, as `contend clean` removes it; the host lock says no study is running. A guard's caps and
    weights and an engine's image are not a study's: `contend clean` removes those. A disk's scheduler that a
    killed guard switched is put back: every later disk trial would run under it."""
    from .clean import clean
    lines: list[str] = []
    n = clean(say=lines.append, only=lambda x: x.kind in ("guard scheduler",) or (
              not x.kind.startswith("guard ") and not x.kind.endswith(" image")),
              lock_is_ours=True)
    if n:
        say(f"removing what an earlier contend study left on this host ({n} item(s)):")
        for line in lines:
            say(f"  {line}")
    return n
