"""The isolation study's spec (kind: isolation, the default): runtimes × scenarios × resources, Volpert et al."""
from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from ...spec.base import (
    RESOURCES,
    STANDARD,
    Capacity,
    Metrics,
    Probes,
    Quick,
    Runtimes,
    Scenario,
    StudyKind,
    Trial,
    no_repeats,
)


class IsolationSpec(StudyKind):
    kind: Literal["isolation"] = "isolation"
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    runtimes: Runtimes
    # a standard name, or name, w_a, l_a, w_d, l_d
    scenarios: Annotated[list[Scenario], Field(min_length=1), no_repeats("scenario", by_name=True)]
    # (a Literal over a tuple: pydantic expands it, mypy cannot)
    resources: Annotated[list[Literal[RESOURCES]], Field(min_length=1), no_repeats("resource")]  # type: ignore[valid-type]
    repetitions: int = Field(default=1, gt=0, le=1000)
    trial: Trial = Trial()
    probes: Probes = Probes()
    metrics: Metrics = Metrics()
    capacity: Capacity = Capacity()
    quick: Quick = Quick()

    @field_validator("scenarios", mode="before")
    @classmethod
    def _standard_scenarios(cls, v):
        if not isinstance(v, list):
            return v
        out = []
        for i, s in enumerate(v):
            if isinstance(s, str):
                if s not in STANDARD:
                    raise ValueError(f"[{i}] unknown scenario {s!r} (standard: {', '.join(STANDARD)}; "
                                     "or give name, w_a, l_a, w_d, l_d)")
                s = STANDARD[s].model_dump()
            out.append(s)
        return out



    def resolved_scenarios(self) -> list[Scenario]:
        return list(self.scenarios)

    def quickened(self) -> "IsolationSpec":
        """The --quick variant: the quick section's repetitions, trial and capacity replace the study's."""
        q = self.quick
        return self.quick_with(repetitions=q.repetitions, trial=q.trial,
                               **({"capacity": q.capacity} if q.capacity is not None else {}))
