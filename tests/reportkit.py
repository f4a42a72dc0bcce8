"""Synthetic results directories with known answers, for the report's tests (no root, no containers).

An isolation study: runc harmony cpu keeps the abiding tenant at 0.5 whatever the disruptive load
(perfectly isolated); runc escape cpu loses one for one past W_d = 0.5, so its change point (the last step
before the curve leaves the baseline's band for good) is W_d = 0.5, W_a = 0.5, I_intFree ≈ 0 and I_plr = 0.5; runsc
escape cpu failed; an OOM kill is recorded at t = 9 s of the escape trials; only escape's disruptive tenant passes
its limit.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import yaml

from contend.kinds.isolation.cell import IsolationCell
from contend.metrics import StepWindow
from contend.store import Store, TrialRecord

BASELINE_S, STEP_S = 4.0, 2.0
LEVELS = (0.125, 0.25, 0.375, 0.5, 0.625, 0.75)  # the disruptive tenant's ramp, fraction of 2 CPUs
LOSS_FROM = 0.5
CHANGE_POINT = (0.5, 0.5)  # the last step inside the baseline's band; every later one is below it
OOM_T = 9.0


def steps() -> list[StepWindow]:
    out = [StepWindow(0, "baseline", 0.0, BASELINE_S, {"abiding": 0.5, "disruptive": 0.0})]
    for i, level in enumerate(LEVELS, start=1):
        t0 = BASELINE_S + (i - 1) * STEP_S
        out.append(StepWindow(i, "ramp", t0, t0 + STEP_S, {"abiding": 0.5, "disruptive": level}))
    return out


def abiding_share(scenario: str, w_d: float) -> float:
    """What the abiding tenant keeps (fraction of capacity) at a disruptive load w_d."""
    return 0.5 if scenario == "harmony" else max(0.0, 0.5 - max(0.0, w_d - LOSS_FROM))


def samples(scenario: str, rep: int) -> list[tuple]:
    """cgroup CPU use of both tenants every 100 ms (CPUs, of 2), with a little noise per repetition."""
    rng = np.random.default_rng(rep)
    out = []
    for w in steps():
        w_d = w.ideal["disruptive"]
        for t in np.arange(w.t_start, w.t_end, 0.1) + 0.05:
            noise = rng.normal(0, 0.004)
            out.append((float(t), "abiding", "cgroup", "cpu", 2 * (abiding_share(scenario, w_d) + noise)))
            out.append((float(t), "disruptive", "cgroup", "cpu", 2 * w_d))
    return out


def isolation_results(directory: Path, repetitions: int = 3) -> Path:
    """A results directory as `contend run` leaves it, before its report is written."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "spec.yaml").write_text(yaml.safe_dump({
        "name": "synthetic", "description": "known curves for the report's tests",
        "runtimes": ["runc", "runsc"], "scenarios": ["harmony", "escape"], "resources": ["cpu"],
        "repetitions": repetitions}))
    (directory / "host.json").write_text(json.dumps({
        "host": {"hostname": "synthetic", "kernel": "6.18", "cpus": 2}, "cgroups": {"mode": "hybrid"}}))
    params = {"harmony": {"l_a": 0.5, "l_d": 1.0}, "escape": {"l_a": 0.5, "l_d": 0.25}}
    t0 = 1.7e9
    with Store(directory) as s:
        for rep in range(1, repetitions + 1):
            for sc in ("harmony", "escape"):
                t0 += 60
                rec = TrialRecord(trial_id=f"runc.{sc}.cpu.r{rep}", runtime="runc", repetition=rep,
                                  cell=IsolationCell(sc, "cpu", params[sc]), capacity={"cpus": 2}, status="ok",
                                  started_at=t0, ended_at=t0 + 20)
                events = [(OOM_T, "abiding", "oom-kill", "1 process(es) killed")] if sc == "escape" else []
                s.add_trial(rec, steps(), samples(sc, rep), events)
        t0 += 60
        s.add_trial(TrialRecord(trial_id="runsc.escape.cpu.r1", runtime="runsc", repetition=1,
                                cell=IsolationCell("escape", "cpu", params["escape"]), capacity={"cpus": 2},
                                reason="runsc create: synthetic failure", started_at=t0, ended_at=t0 + 1),
                    [], [], [])
    return directory
