"""The report from synthetic stores with known answers (no root): every figure kind's content, the whole
page, `contend report` as an unprivileged user on a copied directory, and report.html in headless Chromium."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.image import imread

from contend.kinds import open_store, refresh
from contend.kinds.guard.report import (
    Run,
    alert_spans,
    disk_notes,
    references,
    run_metrics,
    run_timeline_figure,
    victim_held,
    victim_reference,
    workload_figure,
)
from contend.kinds.isolation.analyze import analyze, trial_curves
from contend.kinds.isolation.figures import heatmap_figure, isolation_figure, timeline_figure
from contend.kinds.isolation.table import TABLE4, table4
from contend.metrics import Samples
from contend.report import failures
from contend.spec import Metrics
from contend.store import DB

from .conftest import contend, needs_root, require
from .reportkit import CHANGE_POINT, LEVELS, OOM_T, isolation_results

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or "chromium"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return isolation_results(tmp_path_factory.mktemp("synthetic") / "res")


def labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_isolation_graph_has_every_repetition_the_references_and_the_change_point(results):
    with open_store(results, read_only=True) as s:
        reps = [c for t in s.trials("ok") if t["scenario"] == "escape"
                for c in trial_curves(s, t, Metrics()) if c.view == "host"]
    assert len(reps) == 3
    ax = isolation_figure("runc · escape · cpu · host", reps, 0.05).axes[0]
    assert "W_d" in ax.get_xlabel() and "W_a" in ax.get_ylabel() and ax.get_title() == "runc · escape · cpu · host"
    lines = ax.get_lines()
    faint = [ln for ln in lines if ln.get_alpha() == 0.25]
    assert len(faint) == 3  # every repetition, faint
    (mean,) = [ln for ln in lines if ln.get_label().startswith("measured")]
    assert np.allclose(mean.get_xdata(), [0.0, *LEVELS])  # the baseline, then every ramp step
    assert mean.get_ydata()[-1] == pytest.approx(0.25, abs=0.02)  # one for one past the change point
    (cp,) = [ln for ln in lines if ln.get_label() == "change point"]
    assert cp.get_xdata()[0] == pytest.approx(CHANGE_POINT[0])
    assert cp.get_ydata()[0] == pytest.approx(CHANGE_POINT[1], abs=0.02)
    assert {"perfectly isolated", "non-isolated", "area in I_intFree"} <= set(labels(ax))
    assert any(isinstance(c, PolyCollection) for c in ax.collections)  # the shaded area


def test_timeline_draws_use_ideal_limits_and_the_oom_kill(results):
    with open_store(results, read_only=True) as s:
        (t,) = [t for t in s.trials("ok") if t["trial_id"] == "runc.escape.cpu.r1"]
        fig = timeline_figure("t", s.samples(t["trial_id"]), s.steps(t["trial_id"]), t, s.events(t["trial_id"]))
    ax = fig.axes[0]
    assert set(labels(ax)) == {"W_a achieved", "W_d achieved", "W_d ideal", "l_a (limit)", "l_d (limit)",
                               "escape (W_d above l_d)"}
    (escape,) = [c for c in ax.collections if c.get_label() == "escape (W_d above l_d)"]
    assert escape.get_paths()  # escape's disruptive tenant ran above its l_d = 0.25
    (ideal,) = [ln for ln in ax.get_lines() if ln.get_label() == "W_d ideal"]
    assert max(ideal.get_ydata()) == pytest.approx(LEVELS[-1])
    marks = [ln for ln in ax.get_lines() if ln.get_xdata()[0] == OOM_T and len(set(ln.get_xdata())) == 1]
    assert marks and any(tx.get_text() == "oom-kill" for tx in ax.texts)
    assert "fraction of capacity" in ax.get_ylabel() and "(s)" in ax.get_xlabel()


def test_timeline_of_an_isolated_trial_shows_no_escape(results):
    with open_store(results, read_only=True) as s:
        (t,) = [t for t in s.trials("ok") if t["trial_id"] == "runc.harmony.cpu.r1"]
        ax = timeline_figure("t", s.samples(t["trial_id"]), s.steps(t["trial_id"]), t, []).axes[0]
    assert "escape (W_d above l_d)" not in labels(ax) and not ax.texts


def test_heatmap_colours_the_values_and_says_why_a_cell_is_missing(results):
    with open_store(results) as s:
        rows = analyze(results, s)
        notes = failures(s)
    t4 = table4(rows, notes, "host")
    ax = heatmap_figure("Table 4", t4, TABLE4).axes[0]
    grid = ax.get_images()[0].get_array()
    ylabels = [t.get_text() for t in ax.get_yticklabels()]
    xlabels = [t.get_text() for t in ax.get_xticklabels()]
    assert ylabels == ["runc · escape", "runc · harmony", "runsc · escape"] and len(xlabels) == 3
    plr = xlabels.index("cpu\nI_plr")
    assert grid[0, plr] == pytest.approx(0.5, abs=0.03) and grid[1, plr] == pytest.approx(1.0, abs=0.03)
    assert np.ma.is_masked(grid[2, plr])  # runsc failed: grey, and says n/a with its footnote
    texts = [t.get_text() for t in ax.texts]
    why = t4["footnotes"].index("runsc create: synthetic failure") + 1
    assert texts.count(f"n/a ({why})") == 3
    assert all("±" in t for t in texts[:3])  # three repetitions: each value with its CI
    flagged = [t for t in texts if "!" in t]  # escape's disruptive tenant passed its limit: I_plr says so
    assert len(flagged) == 1 and flagged[0].startswith("0.50\n±") and flagged[0].endswith(")")


def guard_run(policy: str, victim_during: float) -> Run:
    t = np.arange(0, 20, 0.1) + 0.05
    burst = (5.0, 15.0)
    during = (t >= burst[0]) & (t < burst[1])
    victim = np.where(during, victim_during, 1e9)
    neighbour = np.where(during, 3e9, 0.0)
    cols = []
    for tenant, v, cap in (("victim", victim, 1.2e9), ("neighbour", neighbour, 2.5e9)):
        cols += [(x, tenant, "cgroup", "io_wbytes_s", y) for x, y in zip(t, v)]
        cols += [(x, tenant, "cgroup", "io_rbytes_s", 0.0) for x in t]
        cols += [(x, tenant, "guard", "cap_bytes_s", cap) for x in t]
        cols += [(x, tenant, "load", "lat_ms", 0.1 if tenant == "victim" else 1.0) for x in t]
    cols += [(x, "", "guard", "capacity_bytes_s", 4e9) for x in t]
    a = np.array(cols, dtype=object)
    s = Samples(a[:, 0].astype(float), a[:, 1].astype(str), a[:, 2].astype(str), a[:, 3].astype(str),
                a[:, 4].astype(float))
    trial = {"workload": "workload1", "policy": policy, "repetition": 1, "params": {"victim": 0.2},
             "capacity": {"disk_write_bw_bytes_s": 5e9}}
    return Run(trial, s, burst, t, victim, neighbour)


def test_alert_spans_from_the_guards_events():
    ev = [{"t": 6.0, "kind": "alert"}, {"t": 6.1, "kind": "alert"}, {"t": 8.0, "kind": "alert-cleared"},
          {"t": 12.0, "kind": "alert"}]
    assert alert_spans(ev, 20.0) == [(6.0, 8.0), (12.0, 20.0)]
    assert alert_spans([], 20.0) == []


def test_guard_timeline_shows_each_tenants_io_cap_the_capacity_and_alerts():
    fig = run_timeline_figure("workload1/contend · rep 1", guard_run("contend", 1e9),
                              [{"t": 6.0, "kind": "alert"}, {"t": 9.0, "kind": "alert-cleared"}])
    ax, lat = fig.axes
    assert set(labels(ax)) == {"victim", "neighbour", "victim cap", "neighbour cap", "capacity (policy)",
                               "alert (lifelines > capacity)"}
    (cap,) = [ln for ln in ax.get_lines() if ln.get_label() == "neighbour cap"]
    assert cap.get_ydata()[0] == pytest.approx(2.5)  # GB/s
    assert ax.get_ylabel() == "disk GB/s" and lat.get_yscale() == "log"


def test_guard_workload_figure_has_one_victim_line_per_policy():
    runs = [guard_run(p, v) for p, v in (("none", 0.1e9), ("contend", 0.9e9), ("contend", 0.8e9))]
    ax = workload_figure("workload1", runs).axes[0]
    assert labels(ax) == ["none", "contend"]  # the first repetition of each
    (none,) = [ln for ln in ax.get_lines() if ln.get_label() == "none"]
    assert min(none.get_ydata()) == pytest.approx(0.1)
    assert ax.get_xlabel() == "time since the burst started (s)"


def paired_run(ident: str, policy: str, started: float, victim: float, neighbour: float, wl: str = "w1",
               before: float = 1e8) -> Run:
    """A run whose tenants write at constant rates during its burst (5-15 s), bytes/s."""
    t = np.arange(0, 20, 0.1) + 0.05
    during = (t >= 5.0) & (t < 15.0)
    trial = {"trial_id": ident, "workload": wl, "policy": policy, "started_at": started, "repetition": 1,
             "params": {"victim": 0.02}, "capacity": {"disk_write_bw_bytes_s": 5e9}}  # it asks for 1e8 bytes/s
    return Run(trial, None, (5.0, 15.0), t, np.where(during, victim, before), np.where(during, neighbour, 1e8))


def test_each_policy_run_is_judged_against_the_none_runs_right_before_and_after_it():
    """A/B/A: none, static, none, contend, none (another workload's runs in between change nothing); a
    reference that failed leaves one side; a directory written before pairing (policies back to back)
    leaves the later policies without any, and the notes say why, with the disk's spread."""
    runs = [paired_run("n1", "none", 1, 2e8, 2.0e9), paired_run("s", "static", 2, 2e8, 1e9),
            paired_run("x", "none", 2.5, 2e8, 9e9, wl="w2"), paired_run("n2", "none", 3, 2e8, 2.2e9),
            paired_run("c", "contend", 4, 2e8, 1.5e9), paired_run("n3", "none", 5, 2e8, 1.8e9)]
    refs = {k: [r.trial["trial_id"] for r in v] for k, v in references(runs).items()}
    assert refs == {"n1": ["n1"], "s": ["n1", "n2"], "x": ["x"], "n2": ["n2"], "c": ["n2", "n3"], "n3": ["n3"]}
    assert {k: [r.trial["trial_id"] for r in v] for k, v in references(
        [r for r in runs if r.trial["trial_id"] != "n2"]).items()}["c"] == ["n3"]
    old = [paired_run("n1", "none", 1, 2e8, 2e9), paired_run("s", "static", 2, 2e8, 1e9),
           paired_run("a", "aridac", 3, 2e8, 1e9), paired_run("c", "contend", 4, 2e8, 2.5e9)]
    refs_old = references(old)
    assert [r.trial["trial_id"] for r in refs_old["s"]] == ["n1"] and refs_old["a"] == [] == refs_old["c"]
    notes = disk_notes(runs, references(runs))["w1"]
    assert notes[0].startswith("the disk under no policy delivered 2,200 MB/s during the burst in 3 reference "
                               "run(s), from 2,000 to 2,400 (18% apart)")
    old_notes = " ".join(disk_notes(old, refs_old)["w1"])
    assert "work conservation n/a for a, c: no run under no policy right before or after it" in old_notes
    fast = runs[:4] + [paired_run("c", "contend", 4, 2e8, 2.5e9), runs[5]]  # more than its references gave
    assert "work conservation bounded at 1 for c" in " ".join(disk_notes(fast, references(fast))["w1"])


def test_a_victim_that_never_got_its_rate_is_judged_against_what_it_did_before_the_burst():
    """A latency-bound victim asks 100 MB/s and does 25 before every burst under no policy: it is judged against
    25 (against 100 every policy scored 0.25 at best), and the notes say so. One that got its rate is judged
    against the rate, as before, and a run without references too."""
    slow = [paired_run("n1", "none", 1, 1e6, 2e9, before=2.4e7), paired_run("c", "contend", 2, 2.5e7, 1e9,
            before=2.5e7), paired_run("n2", "none", 3, 2e6, 2e9, before=2.6e7)]
    refs = references(slow)
    assert victim_reference(slow[1], refs["c"]) == pytest.approx(2.5e7)
    assert victim_reference(slow[0], refs["n1"]) == pytest.approx(2.4e7)
    assert "the victim asked 100 MB/s and did 25 MB/s before the burst under no policy (2 run(s))" in " ".join(
        disk_notes(slow, refs)["w1"])
    fast = [paired_run("n1", "none", 1, 1e6, 2e9, before=1.03e8), paired_run("c", "contend", 2, 1e8, 1e9)]
    assert victim_reference(fast[1], references(fast)["c"]) == pytest.approx(1e8)  # at most the rate it asks
    assert "the victim asked" not in " ".join(disk_notes(fast, references(fast))["w1"])
    assert math.isnan(victim_reference(fast[1], []))


def capped_run(ident: str, policy: str, started: float, before: float, during: float,
               caps: tuple[float, float] | None = None) -> Run:
    """A run whose 4 KiB victim writes `before` bytes/s until its burst (5-15 s) and `during` in it, under a cap (cost
    bytes/s, an I/O costing its bytes only) of caps[0] before the burst and caps[1] in it; none: never capped."""
    t = np.arange(0, 20, 0.1) + 0.05
    during_ = (t >= 5.0) & (t < 15.0)
    victim = np.where(during_, during, before)
    cols = [(x, "victim", "cgroup", "io_wios_s", v / 4096) for x, v in zip(t, victim)]
    if caps:
        cols += [(x, "victim", "guard", "cap_bytes_s", caps[int(x >= 5.0)]) for x in t[::2]]  # every 200 ms
    a = np.array(cols, dtype=object)
    s = Samples(a[:, 0].astype(float), a[:, 1].astype(str), a[:, 2].astype(str), a[:, 3].astype(str),
                a[:, 4].astype(float))
    trial = {"trial_id": ident, "workload": "w1", "policy": policy, "started_at": started, "repetition": 1,
             "params": {"victim": 0.02, "guard": {"io_bytes": 0.0}},
             "capacity": {"disk_write_bw_bytes_s": 5e9, "disk_device": "254:0"}}  # it asks for 1e8 bytes/s
    return Run(trial, s, (5.0, 15.0), t, victim, np.where(during_, 1e9, 1e7))


def test_the_notes_tell_a_slow_minute_before_the_burst_from_a_victim_held_by_its_own_cap():
    """issue 55: on a slow disk hour a latency-bound victim did 0.42-0.70 of its references' rate before aridac's
    bursts, not at its cap, and no better in them (the disk's minute); under contend it sat at its own cap for most
    of a burst (the policy's). Each run that lost isolation is named under the one it is; one that kept it under
    neither, nor a run under no policy, nor a victim slow before the burst because its own cap held it there."""
    runs = [capped_run("n1", "none", 1, 2e7, 2e6), capped_run("a", "aridac", 2, 1e7, 1e7, (1e12, 1e12)),
            capped_run("n2", "none", 3, 2e7, 2e6), capped_run("c", "contend", 4, 2e7, 1e7, (1e9, 1.05e7)),
            capped_run("n3", "none", 5, 2e7, 2e6), capped_run("k", "contend", 6, 2e7, 2e7, (1e9, 2.1e7)),
            capped_run("n4", "none", 7, 2e7, 2e6), capped_run("h", "contend", 8, 1e7, 1e7, (1.05e7, 1.05e7)),
            capped_run("n5", "none", 9, 2e7, 2e6)]
    refs = references(runs)
    assert victim_held(runs[3], 0.0, 5.0) == 0.0 and victim_held(runs[3], 5.0, 15.0) == 1.0
    assert math.isnan(victim_held(runs[0], 5.0, 15.0))  # never capped
    notes = [n for n in disk_notes(runs, refs)["w1"] if n.startswith("the disk's minute") or
             n.startswith("the policy's cap")]
    assert notes == ["the disk's minute: a (0.50) lost isolation with the victim already below 0.9 of its reference "
                     "before the burst (victim_calm), not held by its own cap there",
                     "the policy's cap: c, h lost isolation with the victim at its own cap in half the burst or more"]
    calm = {r.trial["trial_id"]: dict((m, v) for _, m, v in run_metrics(r, 1e9, victim_reference(r, refs[
        r.trial["trial_id"]])))["victim_calm"] for r in runs[1:4:2]}
    assert calm == {"a": pytest.approx(0.5), "c": pytest.approx(1.0)}


def test_the_guard_table_fits_80_columns_in_a_pipe():
    """A guard study's terminal table, with the widest figures a real run printed (latency impacts in the
    thousands, MB/s with intervals), is two tables per workload that fit 80 columns with nothing cut."""
    import io

    from rich.console import Console

    from contend.kinds.guard.report import COLUMNS, rich_tables, side_by_side
    rows = []
    for policy, x in (("none", 4833.4), ("static", 0.96), ("aridac", 1579.42), ("contend", 0.98)):
        rows += [{"scenario": f"workload1/{policy}", "view": v, "metric": m, "value": x, "ci_low": x - 795.57,
                  "ci_high": x + 795.57, "n": 3} for m, v, _ in COLUMNS]
    tables = side_by_side(rows, {})
    assert tables["workload1"][0][1] == "4833±796"  # MB/s in whole numbers
    pipe = io.StringIO()
    Console(file=pipe, width=80).print(rich_tables(tables, "a study", {"workload1": ["the disk under no policy …"]}))
    out = pipe.getvalue()
    assert max(len(line) for line in out.splitlines()) <= 80 and "…" not in out.replace("policy …", "")
    assert out.count("workload1, victim") == 1 and out.count("workload1, neighbour and disk") == 1
    assert "the disk under no policy" in out


# ---------------------------------------------------------------- the page
def test_the_page_and_every_figure_from_the_store(results):
    with open_store(results) as s:
        written = refresh(results, s, "synthetic")
    figs = results / "figures"
    for name in ("heatmap-host", "isolation-runc-escape-cpu-host", "isolation-runc-harmony-cpu-host",
                 "timeline-runc.escape.cpu.r1"):
        assert (figs / f"{name}.png").stat().st_size > 5000 and (figs / f"{name}.svg").exists(), name
    html = written.path.read_text()
    assert html.count("data:image/png;base64,") == len(list(figs.glob("*.png")))
    assert "http://" not in html and "https://" not in html  # nothing fetched: opens offline
    assert "runsc create: synthetic failure" in html and "oom-kill" in html


def test_a_results_directory_without_host_json_is_reported_not_a_traceback(results, tmp_path):
    """Issue 52 L4: an artifact copied without its host.json was a jinja UndefinedError."""
    copy = tmp_path / "copy"
    shutil.copytree(results, copy, ignore=shutil.ignore_patterns("host.json", "report.html", "figures"))
    p = contend("report", str(copy), timeout=180)
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    assert "kernel" in (copy / "report.html").read_text()


@needs_root  # to switch to the unprivileged user
def test_contend_report_on_a_copy_as_an_unprivileged_user(results):
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)
        copy = Path(d) / "copy"
        shutil.copytree(results, copy, ignore=shutil.ignore_patterns("report.html", "figures", "metrics.csv"))
        subprocess.run(["chown", "-R", "65534:65534", str(copy)], check=True)
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            sys.executable, "-m", "contend.cli", "report", str(copy)],
                           capture_output=True, text=True, timeout=180, env={**os.environ, "HOME": d,
                                                                             "MPLCONFIGDIR": d})
        assert p.returncode == 0, p.stderr
        assert (copy / "report.html").exists() and (copy / "figures" / "heatmap-host.png").exists()
        assert "runc" in p.stdout and "I_plr" in p.stdout


@pytest.mark.slow  # 14 s; in make test-all (and CI): make test stays under its 12 minutes (issue 50)
def test_contend_report_converts_a_directory_written_before_cells_and_gives_the_same_metrics(results, tmp_path):
    """A results directory an older contend wrote (its trials held scenario, resource and scenario_params) is
    converted by `contend report`, and its metrics are those of the same data stored the new way."""
    with open_store(results) as s:
        refresh(results, s, "synthetic")
    old = tmp_path / "old"
    shutil.copytree(results, old, ignore=shutil.ignore_patterns("report.html", "figures", "metrics.csv"))
    con = duckdb.connect(str(old / DB))  # the trials table as it was before, from the same rows
    con.execute("CREATE TABLE before AS SELECT t.trial_id, t.runtime, c.scenario, c.resource, t.repetition, "
                "t.status, t.reason, t.started_at, t.ended_at, c.scenario_params, t.capacity, t.facts "
                "FROM trials t JOIN cells_isolation c USING (trial_id)")
    con.execute("DROP TABLE trials; DROP TABLE cells_isolation; ALTER TABLE before RENAME TO trials")
    con.close()
    p = subprocess.run([sys.executable, "-m", "contend.cli", "report", str(old)], capture_output=True, text=True,
                       timeout=180)
    assert p.returncode == 0, p.stderr
    assert (old / "metrics.csv").read_text() == (results / "metrics.csv").read_text()
    with open_store(old, read_only=True) as s:
        assert {t["kind"] for t in s.trials()} == {"isolation"}


@needs_root  # chromium is Debian's, installed by make setup
def test_report_html_in_headless_chromium_loads_every_figure_without_console_errors(results, tmp_path):
    require("chromium")
    from playwright.sync_api import sync_playwright
    with open_store(results) as s:
        page_path = refresh(results, s, "synthetic").path
    n_figures = len(list((results / "figures").glob("*.png")))
    problems: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
                    else None)
            page.on("pageerror", lambda e: problems.append(f"pageerror: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url[:80]}"))
            page.goto(page_path.as_uri(), wait_until="load")
            images = page.evaluate("() => Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth])")
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
        finally:
            browser.close()
    assert len(images) == n_figures
    assert [alt for alt, complete, width in images if not (complete and width > 0)] == []
    assert problems == []
    pixels = imread(shot)
    assert pixels.shape[0] > 900 and pixels[..., :3].std() > 0.05  # a long page, and not blank


def test_cells_on_fewer_repetitions_are_said_with_the_reasons():
    from contend.report import fewer_repetitions
    t = lambda rep, status, reason="", rt="runc", res="cpu": {
        "runtime": rt, "scenario": "harmony", "resource": res, "repetition": rep, "status": status, "reason": reason}
    trials = [t(1, "ok"), t(2, "failed", "stress-ng exited 137"), t(3, "ok"),  # 2 of 3
              t(1, "failed", "x", res="disk"), t(2, "failed", "y", res="disk"),  # none: n/a in the table instead
              t(1, "n/a", "kata not available", rt="kata"), t(1, "ok", rt="runsc")]
    assert fewer_repetitions(trials) == ["runc · harmony · cpu: 2 of 3 repetitions (r2: stress-ng exited 137)"]


def test_the_guard_table_says_which_cells_are_over_fewer_runs():
    """A run whose victim's fio log held no I/O has no guest view: its row's latency is over 2 of 3 runs, and the
    table's notes say so; a row whose every cell is over its 3 runs says nothing."""
    from contend.kinds.guard.report import COLUMNS, thin_notes
    rows = []
    for policy in ("static@capacity=2", "contend@capacity=2"):
        rows += [{"scenario": f"workload2/{policy}", "view": v, "metric": m, "value": 1.0, "ci_low": None,
                  "ci_high": None, "n": 2 if (policy.startswith("static") and v == "guest") else 3}
                 for m, v, _ in COLUMNS]
    rows.append({"scenario": "workload2/contend@capacity=2", "view": "host", "metric": "other", "value": 1.0, "n": 1})
    said = "static@capacity=2: lat imp (guest), p99 imp (guest) over 2 of its 3 runs"
    assert thin_notes(rows) == {"workload2": [said]}


@needs_root  # chromium is Debian's, installed by make setup
@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_the_reports_first_screen_is_the_answer_at_a_desktops_and_a_phones_width(results, width, height):
    """Issue 97: report.html opens with a card per runtime × resource saying isolated / NOT isolated / unsure
    with its number and a sparkline, inside the first screen, at 1280 and 390 px, and nothing wider than the
    phone's screen (wide tables scroll inside themselves)."""
    require("chromium")
    from playwright.sync_api import sync_playwright
    with open_store(results) as s:
        written = refresh(results, s, "synthetic")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(written.path.as_uri(), wait_until="load")
            box = page.locator("section.answers").bounding_box()
            words = page.eval_on_selector_all(".answer .word", "els => els.map(e => e.textContent)")
            cards = page.eval_on_selector_all(".card h3", "els => els.map(e => e.textContent)")
            sparks = page.locator(".answer svg.spark").count()
            overflow = page.evaluate("() => document.documentElement.scrollWidth")
        finally:
            browser.close()
    assert box is not None and box["y"] < height / 2  # the answer starts in the first half of the first screen
    assert words == [a.word for a in written.answers] and set(words) >= {"isolated", "NOT isolated"}
    assert cards == ["runc · cpu", "runsc · cpu"]
    assert sparks == sum(1 for a in written.answers if len(a.curve) >= 2) >= 2
    assert overflow <= width
