"""The echo study: runtimes × repetitions, each trial one container in Tenants timing `echo`."""
from __future__ import annotations

import time

from contend.cgroups import Limits
from contend.probes.base import Sample
from contend.store import TrialRecord
from contend.study import Advance, Study, facts_of_trial, lazy, unavailable
from contend.tenants import Tenants, TrialResult, recorded

from .cell import EchoCell
from .metrics import DIRECTIONS
from .spec import EchoSpec


class EchoStudy(Study, kind="echo", model=EchoSpec, cell=EchoCell, title="echo",
                report=lazy(f"{__package__}.report", "refresh_echo"), directions=DIRECTIONS):
    spec: EchoSpec

    def plan(self) -> list[tuple[str, int]]:
        return [(rt, r) for r in range(1, self.spec.repetitions + 1) for rt in self.spec.runtimes]

    def ident(self, item: tuple[str, int]) -> str:
        return f"{item[0]}.echo.r{item[1]}"

    def runtime_of(self, item: tuple[str, int]) -> str:
        return item[0]

    def execute(self, store, host_facts: dict) -> None:
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        words = " ".join(f"w{i}" for i in range(self.spec.words))

        def one(item: tuple[str, int], advance: Advance) -> TrialResult:
            rt, rep = item
            rec = TrialRecord(trial_id=self.ident(item), runtime=rt, repetition=rep,
                              cell=EchoCell(self.spec.words), facts=facts_of_trial(host_facts, runnable.get(rt)))
            result = TrialResult(rec)
            if unavailable(rt, runnable):
                rec.status, rec.reason = "n/a", unavailable(rt, runnable)
                return result
            with recorded(rec), Tenants(rt, {"echo": Limits(cpu=0.5)}, userns=self.spec.userns) as t:
                t0 = time.monotonic()
                said = t.run("echo", ["echo", words], timeout=60, what="echo").stdout
                result.samples += [Sample(0.0, "echo", "guest", "echo_s", time.monotonic() - t0),
                                   Sample(0.0, "echo", "guest", "words_back", float(len(said.split())))]
                rec.status = "ok"
            return result

        self.run_each(store, self.plan(), [3.0] * len(self.plan()), f"echo: {len(self.plan())} trials",
                      lambda item: f"{item[0]} r{item[1]}", one)
