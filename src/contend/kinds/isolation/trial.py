"""The trial runner: host setup → containers up → probes on → baseline → ramped disruptive load → down.

It measures and records; it never computes a metric (that is metrics/, reading the store).
"""
from __future__ import annotations

import time
import uuid
from typing import Callable

from ... import runtimes
from ...cgroups import CgroupHost, IoLimit, Limits, detect
from ...doctor.calibrate import write_iops_key
from ...faults import checkpoint
from ...load import CpuLoad, DiskLoad, LoadGenerator, MemoryLoad, NetworkLoad, RampController, Step, plan_steps
from ...load.ramp import check_failures
from ...metrics import StepWindow
from ...network import SINK_IP, Link
from ...probes import Sample
from ...resources import RESOURCES
from ...spec import size_bytes
from ...store import TrialRecord
from ...tenants import Tenants, TrialResult, recorded, reset_host
from .cell import IsolationCell
from .plan import TrialPlan
from .spec import IsolationSpec

TENANTS = ("abiding", "disruptive")


def trial_capacity(calibrated: dict, spec: IsolationSpec) -> dict:
    """What 100 % of each resource is in this study: the host's calibration and the spec's choices. The
    disk's unit is the random-write IOPS at the spec's block size (recorded with it as disk_block), and absent
    when that size was not calibrated: never the 4K figure under another block's name."""
    cap = {**calibrated, "memory_pool_bytes": spec.capacity.memory_bytes, "network_bps": spec.capacity.network_bps,
           "disk_block": spec.capacity.disk_block}
    cap.pop("disk_write_iops", None)
    key = write_iops_key(spec.capacity.disk_block)
    if key in calibrated:
        cap["disk_write_iops"] = calibrated[key]
    return cap


def _disk_limits(fraction: float, capacity: dict) -> Limits:
    iops = fraction * capacity["disk_write_iops"]
    block = size_bytes(capacity.get("disk_block", "4K"))
    if block == 4096:  # the paper's: an IOPS limit
        return Limits(io=(IoLimit(capacity["disk_device"], wiops=max(1, round(iops))),))
    # larger writes may be split into several bios, and a throttle counts bios: limit their bytes
    return Limits(io=(IoLimit(capacity["disk_device"], wbps=max(4096, round(iops * block))),))


# A scenario's limit (fraction of capacity) as cgroup limits, per resource (resources.py holds the rest of
# each). The network's is the link's token bucket (network/), since no runtime sets a network rate.
LIMITS: dict[str, Callable[[float, dict], Limits]] = {
    "cpu": lambda fraction, capacity: Limits(cpu=fraction * capacity["cpus"]),
    "memory": lambda fraction, capacity: Limits(memory=int(fraction * capacity["memory_pool_bytes"])),
    "disk": _disk_limits,
    "network": lambda fraction, capacity: Limits(),
}

def _no_link() -> LoadGenerator:
    raise ValueError("a network load needs its trial's link")


# The load of a resource, from its capacity, the network trial's link, and the tenants' limits (fractions of
# capacity: memory's headroom)
LOADS: dict[str, Callable[[dict, Link | None, dict[str, float] | None], LoadGenerator]] = {
    "cpu": lambda capacity, link, limits: CpuLoad(int(capacity["cpus"])),
    "memory": lambda capacity, link, limits: MemoryLoad(int(capacity["memory_pool_bytes"]), limits=limits),
    "disk": lambda capacity, link, limits: DiskLoad(capacity["disk_write_iops"],
                                                    block=capacity.get("disk_block", "4K")),
    "network": lambda capacity, link, limits: NetworkLoad(capacity["network_bps"], SINK_IP, {
        t: p.server_port for t, p in link.ports.items()}) if link is not None else _no_link(),
}


def limits_for(resource: str, fraction: float, capacity: dict) -> Limits:
    return LIMITS[resource](fraction, capacity)


def generator_for(resource: str, capacity: dict, link: Link | None = None,
                  limits: dict[str, float] | None = None) -> LoadGenerator:
    if resource == "network" and link is None:
        raise ValueError("a network load needs its trial's link")
    return LOADS[resource](capacity, link, limits)


def trial_without_data(tp: TrialPlan, status: str, reason: str, capacity: dict, facts: dict) -> TrialResult:
    """The record of a trial with no data (yet): "failed", or "n/a" (a cell that cannot be measured here,
    not a failure), with the reason. run_trial starts from one too."""
    now = time.time()
    return TrialResult(TrialRecord(trial_id=tp.id, runtime=tp.runtime, repetition=tp.repetition,
                                   cell=IsolationCell(tp.scenario.name, tp.resource, tp.scenario.model_dump()),
                                   capacity=capacity, facts=facts, status=status, reason=reason,
                                   started_at=now, ended_at=now))


def run_trial(tp: TrialPlan, spec: IsolationSpec, capacity: dict, facts: dict,
              host: CgroupHost | None = None, on_step: Callable[[Step], None] | None = None) -> TrialResult:
    host = host or detect()
    rt = runtimes.get(tp.runtime, host)
    if tp.resource == "network" and rt.no_netns:
        return trial_without_data(tp, "n/a", rt.no_netns, capacity, facts)
    sc = tp.scenario
    result = trial_without_data(tp, "failed", "", capacity, facts)
    rec = result.record
    fractions = {"abiding": sc.l_a, "disruptive": sc.l_d}
    link = Link(uuid.uuid4().hex[:8], capacity["network_bps"],
                {t: f * capacity["network_bps"] for t, f in fractions.items()}) if tp.resource == "network" else None
    with recorded(rec):
        reset_host(tp.resource)
        with Tenants(tp.runtime, {t: limits_for(tp.resource, f, capacity) for t, f in fractions.items()}, host,
                     period=spec.trial.bucket_ms / 1000, userns=spec.userns, link=link, cgroup=spec.probes.cgroup,
                     host_cpu=spec.probes.cgroup,
                     ebpf=RESOURCES[tp.resource].ebpf_probes if spec.probes.ebpf else ()) as t:
            t.start_sampling(restart_clock=True)
            checkpoint("probes")
            rec.facts["probes"] = t.probe_facts()
            result.events += [(0.0, "", "probe-missing", why) for why in rec.facts["probes"]["missing"]]
            plan = plan_steps(sc.abiding_level, sc.disruptive_level, spec.trial.baseline_s, spec.trial.steps,
                              spec.trial.step_s)
            ctl = RampController(t.rt, t.c, t.data, generator_for(tp.resource, capacity, link, fractions), t.clock0)
            ramp = ctl.run(plan, on_step)
            result.samples += t.stop_sampling()
            result.steps += [StepWindow(r.step.index, r.step.phase, r.t_start, r.t_end, dict(r.step.levels))
                             for r in ramp.records]
            result.samples += [Sample(at, tenant, "load", q, v) for at, tenant, q, v in ramp.guest]
            result.events += ramp.events + t.events
            check_failures(ramp)
            rec.status = "ok"
    return result
