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


def caveat(view: str, measured: dict, rt: str, sc: str, res: str) -> str | None:
    """Why one view of a cell is not to be read as the others (flagged `~`): a CPU cell whose host's CPUs were
    taken outside the tenants during the ramp (host_outside), a CPU cell's guest view whose host changed speed
    (host_speedup), an eBPF view that did not count what the kernel charged (ebpf_coverage)."""
    if (out := measured.get("host_outside")) and abs(out["value"]) > OUTSIDE:
        return (f"outside: in {rt} {sc} {res}, what ran outside the two tenants (another process, or the "
                f"hypervisor's steal) took {abs(out['value']):.2f} of the host's CPUs "
                f"{'more' if out['value'] > 0 else 'less'} in some step than during the baseline (mean over its "
                "trials): that change is not the neighbour's doing (metrics.csv: host_outside)")
    if view == "guest" and (sp := measured.get("host_speedup")) and sp["value"] > SPEEDUP:
        return (f"host speed: in {rt} {sc} {res} the abiding tenant did {sp['value']:.2f}× its baseline's work "
                "per CPU-second in some step (mean over its trials); no neighbour speeds work up, so the host itself "
                "changed speed and the guest view measures that too (metrics.csv: host_speedup)")
    if view == "ebpf" and (cv := measured.get("ebpf_coverage")) and abs(cv["value"] - 1) > COVERAGE:
        return (f"eBPF coverage: in {rt} {sc} {res} the eBPF view counted {cv['value']:.2f}× of what the kernel "
                "charged the abiding tenant in some step (mean over its trials), so its figures are not the "
                "tenant's; for disk, I/O held back by the tenant's throttle is submitted by a kernel worker, in "
                "no tenant's cgroup (docs/metrics.md; metrics.csv: ebpf_coverage): read the host view")
    return None


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


def rich_views(rows: list[dict], notes: dict[tuple, str], title: str) -> Group:
    """The terminal's results table: per resource, rows runtime × scenario × metric (Table 4's I_intFree,
    I_plr, S_I), one column per view side by side, mean ± half the 95 % interval and n. No vertical rules and
    at most ~72 columns, so it reads the same in an 80-column terminal and through a pipe."""
    by, resources = by_cell(rows)
    views = views_in(rows) or ["host"]
    footnotes: list[str] = []
    mark = partial(footnote, footnotes)

    parts: list = []
    for res in resources:
        t = Table(title=f"{title}: {res}", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for name in ("runtime", "scenario", "metric"):
            t.add_column(name, no_wrap=True)
        for v in views:
            t.add_column(v, justify="right", no_wrap=True)
        t.add_column("n", justify="right", no_wrap=True)
        for rt, sc in sorted({(k[0], k[1]) for k in by if k[2] == res}):
            per_view = by[(rt, sc, res)]
            measured = {v: {m: r for m, r in ms.items() if r["n"] > 0 and not math.isnan(r["value"])}
                        for v, ms in per_view.items()}
            if not any(measured.values()):
                t.add_row(rt, sc, "", *(["n/a"] * len(views)),
                          mark(notes.get((rt, sc, res)) or "nothing measured"))
                continue
            # the limit is the kernel's: its own counters say whether it held (the guest's unit is throughput)
            esc = next((measured[v]["escape"]["value"] for v in ("host", "ebpf", "guest")
                        if "escape" in measured.get(v, {})), 0.0)
            flag = f" !{mark(f'escape: the disruptive tenant reached {esc:.2f}× its limit ({rt} {sc} {res})')}" \
                if esc > ESCAPED else ""
            n = max((r["n"] for ms in measured.values() for r in ms.values()), default=0)
            notes_of = {v: caveat(v, measured.get(v, {}), rt, sc, res) for v in views}
            flags = {v: f" ~{mark(note)}" if note else "" for v, note in notes_of.items()}
            for j, m in enumerate(TABLE4):
                cells = []
                for v in views:
                    r = measured.get(v, {}).get(m)
                    cells.append((ci_text(r, brackets=False) if r else "n/a") + flags[v])
                t.add_row(rt if j == 0 else "", sc if j == 0 else "", m + (flag if m == "I_plr" else ""), *cells,
                          str(n) if j == 0 else "")
            t.add_section()
        parts.append(t)
    parts += [Text(f"({i + 1}) {f}") for i, f in enumerate(footnotes)]
    parts.append(Text("mean ± half its 95 % interval over n repetitions; each view's Table 4 with [low, high] "
                      "is in table4-<view>.md"))
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
