"""The results table: rows runtime × scenario × resource × view, the headline metrics as columns."""
from __future__ import annotations

import math

from rich.table import Table

HEADLINE = ("I_plr", "I_intFree", "S_I", "escape")


def cell(r: dict | None) -> str:
    if r is None or r["value"] is None or math.isnan(r["value"]):
        return "n/a"
    if r["n"] >= 2 and not math.isnan(r["ci_low"]):
        return f"{r['value']:.2f}±{(r['ci_high'] - r['ci_low']) / 2:.2f}"
    return f"{r['value']:.2f}"


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


def rich_table(rows: list[dict], failures: dict[tuple, str] | None = None, title: str = "") -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("runtime", "scenario", "resource", "view", *HEADLINE, "n"):
        # metric names never truncated: narrow terminals shrink the label columns instead
        t.add_column(col, justify="right" if col in (*HEADLINE, "n") else "left",
                     min_width=len(col) if col in HEADLINE else None, no_wrap=col in HEADLINE)
    for p in pivot(rows, failures):
        vals = [p[h] if not p["note"] else "n/a" for h in HEADLINE]
        t.add_row(p["runtime"], p["scenario"], p["resource"], p["view"], *vals, str(p["n"]))
        if p["note"]:
            t.add_row("", "", "", "", f"[red]{p['note'][:90]}[/red]", "", "", "", "")
    return t
