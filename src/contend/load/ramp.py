"""The ramp controller: an undisturbed baseline, then the disruptive load stepped linearly to its target.

Each tenant runs one load agent from before the baseline to the end of the trial; the abiding tenant's
level never changes, the disruptive tenant's changes in place at each step. A step's window is where its
level was in force: from when the agent said the level took effect to when the next one did. The guest
view is the agents' own reports, one per interval, over the whole trial.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..runtimes import Container, Runtime, RuntimeFailed
from ..tools import failure
from .agent import Agent, AgentError, start_in
from .generators import LoadGenerator


@dataclass(frozen=True)
class Step:
    index: int
    phase: str  # "baseline" | "ramp"
    seconds: float
    levels: dict[str, float]  # tenant -> ideal level, fraction of host capacity


@dataclass
class StepRecord:
    step: Step
    t_start: float  # trial clock: when the step's levels took effect
    t_end: float = math.nan  # when the next step's did, or the load stopped
    failures: list[tuple[str, str]] = field(default_factory=list)  # (tenant, what went wrong)


@dataclass
class Ramp:
    """What a ramp did: its steps, every agent report as guest samples (t, tenant, quantity, value), and
    what went wrong when (t, tenant, kind, detail)."""

    records: list[StepRecord]
    guest: list[tuple[float, str, str, float]]
    events: list[tuple[float, str, str, str]]


def plan_steps(abiding: float, disruptive: float, baseline_s: float, steps: int, step_s: float) -> list[Step]:
    """Baseline (disruptive idle) then `steps` linear steps up to the disruptive target (pure)."""
    plan = [Step(0, "baseline", baseline_s, {"abiding": abiding, "disruptive": 0.0})]
    for k in range(1, steps + 1):
        plan.append(Step(k, "ramp", step_s, {"abiding": abiding, "disruptive": disruptive * k / steps}))
    return plan


class RampController:
    def __init__(self, runtime: Runtime, containers: dict[str, Container], data_dirs: dict[str, Path],
                 generator: LoadGenerator, clock0: float):
        self.runtime = runtime
        self.containers = containers
        self.data_dirs = data_dirs
        self.generator = generator
        self.clock0 = clock0
        self.agents: dict[str, list[Agent]] = {t: [] for t in containers}  # a tenant's agents, the live one last
        self.events: list[tuple[float, str, str, str]] = []

    def prepare(self, timeout: float = 300) -> None:
        """The generator's setup in every tenant (before the clock's baseline starts), and what each tenant's
        cgroup holds before any load (settle)."""
        for tenant, c in self.containers.items():
            self.generator.settle(tenant, c.cgroup.stats().memory_current)
        argv = self.generator.prepare()
        if argv is None:
            return
        for tenant, c in self.containers.items():
            p = self.runtime.run(c, argv, timeout=timeout)
            if p.returncode != 0:
                raise RuntimeFailed(failure(f"the {self.generator.resource} load's setup in {tenant}", argv[0],
                                            p.returncode, p.stderr or p.stdout))

    def now(self) -> float:
        return time.monotonic() - self.clock0

    def apply(self, tenant: str, level: float) -> float:
        """Put a tenant's level in force (its agent started, or started again if it died); the trial-clock
        time it took effect. Raises AgentError when it could not."""
        runs = self.agents[tenant]
        if not runs or not runs[-1].running:
            if runs:
                self.events.append((self.now(), tenant, "load-restarted", runs[-1].why_stopped()))
            runs.append(start_in(self.runtime, self.containers[tenant], self.data_dirs[tenant],
                                 self.generator.agent_args(tenant)))
        return runs[-1].set(self.generator.value(level, tenant)) - self.clock0

    def run(self, plan: list[Step], on_step: Callable[[Step], None] | None = None) -> Ramp:
        self.prepare()
        records: list[StepRecord] = []
        try:
            previous: dict[str, float] = {}
            for step in plan:
                if on_step:
                    on_step(step)
                rec = StepRecord(step, self.now())
                effect = []
                for tenant, level in step.levels.items():
                    runs = self.agents[tenant]
                    if previous.get(tenant) == level and runs and runs[-1].running:
                        continue
                    try:
                        effect.append(self.apply(tenant, level))
                    except AgentError as e:
                        if tenant == "abiding":  # nothing to measure without it: the trial fails now
                            raise
                        rec.failures.append((tenant, str(e)))
                        self.events.append((self.now(), tenant, "load-failed", str(e)))
                    previous[tenant] = level
                rec.t_start = max(effect, default=rec.t_start)
                if records:
                    records[-1].t_end = rec.t_start
                records.append(rec)
                time.sleep(max(0.0, rec.t_start + step.seconds - self.now()))
            records[-1].t_end = self.now()
        finally:
            for runs in self.agents.values():
                for a in runs:
                    a.stop()
        for tenant, runs in self.agents.items():
            for a in runs:
                if a.ended is not None and records and a.ended - self.clock0 < records[-1].t_end:
                    self.events.append((a.ended - self.clock0, tenant, "load-stopped", a.why_stopped()))
        return Ramp(records, self.guest_samples(), self.events)

    def guest_samples(self) -> list[tuple[float, str, str, float]]:
        out = []
        for tenant, runs in self.agents.items():
            for a in runs:
                for t, seconds, work, extra in a.intervals(self.clock0):
                    out += [(t, tenant, q, v) for q, v in self.generator.guest(seconds, work, extra).items()]
        return out


def check_failures(ramp: Ramp) -> None:
    """The abiding tenant's load must run the whole trial: without it there is nothing to measure."""
    bad = [f"abiding: {detail}" for _, tenant, kind, detail in ramp.events
           if tenant == "abiding" and kind in ("load-failed", "load-stopped", "load-restarted")]
    if bad:
        raise RuntimeFailed("; ".join(bad))
