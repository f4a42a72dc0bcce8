"""Table 4 (Volpert et al.) from aggregated metric rows: pure, no root."""
from __future__ import annotations

import math
from pathlib import Path

import pytest
from rich.console import Console

from contend.kinds.isolation.table import answers, rich_views, table4, table4_markdown, views_in
from contend.report.table import Fitted


def row(rt, sc, res, view, metric, value, lo=math.nan, hi=math.nan, n=1):
    return {"runtime": rt, "scenario": sc, "resource": res, "view": view, "metric": metric, "value": value,
            "ci_low": lo, "ci_high": hi, "n": n}


ROWS = [
    row("runc", "harmony", "cpu", "ebpf", "I_intFree", 0.99, 0.97, 1.01, 3),
    row("runc", "harmony", "cpu", "ebpf", "I_plr", 0.98, 0.96, 1.00, 3),
    row("runc", "harmony", "cpu", "ebpf", "S_I", 0.99, 0.98, 1.00, 3),
    row("runc", "harmony", "cpu", "ebpf", "escape", 0.97, 0.95, 0.99, 3),
    row("runsc", "harmony", "disk", "ebpf", "I_intFree", 0.5),
    row("runsc", "harmony", "disk", "ebpf", "I_plr", 0.4),
    row("runsc", "harmony", "disk", "ebpf", "S_I", 0.8),
    row("runsc", "harmony", "disk", "ebpf", "escape", 3.2),
    row("runc", "overcommit", "memory", "host", "I_plr", math.nan, n=0),
    row("runc", "harmony", "disk", "host", "I_plr", 0.7),
]
NOTES = {("runc", "overcommit", "memory"): "memory overcommit is not run, as in the paper"}


def test_cells_have_ci_na_reasons_and_escape_flags():
    t = table4(ROWS, NOTES, "ebpf")
    assert t["resources"] == ["cpu", "memory", "disk"]
    cells = {(r["runtime"], r["scenario"]): r["cells"] for r in t["rows"]}
    assert cells[("runc", "harmony")][("cpu", "I_intFree")] == "0.99±0.02"
    assert cells[("runsc", "harmony")][("disk", "S_I")] == "0.80"  # n = 1: no interval
    # the escape ratio 3.2 flags the cell and says so in a footnote
    assert "!" in cells[("runsc", "harmony")][("disk", "I_plr")]
    assert any("3.20× its limit" in f for f in t["footnotes"])
    # not run: n/a with its reason; measured only in another view: n/a saying so; absent: not in the study
    na = cells[("runc", "overcommit")][("memory", "I_plr")]
    assert na.startswith("n/a (") and t["footnotes"][int(na[5:-1]) - 1] == NOTES[("runc", "overcommit", "memory")]
    other = cells[("runc", "harmony")][("disk", "I_plr")]
    assert t["footnotes"][int(other[5:-1]) - 1] == "no ebpf view measured"


def test_brackets_in_files_and_markdown_has_every_column():
    t = table4(ROWS, NOTES, "ebpf", brackets=True)
    md = table4_markdown(t, "study")
    assert "0.99 [0.97, 1.01]" in md
    header = md.splitlines()[2]
    assert header.count("|") == 2 + 3 * 3 + 1  # runtime, scenario, 3 resources × 3 metrics


def test_views_prefer_ebpf_then_host_then_guest():
    assert views_in(ROWS) == ["ebpf", "host"]


def printed(renderable, width: int = 80) -> str:
    """What a terminal of `width` columns (or a pipe: Rich's 80) shows of it."""
    import io
    pipe = io.StringIO()
    Console(file=pipe, width=width).print(Fitted(renderable))
    return pipe.getvalue()


def test_the_terminal_table_shows_the_view_the_answers_read_and_every_view_when_asked():
    """Issue 97: one view by default (the host's counters, DESIGN §5), every view with --views all; a flagged cell
    says why beside it in one phrase; nothing is ever cut, at 60, 80 or 200 columns."""
    rows = ROWS + [row("runc", "harmony", "cpu", v, m, x, x - 0.02, x + 0.02, 3) for v in ("host", "guest")
                   for m, x in (("I_intFree", 0.97), ("I_plr", 0.99), ("S_I", 0.98), ("escape", 0.9))]
    out = printed(rich_views(rows, NOTES, "a study (mean ± 95 % CI)"))
    head = next(line for line in out.splitlines() if "runtime" in line)
    assert head.split() == ["runtime", "scenario", "metric", "host", "n", "note"]
    cpu = next(line for line in out.splitlines() if line.lstrip().startswith("runc") and "I_intFree" in line)
    assert cpu.split()[-2:] == ["0.97±0.02", "3"]
    assert "the ebpf and guest views: --views all" in " ".join(out.split())
    for width in (60, 80, 200):
        out = printed(rich_views(rows, NOTES, "a study", "all"), width)
        assert "…" not in out and max(len(line) for line in out.splitlines()) <= width
        assert "memory overcommit is not run, as in the paper" in " ".join(out.split())
        assert "! neighbour at 3.20× its limit" in " ".join(out.split())
        for word in ("ebpf", "host", "guest", "I_intFree", "I_plr", "S_I", "runsc", "harmony", "overcommit"):
            assert word in out, (width, word)
        if width == 200:
            head = next(line for line in out.splitlines() if "runtime" in line)
            assert head.split() == ["runtime", "scenario", "metric", "ebpf", "host", "guest", "n", "note"]
            cpu = next(line for line in out.splitlines() if line.lstrip().startswith("runc") and "I_intFree" in line)
            assert cpu.split()[-4:] == ["0.99±0.02", "0.97±0.02", "0.97±0.02", "3"]  # ebpf, host, guest, n
        if width == 60:  # folded: a block per row, every label whole
            assert "runc  harmony  I_intFree" in out and "    ebpf: 0.99±0.02" in out


CAVEATS = {  # the view a caveat flags: (resource, views, the caveat's metric, its value and a value inside the
    # band, the words beside the cell in the terminal, the words of its Table 4 footnote)
    "guest": ("cpu", ("host", "guest"), "host_speedup", 1.62, 1.01, "~ guest: the host ran 1.62× faster in a step",
              "1.62× its baseline's work per CPU-second"),
    "ebpf": ("disk", ("host", "ebpf"), "ebpf_coverage", 0.92, 0.98, "~ ebpf: eBPF saw 0.92× of it",
             "counted 0.92× of what the kernel charged"),
}


@pytest.mark.parametrize("view", CAVEATS)
def test_a_view_with_a_caveat_says_so_beside_its_cell(view):
    """guest: a CPU cell whose abiding tenant did more work per CPU-second in some step than in its baseline
    (host_speedup > 1.05: the host, not a neighbour, changed speed). ebpf: a cell whose eBPF view counted 0.92
    of the host view's bytes in some step (ebpf_coverage: a throttle's held-back I/O is no tenant's there).
    The terminal says so in one phrase beside the cell (every view shown); its Table 4 flags `~` with the whole
    reason; other views and a cell inside the band are not flagged."""
    res, views, metric, bad, fine, short, words = CAVEATS[view]
    rows = ROWS + [row("runc", "harmony", res, v, m, x, x - 0.1, x + 0.1, 3) for v in views
                   for m, x in (("I_intFree", 0.7), ("I_plr", 0.9), ("S_I", 0.8))]
    rows += [row("runc", "harmony", res, view, metric, bad, bad - 0.02, bad + 0.02, 3),
             row("runsc", "harmony", res, view, "I_plr", 1.0), row("runsc", "harmony", res, view, "I_intFree", 1.0),
             row("runsc", "harmony", res, view, metric, fine)]
    out = " ".join(printed(rich_views(rows, NOTES, "a study", "all"), 200).split())
    assert out.count(short) == 1
    assert short.replace("1.62", "1.01").replace("0.92", "0.98") not in out  # inside the band
    cells = {(r["runtime"], r["scenario"]): r["cells"] for r in table4(rows, NOTES, view)["rows"]}
    assert "~" in cells[("runc", "harmony")][(res, "I_plr")]
    assert any(words in f for f in table4(rows, NOTES, view)["footnotes"])
    assert "~" not in cells[("runsc", "harmony")][(res, "I_plr")]
    host = {(r["runtime"], r["scenario"]): r["cells"] for r in table4(rows, NOTES, "host")["rows"]}
    assert "~" not in host[("runc", "harmony")][(res, "I_plr")]


def test_cpu_taken_outside_the_tenants_flags_every_view_of_the_cell():
    """host_outside > 0.05: something outside the two tenants (another process, the hypervisor's steal) took
    CPU during the ramp; every view's figures of that cell carry it, so every view is flagged, in the terminal
    and in each view's Table 4, and the cell's answer says to rerun; a cell inside the band is not."""
    rows = ROWS + [row("runc", "harmony", "cpu", v, m, x, x - 0.1, x + 0.1, 3) for v in ("host", "ebpf", "guest")
                   for m, x in (("I_intFree", 0.7), ("I_plr", 0.9), ("S_I", 0.8), ("host_outside", 0.5))]
    rows += [row("runsc", "harmony", "cpu", v, m, x) for v in ("host", "ebpf", "guest")
             for m, x in (("I_intFree", 1.0), ("I_plr", 1.0), ("host_outside", -0.04))]
    out = " ".join(printed(rich_views(rows, NOTES, "a study", "all"), 200).split())
    assert out.count("the host's own load moved 0.50 CPU: rerun") == 3
    for view in ("host", "ebpf", "guest"):
        cells = {(r["runtime"], r["scenario"]): r["cells"] for r in table4(rows, NOTES, view)["rows"]}
        assert "~" in cells[("runc", "harmony")][("cpu", "I_plr")]
        assert "~" not in cells[("runsc", "harmony")][("cpu", "I_plr")]
    said = {a.subject: a for a in answers(rows, NOTES)}
    assert said[("runc", "cpu", "harmony")].word == "NOT isolated"
    assert "the host's own load moved 0.50 CPU: rerun" in said[("runc", "cpu", "harmony")].why
    runsc = said[("runsc", "cpu", "harmony")]
    assert runsc.word == "isolated" and "one repetition" in runsc.why


@pytest.mark.parametrize("mean, low, high, n, word", [
    (0.99, 0.97, 1.01, 3, "isolated"), (0.96, 0.85, 1.07, 3, "unsure"), (0.64, 0.24, 1.04, 3, "unsure"),
    (0.80, 0.70, 0.90, 3, "NOT isolated"), (0.97, math.nan, math.nan, 1, "isolated"),
    (0.90, math.nan, math.nan, 1, "NOT isolated"), (math.nan, math.nan, math.nan, 0, "unsure"),
    (0.95, 0.90, 1.00, 5, "isolated"), (0.949, 0.90, 0.9499, 5, "NOT isolated")])
def test_an_answer_in_words_from_a_share_kept_and_its_interval(mean, low, high, n, word):
    """isolated: the mean at least 0.95 and the interval above 0.90; NOT isolated: even its top below 0.95;
    unsure between; one repetition: the mean alone, said so."""
    from contend.report.answer import judge
    got, tone, why = judge(mean, low, high, n)
    assert got == word
    assert tone == {"isolated": "good", "NOT isolated": "bad", "unsure": "unsure"}[word]
    assert ("one repetition" in why) == (n == 1)


def test_the_answers_read_the_lower_of_the_area_and_the_end_in_the_host_view():
    rows = [row("runc", "escape", "cpu", v, m, x, x - 0.05, x + 0.05, 3)
            for v, m, x in (("host", "I_intFree", 0.78), ("host", "I_plr", 0.88), ("ebpf", "I_intFree", 0.99),
                            ("ebpf", "I_plr", 0.99), ("host", "escape", 1.3))]
    (a,) = answers(rows, {})
    assert (a.subject, a.word, a.number) == (("runc", "cpu", "escape"), "NOT isolated", "I_intFree 0.78 ± 0.05, n=3")
    assert a.why == "the neighbour took 1.30× its limit"
    assert a.line() == ("runc  cpu  escape  NOT isolated (I_intFree 0.78 ± 0.05, n=3; the neighbour took 1.30× "
                        "its limit)")


def test_the_answers_come_first_and_no_label_is_ever_cut_at_any_width():
    """Issue 97: the answer per cell first, then the tables, every label and cell whole at 60, 80 and 200 columns
    and through a pipe (Rich's 80)."""
    from contend.report.answer import Answer
    from contend.report.page import Written
    rows = ROWS + [row(rt, sc, "cpu", v, m, x, x - 0.02, x + 0.02, 3) for rt in ("runc", "runsc@20260905-ptrace")
                   for sc in ("harmony", "escape") for v in ("host", "ebpf", "guest")
                   for m, x in (("I_intFree", 0.97), ("I_plr", 0.99), ("S_I", 0.98), ("escape", 0.9))]
    said = answers(rows, NOTES)
    w = Written(rows, Path("report.html"), rich_views(rows, NOTES, "quick: isolation metrics"), said,
                lambda v: rich_views(rows, NOTES, "quick: isolation metrics", v))
    assert all(isinstance(a, Answer) for a in said)
    for width in (60, 80, 200):
        for views in ("read", "all"):
            out = printed(w.terminal("quick", views), width)
            assert "…" not in out and max(len(line) for line in out.splitlines()) <= width
            assert out.index("quick: the answer") < out.index("quick: isolation metrics")
            assert "runsc@20260905-ptrace" in out and "I_intFree" in out
            flat = " ".join(out.split())
            assert "runsc@20260905-ptrace cpu escape isolated I_intFree 0.97 ± 0.02, n=3" in flat
    assert w.as_json()["answers"][0]["answer"] in ("isolated", "NOT isolated", "unsure")
