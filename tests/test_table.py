"""Table 4 (Volpert et al.) from aggregated metric rows: pure, no root."""
from __future__ import annotations

import math

import pytest
from rich.console import Console

from contend.kinds.isolation.table import rich_views, table4, table4_markdown, views_in


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


def test_the_terminal_table_shows_every_view_side_by_side_and_fits_80_columns_and_a_pipe():
    import io
    rows = ROWS + [row("runc", "harmony", "cpu", v, m, x, x - 0.02, x + 0.02, 3) for v in ("host", "guest")
                   for m, x in (("I_intFree", 0.97), ("I_plr", 0.99), ("S_I", 0.98), ("escape", 0.9))]
    pipe = io.StringIO()
    Console(file=pipe, width=80).print(rich_views(rows, NOTES, "a study (mean ± 95 % CI)"))
    out = pipe.getvalue()
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    head = next(line for line in lines if "runtime" in line)
    assert head.split() == ["runtime", "scenario", "metric", "ebpf", "host", "guest", "n"]
    cpu = next(line for line in lines if line.lstrip().startswith("runc") and "I_intFree" in line)
    assert cpu.split()[-4:] == ["0.99±0.02", "0.97±0.02", "0.97±0.02", "3"]  # ebpf, host, guest, n
    assert "…" not in out  # nothing truncated
    assert "memory overcommit is not run" in out and "escape: the disruptive tenant reached 3.20×" in out




CAVEATS = {  # the view a caveat flags: (resource, views, the caveat's metric, its value and a value inside the
    # band, the words its footnote must say, the column of the flagged cell in the runc line)
    "guest": ("cpu", ("host", "guest"), "host_speedup", 1.62, 1.01, "1.62× its baseline's work per CPU-second", -2),
    "ebpf": ("disk", ("host", "ebpf"), "ebpf_coverage", 0.92, 0.98, "counted 0.92× of what the kernel charged", 4),
}


@pytest.mark.parametrize("view", CAVEATS)
def test_a_view_with_a_caveat_says_so_in_its_cells_only(view):
    """guest: a CPU cell whose abiding tenant did more work per CPU-second in some step than in its baseline
    (host_speedup > 1.05: the host, not a neighbour, changed speed). ebpf: a cell whose eBPF view counted 0.92
    of the host view's bytes in some step (ebpf_coverage: a throttle's held-back I/O is no tenant's there).
    That view's cells are flagged `~` with the reason, in the terminal's table and in its Table 4; other
    views and a cell inside the band are not."""
    import io
    res, views, metric, bad, fine, words, col = CAVEATS[view]
    rows = ROWS + [row("runc", "harmony", res, v, m, x, x - 0.1, x + 0.1, 3) for v in views
                   for m, x in (("I_intFree", 0.7), ("I_plr", 0.9), ("S_I", 0.8))]
    rows += [row("runc", "harmony", res, view, metric, bad, bad - 0.02, bad + 0.02, 3),
             row("runsc", "harmony", res, view, "I_plr", 1.0), row("runsc", "harmony", res, view, "I_intFree", 1.0),
             row("runsc", "harmony", res, view, metric, fine)]
    pipe = io.StringIO()
    Console(file=pipe, width=80).print(rich_views(rows, NOTES, "a study"))
    out = pipe.getvalue()
    assert max(len(line) for line in out.splitlines()) <= 80
    line = next(ln for ln in out.splitlines() if ln.lstrip().startswith("runc") and "0.70" in ln)
    assert line.count("~(") == 1 and line.split()[col].startswith("~(")
    assert words in " ".join(out.split())
    assert f"in runsc harmony {res} the" not in " ".join(out.split())  # inside the band
    cells = {(r["runtime"], r["scenario"]): r["cells"] for r in table4(rows, NOTES, view)["rows"]}
    assert "~" in cells[("runc", "harmony")][(res, "I_plr")]
    assert "~" not in cells[("runsc", "harmony")][(res, "I_plr")]
    host = {(r["runtime"], r["scenario"]): r["cells"] for r in table4(rows, NOTES, "host")["rows"]}
    assert "~" not in host[("runc", "harmony")][(res, "I_plr")]


def test_cpu_taken_outside_the_tenants_flags_every_view_of_the_cell():
    """host_outside > 0.05: something outside the two tenants (another process, the hypervisor's steal) took
    CPU during the ramp; every view's figures of that cell carry it, so every view is flagged, in the terminal
    and in each view's Table 4; a cell inside the band is not."""
    import io
    rows = ROWS + [row("runc", "harmony", "cpu", v, m, x, x - 0.1, x + 0.1, 3) for v in ("host", "ebpf", "guest")
                   for m, x in (("I_intFree", 0.7), ("I_plr", 0.9), ("S_I", 0.8), ("host_outside", 0.5))]
    rows += [row("runsc", "harmony", "cpu", v, m, x) for v in ("host", "ebpf", "guest")
             for m, x in (("I_intFree", 1.0), ("I_plr", 1.0), ("host_outside", -0.04))]
    pipe = io.StringIO()
    Console(file=pipe, width=80).print(rich_views(rows, NOTES, "a study"))
    out = pipe.getvalue()
    assert max(len(line) for line in out.splitlines()) <= 80
    line = next(ln for ln in out.splitlines() if ln.lstrip().startswith("runc") and "0.70" in ln)
    assert line.count("~(") == 3
    assert "took 0.50 of the host's CPUs more in some step" in " ".join(out.split())
    for view in ("host", "ebpf", "guest"):
        cells = {(r["runtime"], r["scenario"]): r["cells"] for r in table4(rows, NOTES, view)["rows"]}
        assert "~" in cells[("runc", "harmony")][("cpu", "I_plr")]
        assert "~" not in cells[("runsc", "harmony")][("cpu", "I_plr")]
