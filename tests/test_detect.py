"""kind: detect: contend watch judged against a known answer. The judging is pure (tested on events with known
answers); a small study runs end to end with real containers, stress-ng and the watcher."""
from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import duckdb
import pytest

from contend.kinds.detect.metrics import Truth, cell_figures, coverage, first_use, trial_metrics, true_use

from .conftest import BEFORE, contend, find, needs_root, one_line_exit_2


def blame(t, victim="victim", culprit="noisy", resource="cpu", event="blame"):
    return {"t": t, "event": event, "victim": victim, "resource": resource, "culprit": culprit}


ATTACK = Truth(True, "cpu", 10.0, 18.0, 22.0)


def test_a_right_first_blame_is_found_ranked_first_with_its_latency():
    m = trial_metrics([blame(11.2), blame(11.5, victim="bystander"), blame(15.0, event="cleared")], ATTACK)
    assert m == {"detected": 1.0, "first_right": 1.0, "latency_s": pytest.approx(1.2), "blames": 2.0,
                 "latency_request_s": pytest.approx(1.2), "start_delay_s": pytest.approx(math.nan, nan_ok=True),
                 "correct_blames": 2.0, "false_blames": 0.0}  # noisy hurting the bystander is right too


def test_the_latency_counts_from_the_antagonists_first_use_and_from_the_request_beside_it():
    late = Truth(True, "disk", 10.0, 18.0, 22.0, t_use=10.9)  # the exec and fio's start took 0.9 s
    m = trial_metrics([blame(11.7, resource="disk")], late)
    assert (m["latency_s"], m["latency_request_s"], m["start_delay_s"]) == pytest.approx((0.8, 1.7, 0.9))
    f = cell_figures([m, trial_metrics([blame(12.5, resource="disk")], late)], [0.01, 0.01])
    assert (f["latency_p50_s"], f["request_p50_s"]) == pytest.approx((1.2, 2.1))


def test_first_use_is_the_reading_before_the_rise_that_reached_the_resources_step():
    # CPU-seconds read every 20 ms: an exec's 10 ms at 0.04 s, nothing, then stress-ng's two CPUs from 0.3 s
    cpu = [(0.0, 5.0), (0.02, 5.0), (0.04, 5.01), (0.06, 5.01)] + \
        [(0.08 + 0.02 * i, 5.01 + (0.04 * (i - 11) if i > 11 else 0.0)) for i in range(20)]
    assert first_use(cpu, "cpu") == pytest.approx(0.08 + 0.02 * 11)
    # disk bytes: one 64 KiB read at 0.1 s is no start; fio's 1 MiB writes from the reading after 0.5 s
    disk = [(0.0, 0.0), (0.1, 65536.0), (0.5, 65536.0), (0.52, 65536.0 + (1 << 20)), (0.54, 65536.0 + (3 << 20))]
    assert first_use(disk, "disk") == pytest.approx(0.5)
    # memory held: 80 MiB taken over 0.3 s counts from the reading before it moved
    mem = [(i * 0.1, float(100 << 20) + (max(0, i - 2) * (20 << 20))) for i in range(8)]
    assert first_use(mem, "memory") == pytest.approx(0.2)
    assert math.isnan(first_use([(0.0, 0.0), (0.02, 0.0)], "disk"))  # it never started
    assert math.isnan(first_use(cpu, "network"))  # no step: contend's agents send as they are told


def test_a_wrong_first_blame_is_found_but_not_ranked_first_and_counts_as_false():
    m = trial_metrics([blame(10.5, culprit="bystander"), blame(12.0)], ATTACK)
    assert (m["detected"], m["first_right"], m["latency_s"], m["false_blames"]) == (1.0, 0.0, 2.0, 1.0)


def test_a_blame_before_the_antagonist_or_on_another_resource_is_false_and_finds_nothing():
    m = trial_metrics([blame(9.0), blame(12.0, resource="disk"), blame(13.0, event="self", culprit="victim")],
                      ATTACK)
    assert m["detected"] == 0.0 and math.isnan(m["latency_s"]) and m["false_blames"] == 2.0


def test_every_blame_in_a_control_trial_is_false_and_counted_per_hour():
    control = Truth(False, "cpu", 10.0, 18.0, 1800.0)
    trials = [trial_metrics([blame(12.0, culprit="bystander")], control), trial_metrics([], control)]
    assert [t["false_blames"] for t in trials] == [1.0, 0.0]
    assert cell_figures(trials, [0.5, 0.5]) == {"false_per_h": 1.0}


def test_a_cells_precision_is_over_all_its_blames_and_latency_percentiles_over_found_trials():
    trials = [trial_metrics(ev, ATTACK) for ev in ([blame(11.0)], [blame(12.0), blame(12.5, culprit="bystander")],
                                                   [blame(14.0)], [])]
    f = cell_figures(trials, [0.01] * 4)
    assert f["precision"] == pytest.approx(3 / 4)
    assert f["latency_p50_s"] == pytest.approx(2.0) and f["latency_p95_s"] == pytest.approx(3.8)


def test_a_multi_antagonist_trial_is_right_naming_either_and_says_whether_both_were_named():
    both = Truth(True, "cpu", 10.0, 28.0, 32.0, antagonists=("noisy", "noisy2"))
    first = {**blame(11.0), "culprits": [["noisy", 0.9]]}
    later = {**blame(17.0), "culprits": [["noisy", 0.7], ["noisy2", 0.25]]}
    m = trial_metrics([first, later, blame(20.0, culprit="bystander")], both)
    assert (m["detected"], m["first_right"], m["all_named"], m["false_blames"]) == (1.0, 1.0, 1.0, 1.0)
    assert trial_metrics([first], both)["all_named"] == 0.0  # noisy2 never named
    assert trial_metrics([blame(11.0, culprit="noisy2")], both)["first_right"] == 1.0
    assert "all_named" not in trial_metrics([first], ATTACK)  # one antagonist: nothing more to say


def test_a_trial_whose_victim_had_no_baseline_yet_is_said_not_scored_as_a_miss():
    """Issue 51: the quick pass missed runc's CPU antagonist because the victim's baseline held its own start-up;
    a trial that began before the victim had the detector's warm-up of calm periods could not be judged."""
    early = Truth(True, "cpu", 10.0, 18.0, 22.0, baseline_periods=1)
    m = trial_metrics([blame(12.0, culprit="bystander")], early)
    assert m == {"no_baseline": 1.0, "blames": 1.0, "correct_blames": 0.0, "false_blames": 1.0}
    ready = trial_metrics([blame(11.0)], Truth(True, "cpu", 10.0, 18.0, 22.0, baseline_periods=5))
    assert ready["no_baseline"] == 0.0 and ready["detected"] == 1.0


def cumulative(rates: dict[str, list[float]], t0: float = 0.0) -> dict[str, list[tuple[float, float]]]:
    """Per-period uses as the cumulative readings a trial records, one a second from t0."""
    out = {}
    for name, r in rates.items():
        total, pts = 0.0, [(t0, 0.0)]
        for k, x in enumerate(r, 1):
            total += x
            pts.append((t0 + k, total))
        out[name] = pts
    return out


def test_true_use_is_each_ones_use_per_period_and_the_host_besides_every_tenant():
    truth = cumulative({"victim": [1.0, 0.5], "noisy": [0.5, 1.0], "host": [1.7, 2.0]})
    assert true_use(truth, "victim") == {1.0: {"noisy": 0.5, "host": pytest.approx(0.2)},
                                         2.0: {"noisy": 1.0, "host": pytest.approx(0.5)}}
    # the host's busy time read a little below the tenants' sum: never a negative use
    assert true_use(cumulative({"victim": [1.0], "noisy": [1.0], "host": [1.9]}), "victim")[1.0]["host"] == 0.0


def test_coverage_counts_the_harmed_periods_whose_first_culprit_really_took_most_and_the_share_error():
    # 6 periods: noisy alone 1 CPU (t 1-2), then noisy2 joins with 0.4 (t 3-6); the bystander 0.1 throughout
    truth = cumulative({"victim": [1.0] * 6, "bystander": [0.1] * 6, "noisy": [1.0] * 6,
                        "noisy2": [0, 0, 0.4, 0.4, 0.4, 0.4]})
    right = [["noisy", 0.9], ["bystander", 0.1]]
    both = [["noisy", 0.65], ["noisy2", 0.25], ["bystander", 0.1]]
    steps = [(1.0, "blame", right), (2.0, "blame", right),
             (3.0, "blame", [["noisy2", 0.6], ["noisy", 0.4]]),  # the newcomer first: wrong
             (4.0, "blame", both), (5.0, "unattributed", []),  # nobody named: not covered
             (6.0, "blame", both), (7.0, "blame", both)]  # t 7: after the attack, not counted
    m = coverage(steps, truth, "victim", ("noisy", "noisy2"), 0.0, 6.0)
    assert m["harmed_periods"] == 6 and m["coverage"] == pytest.approx(4 / 6) and m["all_named"] == 1.0
    assert coverage(steps[:2], truth, "victim", ("noisy", "noisy2"), 0.0, 6.0)["all_named"] == 0.0
    # true shares: 1/1.1 and 0 while noisy was alone; 1/1.5 and 0.4/1.5 after
    both_err = [abs(0.65 - 1 / 1.5), abs(0.25 - 0.4 / 1.5)]
    err = [abs(0.9 - 1 / 1.1), 0.0] * 2 + [abs(0.4 - 1 / 1.5), abs(0.6 - 0.4 / 1.5)] + both_err + \
        [1 / 1.5, 0.4 / 1.5] + both_err
    assert m["share_error"] == pytest.approx(sum(err) / len(err))
    # a period before the attack, or with no verdict standing, is no harmed period
    assert coverage([(1.0, "blame", right)], truth, "victim", ("noisy",), 1.0, 6.0)["harmed_periods"] == 0
    assert math.isnan(coverage([], truth, "victim", ("noisy",), 0.0, 6.0)["coverage"])


def test_bad_detect_specs_are_one_line_and_exit_2(tmp_path):
    spec = tmp_path / "d.yaml"
    spec.write_text("kind: detect\nname: d\nruntimes: [runc]\ncases: [cpu, gpu]\n")
    one_line_exit_2(contend("run", str(spec), "--dry-run"), "cases")
    spec.write_text("kind: detect\nname: d\nruntimes: [runc]\ncases: [cpu]\ntrial: {baseline_s: 1}\n")
    one_line_exit_2(contend("run", str(spec), "--dry-run"), "baseline_s")


@needs_root
@pytest.mark.parametrize("cases", [  # make test: an antagonist and a control; make test-all: every resource's
    pytest.param(("cpu", "own-quota"), id="cpu-and-a-control"),
    pytest.param(("cpu", "memory", "network", "own-quota"), id="every-case", marks=pytest.mark.slow)])
def test_a_detect_study_end_to_end_names_each_antagonist_and_blames_nobody_in_a_control(tmp_path, cases):
    spec = tmp_path / "detect.yaml"
    spec.write_text(f"kind: detect\nname: tiny-detect\nruntimes: [runc]\ncases: [{', '.join(cases)}]\n"
                    "repetitions: 1\n"
                    "trial: {baseline_s: 4, jitter_s: 1, attack_s: 4, tail_s: 1, period_s: 0.5}\n")
    out = tmp_path / "out"
    p = contend("run", str(spec), "--out", str(out), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = {(r["scenario"], r["metric"]): r for r in csv.DictReader(open(out / "metrics.csv"))}
    assert float(rows[("cpu", "detected")]["value"]) == 1.0, rows
    assert float(rows[("cpu", "first_right")]["value"]) == 1.0
    assert float(rows[("cpu", "latency_s")]["value"]) <= 2.0
    assert float(rows[("own-quota", "false_blames")]["value"]) == 0.0
    if not any("cgroup contend/" in b for b in BEFORE):  # contend's parent stays while another's child is in it
        assert not Path("/sys/fs/cgroup/memory/contend").exists() and not Path("/sys/fs/cgroup/contend").exists()
    if "memory" in cases:  # the three tenants shared a 1 GiB limit on contend's parent, gone with them (above)
        assert float(rows[("memory", "first_right")]["value"]) == 1.0, rows
    if "network" in cases:  # the three on a shared link, the victim's TCP segments lost and sent again
        assert float(rows[("network", "first_right")]["value"]) == 1.0, rows
        # its round trips waited in the link's queue through the flood (0.02 ms calm here, 17-22 ms flooded)
        with duckdb.connect(str(out / "contend.duckdb"), read_only=True) as db:
            (rtt,), = db.execute("SELECT max(value) FROM samples WHERE trial_id = 'runc.network.r1' AND "
                                 "tenant = 'victim' AND quantity = 'net_rtt_ms'").fetchall()
        assert rtt is not None and rtt > 2.0, rtt
    assert 0 < float(rows[("cpu", "watch_cpu_pct")]["value"]) < 50
    assert "found" in p.stdout and (out / "detect-tables.md").exists() and (out / "report.html").exists()
    assert list((out / "figures").glob("detect-runc.cpu.r1.png"))
    # its frames, whole, replay through the detector to the verdict the watcher gave live
    live = [json.loads(e) for (e,) in duckdb.connect(str(out / "contend.duckdb"), read_only=True).execute(
        "SELECT detail FROM events WHERE trial_id = 'runc.cpu.r1' AND kind = 'blame' ORDER BY t").fetchall()]
    r = contend("watch", "--replay", str(out / "frames" / "runc.cpu.r1.jsonl"), "--json")
    assert r.returncode == 0, r.stderr
    again = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert [(e["victim"], e["culprit"]) for e in again if e["event"] == "blame"][:1] == \
        [(e["victim"], e["culprit"]) for e in live][:1] == [("victim", "noisy")], (again, live)
    assert "noisy" in live[0]["why"] and "contend-" not in live[0]["why"], live[0]  # tenants' names, not cgroups


@needs_root
@pytest.mark.slow  # 40 containers made and removed: make test-all
def test_bystanders_are_containers_watched_beside_the_case_and_the_antagonist_is_still_named_first(tmp_path):
    """Issue 54's `bystanders: N`: N more real containers of the runtime, asleep or (one in ten) lightly loaded,
    watched with the case's tenants; the CPU antagonist is still found and named first, and all go after."""
    spec = tmp_path / "detect.yaml"
    spec.write_text("kind: detect\nname: crowd\nruntimes: [runc]\ncases: [cpu]\nrepetitions: 1\nbystanders: 40\n"
                    "trial: {baseline_s: 4, jitter_s: 1, attack_s: 4, tail_s: 1, period_s: 0.5}\n")
    out = tmp_path / "out"
    p = contend("run", str(spec), "--out", str(out), timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = {(r["scenario"], r["metric"]): r for r in csv.DictReader(open(out / "metrics.csv"))}
    assert float(rows[("cpu", "first_right")]["value"]) == 1.0, rows
    assert float(rows[("cpu", "latency_s")]["value"]) <= 2.0
    with duckdb.connect(str(out / "contend.duckdb"), read_only=True) as db:
        watched = {t for (t,) in db.execute("SELECT DISTINCT tenant FROM samples WHERE trial_id = 'runc.cpu.r1' "
                                             "AND source = 'watch'").fetchall()}
        (loaded,), = db.execute("SELECT count(DISTINCT tenant) FROM samples WHERE trial_id = 'runc.cpu.r1' AND "
                                "source = 'watch' AND quantity = 'cpu' AND tenant LIKE 'by%' AND value > 0.01"
                                ).fetchall()
    assert watched == {"victim", "bystander", "noisy"} | {f"by{i:03d}" for i in range(1, 41)}, watched
    assert loaded >= 4, "one in ten of them ran a light load"
    assert find() == []


@needs_root
def test_an_antagonist_whose_use_is_never_seen_fails_its_trial_with_the_reason(monkeypatch):
    """Issue 51's silent zero in a study: noisy's load ran but its cgroup's counter never moved (here a load
    that uses no CPU: what a counter that reads 0 looks like). The trial fails and says so; it is no miss."""
    import dataclasses

    from contend.kinds.detect import cases as detect_cases
    from contend.kinds.detect.spec import DetectSpec
    from contend.kinds.detect.trial import run_detect_trial

    from .conftest import runtime_or_skip
    runtime_or_skip("runc")
    asleep = dataclasses.replace(detect_cases.CASES["cpu"], at_change={"noisy": lambda s: ["sleep", str(math.ceil(s))]})
    monkeypatch.setitem(detect_cases.CASES, "cpu", asleep)
    study = DetectSpec.model_validate({"kind": "detect", "name": "unseen", "runtimes": ["runc"], "cases": ["cpu"],
                                        "trial": {"baseline_s": 2, "jitter_s": 0, "attack_s": 2, "tail_s": 0,
                                                  "period_s": 0.5}})
    result = run_detect_trial(study, "runc", "cpu", 1, 2.0, {})
    assert result.record.status != "ok", result.record
    assert "noisy's load ran 2 s and its cgroup's cpu counter never moved" in result.record.reason
