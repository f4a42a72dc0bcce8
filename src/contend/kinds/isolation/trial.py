"""The trial runner: host setup → containers up → probes on → baseline → ramped disruptive load → down.

It measures and records; it never computes a metric (that is metrics/, reading the store).
"""
from __future__ import annotations

import subprocess
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
from ...network import SINK_IP, Link, NetworkError
from ...probes import Sample
from ...runtimes import RuntimeFailed
from ...spec import size_bytes
from ...store import TrialRecord
from ...tenants import Tenants, TrialResult, reset_host
from ...tools import ToolFailed
from .plan import TrialPlan
from .spec import Spec

TENANTS = ("abiding", "disruptive")

# eBPF probes per resource: the resource's own, and CPU time (cheap, and every resource costs some CPU)
EBPF_PROBES = {"cpu": ("cpu",), "memory": ("cpu", "memory"), "disk": ("cpu", "block"), "network": ("cpu", "net")}


def trial_capacity(calibrated: dict, spec: Spec) -> dict:
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


def limits_for(resource: str, fraction: float, capacity: dict) -> Limits:
    """A scenario's limit (fraction of capacity) as cgroup limits. The network's is the link's token
    bucket (network/), since no runtime sets a network rate."""
    if resource == "cpu":
        return Limits(cpu=fraction * capacity["cpus"])
    if resource == "memory":
        return Limits(memory=int(fraction * capacity["memory_pool_bytes"]))
    if resource == "disk":
        iops = fraction * capacity["disk_write_iops"]
        block = size_bytes(capacity.get("disk_block", "4K"))
        if block == 4096:  # the paper's: an IOPS limit
            return Limits(io=(IoLimit(capacity["disk_device"], wiops=max(1, round(iops))),))
        # larger writes may be split into several bios, and a throttle counts bios: limit their bytes
        return Limits(io=(IoLimit(capacity["disk_device"], wbps=max(4096, round(iops * block))),))
    if resource == "network":
        return Limits()
    raise ValueError(f"resource {resource!r} not supported")


def generator_for(resource: str, capacity: dict, link: Link | None = None,
                  limits: dict[str, float] | None = None) -> LoadGenerator:
    """The load of a resource; `limits` (tenant -> limit as a fraction of capacity) for memory's headroom."""
    if resource == "cpu":
        return CpuLoad(int(capacity["cpus"]))
    if resource == "memory":
        return MemoryLoad(int(capacity["memory_pool_bytes"]), limits=limits)
    if resource == "disk":
        return DiskLoad(capacity["disk_write_iops"], block=capacity.get("disk_block", "4K"))
    if resource == "network" and link is not None:
        return NetworkLoad(capacity["network_bps"], SINK_IP, {t: p.server_port for t, p in link.ports.items()})
    raise ValueError(f"resource {resource!r} not supported")


def trial_without_data(tp: TrialPlan, status: str, reason: str, capacity: dict, facts: dict) -> TrialResult:
    """The record of a trial with no data (yet): "failed", or "n/a" (a cell that cannot be measured here,
    not a failure), with the reason. run_trial starts from one too."""
    now = time.time()
    return TrialResult(TrialRecord(tp.id, tp.runtime, tp.scenario.name, tp.resource, tp.repetition, status,
                                   reason, now, now, tp.scenario.model_dump(), capacity, facts))


def run_trial(tp: TrialPlan, spec: Spec, capacity: dict, facts: dict,
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
    try:
        reset_host(tp.resource)
        with Tenants(tp.runtime, {t: limits_for(tp.resource, f, capacity) for t, f in fractions.items()}, host,
                     period=spec.trial.bucket_ms / 1000, userns=spec.userns, link=link, cgroup=spec.probes.cgroup,
                     ebpf=EBPF_PROBES[tp.resource] if spec.probes.ebpf else ()) as t:
            checkpoint("containers")
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
    except (RuntimeFailed, ToolFailed) as e:
        rec.reason = str(e)
    except NetworkError as e:
        rec.reason = f"network: {e}"
    except (OSError, ValueError, subprocess.SubprocessError) as e:  # a cgroup write, a probe, a report file
        rec.reason = f"{type(e).__name__}: {e}"
    finally:
        rec.ended_at = time.time()
    return result
