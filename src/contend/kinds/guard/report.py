"""The report of a guard study: protection metrics per run (metrics/protection, pure), the policies side
by side per workload (terminal, guard-table.md, report.html), a timeline per run and one figure per
workload with the victim under every policy (Aridac Fig. 4-7 in kind)."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ...diskuse import bytes_through, io_bytes
from ...metrics import Samples
from ...paths import write_text
from ...report.answer import ISOLATED, NOT_SURE, SURE, UNSURE, Answer, finite, retained_answer
from ...report.figures import Figure, plt, save
from ...report.page import Written, failures, kind_page, publish, write_page
from ...report.table import spread
from ...store import Store
from .metrics import (
    baseline,
    calm_ratio,
    calm_window,
    delivery,
    guest_metrics,
    held_share,
    isolation_per_second,
    protection_metrics,
)

# the victim's figures, then the neighbour's and the disk's (the terminal shows the two groups as two tables)
COLUMNS = (("isol_mean", "host", "isol mean"), ("isol_p05", "host", "isol p05"), ("lat_imp", "guest", "lat imp"),
           ("lat_p99_imp", "guest", "p99 imp"), ("reaction_s", "host", "reaction s"),
           ("neighbour_mb_s", "host", "nbr MB/s"), ("work_conservation", "host", "work cons."),
           ("delivery_mb_s", "host", "disk MB/s"), ("reclaim_s", "host", "reclaim s"),
           ("burst_completion_s", "host", "burst done s"))
VICTIM_COLUMNS = 5
ORDER = ("none", "static", "aridac", "contend", "bfq", "hybrid", "iocost", "iolatency")


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
    samples: Samples
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


def run_metrics(run: Run, delivered: float, victim_ref: float | None = None) -> list[tuple[str, str, float]]:
    """Every (view, metric, value) of one run; `delivered`: its reference delivery (references()); `victim_ref`:
    what the victim is judged against (victim_reference(); None: the rate it asks for)."""
    s, (t0, t1) = run.samples, run.burst
    ref = victim_ref if victim_ref is not None and math.isfinite(victim_ref) else run.victim_rate
    cap_t, cap = s.series("neighbour", "guard", "cap_bytes_s")
    rows = [("host", k, x) for k, x in protection_metrics(run.t, run.victim, run.neighbour, t0, t1, delivered,
                                                          cap_t, cap, reference=ref).items()]
    rows.append(("host", "ref_delivery_mb_s", delivered / 1e6))
    rows.append(("host", "victim_calm", calm_ratio(run.t, run.victim, t0, ref)))
    ut, un = s.series("", "guard", "unattributed_bytes_s")
    if len(ut):  # what escaped the guard: the disk's writes less both tenants' charged ones, during the burst
        during = un[(ut >= t0) & (ut < t1)]
        rows.append(("host", "unattributed_mb_s", float(np.mean(during)) / 1e6 if len(during) else math.nan))
    gt, gv = s.series("victim", "load", "bytes_s")
    lt, lat = s.series("victim", "load", "lat_ms")
    it, ilat = s.series("victim", "load", "io_lat_ms")
    if len(gt):
        rows += [("guest", k, x) for k, x in guest_metrics(gt, gv, lt, lat, t0, t1, reference=ref, io_t=it,
                                                           io_lat=ilat).items()]
    return rows


def delivered(run: Run) -> float:
    """What the disk gave both tenants during a run's burst, bytes/s."""
    return delivery(run.t, run.victim, run.neighbour, *run.burst)


def references(runs: list[Run]) -> dict[str, list[Run]]:
    """Per run (trial id), the runs under no policy it is judged against: itself, if it is one; else those of
    its workload right before and right after it in the order the study ran them (study.plan puts every policy
    run between two). Fewer where a neighbour is not one: a reference that failed, or a directory written
    before paired evaluation (its policies ran back to back)."""
    out: dict[str, list[Run]] = {}
    for wl in {r.workload for r in runs}:
        seq = sorted((r for r in runs if r.workload == wl), key=lambda r: r.trial["started_at"])
        for i, r in enumerate(seq):
            out[r.trial["trial_id"]] = [r] if r.policy == "none" else [
                seq[j] for j in (i - 1, i + 1) if 0 <= j < len(seq) and seq[j].policy == "none"]
    return out


def reference_delivery(refs: list[Run]) -> float:
    return float(np.mean([delivered(x) for x in refs])) if refs else math.nan


# the victim's warm-up before its level counts (metrics.isolation's default)
WARMUP_S = 2.0


def victim_reference(run: Run, refs: list[Run]) -> float:
    """What a run's victim is judged against: the rate it asks for, or less where its references under no policy
    show it never got that rate before the burst (nan: no references). A latency-bound victim (4 KiB random I/O
    one at a time) asking a fixed share of the disk's bandwidth may ask more than the disk gives it at its depth
    alone: on a disk calibrated at 3.0 GB/s, 0.04 of it is 120 MB/s, and it did 22-30 MB/s before every burst.
    Against the rate, every policy scored isol 0.25 at best, a figure about the preset, not about the burst."""
    before = [baseline(r.t, r.victim, r.burst[0], WARMUP_S) for r in refs]
    before = [b for b in before if math.isfinite(b)]
    return min(run.victim_rate, float(np.mean(before))) if before else math.nan


def victim_held(run: Run, t0: float, t1: float) -> float:
    """The share of [t0, t1)'s buckets in which the victim wrote at 0.9 × what its own cap let through or more
    (metrics.held_share, for its own I/O size and the cost of an I/O its guard divided by); nan: never capped there."""
    s = run.samples
    cap_t, cap = s.series("victim", "guard", "cap_bytes_s")
    if not len(cap_t):
        return math.nan
    ios = np.zeros_like(run.t)
    for q in ("io_rios_s", "io_wios_s"):
        _, x = s.series("victim", "cgroup", q)
        n = min(len(x), len(ios))
        ios[:n] += x[:n]
    size = np.divide(run.victim, ios, out=np.zeros_like(run.victim), where=ios > 0)
    capacity = run.trial.get("capacity") or {}
    cost = io_bytes(capacity.get("disk_device", ""), (run.trial["params"].get("guard") or {}).get("io_bytes"),
                    capacity)
    return held_share(run.t, run.victim, size, cap_t, cap, t0, t1, lambda c, z: bytes_through(c, cost, z))


def minute_notes(runs: list[Run], refs: dict[str, list[Run]]) -> list[str]:
    """Of the runs under a policy whose victim lost isolation (isol mean below 0.95): those whose victim was already
    below 0.9 of its reference in the calm before the burst without being held by its own cap there (the disk's
    minute: slow before any burst, and its isolation reads that too), and those whose victim was held by its own cap
    in half the burst or more (the policy's cap, not only the neighbour). Issue 55: on a slow disk hour the same
    spec gave aridac isol 0.98 then 0.58, each of its lost runs slow before its burst."""
    slow, held = [], []
    for r in runs:
        (t0, t1), tid = r.burst, r.trial["trial_id"]
        ref = victim_reference(r, refs.get(tid, []))
        if r.policy == "none" or not (math.isfinite(t0) and math.isfinite(ref) and ref > 0):
            continue
        isol = isolation_per_second(r.t, r.victim, t0, t1, WARMUP_S, ref)
        if not len(isol) or float(np.mean(isol)) >= 0.95:
            continue
        calm = calm_ratio(r.t, r.victim, t0, ref)
        if calm < 0.9 and not victim_held(r, *calm_window(t0, WARMUP_S)) >= 0.5:
            slow.append(f"{tid} ({calm:.2f})")
        if victim_held(r, t0, t1) >= 0.5:
            held.append(tid)
    notes = []
    if slow:
        notes.append(f"the disk's minute: {', '.join(slow)} lost isolation with the victim already below 0.9 of its "
                     "reference before the burst (victim_calm), not held by its own cap there")
    if held:
        notes.append(f"the policy's cap: {', '.join(held)} lost isolation with the victim at its own cap in half the "
                     "burst or more")
    return notes


def disk_notes(runs: list[Run], refs: dict[str, list[Run]]) -> dict[str, list[str]]:
    """Per workload, what a reader needs beside its table: the disk's own variation across the references
    (their spread is the noise every paired figure carries), runs whose work conservation could not be said,
    and runs bounded at 1 because the disk delivered more during them than during their references."""
    out: dict[str, list[str]] = {}
    for wl in sorted({r.workload for r in runs}):
        mine = [r for r in runs if r.workload == wl]
        notes = []
        d = np.array([delivered(r) for r in mine if r.policy == "none"]) / 1e6
        d = d[np.isfinite(d)]
        if len(d):
            notes.append(f"the disk under no policy delivered {np.mean(d):,.0f} MB/s during the burst in {len(d)} "
                         f"reference run(s), from {d.min():,.0f} to {d.max():,.0f} "
                         f"({(d.max() - d.min()) / np.mean(d):.0%} apart): the noise of every paired figure")
        lonely = [r.trial["trial_id"] for r in mine if not refs.get(r.trial["trial_id"])]
        if lonely:
            notes.append(f"work conservation n/a for {', '.join(lonely)}: no run under no policy right before or "
                         "after it (a reference failed, or the directory was written before paired evaluation: "
                         "run the study again)")
        over = []
        for r in mine:
            t0, t1 = r.burst
            burst = (r.t >= t0) & (r.t < t1)
            spare = reference_delivery(refs.get(r.trial["trial_id"], [])) - float(np.mean(r.victim[burst]))
            if r.policy != "none" and burst.any() and spare > 0 and np.mean(r.neighbour[burst]) > spare:
                over.append(r.trial["trial_id"])
        if over:
            notes.append(f"work conservation bounded at 1 for {', '.join(over)}: the disk delivered more during "
                         "it than during its references")
        short = [(r.victim_rate, victim_reference(r, refs.get(r.trial["trial_id"], []))) for r in mine
                 if r.policy == "none"]
        short = [(a, b) for a, b in short if b < 0.9 * a]
        if short:
            asked, did = short[0][0], np.mean([b for _, b in short])
            notes.append(f"the victim asked {asked / 1e6:,.0f} MB/s and did {did / 1e6:,.0f} MB/s before the burst "
                         f"under no policy ({len(short)} run(s)): judged against what it did, the most the disk gave "
                         "it beside the light neighbour")
        out[wl] = notes + minute_notes(mine, refs)
    return out


def analyze_protection(directory: Path, store: Store, runs: list[Run]) -> list[dict]:
    refs = references(runs)
    for r in runs:
        mine = refs[r.trial["trial_id"]]
        store.set_trial_metrics(r.trial["trial_id"],
                                run_metrics(r, reference_delivery(mine), victim_reference(r, mine)))
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
            line.append("n/a" if r is None or r["value"] is None or math.isnan(r["value"]) else compact(r))
        out.setdefault(wl, []).append(line)
    return out


def thin_notes(rows: list[dict]) -> dict[str, list[str]]:
    """Per workload, the cells of the table over fewer runs than the most of their row: a run whose victim's fio log
    held no I/O has no guest view (workload2 static@capacity=2 of a guard-caps study, 2026-12-02: its latency over 2
    of 3 runs, the table silent), one whose victim never held its rate has no reaction. Said, not hidden."""
    labels = {(m, v): f"{name} ({v})" for m, v, name in COLUMNS}
    by: dict[str, list[dict]] = {}
    for r in rows:
        if (r["metric"], r["view"]) in labels and r.get("n"):
            by.setdefault(r["scenario"], []).append(r)
    out: dict[str, list[str]] = {}
    for sc in sorted(by, key=lambda x: (x.split("/")[0], _rank(x.split("/")[-1]))):
        most = max(int(r["n"]) for r in by[sc])
        thin: dict[int, list[str]] = {}
        n = {(r["metric"], r["view"]): int(r["n"]) for r in by[sc]}
        for m, v, _ in COLUMNS:
            if (m, v) in n and n[(m, v)] < most:
                thin.setdefault(n[(m, v)], []).append(labels[(m, v)])
        wl, _, policy = sc.partition("/")
        out.setdefault(wl, []).extend(f"{policy}: {', '.join(cols)} over {n} of its {most} runs"
                                      for n, cols in sorted(thin.items()))
    return {wl: lines for wl, lines in out.items() if lines}


def compact(r: dict) -> str:
    """mean ± half its 95 % interval ([low, high] where it was clipped at its metric's edge), with as many
    decimals as a figure of its size needs (MB/s in whole numbers, shares in hundredths), so the terminal's tables
    fit 80 columns."""
    v = r["value"]
    places = 0 if abs(v) >= 100 else 1 if abs(v) >= 10 else 2  # the interval with the value's own places
    return f"{v:.{places}f}{spread(r, f'.{places}f')}"


def _rank(label: str) -> tuple[int, str]:
    """A policy's place in the tables: by policy, then by its point of the sweep (`contend@p=0.5`)."""
    policy = label.partition("@")[0]
    return (ORDER.index(policy) if policy in ORDER else len(ORDER)), label


def frontier(points: dict[str, tuple[float, float]]) -> list[str]:
    """The labels no other point betters on both (isolation, work conservation): at least as good on both and
    better on one. NaN points are on no frontier."""
    ok = {k: p for k, p in points.items() if not any(math.isnan(x) for x in p)}
    return [k for k, (a, b) in ok.items()
            if not any(c >= a and d >= b and (c > a or d > b) for j, (c, d) in ok.items() if j != k)]


FRONTIER = (("work_conservation", "host"), ("isol_mean", "host"))  # x, y of the frontier figure


def frontier_points(rows: list[dict], workload: str) -> dict[str, tuple[dict, dict]]:
    """Per policy label of a workload, its (work conservation, isol mean) rows."""
    cells = {(r["scenario"], r["view"], r["metric"]): r for r in rows}
    out = {}
    for sc in {r["scenario"] for r in rows if r["scenario"].partition("/")[0] == workload}:
        x, y = (cells.get((sc, v, m)) for m, v in FRONTIER)
        if x is not None and y is not None:
            out[sc.partition("/")[2]] = (x, y)
    return out


def frontier_note(rows: list[dict], workload: str) -> str:
    pts = frontier_points(rows, workload)
    best = sorted(frontier({k: (y["value"], x["value"]) for k, (x, y) in pts.items() if k != "none"}), key=_rank)
    return (f"the frontier (isol mean against work conservation, host view; no other policy better on both): "
            f"{', '.join(best)}" if best else "")


def _spans(rows: list[dict]) -> list[list[float]]:
    """Error bars (below, above) of each row's value: its 95 % interval, none where it has none."""
    def ok(x: float) -> bool:
        return x is not None and math.isfinite(x)
    return [[r["value"] - r["ci_low"] if ok(r["ci_low"]) else 0.0 for r in rows],
            [r["ci_high"] - r["value"] if ok(r["ci_high"]) else 0.0 for r in rows]]


def frontier_figure(workload: str, rows: list[dict]) -> Figure:
    """Isolation against work conservation, a point per policy (and per point of the sweep), with their 95 %
    intervals; a policy's sweep joined by a line; the frontier ringed (resctl-bench's iocost-qos in kind)."""
    pts = frontier_points(rows, workload)
    best = set(frontier({k: (y["value"], x["value"]) for k, (x, y) in pts.items() if k != "none"}))
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    colors = {p: f"C{i}" for i, p in enumerate(ORDER)}
    for policy in sorted({k.partition("@")[0] for k in pts}, key=_rank):
        mine = sorted((k for k in pts if k.partition("@")[0] == policy), key=lambda k: pts[k][0]["value"])
        xs = [pts[k][0]["value"] for k in mine]
        ys = [pts[k][1]["value"] for k in mine]
        ax.errorbar(xs, ys, xerr=_spans([pts[k][0] for k in mine]), yerr=_spans([pts[k][1] for k in mine]),
                    color=colors.get(policy, "k"), marker="o", ms=4, lw=0.8,
                    capsize=2, label=policy)
        for k, x, y in zip(mine, xs, ys):
            if k in best:
                ax.plot([x], [y], marker="o", ms=11, mfc="none", mec="black", lw=0)
            if "@" in k:
                ax.annotate(k.partition("@")[2], (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("work conservation (paired, host view)")
    ax.set_ylabel("victim isol mean (host view)")
    ax.set_title(f"{workload}: isolation against work conservation (ringed: the frontier)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return fig


def rich_tables(tables: dict[str, list[list[str]]], title: str, notes: dict[str, list[str]] | None = None) -> Group:
    """Per workload, the victim's figures and the neighbour's and disk's, as two tables without vertical rules
    that fit an 80-column terminal and a pipe, then the workload's notes."""
    out: list = []
    for wl, lines in tables.items():
        for part, cols in (("victim", range(VICTIM_COLUMNS)),
                           ("neighbour and disk", range(VICTIM_COLUMNS, len(COLUMNS)))):
            t = Table(title=f"{title}: {wl}, {part}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
            t.add_column("policy", no_wrap=True)
            for k in cols:
                t.add_column(COLUMNS[k][2], justify="right", no_wrap=True)
            for line in lines:
                t.add_row(line[0], *(line[1 + k] for k in cols))
            out.append(t)
        out += [Text(f"- {n}") for n in (notes or {}).get(wl, [])]
    guest = " and ".join(head for _, view, head in COLUMNS if view == "guest")
    out.append(Text(f"{guest}: the victim's own view (fio's log of every I/O), the rest the host's; mean ± half its "
                    "95 % interval over the repetitions; every run's figures are in metrics.csv"))
    return Group(*out)


def markdown(tables: dict[str, list[list[str]]], title: str, notes: dict[str, list[str]] | None = None) -> str:
    heads = ["policy", *(f"{h} ({v})" for _, v, h in COLUMNS)]
    text = [f"# {title}", ""]
    for wl, lines in tables.items():
        text += [f"## {wl}", "", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
        text += ["| " + " | ".join(line) + " |" for line in lines]
        text.append("")
        text += [f"- {n}" for n in (notes or {}).get(wl, [])] + ([""] if (notes or {}).get(wl) else [])
    return "\n".join(text)


def alert_spans(events: Sequence[dict], t_end: float) -> list[tuple[float, float]]:
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


def run_timeline_figure(title: str, run: Run, alerts: Sequence[dict] = ()) -> Figure:
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


def answers(rows: list[dict]) -> list[Answer]:
    """Per workload × policy (pure): is the victim isolated under it? Its isol mean judged (report/answer.py),
    and an isolated mean whose worst seconds fall below 0.90 (p05) is unsure; the number says the burst's share of
    the spare too (work conservation: what isolating cost it)."""
    cells = {(r["scenario"], r["metric"]): r for r in rows if r["view"] == "host"}
    out = []
    for sc in sorted({k[0] for k in cells}, key=lambda sc: (sc.partition("/")[0], _rank(sc.partition("/")[2]))):
        wl, _, policy = sc.partition("/")
        isol, p05, wc = (cells.get((sc, m)) for m in ("isol_mean", "isol_p05", "work_conservation"))
        a = retained_answer((wl, policy), "isol", isol, card=(wl,))
        extra = [f"p05 {p05['value']:.2f}"] if p05 is not None and finite(p05["value"]) else []
        if wc is not None and finite(wc["value"]) and policy != "none":
            extra.append(f"{wc['value']:.2f} of the spare to the burst")
        why = a.why
        if a.word == ISOLATED and p05 is not None and finite(p05["value"]) and p05["value"] < SURE:
            a = Answer(a.subject, NOT_SURE, UNSURE, a.number, a.why, a.card)
            why = "; ".join(x for x in (a.why, f"its worst seconds (p05 {p05['value']:.2f}) fall below {SURE:g}")
                            if x)
        out.append(Answer(a.subject, a.word, a.tone, "; ".join([a.number, *extra]), why, a.card))
    return out


def refresh_guard(directory: Path, store: Store, title: str):
    """Everything a guard study's results directory shows, from its store."""
    runs = sorted((load_run(store, t) for t in store.trials("ok")),
                  key=lambda r: (r.workload, _rank(r.policy), r.trial["repetition"]))
    rows = analyze_protection(directory, store, runs)
    tables = side_by_side(rows, {key[1]: why for key, why in failures(store).items()})
    notes = disk_notes(runs, references(runs))
    for wl in notes:
        notes[wl] += [n for n in [frontier_note(rows, wl)] if n]
    for wl, lines in thin_notes(rows).items():
        notes.setdefault(wl, []).extend(lines)
    write_text(directory / "guard-table.md", markdown(tables, title, notes))
    figures = []
    for wl in sorted({r.workload for r in runs}):
        mine = [r for r in runs if r.workload == wl]
        figures.append({"title": f"{wl}: victim under each policy",
                        "png": save(workload_figure(wl, mine), directory, f"victim-{wl}")})
        if len(frontier_points(rows, wl)) > 1:
            figures.append({"title": f"{wl}: isolation against work conservation",
                            "png": save(frontier_figure(wl, rows), directory, f"frontier-{wl}")})
        for r in mine:
            name = f"{r.trial['scenario']} · rep {r.trial['repetition']}"
            alerts = [e for e in store.events(r.trial["trial_id"]) if e["kind"] in ("alert", "alert-cleared")]
            figures.append({"title": name, "png": save(run_timeline_figure(name, r, alerts),
                                                       directory, f"timeline-{r.trial['trial_id']}")})
    said = answers(rows)
    out = write_page(directory, kind_page(__file__), figures, answers=said, heads=[f"{h} ({v})" for _, v, h in COLUMNS],
                     tables=tables, notes=notes, failed=[t for t in store.trials() if t["status"] != "ok"],
                     figures=figures,
                     events=[e for e in store.events()
                             if e["kind"] in ("alert", "alert-cleared", "escape", "escape-cleared", "timeout")])
    return Written(rows, out, rich_tables(tables, title, notes), said)
