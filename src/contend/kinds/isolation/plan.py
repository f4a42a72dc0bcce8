"""The planner: runtimes × scenarios × resources × repetitions → an ordered list of trials."""
from __future__ import annotations

from dataclasses import dataclass

from ...spec import NOT_RUN, Scenario
from .spec import IsolationSpec


@dataclass(frozen=True)
class TrialPlan:
    runtime: str
    scenario: Scenario
    resource: str
    repetition: int

    @property
    def not_run(self) -> str:
        """Why this cell is not run at all ("" = it is run)."""
        return NOT_RUN.get((self.resource, self.scenario.name), "")

    @property
    def id(self) -> str:
        return f"{self.runtime}.{self.scenario.name}.{self.resource}.r{self.repetition}"


def plan(spec: IsolationSpec) -> list[TrialPlan]:
    """Repetitions outermost, so an interrupted study still covers every cell at least once."""
    return [TrialPlan(rt, sc, res, rep)
            for rep in range(1, spec.repetitions + 1)
            for rt in spec.runtimes
            for sc in spec.resolved_scenarios()
            for res in spec.resources]


def trial_seconds(spec: IsolationSpec) -> float:
    t = spec.trial
    return t.baseline_s + t.steps * t.step_s
