"""The report of a parallel-suite study (CoPTS in kind): per benchmark, each runtime's isolated and N-parallel
result normalised to runc isolated with the change from isolated (the paper's Tables 2-7; terminal,
copts-tables.md, report.html), CoPTS-compatible CSVs (copts/), and per benchmark the scaling curve and how
CPU time was shared (figures/)."""
from __future__ import annotations

import csv
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ...paths import check_name, open_under, write_text
from ...report.answer import BAD, GOOD, UNSURE, Answer, finite
from ...report.figures import Figure, plt, save
from ...report.page import Written, kind_page, publish, read_yaml, write_page
from ...report.table import TextTable, markdown_tables, mean_text, rich_text_tables
from ...store import Store
from .benchmarks import BENCHMARKS
from .metrics import Run, count_of, scaling_metrics, scenario_of


@dataclass
class StoredRun:
    """One benchmark run as the store holds it (a CoPTS CSV row)."""

    trial: dict
    tenant: str  # p<process>c<container>
    run: int  # its index within the container
    t_end: float
    figures: dict
    host: dict
    wall_s: float = float("nan")
    status: str = "ok"
    reason: str = ""

    @property
    def process(self) -> int:
        return int(re.findall(r"^p(\d+)", self.tenant)[0])

    @property
    def container(self) -> int:
        return int(re.findall(r"c(\d+)$", self.tenant)[0])


def load_runs(store: Store, trial: dict) -> list[StoredRun]:
    """A cell's runs, failed ones marked by their events: every sample and the event of a run share its end
    time."""
    s = store.samples(trial["trial_id"])
    by: dict[tuple, StoredRun] = {}
    for t, tenant, source, q, v in zip(s.t, s.tenant, s.source, s.quantity, s.value):
        if source == "launch":
            continue
        r = by.setdefault((str(tenant), float(t)), StoredRun(trial, str(tenant), 0, float(t), {}, {}))
        if q == "wall_s":
            r.wall_s = float(v)
        elif source == "guest":
            r.figures[str(q)] = float(v)
        else:
            r.host[str(q)] = float(v)
    for e in store.events(trial["trial_id"]):
        if e["kind"] == "run-failed":  # at its run's end: the same key as its samples
            r = by.setdefault((e["tenant"], e["t"]), StoredRun(trial, e["tenant"], 0, e["t"], {}, {}))
            r.status, r.reason = "failed", e["detail"]
    runs = sorted(by.values(), key=lambda r: (r.process, r.container, r.t_end))
    index: dict[str, int] = defaultdict(int)
    for r in runs:
        r.run = index[r.tenant]
        index[r.tenant] += 1
    return runs


FAIR = 0.95  # Jain's index from which containers sharing the host are said to share it fairly


def answers(rows: list[dict], runtimes: list[str]) -> list[Answer]:
    """Per benchmark × runtime at its most containers at once (pure): did they share the host fairly? Jain's
    index over the containers' headline figures (1: all alike; 1/k: one took everything), with what each kept of
    the same runtime alone (normalised) beside it."""
    idx = {(r["runtime"], r["scenario"], r["resource"], r["metric"]): r for r in rows if r["view"] == "guest"}
    out = []
    for bench in sorted({k[2] for k in idx}):
        for rt in runtimes:
            counts = sorted({int(k[1].rpartition("-")[2]) for k in idx if k[0] == rt and k[2] == bench
                             and k[1].startswith("parallel-")})
            if not counts:
                continue
            sc = f"parallel-{counts[-1]}"
            jain, norm = idx.get((rt, sc, bench, "jain")), idx.get((rt, sc, bench, "normalized"))
            if jain is None or not finite(jain["value"]):
                out.append(Answer((rt, bench, sc), "n/a", UNSURE, "nothing measured", card=(rt,)))
                continue
            fair = jain["value"] >= FAIR
            number = f"Jain {jain['value']:.2f} over {counts[-1]} containers" + (
                f"; {norm['value']:.2f}× the base runtime alone (runc's where measured)"
                if norm is not None and finite(norm["value"]) else "")
            out.append(Answer((rt, bench, sc), "fair" if fair else "NOT fair", GOOD if fair else BAD, number,
                              card=(rt,)))
    return out


def refresh_scaling(directory: Path, store: Store, title: str):
    """Everything a parallel study's results directory shows, from its store."""
    spec = read_yaml(directory / "spec.yaml")
    runtimes = spec.get("runtimes", [])
    trials = store.trials()
    stored = {t["trial_id"]: load_runs(store, t) for t in trials if t["status"] == "ok"}
    runs = [Run(t["runtime"], t["count"], t["benchmark"], r.tenant, r.figures, r.host,
                (r.t_end - r.wall_s, r.t_end) if math.isfinite(r.wall_s) else None)
            for t in trials if t["status"] == "ok" for r in stored[t["trial_id"]] if r.status == "ok"]
    rows = publish(directory, store, scaling_metrics(runs, {b: BENCHMARKS[b].figure for b in BENCHMARKS}, runtimes))
    write_copts_csvs(directory, trials, stored)
    tables = copts_tables(rows, trials, runtimes)
    write_text(directory / "copts-tables.md", markdown_tables(tables.values(), title, INTRO))
    fair = {"host_cpus": next((t["capacity"].get("cpus") for t in trials), None),
            "limit": spec.get("limits", {}).get("cpus")}
    figures = [{"title": f"{b}: scaling",
                "png": save(scaling_figure(b, rows, runtimes, **fair), directory, f"scaling-{b}")}
               for b in tables]
    said = answers(rows, runtimes)
    out = write_page(directory, kind_page(__file__), figures, tables=tables, figures=figures, answers=said,
                     not_ok=[t for t in trials if t["status"] != "ok" or t["reason"]],
                     events=[e for e in store.events() if e["kind"] in ("oom-kill", "run-failed")])
    return Written(rows, out, rich_text_tables(tables.values(), title), said)


# ------------------------------------------------------------------ tables (Tables 2-7)
def copts_tables(rows: list[dict], trials: list[dict], runtimes: list[str]) -> dict[str, TextTable]:
    index = {(r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"]): r for r in rows}
    by_bench: dict[str, list[dict]] = defaultdict(list)
    for t in trials:
        by_bench[t["benchmark"]].append(t)
    out = {}
    for bench, ts in by_bench.items():
        b = BENCHMARKS[bench]
        counts = sorted({t["count"] for t in ts})
        scen = {n: scenario_of(n) for n in counts}
        top = scen[counts[-1]]
        notes: list[str] = []
        lines = []
        for rt in [r for r in runtimes if any(t["runtime"] == r for t in ts)]:
            line = [rt]
            for n in counts:
                trial = next((t for t in ts if t["runtime"] == rt and t["count"] == n), None)
                text = mean_text(index.get((rt, scen[n], bench, "guest", "normalized")), ".2f", "x")
                if text is None or (trial is not None and trial["status"] != "ok"):
                    why = trial["reason"] if trial is not None else "not run"
                    if why not in notes:
                        notes.append(why)
                    text = f"{trial['status'] if trial else 'n/a'} ({notes.index(why) + 1})"
                elif trial is not None and trial["reason"]:
                    if trial["reason"] not in notes:
                        notes.append(trial["reason"])
                    text += f" ({notes.index(trial['reason']) + 1})"
                line.append(text)
            line.append(mean_text(index.get((rt, top, bench, "guest", "loss_pct")), "+.0f", " %") or "n/a")
            line.append(mean_text(index.get((rt, top, bench, "host", "jain")), ".2f") or "n/a")
            line.append(mean_text(index.get((rt, top, bench, "host", "concurrency")), ".1f") or "n/a")
            lines.append(line)
        base = next((r for r in rows if r["resource"] == bench and r["scenario"] == "isolated"
                     and r["metric"] == "normalized" and abs(r["value"] - 1) < 1e-12), None)
        raw = index.get((base["runtime"], "isolated", bench, "guest", b.figure)) if base else None
        caption = (f"{bench} ({b.resource}): {b.figure} normalised to {base['runtime']} isolated "
                   f"(x = {raw['value']:,.4g} {b.unit}); {'higher' if b.higher_is_better else 'lower'} is better"
                   if base is not None and raw else f"{bench}: no isolated run to normalise to")
        heads = ["runtime"] + [f"{'isolated' if n == 1 else f'{n} parallel'}" for n in counts] + \
                [f"{b.change} at {counts[-1]}", f"CPU fairness at {counts[-1]}", f"overlap at {counts[-1]}"]
        out[bench] = TextTable(caption, heads, lines, notes)
    return out


INTRO = ("Per benchmark, each runtime's mean over every run of every container (± half the 95 % interval), "
         "normalised to the base runtime's isolated run; the change from the runtime's own isolated run at the "
         "largest count (the paper's throughput loss or runtime increase); Jain's index of the CPU time the "
         "concurrent containers got (host view, 1 = even); the overlap: how many runs went on at once, on average "
         "over each run (N = the N containers' runs fully overlapped).")


# ------------------------------------------------------------------ CoPTS CSVs
def write_copts_csvs(root: Path, trials: list[dict], stored: dict[str, list[StoredRun]]) -> None:
    """CoPTS's x + 1 files per cell below the results directory `root`: copts/<benchmark>/<runtime>/<scenario>/
    process-<p>.csv (each process's runs) and all.csv (every process's runs). One row per run: where it ran, its
    status, its figures. No link is followed below `root`."""
    for t in trials:
        runs = stored.get(t["trial_id"])
        if not runs:
            continue
        d = ("copts", check_name(t["benchmark"], "benchmark"), check_name(t["runtime"], "runtime"),
             scenario_of(t["count"]))
        names = sorted({k for r in runs for k in r.figures})
        host = sorted({k for r in runs for k in r.host})
        head = ["runtime", "benchmark", "containers", "process", "container", "run", "t_end_s", "wall_s", "status",
                *names, *(f"host_{k}" for k in host), "reason"]

        def line(r: StoredRun) -> list:
            return [t["runtime"], t["benchmark"], t["count"], r.process, r.container, r.run,
                    f"{r.t_end:.3f}", _fmt(r.wall_s), r.status, *(_fmt(r.figures.get(k)) for k in names),
                    *(_fmt(r.host.get(k)) for k in host), r.reason]
        for p in sorted({r.process for r in runs}):
            _write_csv(root, (*d, f"process-{p}.csv"), head, [line(r) for r in runs if r.process == p])
        _write_csv(root, (*d, "all.csv"), head, [line(r) for r in runs])


def _fmt(v) -> str:
    return "" if v is None or not math.isfinite(v) else f"{v:.6g}"


def _write_csv(root: Path, parts: tuple[str, ...], head: list[str], lines: list[list]) -> None:
    with open_under(root, *parts, newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows(lines)


# ------------------------------------------------------------------ figures
def scaling_figure(bench: str, rows: list[dict], runtimes: list[str], host_cpus: float | None = None,
                   limit: float | None = None) -> Figure:
    """Left: the normalised figure against concurrent containers, one line per runtime (95 % CI bars);
    right: the CPUs each container got (host view) against the count, with the fair share of a benchmark's
    one thread, min(1, limit, host CPUs / N), dashed."""
    fig, (ax, cx) = plt.subplots(1, 2, figsize=(10, 3.8))
    b = BENCHMARKS[bench]
    counts = sorted({count_of(r["scenario"]) for r in rows if r["resource"] == bench})
    for rt in runtimes:
        for axis, view, metric in ((ax, "guest", "normalized"), (cx, "host", "cpu")):
            pts = sorted(((count_of(r["scenario"]), r) for r in rows if r["runtime"] == rt and r["resource"] == bench
                          and r["view"] == view and r["metric"] == metric and math.isfinite(r["value"])),
                         key=lambda p: p[0])
            if not pts:
                continue
            x = [p[0] for p in pts]
            y = [p[1]["value"] for p in pts]
            err = [[(r["value"] - r["ci_low"]) if math.isfinite(r["ci_low"]) else 0 for _, r in pts],
                   [(r["ci_high"] - r["value"]) if math.isfinite(r["ci_high"]) else 0 for _, r in pts]]
            axis.errorbar(x, y, yerr=err, marker="o", capsize=3, label=rt)
    ax.axhline(1.0, color="grey", lw=0.8, ls=":")
    if host_cpus and limit and counts:
        cx.plot(counts, [min(1.0, limit, host_cpus / n) for n in counts], color="grey", ls="--", lw=1,
                label="fair share (one thread)")
    ax.set_xlabel("concurrent containers")
    ax.set_ylabel(f"{b.figure} / base isolated ({'higher' if b.higher_is_better else 'lower'} is better)")
    ax.set_title(f"{bench}: scaling")
    cx.set_xlabel("concurrent containers")
    cx.set_ylabel("CPUs per container (cgroup)")
    cx.set_title("CPU time shared")
    for axis in (ax, cx):
        axis.set_xticks(counts)
        axis.grid(alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8)
    fig.tight_layout()
    return fig
