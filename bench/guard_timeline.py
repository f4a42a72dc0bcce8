"""A guard run's burst onset period by period: what each tenant wrote, its cap, the estimate and the device latency.

Reads a guard study's results directory and prints, for each run named (or every run under a capping policy),
one line per 100 ms bucket from `--before` seconds (half a second) before the burst to `--seconds` after its start: the
victim's and the neighbour's MB/s (host view, cgroup counters; the victim's own fio log beside, `fio`), the cap in force
on each, what the guard saw each use (`seen`: its share of the disk's writes or, in the direct view, its charges,
`diskuse.settle`; over the period ending half a bucket after the bucket's middle, the one that covers it: a
guard's record is stamped at its period's end, a sampler's bucket at its middle) and the policy's capacity estimate
(MB/s in the cost units the guard divides: bytes + IOs × io_bytes) and the device's ms per I/O.
What docs/results/archive.md reads a run's onset with (issue 55: a victim held by its own cap). With --summary, one
line per run
instead: when the burst really began (the neighbour's first bucket above twice its level before the burst: in a store
from before 2026-12-03 0.3-0.45 s after the phase's start, fio's own start-up, since then at its start), the first cap
on it in force in the burst (told a number: from the start), when the victim was last below 0.95 of its reference in the
burst's first 3 s, and first (per 100 ms bucket, unsmoothed), and the run's reaction_s as the study stored it (from the
onset the metric sees, on half seconds; from the phase's start, 5 capped buckets smoothed, in a store reported before
2026-12-02); then what came before the victim's first dip (its lowest rate over its reference and the device's latency
over its floor, from the burst's onset), and the reaction as the study reads it but timed from that dip. Last, per
policy, how many runs reacted slower than 1 s, in how many of them the dip came 0.6 s or more after the onset with
nothing before it to act on (the victim at 0.95 or more, the latency under the 4 x its floor that contend reads as
saturated), and in how many the victim was back within 1 s of its dip: what a guard that caps only what hurts can be
asked.
With --drops, every decrease of contend's estimate instead, with the victim's lowest rate as its own load generator
logged it from 0.5 s before to 0.3 s after (× its median over the run; in a store from before 2026-12-03 fio's log ran
0.3-0.45 s early against the host's clock, hence the width): a decrease with the victim at 0.95 of it or more throughout
was taken for a pre-emption the victim did not feel. With --views, per run the guard's periods in the burst that read
the victim below 0.9 × its median while its cgroup's counters had it at 0.95 × theirs or more (the guard's share of the
disk's writes against the charges), and the periods the other way round (a dip of the counters the guard did not
see). With --steps, per run the largest rise of the neighbour's cap a period before the limit showed, and per policy
how many runs leapt past the ramp. With --minute, per run (those under no policy too) what tells a policy's loss
from the disk's minute (issue 55: the same spec gave aridac 0.98 then 0.58 a quarter of an hour apart): the victim's
rate over its reference (victim_reference) before the burst (`calm`: metrics.calm_ratio, from its warm-up's end)
and in the burst, the share of those buckets in which it wrote at least 0.9 × what its own cap let through (`held`:
report.victim_held) and the device's mean ms per I/O before the burst; then per policy, of its runs below 0.95 in the
burst, how many were already below 0.9 in their calm with the victim not held (the disk's minute: it was slow before
the burst began), how many lost no more in the burst (at 0.9 × their calm or more) and how many were held by their
own cap in half the burst or more (the policy's), and the lowest of its runs' burst over calm (the victim's rate in
the burst over its own before it: what the burst took, whatever the minute); a study's report says the same
(report.minute_notes).
Nothing is run: the store is only read.

    .venv/bin/python bench/guard_timeline.py DIR [DIR ...] [--run TRIAL_ID ...] [--seconds 3] [--before 0.5]
        [--summary|--drops|--views|--steps|--minute]
"""
from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np

from contend.kinds import open_store
from contend.kinds.guard import metrics
from contend.kinds.guard.report import io_series, load_run, references, victim_held, victim_reference

PERIOD_S = 0.1  # the guard's period and the sampler's bucket in a guard study


def at(t: np.ndarray, v: np.ndarray, when: float) -> float:
    """The value recorded in the bucket that holds `when` (nan: none)."""
    i = np.nonzero(np.abs(t - when) < 0.05)[0]
    return float(v[i[0]]) if len(i) else math.nan


def mb(x: float) -> str:
    return f"{x / 1e6:7.0f}" if math.isfinite(x) else "      -"


def summary(tid: str, t0: float, t1: float, t: np.ndarray, victim: np.ndarray, tn: np.ndarray, nb: np.ndarray,
            cap: tuple[np.ndarray, np.ndarray], lat: tuple[np.ndarray, np.ndarray], reference: float,
            reaction: float, tally: dict[str, list[int]]) -> str:
    """One run's onset in seconds from the burst phase's start (nan: not seen); what preceded the victim's first dip
    (its lowest ratio and the device latency over its floor, from the burst's onset to the bucket before); and the
    reaction read from that dip instead of the onset. Tallied by policy: [runs, runs the study counts slower than 1 s,
    of them: the dip coming >= 0.6 s after the onset with no signal before it, reacting within 1 s of the dip]."""
    level = float(np.median(nb[(tn >= t0 - 2) & (tn < t0)])) if ((tn >= t0 - 2) & (tn < t0)).any() else math.nan
    up = tn[(tn >= t0) & (nb > 2 * level)]
    onset = float(up[0] - t0) if len(up) else math.nan
    ct, cv = cap
    capped = ct[(ct >= t0) & np.isfinite(cv)]
    first_cap = float(capped[0] - t0) if len(capped) else math.nan
    low = t[(t >= t0) & (t < t0 + 3) & (victim < 0.95 * reference)]
    first_low, last_low = (float(low[0] - t0), float(low[-1] - t0)) if len(low) else (math.nan, math.nan)
    line = (f"{tid}: burst began {onset:+.2f} s, first cap {first_cap:+.2f} s, the victim's 100 ms buckets below 0.95 "
            f"from {first_low:+.2f} to {last_low:+.2f} s, reaction_s {reaction:.2f}")
    k = tally.setdefault("none" if ".none." in tid else tid.split(".", 1)[1].rsplit(".", 1)[0], [0, 0, 0, 0])
    k[0] += 1  # keyed by policy: workload.policy.rN
    if not (math.isfinite(first_low) and math.isfinite(onset)):
        k[1] += not reaction <= 1.0
        return line
    before = (t >= t0 + onset) & (t < t0 + first_low)
    lowest = float(np.min(victim[before])) / reference if before.any() else math.nan
    tl, lv = lat
    floor = float(np.min(lv[(tl >= t0 - 3) & (tl < t0 + first_low)])) if len(lv) else math.nan
    lb = lv[(tl >= t0 + onset) & (tl < t0 + first_low - 0.05)]
    rise = float(np.max(lb)) / floor if len(lb) and floor > 0 else math.nan
    # the study's reaction (metrics.protection_metrics: the burst's buckets), its clock started at the dip instead
    w = (t >= t0) & (t < t1)
    from_dip = metrics.reaction(t[w], victim[w] / reference, t0 + first_low)
    if not reaction <= 1.0:
        quiet = first_low - onset >= 0.6 and lowest >= 0.95 and rise < 4.0
        k[1], k[2], k[3] = k[1] + 1, k[2] + quiet, k[3] + (from_dip <= 1.0)
    return (f"{line}; before the dip the victim >= {lowest:.2f} and the latency <= {rise:.1f} x its floor; "
            f"reaction from the dip {from_dip:.2f} s")


def drops(tid: str, t0: float, est: tuple[np.ndarray, np.ndarray], felt: tuple[np.ndarray, np.ndarray],
          tally: dict[str, list[int]]) -> None:
    """One line per decrease of the estimate in one run; counts (decreases, unfelt) into tally by workload."""
    (te, e), (tf, f) = est, felt
    if not len(f) or not len(e):
        return
    median = float(np.median(f))
    n = unfelt = 0
    for i in np.nonzero(e[1:] < 0.99 * e[:-1])[0] + 1:
        near = f[(tf >= te[i] - 0.5) & (tf <= te[i] + 0.3)]
        rate = float(np.min(near)) / median if len(near) and median > 0 else math.nan
        n, unfelt = n + 1, unfelt + (rate >= 0.95)
        print(f"{tid}  {te[i] - t0:+6.1f} s  estimate {mb(e[i - 1])} -> {mb(e[i])}  the victim's load at least "
              f"{rate:5.2f} × its median")
    k = tally.setdefault(tid.split(".")[0], [0, 0])
    k[0], k[1] = k[0] + n, k[1] + unfelt


def steps(tid: str, t0: float, cap: tuple[np.ndarray, np.ndarray], est: tuple[np.ndarray, np.ndarray],
          figures: dict[str, float], tally: dict[str, list[int]]) -> None:
    """One line per run: the largest rise of the neighbour's cap from one period to the next in the burst's first
    1.5 s, before the estimate first fell (a limit shown: from then on shares come at once). Above × 1.6 (`ramp` is
    at most 0.5) it leapt. Counts [runs, leaps] into tally by policy."""
    (ct, cv), (te, e) = cap, est
    fell = te[1:][(e[1:] < 0.99 * e[:-1]) & (te[1:] >= t0)] if len(e) > 1 else np.array([])
    end = min(t0 + 1.5, float(fell[0]) if len(fell) else math.inf)
    c = cv[(ct >= t0 - 0.2) & (ct < end) & np.isfinite(cv)]
    step = float(np.max(c[1:] / c[:-1])) if len(c) > 1 else math.nan
    isol, wc = figures.get("isol_mean", math.nan), figures.get("work_conservation", math.nan)
    print(f"{tid}: the neighbour's cap rose at most × {step:.2f} a period before the limit showed; isol {isol:.2f}, "
          f"work conservation {wc:.2f}")
    k = tally.setdefault(tid.split(".", 1)[1].rsplit(".", 1)[0], [0, 0])
    k[0], k[1] = k[0] + 1, k[1] + (step > 1.6)


def views(tid: str, window: tuple[float, float], guard: tuple[np.ndarray, np.ndarray],
          host: tuple[np.ndarray, np.ndarray], tally: dict[str, list[int]]) -> None:
    """One line per run: of the guard's periods in the burst, how many read the victim below 0.9 × its median (what
    the policy takes for a pre-emption, two running) while its cgroup's counters over the same interval had it at
    0.95 × their median or more: a dip only the guard's view saw; and how many the other way round (the counters
    below 0.9 × their median, the guard's view at 0.95 × its own or more): a dip the guard did not see. A guard's
    period is stamped at its end, when it decided; the sampler's buckets at their middles: the counters over the
    period are the buckets read at its middle, in proportion to their overlap with it (before 2026-12-03 the bucket
    stamped nearest the period's end, half a bucket late: a victim's dip and catch-up in two buckets, averaged by a
    period straddling them, counted as a dip the guard did not see). Counts into tally by policy."""
    (tg, g), (th, h) = guard, host
    if len(g) < 2 or len(h) < 2:
        return
    mg, mh = float(np.median(g)), float(np.median(h))
    half = float(np.median(np.diff(tg))) / 2
    n = phantom = missed = 0
    for x, v in zip(tg, g):
        if not (window[0] <= x < window[1]) or not th[0] <= x - half <= th[-1] or mg <= 0 or mh <= 0:
            continue
        n += 1
        over = float(np.interp(x - half, th, h))  # the counters over the guard's period
        phantom += int(v < 0.9 * mg and over >= 0.95 * mh)
        missed += int(over < 0.9 * mh and v >= 0.95 * mg)
    print(f"{tid}: of {n} periods in the burst, {phantom} read the victim below 0.9 × its median in the guard's view "
          f"only, {missed} in its cgroup's counters only")
    k = tally.setdefault(tid.split(".", 1)[1].rsplit(".", 1)[0], [0, 0, 0])  # workload.policy.rN: the policy
    k[0], k[1], k[2] = k[0] + n, k[1] + phantom, k[2] + missed


def minute(st, a: argparse.Namespace, tally: dict[str, list[int]]) -> None:
    """One line per run: calm and burst over the victim's reference, how much of each it was held by its own cap,
    the device's latency before the burst (--minute). Counts, per policy, its runs below 0.95 in the burst: all,
    the disk's minute (calm below 0.9, not held in it), at 0.9 of that calm or more in the burst, and held by the cap
    in half the burst or more (report.minute_notes, which says the same in a study's report)."""
    runs = [load_run(st, tr) for tr in st.trials() if tr["status"] == "ok"]
    refs = references(runs)
    for r in runs:
        tid, (t0, t1) = r.trial["trial_id"], r.burst
        ref = victim_reference(r, refs.get(tid, []))
        burst = (r.t >= t0) & (r.t < t1)
        if (a.run and tid not in a.run) or not (math.isfinite(t0) and math.isfinite(ref) and ref > 0 and burst.any()):
            continue
        c, b = metrics.calm_ratio(r.t, r.victim, t0, ref), float(np.mean(r.victim[burst])) / ref
        calm_at = metrics.calm_window(t0)
        held = victim_held(r, *calm_at), victim_held(r, t0, t1)
        tl, lat = r.samples.series("", "guard", "device_lat_ms")
        lat_calm = lat[(tl >= calm_at[0]) & (tl < t0)]
        isol = float(np.mean(metrics.isolation_per_second(r.t, r.victim, t0, t1, reference=ref)))  # isol_mean
        dev = float(np.mean(lat_calm)) if len(lat_calm) else math.nan
        print(f"{tid}: reference {ref / 1e6:5.1f} MB/s; calm {c:4.2f}, held {held[0]:4.0%}; burst {b:4.2f} (isol "
              f"{isol:4.2f}), held {held[1]:4.0%}; device {dev:5.2f} ms before it")
        if r.policy == "none":  # judged against itself: calm 1 by construction
            continue
        k = tally.setdefault(r.policy, [0, 0, 0, 0, 0, math.inf])
        k[0] += 1
        k[5] = min(k[5], b / c if c > 0 else math.nan)
        if isol < 0.95:
            k[1] += 1
            k[2] += int(c < 0.9 and not held[0] >= 0.5)
            k[3] += int(b >= 0.9 * c)
            k[4] += int(held[1] >= 0.5)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("directory", type=Path, nargs="+")
    ap.add_argument("--run", action="append", help="a trial id (repeatable; default: every run under a capping policy)")
    ap.add_argument("--seconds", type=float, default=3.0, help="how long after the burst's start (default 3)")
    ap.add_argument("--before", type=float, default=0.5, help="from how long before the burst's start (default 0.5)")
    ap.add_argument("--summary", action="store_true", help="one line per run: the onset's times")
    ap.add_argument("--drops", action="store_true", help="every decrease of the estimate, felt by the victim or not")
    ap.add_argument("--none", action="store_true", help="the runs under no policy too (their victims' dips are the "
                    "disk's own: where a guard's reaction cannot begin before)")
    ap.add_argument("--steps", action="store_true", help="per run, the largest rise of the neighbour's cap a period "
                    "before the limit showed (a leap: above the ramp)")
    ap.add_argument("--views", action="store_true", help="per run, the periods in which only the guard's view of the "
                    "victim dipped (its share of the disk's writes against its cgroup's counters)")
    ap.add_argument("--minute", action="store_true", help="per run, the victim before and in the burst over its "
                    "reference, and how much of each it was held by its own cap: the disk's minute against the policy")
    a = ap.parse_args()
    tally: dict[str, list[int]] = {}
    for d in a.directory:
        show(d, a, tally)
    if a.summary:
        for policy, (runs, n, quiet, quick) in sorted(tally.items()):
            print(f"{policy}: {n} of {runs} runs slower than 1 s; in {quiet} the victim's first dip came >= 0.6 s "
                  "after the onset with nothing before it (victim >= 0.95, latency < 4 x its floor); "
                  f"{quick} back within 1 s of it")
        return
    if a.steps:
        for policy, (n, leapt) in sorted(tally.items()):
            print(f"{policy}: {leapt} of {n} runs leapt (the neighbour's cap × 1.6 or more in a period)")
        return
    if a.minute:
        for policy, (n, low, slow, kept, held, least) in sorted(tally.items()):
            print(f"{policy}: {low} of {n} runs isol below 0.95; of them {slow} below 0.9 before the burst, not held "
                  f"by its cap (the disk's minute), {kept} at 0.9 or more of that in the burst, {held} held by its own "
                  f"cap in half the burst or more; the burst over the calm before it {least:.2f} at the lowest")
        return
    if a.views:
        for policy, (n, phantom, missed) in sorted(tally.items()):
            print(f"{policy}: of {n} periods, {phantom} dipped in the guard's view only ({phantom / max(n, 1):.1%}), "
                  f"{missed} in the cgroup's counters only ({missed / max(n, 1):.1%})")
        return
    for wl, (n, unfelt) in sorted(tally.items()):
        print(f"{wl}: {n} decreases of the estimate, {unfelt} with the victim's load at >= 0.95 × its median "
              "throughout")


def show(directory: Path, a: argparse.Namespace, tally: dict[str, list[int]]) -> None:
    with open_store(directory, read_only=True) as st:
        if a.minute:
            minute(st, a, tally)
            return
        host: dict[str, dict[str, float]] = {}
        for r in st.trial_metric_rows():
            if r["view"] == "host":
                host.setdefault(r["trial_id"], {})[r["metric"]] = r["value"]
        reaction = {k: v["reaction_s"] for k, v in host.items() if "reaction_s" in v}
        for trial in st.trials():
            tid = trial["trial_id"]
            if trial["status"] != "ok" or (a.run and tid not in a.run) or (
                    not a.run and trial["policy"] == "none" and not a.none):
                continue
            s = st.samples(tid)
            burst = next((w for w in st.steps(tid) if w.phase == "burst"), None)
            if burst is None:
                continue
            names = {t.rsplit("-", 1)[-1]: t for t in set(s.tenant[s.source == "guard"]) if t}
            t, victim = io_series(s, "victim")
            tn, nb = io_series(s, "neighbour")
            caps = {k: s.series(names[k], "guard", "cap_bytes_s") if k in names else (np.array([]), np.array([]))
                    for k in ("victim", "neighbour")}
            if a.summary:
                # what it asks, or what it did before the burst if less (as victim_reference reads its references)
                ref = min(load_run(st, trial).victim_rate, float(np.median(victim[t < burst.t_start])))
                print(summary(tid, burst.t_start, burst.t_end, t, victim, tn, nb, caps["neighbour"],
                              s.series("", "guard", "device_lat_ms"), ref,
                              math.nan if reaction.get(tid) is None else reaction[tid], tally))
                continue
            if a.views:
                if "victim" in names:
                    views(tid, (burst.t_start, burst.t_end), s.series(names["victim"], "guard", "usage_bytes_s"),
                          (t, victim), tally)
                continue
            est, lat = s.series("", "guard", "capacity_bytes_s"), s.series("", "guard", "device_lat_ms")
            if a.steps:
                steps(tid, burst.t_start, caps["neighbour"], est, host.get(tid, {}), tally)
                continue
            if a.drops:
                drops(tid, burst.t_start, est, s.series("victim", "load", "bytes_s"), tally)
                continue
            seen = {k: s.series(names[k], "guard", "usage_bytes_s") if k in names else (np.array([]), np.array([]))
                    for k in ("victim", "neighbour")}
            seen = {k: (tg - PERIOD_S / 2, g) for k, (tg, g) in seen.items()}  # on the sampler's buckets
            own = s.series("victim", "load", "bytes_s")
            print(f"{tid}  (s from the burst's start; MB/s; fio: the victim's own log; seen: the guard's view, in "
                  "bytes; caps and estimate in cost MB/s, bytes + IOs × io_bytes; device ms per I/O)")
            for x in t[(t >= burst.t_start - a.before) & (t <= burst.t_start + a.seconds)]:
                print(f"{x - burst.t_start:5.1f}  victim {mb(at(t, victim, x))}  fio {mb(at(*own, x))}  "
                      f"neighbour {mb(at(tn, nb, x))}  "
                      f"caps {mb(at(*caps['victim'], x))} {mb(at(*caps['neighbour'], x))}  "
                      f"seen {mb(at(*seen['victim'], x))} {mb(at(*seen['neighbour'], x))}  "
                      f"estimate {mb(at(*est, x))}  latency {at(*lat, x):5.2f}")


if __name__ == "__main__":
    main()
