"""The metrics are pure: tested against curves whose answers are known in closed form."""
import math

import numpy as np
import pytest

from contend.kinds.isolation.rows import trial_metrics
from contend.metrics import (
    Samples,
    StepWindow,
    aggregate,
    curve_metrics,
    curves,
    degradation,
    escape_ratio,
    isolation_percentiles,
    mean_ci,
    per_second,
    reference_point,
    similarity,
    similarity_ci,
)
from contend.metrics.isolation import RefPoint, area, i_base, i_end, i_int_base, i_int_free, non_isolated_area

X = np.linspace(0, 1, 101)


def test_perfectly_isolated_curve_scores_one_everywhere():
    m = curve_metrics(X, np.full_like(X, 0.5))
    assert m["I_plr"] == pytest.approx(1.0)
    assert m["loss"] == pytest.approx(0.0)
    assert m["I_intFree"] == pytest.approx(1.0)
    assert m["S_I"] == pytest.approx(1.0)
    assert m["I_base"] == pytest.approx(1.0)
    assert m["I_intBase"] == pytest.approx(1.0)
    assert math.isnan(m["I_end"])  # W_a never reaches 0
    assert (m["W_d_ref"], m["W_a_ref"]) == (0.0, 0.5)


def test_non_isolated_curve_scores_zero():
    # W_a falls with slope -1 from the start: the disruptive tenant takes everything it asks for
    m = curve_metrics(X, np.maximum(0.5 - X, 0))
    assert m["I_plr"] == pytest.approx(0.0)
    assert m["I_intFree"] == pytest.approx(0.0, abs=1e-3)
    assert m["I_intBase"] == pytest.approx(0.0, abs=1e-3)
    assert m["I_base"] == pytest.approx(0.0, abs=1e-9)
    assert m["I_end"] == pytest.approx(0.0, abs=1e-9)
    assert m["S_I"] == pytest.approx(1.0)  # both metrics say "none": they agree


def test_half_slope_curve_has_closed_form_int_free():
    # f = 0.5 - 0.5 x from (0, 0.5) to x = 1: area 0.25, non-isolated 0.125, isolated 0.5 → 1/3
    ref = RefPoint(0.0, 0.5, 0, True)
    assert i_int_free(X, 0.5 - 0.5 * X, ref) == pytest.approx(1 / 3, rel=1e-6)
    # W_d,base = 0.5, W_a there 0.25 → I_base = 0.5;  I_intBase: (∫0^.5 f − .125)/.125 = (0.1875−.125)/.125
    assert i_base(X, 0.5 - 0.5 * X, ref) == pytest.approx(0.5)
    assert i_int_base(X, 0.5 - 0.5 * X, ref) == pytest.approx(0.5)
    # W_a reaches 0 at W_d,end = 1: I_end = (1 - 0.5) / 0.5
    assert i_end(X, 0.5 - 0.5 * X, ref) == pytest.approx(1.0)


def test_reference_point_is_the_last_point_before_the_curve_leaves_the_band_for_good():
    w_a = np.where(X < 0.3, 0.5, np.maximum(0.5 - (X - 0.3), 0))
    ref = reference_point(X, w_a, threshold=0.05)
    # the first point below 0.475 is x = 0.33 (0.47): the last one inside the band is x = 0.32
    assert ref.degraded and ref.w_d == pytest.approx(0.32) and ref.w_a == pytest.approx(0.48)
    assert curve_metrics(X, w_a)["I_intFree"] == pytest.approx(0.0, abs=0.02)


XS = np.linspace(0, 1, 7)  # a baseline and six steps
RNG = np.random.default_rng(7)


def buckets(levels, sd, n=20):
    """Each step's buckets: its level plus noise (what a curve's groups hold)."""
    return [lv + RNG.normal(0, sd, n) for lv in levels]


def test_a_noisy_flat_curve_has_no_change_point():
    groups = buckets(np.full(7, 0.5), sd=0.05)
    w_a = np.array([g.mean() for g in groups])
    ref = reference_point(XS, w_a, groups)
    assert not ref.degraded and ref.w_d == 0.0
    assert curve_metrics(XS, w_a, groups)["I_intFree"] == pytest.approx(1.0, abs=0.05)


def test_a_one_step_transient_is_not_a_change_point():
    levels = np.full(7, 0.5)
    levels[3] = 0.35  # one step hurt, then back
    groups = buckets(levels, sd=0.01)
    w_a = np.array([g.mean() for g in groups])
    assert not reference_point(XS, w_a, groups).degraded
    m = curve_metrics(XS, w_a, groups)
    assert 0.8 < m["I_intFree"] < 1.0  # the dip still costs area


def test_a_drop_at_the_last_step_is_a_degradation_one_step_long_not_perfect_isolation():
    levels = np.full(7, 0.5)
    levels[-1] = 0.3
    groups = buckets(levels, sd=0.01)
    w_a = np.array([g.mean() for g in groups])
    ref = reference_point(XS, w_a, groups)
    assert ref.degraded and ref.index == 5 and ref.w_d == pytest.approx(XS[5])
    m = curve_metrics(XS, w_a, groups)
    assert m["I_intFree"] < 0.9  # the old smoothed search returned 1.0 here
    assert m["I_plr"] == pytest.approx(0.6, abs=0.02)


def test_the_band_is_the_baselines_own_noise_with_the_threshold_as_its_floor():
    # a 6 % drop at every step: beyond the 5 % floor. With quiet buckets it is a change point; with buckets
    # as noisy as ±40 % and only 4 of them per step, the test cannot tell it from noise
    levels = np.r_[0.5, np.full(6, 0.47)]
    quiet = buckets(levels, sd=0.005)
    assert reference_point(XS, np.array([g.mean() for g in quiet]), quiet).degraded
    noisy = [lv + np.array([0.2, -0.2, 0.2, -0.2]) for lv in levels]
    assert not reference_point(XS, np.array([g.mean() for g in noisy]), noisy).degraded
    # a 3 % drop, however quiet, stays inside the floor
    small = buckets(np.r_[0.5, np.full(6, 0.485)], sd=0.001)
    assert not reference_point(XS, np.array([g.mean() for g in small]), small).degraded


def test_int_free_short_ramp_uses_the_trapezoid_and_stays_in_range():
    # the ramp stops before a non-isolated W_a would reach 0: worst area is a trapezoid, not W_a,ref²/2
    assert non_isolated_area(0.5, 0.25) == pytest.approx(0.5 * 0.25 - 0.25 ** 2 / 2)
    assert non_isolated_area(0.5, 2.0) == pytest.approx(0.125)
    xs = np.linspace(0, 0.25, 26)
    ref = RefPoint(0.0, 0.5, 0, False)
    assert i_int_free(xs, np.full_like(xs, 0.5), ref) == pytest.approx(1.0)
    assert i_int_free(xs, 0.5 - xs, ref) == pytest.approx(0.0, abs=1e-9)


def test_gain_gives_values_above_one():
    w_a = 0.5 + 0.1 * X
    m = curve_metrics(X, w_a)
    assert m["I_plr"] == pytest.approx(1.2)
    assert m["I_intFree"] > 1


def test_area_interpolates_between_measured_points():
    assert area(np.array([0, 1.0]), np.array([0, 1.0]), 0.0, 0.5) == pytest.approx(0.125)


@pytest.mark.parametrize("free,plr,s_i", [
    # cells of Volpert et al. Table 4 (their inputs are rounded to two digits, hence the tolerance)
    (0.89, 0.85, 0.96), (0.99, 0.99, 1.00), (0.94, 0.89, 0.95), (0.41, 0.13, 0.32), (0.47, 0.15, 0.32),
    (1.42, 1.31, 0.92), (0.76, 0.87, 0.87), (0.60, 0.93, 0.64), (1.03, 1.00, 0.97), (0.39, 0.10, 0.25),
])
def test_similarity_reproduces_volpert_table_4(free, plr, s_i):
    assert similarity(free, plr) == pytest.approx(s_i, abs=0.011)


def test_similarity_of_nan_is_nan():
    assert math.isnan(similarity(float("nan"), 0.5))


def test_escape_ratio_and_degradation():
    assert escape_ratio(0.75, 0.5) == pytest.approx(1.5)
    assert escape_ratio(0.5, 0.5) == pytest.approx(1.0)
    assert degradation(80, 100) == pytest.approx(20.0)  # Xavier et al. Eq. 1
    assert math.isnan(degradation(1, 0))


def test_isol_is_per_second_as_resctl_bench_has_it():
    # 100 ms buckets: 6 of 100 at 0, the rest at the reference. Per bucket p05 is 0; per second, one
    # second in ten is at 0.4 (its mean) and the rest at 1
    t = np.arange(0.05, 10, 0.1)
    w = np.where((t > 3) & (t < 3.6), 0.0, 1.0)
    secs = per_second(t, w)
    assert len(secs) == 10 and secs[3] == pytest.approx(0.4)
    assert isolation_percentiles(secs, 1.0)["isol_p05"] == pytest.approx(0.4 + 0.45 * 0.6)  # numpy's linear
    assert isolation_percentiles(w, 1.0)["isol_p05"] == 0.0
    # a second cut by a trim (fewer than half its buckets) is left out
    assert len(per_second(np.r_[t, 10.05], np.r_[w, 0.0])) == 10


def test_isolation_percentiles_cap_at_one():
    w = np.concatenate([np.full(98, 0.6), [0.25, 0.0]])
    p = isolation_percentiles(w, 0.5)
    assert p["isol_p50"] == 1.0
    assert p["isol_p01"] < 0.5
    assert p["isol_mean"] == pytest.approx((98 + 0.5) / 100)


def test_mean_ci_student_t():
    m, lo, hi, n = mean_ci([1.0, 2.0, 3.0])
    half = 4.302652729911275 / math.sqrt(3)  # t(0.975, 2) × s / √n with s = 1
    assert (m, n) == (2.0, 3)
    assert (lo, hi) == (pytest.approx(2 - half), pytest.approx(2 + half))
    m, lo, hi, n = mean_ci([0.7, float("nan")])
    assert m == 0.7 and n == 1 and math.isnan(lo) and math.isnan(hi)
    assert mean_ci([])[3] == 0


def test_si_of_a_cell_is_min_over_max_of_the_cell_means_with_a_bootstrap_interval():
    # Volpert Table 4: S_I from the cell's mean I_intFree and mean I_plr. The mean of per-trial S_I differs
    free, plr = [0.6, 1.0, 0.8], [1.0, 0.6, 0.8]
    rows = [{"runtime": "runc", "scenario": "steal", "resource": "cpu", "view": "host", "metric": m, "value": v,
             "trial_id": f"t{i}"} for i, (a, b) in enumerate(zip(free, plr))
            for m, v in (("I_intFree", a), ("I_plr", b), ("S_I", similarity(a, b)))]
    cells = {r["metric"]: r for r in aggregate(rows)}
    assert cells["S_I"]["value"] == pytest.approx(1.0)  # both means are 0.8
    assert np.mean([similarity(a, b) for a, b in zip(free, plr)]) < 0.8  # what the old mean said
    assert cells["S_I"]["n"] == 3 and cells["S_I"]["ci_low"] < 1.0 <= cells["S_I"]["ci_high"] + 1e-12
    value, lo, hi, n = similarity_ci([0.9], [1.0])
    assert value == pytest.approx(0.9) and n == 1 and math.isnan(lo)


def test_aggregate_groups_cells():
    rows = [{"runtime": "runc", "scenario": "harmony", "resource": "cpu", "view": "host", "metric": "I_plr",
             "value": v} for v in (0.9, 1.0, 1.1)]
    (agg,) = aggregate(rows)
    assert agg["value"] == pytest.approx(1.0) and agg["n"] == 3 and agg["ci_low"] < 1.0 < agg["ci_high"]


def test_a_cells_interval_stays_within_its_metrics_logical_range():
    # three detect trials' coverage 0.82, 0.98, 1.00: Student t gives 0.69-1.18, and no share is above 1
    m, lo, hi, n = mean_ci([0.82, 0.98, 1.0], metric="coverage")
    assert (m, n) == (pytest.approx(0.9333333), 3) and lo == pytest.approx(0.68825, abs=1e-4) and hi == 1.0
    assert mean_ci([0.82, 0.98, 1.0])[2] > 1.0  # what the interval says unclipped
    assert mean_ci([0.0, 0.0, 2.0], metric="false_blames")[1] == 0.0  # a count never below 0
    rows = [{"runtime": "runc", "scenario": s, "resource": "cpu", "view": "host", "metric": metric, "value": v}
            for s, metric, vals in (("a", "isol_p05", (0.7, 1.0, 1.0)), ("b", "I_plr", (0.9, 1.1, 1.3)))
            for v in vals]
    cells = {r["metric"]: r for r in aggregate(rows)}
    assert cells["isol_p05"]["ci_high"] == 1.0 and cells["isol_p05"]["ci_low"] < 0.9
    assert cells["I_plr"]["ci_high"] > 1.3  # a retention may exceed 1 (the abiding tenant gained): not clipped
    assert math.isnan(mean_ci([0.5], metric="coverage")[1])


def test_a_clipped_interval_is_shown_as_its_two_ends_not_plus_minus():
    from contend.kinds.guard.report import compact
    from contend.report.table import ci_text, mean_text
    clipped = {"value": 0.9333, "ci_low": 0.75, "ci_high": 1.0, "n": 3}
    assert ci_text(clipped, brackets=False) == "0.93 [0.75, 1.00]"
    assert mean_text(clipped, ".2f") == compact(clipped) == "0.93 [0.75, 1.00]"
    centred = {"value": 0.9333, "ci_low": 0.8, "ci_high": 1.0666, "n": 3}
    assert ci_text(centred, brackets=False) == compact(centred) == "0.93±0.13"
    assert mean_text(centred, ".2f") == "0.93 ±0.13"


def _synthetic_trial(drop: float):
    """Baseline 0-4 s, then 4 steps of 2 s; the abiding tenant loses `drop` × W_d (host CPUs on 2 CPUs)."""
    steps = [StepWindow(0, "baseline", 0.0, 4.0, {"abiding": 0.5, "disruptive": 0.0})]
    steps += [StepWindow(k, "ramp", 4.0 + 2 * (k - 1), 4.0 + 2 * k, {"abiding": 0.5, "disruptive": 0.125 * k})
              for k in range(1, 5)]
    t = np.arange(0.05, 12, 0.1)
    rows = []
    for ti in t:
        k = 0 if ti < 4 else min(4, int((ti - 4) // 2) + 1)
        wd = 0.125 * k
        rows += [(ti, "abiding", "cgroup", "cpu", 2 * (0.5 - drop * wd)), (ti, "disruptive", "cgroup", "cpu", 2 * wd)]
    # a transient at each step's start that trimming must ignore
    rows += [(4.05, "abiding", "cgroup", "cpu", 0.0), (6.05, "abiding", "cgroup", "cpu", 0.0)]
    cols = list(zip(*rows))
    return Samples(np.array(cols[0], float), np.array(cols[1]), np.array(cols[2]), np.array(cols[3]),
                   np.array(cols[4], float)), steps


def test_curves_from_samples_convert_to_capacity_and_trim_transients():
    samples, steps = _synthetic_trial(drop=0.0)
    (c,) = curves("cpu", samples, steps, {"cpus": 2, "cpu_agent_ops_s_per_cpu": 1000.0}, trim=0.25)
    assert c.view == "host"
    assert np.allclose(c.w_d_ideal, [0, 0.125, 0.25, 0.375, 0.5])
    assert np.allclose(c.w_d, c.w_d_ideal)
    assert np.allclose(c.w_a, 0.5)
    m = trial_metrics(c, l_d=0.5)
    assert m["I_plr"] == pytest.approx(1.0) and m["escape"] == pytest.approx(1.0)
    assert m["isol_p01"] == pytest.approx(1.0)  # the transients were trimmed


def test_curves_see_a_known_degradation():
    samples, steps = _synthetic_trial(drop=0.5)
    (c,) = curves("cpu", samples, steps, {"cpus": 2}, trim=0.25)
    assert np.allclose(c.w_a, 0.5 - 0.5 * c.w_d_ideal)
    m = trial_metrics(c, l_d=0.5)
    assert m["I_plr"] == pytest.approx(0.5)  # 0.25 / 0.5


def test_disk_curves_count_bytes_at_the_spec_block_size():
    """Host and eBPF see bytes (a 1M write may reach the disk as two bios, or merged into one request); the
    load's own IOPS are in the same unit: calibrated random-write IOPS at the study's block size."""
    steps = [StepWindow(0, "baseline", 0.0, 2.0, {"abiding": 0.5, "disruptive": 0.0}),
             StepWindow(1, "ramp", 2.0, 4.0, {"abiding": 0.5, "disruptive": 0.5})]
    cap = {"disk_write_iops": 4000.0, "disk_block": "1M"}
    rows = []
    for ti in np.arange(0.05, 4, 0.1):
        wd = 0.0 if ti < 2 else 0.5
        for tenant, level in (("abiding", 0.5), ("disruptive", wd)):
            rows += [(ti, tenant, "cgroup", "io_wbytes_s", level * 4000 * 2**20),
                     (ti, tenant, "cgroup", "io_wios_s", level * 4000 * 1.3),  # split bios: not the unit
                     (ti, tenant, "ebpf", "blk_bytes_s", level * 4000 * 2**20)]
        rows += [(ti, "abiding", "load", "iops", 2000.0), (ti, "disruptive", "load", "iops", wd * 4000)]
    cols = list(zip(*rows))
    samples = Samples(np.array(cols[0], float), np.array(cols[1]), np.array(cols[2]), np.array(cols[3]),
                      np.array(cols[4], float))
    by_view = {c.view: c for c in curves("disk", samples, steps, cap, trim=0.25)}
    assert set(by_view) == {"host", "ebpf", "guest"}
    for c in by_view.values():
        assert np.allclose(c.w_a, 0.5) and np.allclose(c.w_d, [0.0, 0.5]), c.view


def test_the_host_and_ebpf_views_share_the_hosts_change_point():
    """The same CPU time counted twice must not get two change points from a borderline step (in a real runc
    escape trial the last step's test passed in one view and not in the other: I_intFree 0.90 against 0.82)."""
    from contend.kinds.isolation.rows import trial_refs
    from contend.metrics import Curve
    xs = np.linspace(0, 0.75, 5)
    rng = np.random.default_rng(3)
    host_groups = [0.5 + rng.normal(0, 0.03, 14) for _ in range(4)] + [0.47 + rng.normal(0, 0.06, 14)]
    ebpf_groups = [g.copy() for g in host_groups[:4]] + [np.full(14, 0.455)]
    curves_ = [Curve(v, xs, xs, np.array([g.mean() for g in gs]), np.arange(5.0), np.full(5, 0.5), gs)
               for v, gs in (("host", host_groups), ("ebpf", ebpf_groups), ("guest", ebpf_groups))]
    refs = trial_refs(curves_)
    assert refs["guest"] is None  # another quantity: its own test
    assert refs["ebpf"] is refs["host"]
    assert not refs["host"].degraded  # the host's last step: 6 % down but too noisy to tell
    assert reference_point(xs, curves_[1].w_a, ebpf_groups).degraded  # the eBPF view's own test would say so
    shared = trial_metrics(curves_[1], 0.5, decided=refs["ebpf"])
    assert shared["W_d_ref"] == 0.0 and shared["W_a_ref"] == pytest.approx(curves_[1].w_a[0])
    assert abs(shared["I_intFree"] - trial_metrics(curves_[0], 0.5, decided=refs["host"])["I_intFree"]) < 0.03


def test_the_hosts_own_speed_is_read_from_work_per_cpu_second():
    """The guest view counts work, the host view CPU time. With the CPU time constant (1.00 of its share in
    every step, as a harmony trial's host view reads) and the work doubling after the baseline, the host did
    twice the work per CPU-second: no neighbour can do that, the baseline ran on a slow host (a real crun
    harmony trial: 95-111k matrix products/s for 4 s, then 219k, guest I_plr 2.02)."""
    from contend.kinds.isolation.rows import host_speedup
    from contend.metrics import Curve
    xs = np.linspace(0, 1, 5)
    host = Curve("host", xs, xs, np.full(5, 0.5), np.arange(5.0), np.full(5, 0.5))
    slow_start = Curve("guest", xs, xs, np.array([0.25, 0.26, 0.5, 0.5, 0.49]), np.arange(5.0), np.full(5, 0.5))
    assert host_speedup([host, slow_start]) == pytest.approx(2.0)
    hurt = Curve("guest", xs, xs, np.array([0.5, 0.5, 0.4, 0.3, 0.3]), np.arange(5.0), np.full(5, 0.5))
    assert host_speedup([host, hurt]) == pytest.approx(1.0)  # less work per CPU-second: a neighbour can do that
    assert math.isnan(host_speedup([host]))  # no guest view
    starved = Curve("host", xs, xs, np.array([0.5, 0.5, 0.0, 0.5, 0.5]), np.arange(5.0), np.full(5, 0.5))
    assert host_speedup([starved, hurt]) == pytest.approx(1.0)  # a step without CPU time says nothing


def test_the_ebpf_views_coverage_is_the_step_where_it_differs_most_from_the_kernels_count():
    """The eBPF view counts the host view's quantity again. A disk tenant alone at its throttle read 0.91-0.93
    of the cgroup's bytes in the eBPF view (blk-throttle submits what it held back from a kernel worker) and
    1.00 once the disk, not the throttle, held it: the eBPF baseline low, its I_plr above 1 (1.10 in a youki
    harmony trial). ebpf_coverage names the worst step; memory, whose eBPF view counts something else, has none."""
    from contend.kinds.isolation.rows import ebpf_coverage, trial_rows
    from contend.metrics import Curve
    xs = np.linspace(0, 1, 5)
    host = Curve("host", xs, xs, np.array([0.5, 0.5, 0.48, 0.45, 0.45]), np.arange(5.0), np.full(5, 0.5))
    low = Curve("ebpf", xs, xs, np.array([0.46, 0.46, 0.47, 0.45, 0.45]), np.arange(5.0), np.full(5, 0.5))
    assert ebpf_coverage([host, low]) == pytest.approx(0.92)
    high = Curve("ebpf", xs, xs, np.array([0.5, 0.5, 0.48, 0.45, 0.6]), np.arange(5.0), np.full(5, 0.5))
    assert ebpf_coverage([host, high]) == pytest.approx(0.6 / 0.45)
    same = Curve("ebpf", xs, xs, host.w_a * 1.01, np.arange(5.0), np.full(5, 0.5))
    assert ebpf_coverage([host, same]) == pytest.approx(1.01)
    starved = Curve("host", xs, xs, np.array([0.5, 0.5, 0.0, 0.5, 0.5]), np.arange(5.0), np.full(5, 0.5))
    assert ebpf_coverage([starved, Curve("ebpf", xs, xs, np.full(5, 0.5), np.arange(5.0), np.full(5, 0.5))]) == 1.0
    assert ebpf_coverage([host, Curve("ebpf", xs, xs, np.array([0.5, 0.0, 0.5, 0.5, 0.5]), np.arange(5.0),
                                      np.full(5, 0.5))]) == 0.0  # a step the eBPF view missed whole
    assert math.isnan(ebpf_coverage([host]))
    assert ("ebpf", "ebpf_coverage", pytest.approx(0.92)) in trial_rows("disk", [host, low], 0.5)
    assert not any(m == "ebpf_coverage" for _, m, _ in trial_rows("memory", [host, low], 0.5))


def _with_host(samples: Samples, busy_extra: dict[int, float], steal: dict[int, float], steps) -> Samples:
    """The synthetic trial's samples plus the host's: busy = the tenants' own + 0.1 CPU of contend's own +
    `busy_extra[step]`, at most the host's 2 CPUs; stolen `steal[step]` CPUs."""
    rows = list(zip(samples.t, samples.tenant, samples.source, samples.quantity, samples.value))
    for ti in np.arange(0.05, 12, 0.1):
        k = next(s.step for s in steps if s.t_start <= ti < s.t_end)
        own = sum(v for t, tenant, src, q, v in rows if t == ti and src == "cgroup" and q == "cpu")
        rows += [(ti, "host", "host", "cpu_busy", min(own + 0.1 + busy_extra.get(k, 0.0), 2.0)),
                 (ti, "host", "host", "cpu_steal", steal.get(k, 0.0))]
    cols = list(zip(*rows))
    return Samples(np.array(cols[0], float), np.array(cols[1]), np.array(cols[2]), np.array(cols[3]),
                   np.array(cols[4], float))


def test_cpu_taken_outside_the_tenants_during_the_ramp_is_measured():
    """host_outside: per step the CPUs stolen by a hypervisor and the CPUs busy outside the tenants (the host's
    busy less the tenants' own) beyond the CPU the step left idle; the change from the baseline of largest
    size, signed, as a share of the CPUs. contend's own use, on the idle CPU of the baseline and none left
    to it once the tenants fill the host, is no change; a process that takes 0.5 CPU in step 2 when nothing
    is idle (a real crun harmony trial: the abiding tenant at 0.53 CPU there) is 0.25; a hypervisor that
    steals 0.2 CPU more in step 3 is 0.1; one that stole 0.4 CPU during the baseline only (a real runc harmony
    trial: I_plr 1.19) is -0.2; steal that moves one way while another process moves the other way is still
    seen; no host samples, nan."""
    from contend.metrics.curves import host_outside
    samples, steps = _synthetic_trial(drop=0.0)
    assert math.isnan(host_outside(samples, steps, 2))
    assert host_outside(_with_host(samples, {}, {}, steps), steps, 2) == pytest.approx(0.0, abs=1e-9)
    spinner = _with_host(samples, {2: 1.0, 3: 1.0, 4: 1.0}, {}, steps)
    assert host_outside(spinner, steps, 2) == pytest.approx(0.25)
    stolen = _with_host(samples, {}, {0: 0.02, 3: 0.22}, steps)
    assert host_outside(stolen, steps, 2) == pytest.approx(0.1)
    calmer = _with_host(samples, {}, {0: 0.4}, steps)  # the baseline was the disturbed part
    assert host_outside(calmer, steps, 2) == pytest.approx(-0.2)
    swapped = _with_host(samples, {4: 0.3}, {0: 0.3}, steps)  # the same total outside, not the same cause
    assert abs(host_outside(swapped, steps, 2)) == pytest.approx(0.15)


def test_host_outside_is_every_cpu_views_caveat():
    from contend.kinds.isolation.rows import trial_rows
    samples, steps = _synthetic_trial(drop=0.0)
    found = curves("cpu", samples, steps, {"cpus": 2}, trim=0.25)
    rows = trial_rows("cpu", found, 0.5, outside=0.3)
    assert {(v, x) for v, m, x in rows if m == "host_outside"} == {(c.view, 0.3) for c in found}
    assert not [r for r in trial_rows("cpu", found, 0.5) if r[1] == "host_outside"]  # no host samples
    assert not [r for r in trial_rows("memory", [], 0.5, outside=0.3)]


def test_the_hosts_cpus_are_read_per_cpu_and_steal_counts_where_work_ran(tmp_path):
    """/proc/stat per CPU: busy is user + nice + system + irq + softirq, steal is weighted by how busy its CPU
    was (an idle vCPU woken by a timer waits for the hypervisor too, with no tenant's work held up)."""
    from contend.probes.sampler import host_cpu_ticks, host_rates
    stat = tmp_path / "stat"
    line = "cpu{} {} 0 {} {} 0 0 0 {} 0 0\n"
    stat.write_text(line.format("", 300, 0, 300, 30) + line.format(0, 100, 0, 100, 10) + line.format(1, 200, 0, 200, 20)
                    + "intr 1 2 3\n")
    before = host_cpu_ticks(stat)
    assert before == {"cpu0": (100, 100, 10), "cpu1": (200, 200, 20)}
    # 100 ticks later: cpu0 busy all along with 10 ticks stolen, cpu1 idle with 10 ticks "stolen" on wake-ups
    after = {"cpu0": (190, 100, 20), "cpu1": (200, 290, 30)}
    busy, stolen = host_rates(before, after, 100)
    assert busy == pytest.approx(0.9) and stolen == pytest.approx(0.1)
