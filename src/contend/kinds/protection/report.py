"""The report of a guard study: protection metrics per run (metrics/protection, pure), the policies side
by side per workload (terminal, guard-table.md, report.html), a timeline per run and one figure per
workload with the victim under every policy (Aridac Fig. 4-7 in kind)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich.console import Group
from rich.table import Table

from ...report.figures import Figure, plt, save
from ...report.page import Written, failures, publish, write_page
from ...report.table import ci_text
from ...store import Store
from .metrics import guest_metrics, protection_metrics, spare_capacity

COLUMNS = (("isol_mean", "host", "isol mean"), ("isol_p05", "host", "isol p05"), ("lat_imp", "guest", "lat imp"),
           ("lat_p99_imp", "guest", "p99 imp"), ("neighbour_mb_s", "host", "nbr MB/s"),
           ("work_conservation", "host", "work cons."), ("reaction_s", "host", "reaction s"),
           ("reclaim_s", "host", "reclaim s"), ("burst_completion_s", "host", "burst done s"))
ORDER = ("none", "static", "aridac", "contend")


def io_series(s, tenant: str) -> tuple[np.ndarray, np.ndarray]:
    """Bytes/s (reads + writes) of a tenant as the cgroup sampler saw them."""
    t, r = s.series(tenant, "cgroup", "io_rbytes_s")
    _, w = s.series(tenant, "cgroup", "io_wbytes_s")
    n = min(len(r), len(w))
    return t[:n], r[:n] + w[:n]


@dataclass
class Run:
    """One stored run, read once for its metrics and its figures."""

    trial: dict
    samples: object  # metrics.Samples
    burst: tuple[float, float]  # its window, trial seconds
    t: np.ndarray  # the victim's host-view buckets, and both tenants' bytes/s on them
    victim: np.ndarray
    neighbour: np.ndarray

    @property
    def workload(self) -> str:
        return self.trial["workload"]

    @property
    def policy(self) -> str:
        return self.trial["policy"]

    @property
    def victim_rate(self) -> float:
        """The bytes/s the victim asks for: its share of the calibrated bandwidth."""
        return self.trial["params"]["victim"] * float(self.trial["capacity"]["disk_write_bw_bytes_s"])


def load_run(store: Store, trial: dict) -> Run:
    s = store.samples(trial["trial_id"])
    burst = next(((w.t_start, w.t_end) for w in store.steps(trial["trial_id"]) if w.phase == "burst"),
                 (math.nan, math.nan))
    t, v = io_series(s, "victim")
    tn, n = io_series(s, "neighbour")
    return Run(trial, s, burst, t, v, np.interp(t, tn, n) if len(tn) else np.zeros_like(v))


def run_metrics(run: Run, spare: float) -> list[tuple[str, str, float]]:
    s, (t0, t1), ref = run.samples, run.burst, run.victim_rate
    cap_t, cap = s.series("neighbour", "guard", "cap_bytes_s")
    rows = [("host", k, x) for k, x in protection_metrics(run.t, run.victim, run.neighbour, t0, t1, spare,
                                                          cap_t, cap, reference=ref).items()]
    gt, gv = s.series("victim", "load", "bytes_s")
    lt, lat = s.series("victim", "load", "lat_ms")
    it, ilat = s.series("victim", "load", "io_lat_ms")
    if len(gt):
        rows += [("guest", k, x) for k, x in guest_metrics(gt, gv, lt, lat, t0, t1, reference=ref, io_t=it,
                                                           io_lat=ilat).items()]
    return rows


def spares(runs: list[Run]) -> dict[str, float]:
    """Per workload: the spare capacity its `none` runs measured (the disk with nothing limiting it), else
    the calibrated bandwidth less the victim's rate."""
    out: dict[str, float] = {}
    for wl in {r.workload for r in runs}:
        none = [spare_capacity(r.t, r.victim, r.neighbour, *r.burst, r.victim_rate)
                for r in runs if r.workload == wl and r.policy == "none" and len(r.t)]
        any_run = next(r for r in runs if r.workload == wl)
        out[wl] = (float(np.nanmean(none)) if none else
                   float(any_run.trial["capacity"]["disk_write_bw_bytes_s"]) - any_run.victim_rate)
    return out


def analyze_protection(directory: Path, store: Store, runs: list[Run]) -> list[dict]:
    spare = spares(runs)
    for r in runs:
        store.set_trial_metrics(r.trial["trial_id"], run_metrics(r, spare[r.workload]))
    return publish(directory, store)


def side_by_side(rows: list[dict], failures: dict[str, str]) -> dict[str, list[list[str]]]:
    """Per workload: one row per policy, the columns of COLUMNS (n/a when not measured)."""
    cells = {(r["scenario"], r["view"], r["metric"]): r for r in rows}
    scenarios = sorted({r["scenario"] for r in rows} | set(failures))
    out: dict[str, list[list[str]]] = {}
    for sc in sorted(scenarios, key=lambda x: (x.split("/")[0], _rank(x.split("/")[-1]))):
        wl, _, policy = sc.partition("/")
        line = [policy]
        for metric, view, _ in COLUMNS:
            r = cells.get((sc, view, metric))
            line.append("n/a" if r is None or r["value"] is None or math.isnan(r["value"])
                        else ci_text(r, brackets=False))
        out.setdefault(wl, []).append(line)
    return out


def _rank(policy: str) -> int:
    return ORDER.index(policy) if policy in ORDER else len(ORDER)


def rich_tables(tables: dict[str, list[list[str]]], title: str) -> Group:
    out = []
    for wl, lines in tables.items():
        t = Table(title=f"{title}: {wl}", title_justify="left")
        t.add_column("policy")
        for _, view, head in COLUMNS:
            t.add_column(f"{head} ({view})", justify="right")
        for line in lines:
            t.add_row(*line)
        out.append(t)
    return Group(*out)


def markdown(tables: dict[str, list[list[str]]], title: str) -> str:
    heads = ["policy", *(f"{h} ({v})" for _, v, h in COLUMNS)]
    text = [f"# {title}", ""]
    for wl, lines in tables.items():
        text += [f"## {wl}", "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        text += ["| " + " | ".join(line) + " |" for line in lines]
        text.append("")
    return "\n".join(text)


def alert_spans(events: list[dict], t_end: float) -> list[tuple[float, float]]:
    """(start, end) of each stretch the guard alerted, from its alert / alert-cleared events (one alert
    event per changed message, so several may open one stretch); one still open ends at t_end."""
    spans, start = [], None
    for e in sorted(events, key=lambda e: e["t"]):
        if e["kind"] == "alert" and start is None:
            start = e["t"]
        elif e["kind"] == "alert-cleared" and start is not None:
            spans.append((start, e["t"]))
            start = None
    if start is not None:
        spans.append((start, max(t_end, start)))
    return spans


def run_timeline_figure(title: str, run: Run, alerts: list[dict] = ()) -> Figure:
    """Victim and neighbour throughput (host view), the caps the guard set, its capacity estimate, its
    alerts; the burst shaded; the victim's own latency below."""
    s, (t0, t1) = run.samples, run.burst
    fig, (ax, lx) = plt.subplots(2, 1, figsize=(7.5, 4.8), sharex=True, height_ratios=(3, 1.4))
    for tenant, color, v in (("victim", "tab:green", run.victim), ("neighbour", "tab:red", run.neighbour)):
        ax.plot(run.t, v / 1e9, color=color, lw=1, label=tenant)
        ct, c = s.series(tenant, "guard", "cap_bytes_s")
        if len(ct):
            ax.plot(ct, c / 1e9, color=color, lw=0.9, ls="--", alpha=0.8, label=f"{tenant} cap")
    ct, c = s.series("", "guard", "capacity_bytes_s")
    if len(ct):
        ax.plot(ct, c / 1e9, color="grey", lw=0.9, ls=":", label="capacity (policy)")
    for a in (ax, lx):
        if not math.isnan(t0):
            a.axvspan(t0, t1, color="tab:orange", alpha=0.08)
    for i, (a0, a1) in enumerate(alert_spans(alerts, float(run.t[-1]) if len(run.t) else 0.0)):
        ax.axvspan(a0, a1, ymin=0.96, ymax=1.0, color="tab:purple", alpha=0.8,
                   label="alert (lifelines > capacity)" if i == 0 else None)
    ax.set_ylabel("disk GB/s")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=3, loc="upper right")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    lt, lat = s.series("victim", "load", "lat_ms")
    lx.plot(lt, lat, color="tab:green", lw=0.9)
    lx.set_yscale("log")
    lx.set_ylabel("victim ms")
    lx.set_xlabel("time (s); shaded: the burst")
    lx.grid(alpha=0.3)
    return fig


def workload_figure(workload: str, runs: list[Run]) -> Figure:
    """The victim's throughput under each policy, on one axis (the first repetition of each)."""
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    seen = set()
    for r in runs:
        if r.policy in seen:
            continue
        seen.add(r.policy)
        ax.plot(r.t - r.burst[0], r.victim / 1e9, lw=1, label=r.policy)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("time since the burst started (s)")
    ax.set_ylabel("victim GB/s")
    ax.set_title(f"{workload}: the victim under each policy")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return fig


def refresh_protection(directory: Path, store: Store, title: str):
    """Everything a guard study's results directory shows, from its store."""
    runs = sorted((load_run(store, t) for t in store.trials("ok")),
                  key=lambda r: (r.workload, _rank(r.policy), r.trial["repetition"]))
    rows = analyze_protection(directory, store, runs)
    tables = side_by_side(rows, {key[1]: why for key, why in failures(store).items()})
    (directory / "guard-table.md").write_text(markdown(tables, title))
    figdir = directory / "figures"
    figures = []
    for wl in sorted({r.workload for r in runs}):
        mine = [r for r in runs if r.workload == wl]
        figures.append({"title": f"{wl}: victim under each policy",
                        "png": save(workload_figure(wl, mine), figdir / f"victim-{wl}")})
        for r in mine:
            name = f"{r.trial['scenario']} · rep {r.trial['repetition']}"
            alerts = [e for e in store.events(r.trial["trial_id"]) if e["kind"] in ("alert", "alert-cleared")]
            figures.append({"title": name, "png": save(run_timeline_figure(name, r, alerts),
                                                       figdir / f"timeline-{r.trial['trial_id']}")})
    out = write_page(directory, "guard.html.j2", figures, heads=[f"{h} ({v})" for _, v, h in COLUMNS],
                     tables=tables, failed=[t for t in store.trials() if t["status"] != "ok"], figures=figures,
                     events=[e for e in store.events() if e["kind"] in ("alert", "alert-cleared", "timeout")])
    return Written(rows, out, rich_tables(tables, title))
