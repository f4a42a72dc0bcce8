"""The echo study's report: its metric per trial, aggregated; a table and its page."""
from __future__ import annotations

from pathlib import Path

from contend.metrics import aggregate
from contend.report.page import Written, kind_page, publish, write_page
from contend.report.table import TextTable, mean_text, rich_text_tables
from contend.store import Store

from .metrics import echo_rows


def refresh_echo(directory: Path, store: Store, title: str) -> Written:
    per_trial = []
    for t in store.trials("ok"):
        s = store.samples(t["trial_id"])
        per_trial += echo_rows(t, {str(q): float(v) for q, v in zip(s.quantity, s.value)})
    rows = publish(directory, store, aggregate(per_trial))
    idx = {(r["runtime"], r["metric"]): r for r in rows}
    runtimes = sorted({r["runtime"] for r in rows})
    table = TextTable("echo in a container (guest view)", ["runtime", "echo (s)", "words back"],
                      [[rt, mean_text(idx.get((rt, "echo_s")), ".3f") or "n/a",
                        mean_text(idx.get((rt, "words_back")), ".0f") or "n/a"] for rt in runtimes])
    out = write_page(directory, kind_page(__file__), [], tables=[table])
    return Written(rows, out, rich_text_tables([table], title))
