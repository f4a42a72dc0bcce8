"""The trial runner: host setup → containers up → probes on → baseline → ramped disruptive load → down.

It measures and records; it never computes a metric (that is metrics/, reading the store).
"""
from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

from .. import runtimes
from ..cgroups import CgroupHost, Limits, detect
from ..load import CpuStress, LoadGenerator, RampController, Step, plan_steps
from ..load.ramp import check_failures
from ..metrics import StepWindow
from ..paths import DATA
from ..planner import TrialPlan
from ..probes import BpftraceProbes, CgroupSampler, Sample, Target
from ..runtimes import ContainerSpec, RuntimeError_, signals_deferred
from ..spec import Spec
from ..store import TrialRecord

TENANTS = ("abiding", "disruptive")


@dataclass
class TrialResult:
    record: TrialRecord
    steps: list[StepWindow] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    events: list[tuple] = field(default_factory=list)  # (t, tenant, kind, detail)


def limits_for(resource: str, fraction: float, capacity: dict) -> Limits:
    """A scenario's limit (fraction of capacity) as cgroup limits."""
    if resource == "cpu":
        return Limits(cpu=fraction * capacity["cpus"])
    raise ValueError(f"resource {resource!r} not supported")


def generator_for(resource: str, capacity: dict) -> LoadGenerator:
    if resource == "cpu":
        return CpuStress(int(capacity["cpus"]))
    raise ValueError(f"resource {resource!r} not supported")


def failed_trial(tp: TrialPlan, reason: str, capacity: dict, facts: dict) -> TrialResult:
    """The record of a trial that did not (or could not) run; run_trial starts from one too."""
    now = time.time()
    return TrialResult(TrialRecord(tp.id, tp.runtime, tp.scenario.name, tp.resource, tp.repetition, "failed",
                                   reason, now, now, tp.scenario.model_dump(), capacity, facts))


def run_trial(tp: TrialPlan, spec: Spec, capacity: dict, facts: dict,
              host: CgroupHost | None = None, on_step: Callable[[Step], None] | None = None) -> TrialResult:
    host = host or detect()
    rt = runtimes.get(tp.runtime, host)
    sc = tp.scenario
    period = spec.trial.bucket_ms / 1000
    uid = uuid.uuid4().hex[:8]
    result = failed_trial(tp, "", capacity, facts)
    rec = result.record
    containers: dict[str, runtimes.Container] = {}
    data_dirs = {t: DATA / f"{runtimes.NAME_PREFIX}{uid}-{t}" for t in TENANTS}
    probes: list = []
    try:
        for tenant, frac in (("abiding", sc.l_a), ("disruptive", sc.l_d)):
            data_dirs[tenant].mkdir(parents=True, exist_ok=True)
            containers[tenant] = rt.create(ContainerSpec(f"{uid}-{tenant}", limits_for(tp.resource, frac, capacity),
                                                         data_dirs[tenant]))
        targets = [Target(t, c.cgroup, c.tracking, sync=partial(rt.track, c)) for t, c in containers.items()]
        clock0 = time.monotonic()
        if spec.probes.cgroup:
            probes.append(CgroupSampler(targets, period, clock0).start())
        if spec.probes.ebpf:
            probes.append(BpftraceProbes(targets, period, clock0).start())
        for p in probes:
            result.events += [(0.0, "", "probe-missing", why) for why in p.problems]
        rec.facts["probes"] = {"attached": [a for p in probes for a in p.attached],
                               "missing": [why for p in probes for why in p.problems]}
        plan = plan_steps(sc.abiding_level, sc.disruptive_level, spec.trial.baseline_s, spec.trial.steps,
                          spec.trial.step_s)
        ctl = RampController(rt, containers, data_dirs, generator_for(tp.resource, capacity), clock0)
        records = ctl.run(plan, on_step)
        for p in probes:
            p.stop()
            result.samples += p.samples
        for r in records:
            result.steps.append(StepWindow(r.step.index, r.step.phase, r.t_start, r.t_end, dict(r.step.levels)))
            mid = (r.t_start + r.t_end) / 2
            for tenant, values in r.guest.items():
                result.samples += [Sample(mid, tenant, "load", q, v) for q, v in values.items()]
            result.events += [(r.t_end, tenant, "load-failed", what) for tenant, what in r.failures]
        result.events += [(s.t, s.tenant, "oom-kill", f"{int(s.value)} process(es) killed")
                          for s in result.samples if s.quantity == "oom_kill" and s.value > 0]
        check_failures(records)
        rec.status = "ok"
    except RuntimeError_ as e:
        rec.reason = str(e)
    except (OSError, ValueError, subprocess.SubprocessError) as e:  # a cgroup write, a probe, a report file
        rec.reason = f"{type(e).__name__}: {e}"
    finally:
        with signals_deferred():
            for p in probes:
                p.stop()
            for c in containers.values():
                rt.delete(c)
            for d in data_dirs.values():
                shutil.rmtree(d, ignore_errors=True)
            rec.ended_at = time.time()
    return result
