"""A detect study (`contend run` of a spec with kind: detect): every runtime × case × repetition, each trial
committed to the store as it ends, then the accuracy report. Ctrl-C stops after cleaning up."""
from __future__ import annotations

import random

from ...store import Store, TrialRecord
from ...study import Study, facts_of_trial, lazy, need_space, unavailable
from ...tenants import TrialResult
from ...units import size_bytes
from .cases import CASES
from .cell import DetectCell
from .metrics import DIRECTIONS
from .spec import DetectSpec
from .trial import run_detect_trial, trial_id

SETUP_S = 6.0  # three containers up and down, files laid out


class DetectStudy(Study, kind="detect", model=DetectSpec, cell=DetectCell, title="detection",
                 report=lazy(f"{__package__}.report", "refresh_detect"), directions=DIRECTIONS):
    """A Study whose trials inject a known antagonist (or a control's change) under contend watch."""

    spec: DetectSpec

    def plan(self) -> list[tuple[str, str, int]]:
        return [(rt, case, r) for r in range(1, self.spec.repetitions + 1) for rt in self.spec.runtimes
                for case in self.spec.cases]

    def ident(self, item: tuple[str, str, int]) -> str:
        return trial_id(*item)

    def runtime_of(self, item: tuple[str, str, int]) -> str:
        return item[0]

    def change_at(self, item: tuple[str, str, int]) -> float:
        """When a trial's change starts: drawn from the spec's seed and the trial's id, so a resumed or fanned-out
        trial starts it at the same time."""
        tr = self.spec.trial
        return random.Random(f"{self.spec.seed}/{self.ident(item)}").uniform(tr.baseline_s,
                                                                              tr.baseline_s + tr.jitter_s)

    def preflight(self) -> None:
        sizes = {c: sum(size_bytes(x) for x in CASES[c].files.values()) for c in self.spec.cases}
        case = max(sizes, key=lambda c: sizes[c])
        if sizes[case]:  # one trial's files at a time, and room for the writers' own
            need_space(sizes[case] * 3 // 2, f"the {case} case lays out {sizes[case] / 2**30:.1f} GiB of files")

    def execute(self, store: Store, host_facts: dict) -> None:
        tr, items = self.spec.trial, self.plan()
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        cost = [tr.baseline_s + tr.jitter_s / 2 + tr.attack_s + tr.tail_s + SETUP_S for _ in items]
        self.run_each(store, items, cost, f"[bold]{self.spec.name}[/bold]: {len(items)} trials {self.shape()}",
                      lambda it: " ".join(str(x) if i < len(it) - 1 else f"r{x}" for i, x in enumerate(it)),
                      lambda it, advance: self._one(it, runnable, host_facts))

    def shape(self) -> str:
        """What the study runs, for its first line."""
        return f"({', '.join(self.spec.runtimes)} × {', '.join(self.spec.cases)} × {self.spec.repetitions} rep) " \
               "under contend watch"

    def _one(self, item: tuple[str, str, int], runnable: dict, host_facts: dict) -> TrialResult:
        rt, case, rep = item
        why = unavailable(rt, runnable)
        if why:
            return TrialResult(TrialRecord(trial_id=self.ident(item), runtime=rt, repetition=rep,
                                           cell=DetectCell(case, CASES[case].resource, {}), status="n/a",
                                           reason=why))
        return run_detect_trial(self.spec, rt, case, rep, self.change_at(item),
                                facts_of_trial(host_facts, runnable.get(rt)))
