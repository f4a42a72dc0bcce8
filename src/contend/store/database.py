"""The store: one DuckDB file per results directory (trials, each kind's cells, steps, samples, events,
metrics) + CSV export.

A trial and everything it measured is committed in one transaction, so a crash never leaves half a trial.
`trials` has the columns every kind's trial has; what a kind's trial is (a scenario and a resource, a benchmark
and a container count, a workload and a policy) is in a table of the kind's own (cells.py). A directory written
before that (its `trials` had scenario, resource and scenario_params) is converted when a study of its kind
opens it for writing (`contend report DIR`, `contend run --resume DIR`).
"""
from __future__ import annotations

import csv
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

from ..faults import checkpoint
from ..measured import Samples, StepWindow
from ..paths import NAME, BadName, check_name, open_new
from .cells import Cell

DB = "contend.duckdb"
METRICS_CSV = "metrics.csv"
CSV_COLUMNS = ("runtime", "scenario", "resource", "view", "metric", "value", "ci_low", "ci_high", "n")

SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    trial_id VARCHAR PRIMARY KEY, kind VARCHAR, runtime VARCHAR, repetition INTEGER,
    status VARCHAR, reason VARCHAR, started_at TIMESTAMP, ended_at TIMESTAMP, capacity JSON, facts JSON);
CREATE TABLE IF NOT EXISTS steps (
    trial_id VARCHAR, step INTEGER, phase VARCHAR, t_start DOUBLE, t_end DOUBLE, tenant VARCHAR, ideal DOUBLE);
CREATE TABLE IF NOT EXISTS samples (
    trial_id VARCHAR, t DOUBLE, tenant VARCHAR, source VARCHAR, quantity VARCHAR, value DOUBLE);
CREATE TABLE IF NOT EXISTS events (
    trial_id VARCHAR, t DOUBLE, tenant VARCHAR, kind VARCHAR, detail VARCHAR);
CREATE TABLE IF NOT EXISTS trial_metrics (
    trial_id VARCHAR, view VARCHAR, metric VARCHAR, value DOUBLE);
CREATE TABLE IF NOT EXISTS metrics (
    runtime VARCHAR, scenario VARCHAR, resource VARCHAR, view VARCHAR, metric VARCHAR,
    value DOUBLE, ci_low DOUBLE, ci_high DOUBLE, n INTEGER);
"""


# a store may come from elsewhere (cluster collect, report DIR, compare, --resume): DuckDB runs what its views
# and macros say, so no file outside it may be reached and no extension loaded, and anything but contend's own
# tables is refused before a query touches it (issue 52, H1)
SAFE: dict[str, str | bool | int | float | list[str]] = {
    "enable_external_access": False, "autoload_known_extensions": False, "autoinstall_known_extensions": False}
TABLES = {"trials", "steps", "samples", "events", "trial_metrics", "metrics", "trials_before_cells"}


class ForeignStore(ValueError):
    """A store that holds more than contend's own tables, or a row whose name is not a name: never read."""


# the columns whose values become file names (figures/timeline-TRIAL.png, frames/TRIAL.jsonl, copts/BENCHMARK/
# RUNTIME/...): each must be a paths.NAME in every row (issue 95 H1); a tenant may be empty (a trial's own event)
NAMED = {"trials": ("trial_id", "runtime"), "steps": ("trial_id", "tenant"),
         "samples": ("trial_id", "tenant"), "events": ("trial_id", "tenant"), "trial_metrics": ("trial_id",)}
MAY_BE_EMPTY = {"tenant"}
SQL_NAME = NAME.pattern.replace("\\w", "A-Za-z0-9_").removesuffix("\\Z")  # the same rule, as RE2 spells it


COMMON = ("trial_id", "kind", "runtime", "repetition", "status", "reason", "started_at", "ended_at", "capacity",
          "facts")
LEGACY = ("scenario", "resource", "scenario_params")  # trials' own columns before cells had tables


@dataclass(kw_only=True)
class TrialRecord:
    """One trial as the store keeps it: what every trial has, and its kind's cell."""
    trial_id: str
    runtime: str
    repetition: int
    cell: Cell
    capacity: dict = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    status: str = "failed"  # "ok" | "failed" | "n/a"
    reason: str = ""
    started_at: float = field(default_factory=time.time)  # unix seconds
    ended_at: float = field(default_factory=time.time)


class Store:
    """A results directory's DuckDB file. `cell`: the kind whose trials it holds (a study, its report, collect
    say it); without it only what every trial has is read (read_only: as the file is, nothing converted)."""

    def __init__(self, directory: Path, read_only: bool = False, cell: type[Cell] | None = None):
        self.dir = Path(directory)
        path = self.dir / DB
        if read_only and not path.exists():
            raise FileNotFoundError(f"{self.dir}: no {DB} (not a contend results directory)")
        self.con = duckdb.connect(str(path), read_only=read_only, config=SAFE)
        try:
            self._refuse_foreign()
            self._refuse_bad_names()
        except ForeignStore:
            self.con.close()
            raise
        self.read_only = read_only
        self.cell: type[Cell] | None = None
        if not read_only and not self.legacy():
            self.con.execute(SCHEMA)
        if cell is not None:
            self.bind(cell)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _refuse_foreign(self) -> None:
        """Only contend's tables (its cells' `cells_<kind>` too): a view, a macro, a sequence or another table is
        what a crafted store would run as root."""
        q = self.con.execute
        found = [f"view {r[0]}" for r in q("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
        found += [f"macro {r[0]}" for r in q("SELECT function_name FROM duckdb_functions() WHERE NOT internal "
                                              "AND function_type IN ('macro', 'table_macro')").fetchall()]
        found += [f"sequence {r[0]}" for r in q("SELECT sequence_name FROM duckdb_sequences()").fetchall()]
        found += [f"table {s}.{t}" for s, t in q("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT "
                                                 "internal").fetchall()
                  if s != "main" or not (t in TABLES or t.startswith("cells_") and t[6:].isidentifier())]
        if found:
            raise ForeignStore(f"{self.dir / DB}: not a store contend wrote (it defines {', '.join(found[:3])}"
                               f"{' …' if len(found) > 3 else ''}): refused, never read")

    def _refuse_bad_names(self) -> None:
        """Every value that becomes a file name is a name (NAMED; a cell table's text columns too): a store from
        elsewhere whose trial id is `../../etc/logrotate.d/x` is refused at its first row so, never written."""
        tables = [r[0] for r in self.con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal"
                                                 ).fetchall()]
        for table in sorted(tables, key=lambda t: (t != "trials", not t.startswith("cells_"), t)):
            types = dict(self.con.execute("SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ?",
                                          [table]).fetchall())
            named = NAMED.get(table, ()) if not table.startswith("cells_") else \
                [c for c, ty in types.items() if ty == "VARCHAR"]
            for col in (c for c in named if c in types):
                # names from code, never data (duckdb_tables and NAMED); the distinct values first, then the row
                cond = "coalesce(v, '') <> '' AND " if col in MAY_BE_EMPTY else ""
                bad = self.con.execute(f"SELECT v FROM (SELECT DISTINCT {col} AS v FROM {table}) WHERE {cond}"
                                       "NOT coalesce(regexp_full_match(v, ?), false) LIMIT 1", [SQL_NAME]).fetchone()
                if bad is None:
                    continue
                row = self.con.execute(f"SELECT n FROM (SELECT row_number() OVER () AS n, {col} AS v FROM {table}) "
                                       "WHERE v IS NOT DISTINCT FROM ? LIMIT 1", [bad[0]]).fetchone()
                try:
                    check_name(bad[0])
                    why = f"{bad[0]!r} is not a name"
                except BadName as e:
                    why = str(e)
                raise ForeignStore(f"{self.dir / DB}: {table} row {row[0] if row else '?'}: {col}: {why}: refused, "
                                   "never read")

    def _columns(self, table: str, catalog: str | None = None) -> list[str]:
        """A table's columns in order (none: no such table); `catalog`: an attached database's name."""
        return [r[0] for r in self.con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_catalog = coalesce(?, current_database())"
            " AND table_schema = 'main' AND table_name = ? ORDER BY ordinal_position", [catalog, table]).fetchall()]

    def legacy(self) -> bool:
        """Written before cells had tables of their own (its trials have a scenario column)."""
        return "scenario" in self._columns("trials")

    def bind(self, cell: type[Cell]) -> None:
        """Hold trials of this kind: its table made, an older directory's trials converted into it."""
        if self.legacy():
            if self.read_only:
                raise ValueError(f"{self.dir}: written by an older contend; `contend report {self.dir}` "
                                 "converts it")
            self._convert(cell)
            self._refuse_bad_names()  # the cells an older directory's labels became
        elif not self.read_only:
            self.con.execute(cell.ddl())
        self.cell = cell

    def _convert(self, cell: type[Cell]) -> None:
        """An older directory's trials (scenario, resource, scenario_params in trials) into `trials` and the
        kind's cell table, in one transaction."""
        con = self.con
        old = con.execute(f"SELECT {', '.join(c for c in COMMON if c != 'kind')}, {', '.join(LEGACY)} "
                          "FROM trials").fetchall()
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute("ALTER TABLE trials RENAME TO trials_before_cells")
            con.execute(SCHEMA)
            con.execute(cell.ddl())
            n = len(COMMON) - 1
            for row in old:
                common, (scenario, resource, params) = row[:n], row[n:]
                c = cell.legacy(scenario, resource, json.loads(params) if params else {})
                con.execute(f"INSERT INTO trials VALUES (?, ?, {', '.join('?' * (n - 1))})",
                            [common[0], cell.kind, *common[1:]])
                con.execute(f"INSERT INTO {cell.table()} VALUES (?, {', '.join('?' * len(cell.columns()))})",
                            [common[0], *c.row()])
            con.execute("DROP TABLE trials_before_cells")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    # -- writing
    def add_trial(self, rec: TrialRecord, steps: Sequence[StepWindow], samples: Sequence[tuple],
                  events: Sequence[tuple]) -> None:
        """One transaction: the trial row, its cell, its steps, samples (t, tenant, source, quantity, value) and
        events."""
        con = self.con
        cell = type(rec.cell)
        check_name(rec.trial_id, "trial id")
        if self.cell is not cell:
            self.bind(cell)
        con.execute("BEGIN TRANSACTION")
        try:
            for table in ("steps", "samples", "events", "trial_metrics", cell.table(), "trials"):
                con.execute(f"DELETE FROM {table} WHERE trial_id = ?", [rec.trial_id])
            con.execute("INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?, to_timestamp(?), to_timestamp(?), ?, ?)",
                        [rec.trial_id, cell.kind, rec.runtime, rec.repetition, rec.status, rec.reason,
                         rec.started_at, rec.ended_at, json.dumps(rec.capacity), json.dumps(rec.facts)])
            con.execute(f"INSERT INTO {cell.table()} VALUES (?, {', '.join('?' * len(cell.columns()))})",
                        [rec.trial_id, *rec.cell.row()])
            checkpoint("store-write")  # a fault here tests the transaction: no half trial may remain
            rows = [(rec.trial_id, s.step, s.phase, s.t_start, s.t_end, tenant, level)
                    for s in steps for tenant, level in s.ideal.items()]
            if rows:
                con.executemany("INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
            if samples:
                t, tenant, source, quantity, value = zip(*samples)
                cols = {"trial_id": np.full(len(t), rec.trial_id), "t": np.asarray(t, float),
                        "tenant": np.asarray(tenant), "source": np.asarray(source),
                        "quantity": np.asarray(quantity), "value": np.asarray(value, float)}
                con.register("_new_samples", cols)
                con.execute("INSERT INTO samples SELECT * FROM _new_samples")
                con.unregister("_new_samples")
            if events:
                con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", [(rec.trial_id, *e) for e in events])
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    def merge(self, other: Path, only: set[str] | None = None) -> list[str]:
        """Every trial of another results directory's store (of this store's kind), with all it measured, in
        one transaction (a trial already here under the same id is replaced). Returns the trial ids taken.
        `only`: the trial ids it may hold (an artefact's label names one: a store that also holds another node's
        trial would replace that node's). Its names are checked as it opens (_refuse_bad_names). Metrics are
        not copied: they are recomputed from the samples (report.refresh)."""
        if self.cell is None:
            raise ValueError(f"{self.dir}: merge needs the store's kind (Store(..., cell=...))")
        con, cell = self.con, self.cell
        # read through a Store of its own (contend's tables only, no file access); ATTACH would need file access
        with Store(other, read_only=True) as src:
            if "kind" not in src._columns("trials"):
                raise ValueError(f"{other}: written by an older contend; `contend report {other}` converts it")
            ids = [r[0] for r in src.con.execute("SELECT trial_id FROM trials ORDER BY started_at").fetchall()]
            if only is not None:
                held = sorted({r[0] for t in ("trials", cell.table(), "steps", "samples", "events")
                               if src._columns(t) for r in src.con.execute(f"SELECT DISTINCT trial_id FROM {t}"
                                                                           ).fetchall()} - only)
                if held:
                    raise ValueError(f"{other}: holds trial {held[0]!r}, not only {', '.join(sorted(only))}: "
                                     "refused")
            if not ids:
                return []
            kinds = {r[0] for r in src.con.execute("SELECT DISTINCT kind FROM trials").fetchall()}
            if kinds != {cell.kind} or src._columns(cell.table()) != ["trial_id", *cell.columns()]:
                raise ValueError(f"{other}: holds {', '.join(sorted(map(str, kinds)))} trials, not {cell.kind}")
            tables = {t: src.con.execute(f"SELECT * FROM {t}").fetchnumpy()
                      for t in ("trials", cell.table(), "steps", "samples", "events")}
        con.execute("BEGIN TRANSACTION")
        try:
            for table in ("steps", "samples", "events", "trial_metrics", cell.table(), "trials"):
                con.executemany(f"DELETE FROM {table} WHERE trial_id = ?", [[i] for i in ids])
            for table, cols in tables.items():
                if len(cols["trial_id"]):
                    con.register("_merged", cols)
                    con.execute(f"INSERT INTO {table} SELECT * FROM _merged")
                    con.unregister("_merged")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        return ids

    def set_trial_metrics(self, trial_id: str, rows: list[tuple[str, str, float]]) -> None:
        self.con.execute("BEGIN TRANSACTION")
        self.con.execute("DELETE FROM trial_metrics WHERE trial_id = ?", [trial_id])
        if rows:
            self.con.executemany("INSERT INTO trial_metrics VALUES (?, ?, ?, ?)", [(trial_id, *r) for r in rows])
        self.con.execute("COMMIT")

    def set_metrics(self, rows: list[dict]) -> None:
        self.con.execute("BEGIN TRANSACTION")
        self.con.execute("DELETE FROM metrics")
        if rows:
            self.con.executemany("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                 [tuple(_nan_to_none(r[c]) for c in CSV_COLUMNS) for r in rows])
        self.con.execute("COMMIT")

    # -- reading
    def trials(self, status: str | None = None) -> list[dict]:
        """Every trial (of `status`), oldest first: what every trial has; with the store's kind bound, its
        cell's fields too, the cell itself (`cell`) and the names metrics.csv gives it (`scenario`,
        `resource`). An older directory opened read-only gives its own columns as they are."""
        legacy = self.legacy()
        cell = None if legacy else self.cell
        cols = [c for c in COMMON if not (legacy and c == "kind")] + (list(LEGACY) if legacy else [])
        select = ", ".join(f"t.{c}" for c in cols)
        if cell is not None:
            select += "".join(f", c.{c}" for c in cell.columns())
            source = f"trials t LEFT JOIN {cell.table()} c USING (trial_id)"
        else:
            source = "trials t"
        q = f"SELECT {select} FROM {source}" + (" WHERE t.status = ?" if status else "") + " ORDER BY t.started_at"
        cur = self.con.execute(q, [status] if status else [])
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(names, row))
            for k in ("capacity", "facts", *(["scenario_params"] if legacy else [])):
                d[k] = json.loads(d[k]) if d[k] else {}
            if cell is not None:
                d["cell"] = cell.from_row(d)
                d |= {f: getattr(d["cell"], f) for f in cell.columns()}
                d["scenario"], d["resource"] = d["cell"].labels()
            out.append(d)
        return out

    def steps(self, trial_id: str) -> list[StepWindow]:
        rows = self.con.execute("SELECT step, phase, t_start, t_end, tenant, ideal FROM steps WHERE trial_id = ? "
                                "ORDER BY step", [trial_id]).fetchall()
        by_step: dict[int, StepWindow] = {}
        for step, phase, t0, t1, tenant, ideal in rows:
            by_step.setdefault(step, StepWindow(step, phase, t0, t1, {})).ideal[tenant] = ideal
        return list(by_step.values())

    def samples(self, trial_id: str) -> Samples:
        cur = self.con.execute("SELECT t, tenant, source, quantity, value FROM samples WHERE trial_id = ?",
                               [trial_id])
        rows = cur.fetchall()
        if not rows:
            e = np.array([])
            return Samples(e, e.astype(str), e.astype(str), e.astype(str), e)
        t, tenant, source, quantity, value = zip(*rows)
        return Samples(np.asarray(t, float), np.asarray(tenant), np.asarray(source), np.asarray(quantity),
                       np.asarray(value, float))

    def events(self, trial_id: str | None = None) -> list[dict]:
        q = "SELECT * FROM events" + (" WHERE trial_id = ?" if trial_id else "") + " ORDER BY trial_id, t"
        cur = self.con.execute(q, [trial_id] if trial_id else [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def trial_metric_rows(self) -> list[dict]:
        """Every ok trial's metrics, named as metrics.csv names its cell (runtime, scenario, resource)."""
        name = {t["trial_id"]: (t["runtime"], t["scenario"], t["resource"]) for t in self.trials("ok")}
        cur = self.con.execute("SELECT trial_id, view, metric, value FROM trial_metrics ORDER BY trial_id")
        return [{"runtime": name[tid][0], "scenario": name[tid][1], "resource": name[tid][2], "view": view,
                 "metric": metric, "value": value, "trial_id": tid}
                for tid, view, metric, value in cur.fetchall() if tid in name]

    def metrics(self) -> list[dict]:
        cur = self.con.execute("SELECT * FROM metrics ORDER BY runtime, scenario, resource, view, metric")
        names = [d[0] for d in cur.description]
        return [{k: (math.nan if v is None and k in ("value", "ci_low", "ci_high") else v)
                 for k, v in zip(names, r)} for r in cur.fetchall()]


def _nan_to_none(v: object) -> object:
    return None if isinstance(v, float) and math.isnan(v) else v


def write_metrics_csv(path: Path, rows: list[dict]) -> None:
    """metrics.csv as DESIGN §7 fixes it; an unmeasurable value is an empty cell."""
    def fmt(v: object) -> object:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        return f"{v:.6g}" if isinstance(v, float) else v
    with open_new(path, newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for r in rows:
            w.writerow([fmt(r[c]) for c in CSV_COLUMNS])


def read_metrics_csv(path: Path) -> list[dict]:
    """metrics.csv back into rows (empty cell: nan). A file that is not one raises ValueError naming the
    file and line."""
    def number(v: str, line: int, col: str) -> float:
        try:
            return float(v) if v != "" else math.nan
        except ValueError:
            raise ValueError(f"{path}:{line}: {col}: not a number: {v!r}") from None
    with open(path, newline="") as f:
        r = csv.reader(f)
        header = next(r, None)
        if header is None or tuple(header) != CSV_COLUMNS:
            raise ValueError(f"{path}:1: not a contend metrics.csv (expected the columns {','.join(CSV_COLUMNS)})")
        rows = []
        for line, rec in enumerate(r, start=2):
            if len(rec) != len(CSV_COLUMNS):
                raise ValueError(f"{path}:{line}: {len(rec)} fields, expected {len(CSV_COLUMNS)}")
            row: dict[str, object] = dict(zip(CSV_COLUMNS, rec))
            for col in ("value", "ci_low", "ci_high"):
                row[col] = number(rec[CSV_COLUMNS.index(col)], line, col)
            n = number(rec[CSV_COLUMNS.index("n")], line, "n")
            if not (math.isfinite(n) and n >= 0 and n == int(n)):
                raise ValueError(f"{path}:{line}: n: must be a whole number >= 0, got {row['n']!r}")
            row["n"] = int(n)
            rows.append(row)
    return rows
