"""A protect study (`contend run` of a spec with kind: protect): every runtime × case × mode × repetition, the
modes of one case and repetition side by side (none, protect, fixed: paired, in the same minutes), each trial
committed to the store as it ends, then the protection report. Ctrl-C stops after cleaning up."""
from __future__ import annotations

import random

from ...store import TrialRecord
from ...study import facts_of_trial, lazy, unavailable
from ...tenants import TrialResult
from ..detect.cases import CASES
from ..detect.study import DetectStudy
from .cell import ProtectCell
from .metrics import DIRECTIONS
from .spec import ProtectSpec
from .trial import run_protect_trial, trial_id

Item = tuple[str, str, str, int]  # runtime, case, mode, repetition


class ProtectStudy(DetectStudy, kind="protect", model=ProtectSpec, cell=ProtectCell, title="protection",
                   report=lazy(f"{__package__}.report", "refresh_protect"), directions=DIRECTIONS):
    spec: ProtectSpec

    def plan(self) -> list[Item]:  # type: ignore[override]
        # a repetition's modes one after another, their order turned each repetition (A/B/C, C/A/B, ...)
        out: list[Item] = []
        for r in range(1, self.spec.repetitions + 1):
            k = (r - 1) % len(self.spec.modes)
            modes = self.spec.modes[k:] + self.spec.modes[:k]
            # a control under protect alone: whether it acts is what a control asks (none and fixed act by design)
            out += [(rt, case, m, r) for rt in self.spec.runtimes for case in self.spec.cases for m in modes
                    if CASES[case].antagonist or m == "protect"]
        return out

    def ident(self, item: Item) -> str:  # type: ignore[override]
        return trial_id(*item)

    def change_at(self, item: Item) -> float:  # type: ignore[override]
        """The same drawn time for every mode of a case and repetition (paired)."""
        rt, case, _, rep = item
        tr = self.spec.trial
        return random.Random(f"{self.spec.seed}/{rt}.{case}.r{rep}").uniform(tr.baseline_s,
                                                                             tr.baseline_s + tr.jitter_s)

    def shape(self) -> str:
        return f"({', '.join(self.spec.runtimes)} × {', '.join(self.spec.cases)} × {', '.join(self.spec.modes)} × " \
               f"{self.spec.repetitions} rep)"

    def _one(self, item: Item, runnable: dict, host_facts: dict) -> TrialResult:  # type: ignore[override]
        rt, case, mode, rep = item
        why = unavailable(rt, runnable)
        if why:
            return TrialResult(TrialRecord(trial_id=self.ident(item), runtime=rt, repetition=rep,
                                           cell=ProtectCell(case, CASES[case].resource, {}, mode), status="n/a",
                                           reason=why))
        return run_protect_trial(self.spec, rt, case, mode, rep, self.change_at(item),
                                 facts_of_trial(host_facts, runnable.get(rt)))
