"""The isolation study (`contend run` of a spec with kind: isolation, the default; Volpert et al.): every
runtime × scenario × resource × repetition, each trial committed to the store as it ends, then Table 4."""
from __future__ import annotations

from ...cgroups import detect
from ...doctor import ensure_capacity
from ...faults import checkpoint
from ...load import DiskLoad
from ...metrics.isolation import DIRECTIONS
from ...spec import size_bytes
from ...store import Store
from ...study import Advance, Study, facts_of_trial, lazy, need_space, unavailable
from .cell import IsolationCell
from .plan import TrialPlan, plan, trial_seconds
from .spec import IsolationSpec
from .trial import TENANTS, TrialResult, run_trial, trial_capacity, trial_without_data

SETUP_S = 5.0  # containers up and down, probes attaching, two agents started (runsc exec ~1 s each): per trial,
# for the ETA (measured: the quick preset 16 s per 10 s trial, the Volpert quick pass 14.3 s)


class IsolationStudy(Study, kind="isolation", model=IsolationSpec, cell=IsolationCell, title="isolation metrics",
                     report=lazy(f"{__package__}.report", "refresh_isolation"), directions=DIRECTIONS):
    spec: IsolationSpec

    def plan(self) -> list:
        """The items this study runs, in order; pure (no host needed)."""
        return plan(self.spec)

    def preflight(self) -> None:
        """Refuse, with a SpecError (exit 2), a study this host cannot take; nothing is started yet."""
        if "disk" in getattr(self.spec, "resources", ()):
            need_space(len(TENANTS) * size_bytes(DiskLoad.FILE_SIZE) * 3 // 2,  # every tenant's fio file, and room
                       f"disk trials write {len(TENANTS)} × {DiskLoad.FILE_SIZE} there")

    def execute(self, store: Store, host_facts: dict) -> None:
        """Every trial of the plan, each committed to the store as it ends."""
        spec, con = self.spec, self.console
        trials = self.plan()
        per_trial = trial_seconds(spec) + SETUP_S
        capacity = trial_capacity(ensure_capacity(spec.resources, say=lambda s: con.print(s, highlight=False),
                                                  disk_block=spec.capacity.disk_block), spec)
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        host = detect()

        def one(tp: TrialPlan, advance: Advance) -> TrialResult:
            trial_facts = facts_of_trial(host_facts, runnable.get(tp.runtime))
            why = not_run(tp, runnable)
            if why:
                return trial_without_data(tp, "n/a", why, capacity, trial_facts)

            def on_step(step):
                checkpoint("step")
                t = spec.trial
                elapsed = 0.0 if step.index == 0 else t.baseline_s + (step.index - 1) * t.step_s
                advance(elapsed / per_trial, f"{step.phase} {step.index}/{t.steps}")
            return run_trial(tp, spec, capacity, trial_facts, host, on_step)

        # the ETA counts the trials that will run: cells not run and absent runtimes take no time
        self.run_each(store, trials, [0.0 if not_run(tp, runnable) else per_trial for tp in trials],
                      f"[bold]{spec.name}[/bold]: {len(trials)} trials ({', '.join(spec.runtimes)} × "
                      f"{', '.join(s.name for s in spec.resolved_scenarios())} × {', '.join(spec.resources)} × "
                      f"{spec.repetitions} rep)",
                      lambda tp: f"{tp.runtime} {tp.scenario.name} {tp.resource} r{tp.repetition}", one)


def not_run(tp: TrialPlan, runnable: dict) -> str:
    """Why a planned trial is not run on this host ("" = it is run): a cell the study leaves out, or a
    runtime that doctor found unable to run a container."""
    return tp.not_run or unavailable(tp.runtime, runnable)


