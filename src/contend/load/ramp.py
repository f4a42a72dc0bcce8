"""The ramp controller: an undisturbed baseline, then the disruptive load stepped linearly to its target.

Every step restarts each tenant's generator for the step's length, so the guest view (what the workload
reports) is known per step; the host view comes from the probes, bucket by bucket.
"""
from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..runtimes import Container, Runtime, RuntimeError_, last_line
from .stress import LoadGenerator


@dataclass(frozen=True)
class Step:
    index: int
    phase: str  # "baseline" | "ramp"
    seconds: float
    levels: dict[str, float]  # tenant -> ideal level, fraction of host capacity


@dataclass
class StepRecord:
    step: Step
    t_start: float
    t_end: float
    guest: dict[str, dict[str, float]] = field(default_factory=dict)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (tenant, what went wrong)


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

    def run(self, plan: list[Step], on_step: Callable[[Step], None] | None = None) -> list[StepRecord]:
        self.prepare()
        return [self.run_step(s, on_step) for s in plan]

    def prepare(self, timeout: float = 300) -> None:
        """The generator's setup in every tenant (before the clock's baseline starts)."""
        argv = self.generator.prepare()
        if argv is None:
            return
        for tenant, c in self.containers.items():
            p = self.runtime.run(c, argv, timeout=timeout)
            if p.returncode != 0:
                raise RuntimeError_(f"{tenant}: `{' '.join(argv[:2])}` setup exited {p.returncode} "
                                    f"{last_line(p.stderr or p.stdout)}".strip())

    def run_step(self, step: Step, on_step: Callable[[Step], None] | None = None) -> StepRecord:
        if on_step:
            on_step(step)
        rec = StepRecord(step, time.monotonic() - self.clock0, 0.0)
        procs: dict[str, subprocess.Popen] = {}
        report = f"step-{step.index}.yaml"  # the generator's own report, in the tenant's /data
        deadline = time.monotonic() + step.seconds
        try:
            for tenant, level in step.levels.items():
                if level <= 0:
                    continue
                (self.data_dirs[tenant] / report).unlink(missing_ok=True)
                procs[tenant] = self.runtime.exec(self.containers[tenant],
                                                  self.generator.argv(level, step.seconds, f"/data/{report}", tenant),
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            for tenant, p in procs.items():
                try:
                    _, err = p.communicate(timeout=step.seconds + 30)
                except subprocess.TimeoutExpired:
                    p.kill()
                    _, err = p.communicate()
                    rec.failures.append((tenant, f"load did not finish within {step.seconds + 30:g}s"))
                    continue
                if p.returncode != 0:
                    rec.failures.append((tenant, f"load exited {p.returncode} "
                                                 f"{last_line((err or b'').decode(errors='replace'))}".strip()))
                rec.guest[tenant] = self.generator.guest(self.data_dirs[tenant] / report)
            # an idle step (nothing to run) still lasts its time
            time.sleep(max(0.0, deadline - time.monotonic()))
        except BaseException:
            for p in procs.values():
                if p.poll() is None:
                    p.kill()
            raise
        rec.t_end = time.monotonic() - self.clock0
        return rec


def check_failures(records: list[StepRecord]) -> None:
    """The abiding tenant's load must run: without it there is nothing to measure."""
    bad = [f"{tenant}: {what}" for r in records for tenant, what in r.failures if tenant == "abiding"]
    if bad:
        raise RuntimeError_("; ".join(bad))
