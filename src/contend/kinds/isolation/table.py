"""The isolation study's results table (Volpert et al. Table 4): rows runtime × scenario, per resource the
headline metrics of one view, its cells flagged where a view is not whole or a limit escaped; the terminal's
view-by-view tables and table4-<view>.md."""
from __future__ import annotations

import math
from functools import partial

from rich import box
from rich.console import Group
from rich.table import Table
from rich.text import Text

from ...report.answer import Answer, retained_answer
from ...report.table import cell, ci_text
from ...spec import RESOURCES

HEADLINE = ("I_plr", "I_intFree", "S_I", "escape")
TABLE4 = ("I_intFree", "I_plr", "S_I")


def pivot(rows: list[dict], failures: dict[tuple, str] | None = None) -> list[dict]:
    """One dict per (runtime, scenario, resource, view) with the headline cells and n."""
    by: dict[tuple, dict] = {}
    for r in rows:
        key = (r["runtime"], r["scenario"], r["resource"], r["view"])
        by.setdefault(key, {})[r["metric"]] = r
    out = []
    for key, metrics in sorted(by.items()):
        n = max((m["n"] for m in metrics.values()), default=0)
        out.append({"runtime": key[0], "scenario": key[1], "resource": key[2], "view": key[3], "n": n,
                    **{h: cell(metrics.get(h)) for h in HEADLINE},
                    "note": (failures or {}).get(key[:3], "") if n == 0 else ""})
    return out


ESCAPED = 1.05  # escape ratio above which a cell is flagged: the disruptive tenant got more than its limit
VIEW_ORDER = ("ebpf", "host", "guest")
SPEEDUP = 1.05  # host_speedup above which a CPU cell's guest view is flagged: the host, not a neighbour, changed


COVERAGE = 0.05  # ebpf_coverage farther than this from 1: the eBPF view of a cell is not whole
OUTSIDE = 0.05  # |host_outside| above which every view of a CPU cell is flagged: CPU taken outside the tenants


def caveat(view: str, measured: dict, rt: str, sc: str, res: str, short: bool = False) -> str | None:
    """Why one view of a cell is not to be read as the others (flagged `~`): a CPU cell whose host's CPUs were
    taken outside the tenants during the ramp (host_outside), a CPU cell's guest view whose host changed speed
    (host_speedup), an eBPF view that did not count what the kernel charged (ebpf_coverage). `short`: the reason
    in one phrase, as the terminal shows it beside the cell (the whole of it is in the report and table4-*.md)."""
    if (out := measured.get("host_outside")) and abs(out["value"]) > OUTSIDE:
        if short:
            return f"the host's own load moved {abs(out['value']):.2f} CPU: rerun"
        return (f"outside: in {rt} {sc} {res}, what ran outside the two tenants (another process, or the "
                f"hypervisor's steal) took {abs(out['value']):.2f} of the host's CPUs "
                f"{'more' if out['value'] > 0 else 'less'} in some step than during the baseline (mean over its "
                "trials): that change is not the neighbour's doing (metrics.csv: host_outside)")
    if view == "guest" and (sp := measured.get("host_speedup")) and sp["value"] > SPEEDUP:
        if short:
            return f"the host ran {sp['value']:.2f}× faster in a step"
        return (f"host speed: in {rt} {sc} {res} the abiding tenant did {sp['value']:.2f}× its baseline's work "
                "per CPU-second in some step (mean over its trials); no neighbour speeds work up, so the host itself "
                "changed speed and the guest view measures that too (metrics.csv: host_speedup)")
    if view == "ebpf" and (cv := measured.get("ebpf_coverage")) and abs(cv["value"] - 1) > COVERAGE:
        if short:
            return f"eBPF saw {cv['value']:.2f}× of it"
        return (f"eBPF coverage: in {rt} {sc} {res} the eBPF view counted {cv['value']:.2f}× of what the kernel "
                "charged the abiding tenant in some step (mean over its trials), so its figures are not the "
                "tenant's; for disk, I/O held back by the tenant's throttle is submitted by a kernel worker, in "
                "no tenant's cgroup (docs/metrics.md; metrics.csv: ebpf_coverage): read the host view")
    return None


def escaped(measured: dict[str, dict]) -> float:
    """The disruptive tenant's use over its limit, as the kernel's own counters say (the guest's unit is
    throughput): the host view's, else the eBPF view's; 0 where none was measured."""
    return next((measured[v]["escape"]["value"] for v in ("host", "ebpf", "guest") if "escape" in measured.get(v, {})),
                0.0)


READ = ("host", "ebpf", "guest")  # the view an answer reads: the kernel's own counters first (DESIGN §5)


def answers(rows: list[dict], notes: dict[tuple, str], curves_of: dict[tuple, list] | None = None) -> list[Answer]:
    """One answer per runtime × resource × scenario (pure): is the abiding tenant isolated? Read in the first
    view of READ that measured it, on the lower of its I_intFree and I_plr (the curve's area and its end), with
    the reason a cell is flagged in one phrase. `curves_of`: each cell's curves per view, for the sparkline."""
    by, resources = by_cell(rows)
    out = []
    for (rt, sc, res), per_view in sorted(by.items(), key=lambda kv: (kv[0][0], resources.index(kv[0][2]),
                                                                      kv[0][1])):
        measured = {v: {m: r for m, r in ms.items() if r["n"] > 0 and not math.isnan(r["value"])}
                    for v, ms in per_view.items()}
        view = next((v for v in READ if measured.get(v, {}).get("I_plr")), None)
        subject, card = (rt, res, sc), (rt, res)
        if view is None:
            out.append(Answer(subject, "n/a", "unsure", "nothing measured", notes.get((rt, sc, res), ""), card))
            continue
        mine = measured[view]
        name = min((m for m in ("I_intFree", "I_plr") if m in mine), key=lambda m: mine[m]["value"])
        esc = escaped(measured)
        why = [f"the neighbour took {esc:.2f}× its limit"] if esc > ESCAPED else []
        if note := caveat(view, mine, rt, sc, res, short=True):
            why.append(note)
        if view != READ[0]:
            why.append(f"{view} view")
        spark = spark_of((curves_of or {}).get((rt, sc, res, view), []))
        out.append(retained_answer(subject, name, mine[name], "; ".join(why), card, spark))
    return out


def spark_of(reps: list) -> tuple[tuple[float, float], ...]:
    """The isolation curve a sparkline draws: the abiding tenant's level at each step over its baseline's (mean
    over the repetitions), against the disruptive tenant's ideal level."""
    import numpy as np
    ok = [c for c in reps if len(c.w_a) and math.isfinite(c.w_a[0]) and c.w_a[0] > 0]
    if not ok or len({len(c.w_a) for c in ok}) != 1:
        return ()
    y = np.nanmean([c.w_a / c.w_a[0] for c in ok], axis=0)
    return tuple((float(x), float(v)) for x, v in zip(ok[0].w_d_ideal, y) if math.isfinite(v))


def by_cell(rows: list[dict]) -> tuple[dict[tuple, dict], list[str]]:
    """{(runtime, scenario, resource): {view: {metric: row}}}, and the resources in the study's order."""
    by: dict[tuple, dict] = {}
    for r in rows:
        by.setdefault((r["runtime"], r["scenario"], r["resource"]), {}).setdefault(r["view"], {})[r["metric"]] = r
    resources = [res for res in RESOURCES if any(k[2] == res for k in by)]
    return by, resources + sorted({k[2] for k in by} - set(resources))


def footnote(footnotes: list[str], text: str) -> str:
    """A footnote's mark, "(k)", the text added to the list once."""
    if text not in footnotes:
        footnotes.append(text)
    return f"({footnotes.index(text) + 1})"


def table4(rows: list[dict], notes: dict[tuple, str], view: str, brackets: bool = False) -> dict:
    """Table 4 for one view (pure): rows runtime × scenario, columns resource × (I_intFree, I_plr, S_I).

    Returns {"resources", "rows": [{"runtime", "scenario", "cells": {(resource, metric): text},
    "values": {(resource, metric): metrics row or None}}], "footnotes": [text]}: a cell without a value
    says n/a and points at its reason; a cell whose disruptive tenant escaped its limit is flagged with `!`
    and the escape ratio in a footnote.
    """
    by, resources = by_cell(rows)
    footnotes: list[str] = []
    mark = partial(footnote, footnotes)

    out = []
    for rt, sc in sorted({(k[0], k[1]) for k in by}):
        cells: dict[tuple[str, str], str] = {}
        values: dict[tuple[str, str], float | None] = {}
        for res in resources:
            views = by.get((rt, sc, res), {})
            metrics = views.get(view, {})
            measured = {m: r for m, r in metrics.items() if r["n"] > 0 and not math.isnan(r["value"])}
            if not measured:
                why = notes.get((rt, sc, res)) or (f"no {view} view measured" if views else "not in this study")
                for m in TABLE4:
                    cells[(res, m)], values[(res, m)] = f"n/a {mark(why)}", None
                continue
            esc = measured.get("escape")
            flag = ""
            if esc is not None and esc["value"] > ESCAPED:
                flag = "! " + mark(f"escape: the disruptive tenant reached {esc['value']:.2f}× its limit "
                                   f"({rt} {sc} {res})")
            note = caveat(view, measured, rt, sc, res)
            if note:
                flag = (flag + " " if flag else "") + "~ " + mark(note)
            unseen = mark(f"the abiding tenant's use was not seen in the {view} view ({rt} {res}): "
                          "its work is done outside its cgroup, or not counted there") \
                if any(m not in measured for m in TABLE4) else ""
            for m in TABLE4:
                values[(res, m)] = measured.get(m)
                cells[(res, m)] = (ci_text(measured[m], brackets) if m in measured else f"n/a {unseen}") + \
                    (f" {flag}" if flag and m == "I_plr" else "")
        out.append({"runtime": rt, "scenario": sc, "cells": cells, "values": values})
    return {"resources": resources, "rows": out, "footnotes": footnotes}


def views_in(rows: list[dict]) -> list[str]:
    present = {r["view"] for r in rows if r["n"] > 0}
    return [v for v in VIEW_ORDER if v in present] + sorted(present - set(VIEW_ORDER))


def shown_views(rows: list[dict], views: str = "read") -> list[str]:
    """The views the terminal shows: `read` the one an answer reads (host where measured), `all` every view,
    or a comma-separated list of views."""
    present = views_in(rows) or ["host"]
    if views == "all":
        return present
    if views == "read":
        return [next((v for v in READ if v in present), present[0])]
    return [v for v in views.split(",") if v in present] or present[:1]


def rich_views(rows: list[dict], notes: dict[tuple, str], title: str, views: str = "read") -> Group:
    """The terminal's results table: per resource, rows runtime × scenario × metric (Table 4's I_intFree,
    I_plr, S_I), a column per view shown (shown_views: by default the one the answers read), mean ± half the 95 %
    interval and n. A flagged cell says why beside it, in one phrase (`~` a view not to be read as the others,
    `!` a limit that did not hold)."""
    by, resources = by_cell(rows)
    shown = shown_views(rows, views)
    parts: list = []
    for res in resources:
        t = Table(title=f"{title}: {res}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for name in ("runtime", "scenario", "metric"):
            t.add_column(name, no_wrap=True)
        for v in shown:
            t.add_column(v, justify="right", no_wrap=True)
        t.add_column("n", justify="right", no_wrap=True)
        t.add_column("note", no_wrap=False)
        for rt, sc in sorted({(k[0], k[1]) for k in by if k[2] == res}):
            per_view = by[(rt, sc, res)]
            measured = {v: {m: r for m, r in ms.items() if r["n"] > 0 and not math.isnan(r["value"])}
                        for v, ms in per_view.items()}
            if not any(measured.values()):
                t.add_row(rt, sc, "", *(["n/a"] * len(shown)), "",
                          Text(notes.get((rt, sc, res)) or "nothing measured"))
                t.add_section()
                continue
            esc = escaped(measured)
            n = max((r["n"] for ms in measured.values() for r in ms.values()), default=0)
            said = [f"! neighbour at {esc:.2f}× its limit"] if esc > ESCAPED else []
            said += [f"~ {v}: {note}" for v in shown if (note := caveat(v, measured.get(v, {}), rt, sc, res, True))]
            for j, m in enumerate(TABLE4):
                cells = []
                for v in shown:
                    r = measured.get(v, {}).get(m)
                    cells.append(ci_text(r, brackets=False) if r else "n/a")
                t.add_row(rt if j == 0 else "", sc if j == 0 else "", m, *cells, str(n) if j == 0 else "",
                          Text(said[j]) if j < len(said) else "")
            t.add_section()
        parts.append(t)
    more = [v for v in views_in(rows) if v not in shown]
    also = (f"; the {' and '.join(more)} view{'s' if len(more) > 1 else ''}: --views all, report.html and "
            "table4-<view>.md") if more else "; each view's Table 4 with [low, high] is in table4-<view>.md"
    parts.append(Text("mean ± half its 95 % interval over n repetitions" + also))
    return Group(*parts)


def table4_markdown(t4: dict, title: str) -> str:
    cols = [f"{res} {m}" for res in t4["resources"] for m in TABLE4]
    lines = [f"# {title}", "", "| runtime | scenario | " + " | ".join(cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for r in t4["rows"]:
        lines.append(f"| {r['runtime']} | {r['scenario']} | "
                     + " | ".join(r["cells"][(res, m)] for res in t4["resources"] for m in TABLE4) + " |")
    lines += [""] + [f"({i + 1}) {f}  " for i, f in enumerate(t4["footnotes"])]
    return "\n".join(lines) + "\n"
