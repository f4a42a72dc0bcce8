"""The report of a guard study: protection metrics per run (metrics/protection, pure), the policies side
by side per workload (terminal, guard-table.md, report.html), a timeline per run and one figure per
workload with the victim under every policy (Aridac Fig. 4-7 in kind)."""
from __future__ import annotations

import base64
import math
import time
from pathlib import Path

import jinja2
import numpy as np
from rich.console import Group
from rich.table import Table

from ..metrics import aggregate
from ..metrics.protection import guest_metrics, protection_metrics, spare_capacity
from ..store import METRICS_CSV, Store, write_metrics_csv
from .figures import _save, plt
from .table import ci_text

COLUMNS = (("isol_mean", "host", "isol mean"), ("isol_p05", "host", "isol p05"), ("lat_imp", "guest", "lat imp"),
           ("work_conservation", "host", "work cons."), ("reaction_s", "host", "reaction s"),
           ("reclaim_s", "host", "reclaim s"), ("burst_completion_s", "host", "burst done s"))
ORDER = ("none", "static", "aridac", "contend")


def io_series(s, tenant: str, source: str = "cgroup") -> tuple[np.ndarray, np.ndarray]:
    """Bytes/s (reads + writes) of a tenant as the cgroup sampler saw them."""
    t, r = s.series(tenant, source, "io_rbytes_s")
    _, w = s.series(tenant, source, "io_wbytes_s")
    n = min(len(r), len(w))
    return t[:n], r[:n] + w[:n]


def burst_window(store: Store, trial_id: str) -> tuple[float, float]:
    steps = {w.phase: w for w in store.steps(trial_id)}
    b = steps.get("burst")
    return (b.t_start, b.t_end) if b else (math.nan, math.nan)


def run_metrics(store: Store, trial: dict, spare: float) -> list[tuple[str, str, float]]:
    s = store.samples(trial["trial_id"])
    t0, t1 = burst_window(store, trial["trial_id"])
    tv, v = io_series(s, "victim")
    tn, n = io_series(s, "neighbour")
    n_on_v = np.interp(tv, tn, n) if len(tn) else np.zeros_like(v)
    cap_t, cap = s.series("neighbour", "guard", "cap_bytes_s")
    ref = victim_rate(trial)
    rows = [("host", k, x) for k, x in protection_metrics(tv, v, n_on_v, t0, t1, spare, cap_t, cap,
                                                          reference=ref).items()]
    gt, gv = s.series("victim", "load", "bytes_s")
    lt, lat = s.series("victim", "load", "lat_ms")
    if len(gt):
        rows += [("guest", k, x) for k, x in guest_metrics(gt, gv, lt, lat, t0, t1, reference=ref).items()]
    return rows


def victim_rate(trial: dict) -> float:
    """The bytes/s the victim asks for: its share of the calibrated bandwidth."""
    return trial["scenario_params"]["victim"] * float(trial["capacity"].get("disk_write_bw_bytes_s", math.nan))


def spares(store: Store) -> dict[str, float]:
    """Per workload: the spare capacity its `none` runs measured (the disk with nothing limiting it), else
    the calibrated bandwidth less the victim's rate."""
    out: dict[str, list[float]] = {}
    fallback: dict[str, float] = {}
    for t in store.trials("ok"):
        wl, _, policy = t["scenario"].partition("/")
        rate = victim_rate(t)
        fallback[wl] = float(t["capacity"].get("disk_write_bw_bytes_s", math.nan)) - rate
        if policy != "none":
            continue
        s = store.samples(t["trial_id"])
        t0, t1 = burst_window(store, t["trial_id"])
        tv, v = io_series(s, "victim")
        tn, n = io_series(s, "neighbour")
        if len(tv) and len(tn):
            out.setdefault(wl, []).append(spare_capacity(tv, v, np.interp(tv, tn, n), t0, t1, rate))
    return {wl: float(np.nanmean(out[wl])) if wl in out else fb for wl, fb in fallback.items()}


def analyze_protection(directory: Path, store: Store) -> list[dict]:
    spare = spares(store)
    for t in store.trials("ok"):
        store.set_trial_metrics(t["trial_id"], run_metrics(store, t, spare[t["scenario"].split("/")[0]]))
    rows = aggregate(store.trial_metric_rows())
    rows.sort(key=lambda r: (r["scenario"], r["view"], r["metric"]))
    store.set_metrics(rows)
    write_metrics_csv(directory / METRICS_CSV, rows)
    return rows


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


def run_timeline(path: Path, title: str, store: Store, trial: dict) -> Path:
    """Victim and neighbour throughput (host view), the caps the guard set, its capacity estimate; the
    burst shaded; the victim's own latency below."""
    s = store.samples(trial["trial_id"])
    t0, t1 = burst_window(store, trial["trial_id"])
    fig, (ax, lx) = plt.subplots(2, 1, figsize=(7.5, 4.8), sharex=True, height_ratios=(3, 1.4))
    for tenant, color in (("victim", "tab:green"), ("neighbour", "tab:red")):
        t, v = io_series(s, tenant)
        ax.plot(t, v / 1e9, color=color, lw=1, label=f"{tenant}")
        ct, c = s.series(tenant, "guard", "cap_bytes_s")
        if len(ct):
            ax.plot(ct, c / 1e9, color=color, lw=0.9, ls="--", alpha=0.8, label=f"{tenant} cap")
    ct, c = s.series("", "guard", "capacity_bytes_s")
    if len(ct):
        ax.plot(ct, c / 1e9, color="grey", lw=0.9, ls=":", label="capacity (policy)")
    for a in (ax, lx):
        if not math.isnan(t0):
            a.axvspan(t0, t1, color="tab:orange", alpha=0.08)
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
    return _save(fig, path)


def workload_figure(path: Path, workload: str, store: Store, trials: list[dict]) -> Path:
    """The victim's throughput under each policy, on one axis (first repetition of each)."""
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    seen = set()
    for t in sorted(trials, key=lambda x: (_rank(x["scenario"].split("/")[-1]), x["repetition"])):
        policy = t["scenario"].split("/")[-1]
        if policy in seen:
            continue
        seen.add(policy)
        tv, v = io_series(store.samples(t["trial_id"]), "victim")
        b0, _ = burst_window(store, t["trial_id"])
        ax.plot(tv - b0, v / 1e9, lw=1, label=policy)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("time since the burst started (s)")
    ax.set_ylabel("victim GB/s")
    ax.set_title(f"{workload}: the victim under each policy")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    return _save(fig, path)


def refresh_protection(directory: Path, store: Store, title: str, spec: dict, host: dict):
    """Everything a guard study's results directory shows, from its store."""
    from . import Written
    rows = analyze_protection(directory, store)
    failures = {t["scenario"]: t["reason"] for t in store.trials() if t["status"] != "ok"}
    tables = side_by_side(rows, failures)
    (directory / "guard-table.md").write_text(markdown(tables, title))
    figdir = directory / "figures"
    trials = store.trials("ok")
    figures = []
    for wl in sorted({t["scenario"].split("/")[0] for t in trials}):
        mine = [t for t in trials if t["scenario"].split("/")[0] == wl]
        figures.append({"title": f"{wl}: victim under each policy",
                        "png": workload_figure(figdir / f"victim-{wl}", wl, store, mine)})
        for t in sorted(mine, key=lambda x: (_rank(x["scenario"].split("/")[-1]), x["repetition"])):
            name = f"{t['scenario']} · rep {t['repetition']}"
            figures.append({"title": name, "png": run_timeline(figdir / f"timeline-{t['trial_id']}", name, store, t)})
    for f in figures:
        f["data"] = base64.b64encode(f["png"].read_bytes()).decode()
    env = jinja2.Environment(loader=jinja2.PackageLoader("contend.report", "templates"), autoescape=True)
    html = env.get_template("guard.html.j2").render(
        name=spec.get("name", directory.name), description=spec.get("description", ""), host=host,
        written=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), heads=[f"{h} ({v})" for _, v, h in COLUMNS],
        tables=tables, failed=[t for t in store.trials() if t["status"] != "ok"], figures=figures,
        events=[e for e in store.events() if e["kind"] in ("alert", "alert-cleared", "timeout")])
    out = directory / "report.html"
    out.write_text(html)
    return Written(rows, out, rich_tables(tables, title))
