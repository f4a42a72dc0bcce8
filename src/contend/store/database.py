"""The store: one DuckDB file per results directory (trials, steps, samples, events, metrics) + CSV export.

A trial and everything it measured is committed in one transaction, so a crash never leaves half a trial.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from ..faults import checkpoint
from ..measured import Samples, StepWindow

DB = "contend.duckdb"
METRICS_CSV = "metrics.csv"
CSV_COLUMNS = ("runtime", "scenario", "resource", "view", "metric", "value", "ci_low", "ci_high", "n")

SCHEMA = """
CREATE TABLE IF NOT EXISTS trials (
    trial_id VARCHAR PRIMARY KEY, runtime VARCHAR, scenario VARCHAR, resource VARCHAR, repetition INTEGER,
    status VARCHAR, reason VARCHAR, started_at TIMESTAMP, ended_at TIMESTAMP,
    scenario_params JSON, capacity JSON, facts JSON);
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


@dataclass
class TrialRecord:
    trial_id: str
    runtime: str
    scenario: str
    resource: str
    repetition: int
    status: str  # "ok" | "failed"
    reason: str
    started_at: float  # unix seconds
    ended_at: float
    scenario_params: dict
    capacity: dict
    facts: dict


class Store:
    def __init__(self, directory: Path, read_only: bool = False):
        self.dir = Path(directory)
        path = self.dir / DB
        if read_only and not path.exists():
            raise FileNotFoundError(f"{self.dir}: no {DB} (not a contend results directory)")
        self.con = duckdb.connect(str(path), read_only=read_only)
        if not read_only:
            self.con.execute(SCHEMA)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing
    def add_trial(self, rec: TrialRecord, steps: list[StepWindow], samples: list[tuple],
                  events: list[tuple]) -> None:
        """One transaction: the trial row, its steps, samples (t, tenant, source, quantity, value) and events."""
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            for table in ("steps", "samples", "events", "trial_metrics"):
                con.execute(f"DELETE FROM {table} WHERE trial_id = ?", [rec.trial_id])
            con.execute("DELETE FROM trials WHERE trial_id = ?", [rec.trial_id])
            con.execute("INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?, ?, to_timestamp(?), to_timestamp(?), ?, ?, ?)",
                        [rec.trial_id, rec.runtime, rec.scenario, rec.resource, rec.repetition, rec.status,
                         rec.reason, rec.started_at, rec.ended_at, json.dumps(rec.scenario_params),
                         json.dumps(rec.capacity), json.dumps(rec.facts)])
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

    def merge(self, other: Path) -> list[str]:
        """Every trial of another results directory's store, with all it measured, in one transaction
        (a trial already here under the same id is replaced). Returns the trial ids taken. Metrics are
        not copied: they are recomputed from the samples (report.refresh)."""
        con = self.con
        # the path is a parameter, never SQL: a directory's name comes from inside an archive (cluster collect)
        con.execute("ATTACH ? AS src (READ_ONLY)", [str(Path(other) / DB)])
        try:
            ids = [r[0] for r in con.execute("SELECT trial_id FROM src.trials ORDER BY started_at").fetchall()]
            con.execute("BEGIN TRANSACTION")
            try:
                for table in ("steps", "samples", "events", "trial_metrics", "trials"):
                    con.execute(f"DELETE FROM {table} WHERE trial_id IN (SELECT trial_id FROM src.trials)")
                for table in ("trials", "steps", "samples", "events"):
                    con.execute(f"INSERT INTO {table} SELECT * FROM src.{table}")
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        finally:
            con.execute("DETACH src")
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
        q = "SELECT * FROM trials" + (" WHERE status = ?" if status else "") + " ORDER BY started_at"
        cur = self.con.execute(q, [status] if status else [])
        names = [d[0] for d in cur.description]
        out = []
        for row in cur.fetchall():
            d = dict(zip(names, row))
            for k in ("scenario_params", "capacity", "facts"):
                d[k] = json.loads(d[k]) if d[k] else {}
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
        cur = self.con.execute(
            "SELECT t.runtime, t.scenario, t.resource, m.view, m.metric, m.value, t.trial_id FROM trial_metrics m "
            "JOIN trials t USING (trial_id) WHERE t.status = 'ok' ORDER BY t.trial_id")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def metrics(self) -> list[dict]:
        cur = self.con.execute("SELECT * FROM metrics ORDER BY runtime, scenario, resource, view, metric")
        names = [d[0] for d in cur.description]
        return [{k: (math.nan if v is None and k in ("value", "ci_low", "ci_high") else v)
                 for k, v in zip(names, r)} for r in cur.fetchall()]


def _nan_to_none(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def write_metrics_csv(path: Path, rows: list[dict]) -> None:
    """metrics.csv as DESIGN §7 fixes it; an unmeasurable value is an empty cell."""
    def fmt(v):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return ""
        return f"{v:.6g}" if isinstance(v, float) else v
    with open(path, "w", newline="") as f:
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
            row = dict(zip(CSV_COLUMNS, rec))
            for col in ("value", "ci_low", "ci_high"):
                row[col] = number(row[col], line, col)
            n = number(row["n"], line, "n")
            if not (math.isfinite(n) and n >= 0 and n == int(n)):
                raise ValueError(f"{path}:{line}: n: must be a whole number >= 0, got {row['n']!r}")
            row["n"] = int(n)
            rows.append(row)
    return rows
