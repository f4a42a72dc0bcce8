"""A guard study (`contend run` of a spec with kind: guard): every workload × policy × repetition, each run
committed to the store as it ends, then the protection report. Ctrl-C stops after cleaning up."""
from __future__ import annotations

from ...cgroups import detect
from ...doctor import ensure_capacity
from ...guard.daemon import iolatency_missing
from ...spec import SpecError
from ...store import Store
from ...study import Study, facts_of_trial, lazy
from .cell import GuardCell
from .metrics import DIRECTIONS
from .spec import GuardSpec
from .trial import run_guard_trial, run_id

SETUP_S = 6.0  # containers up, files laid out, containers down
V2_ONLY = ("iocost", "iolatency")  # policies whose mechanism only cgroup v2 has


def run_seconds(w, capacity_share_left: float = 0.7) -> float:
    """A rough length of one run for the ETA: the burst gets about what the victim leaves."""
    return w.burst_at_s + w.burst_volume_s / capacity_share_left + w.tail_s + SETUP_S


class GuardStudy(Study, kind="guard", model=GuardSpec, cell=GuardCell, title="protection",
                      report=lazy(f"{__package__}.report", "refresh_guard"), unit="runs",
                 directions=DIRECTIONS):
    """A Study whose runs are workloads under policies (its spec a GuardSpec)."""

    spec: GuardSpec

    def plan(self) -> list[tuple]:
        """(workload, policy, repetition, after): repetitions outermost; within one, each workload's policies
        back to back, each run between two runs under no policy (A/B/A: none, static, none, aridac, none, …),
        its references measured in the same minutes on a disk whose delivery moves by about 25 % from one
        minute to the next (docs/guard.md). `after`: the policy a reference follows ("" for the first)."""
        out = []
        for r in range(1, self.spec.repetitions + 1):
            for w in self.spec.workloads:
                out.append((w, "none", r, ""))
                for v in (v for v in self.spec.variants() if v.policy != "none"):
                    out += [(w, v.label, r, ""), (w, "none", r, v.label)]
        return out

    def ident(self, run: tuple) -> str:
        return run_id(run[0].name, run[1], run[2], run[3])

    def preflight(self) -> None:
        """What this host cannot do is refused before anything runs, not failed run by run: a policy whose
        mechanism it lacks; a buffered neighbour on v1, whose writeback the kernel charges to no cgroup, so the
        host view would not see the neighbour's writes at all (`contend guard` says escape there)."""
        host = detect()
        mode = host.mode
        if "iolatency" in self.spec.policies and mode == "v2" and iolatency_missing(host):
            raise SpecError(f"policies[{self.spec.policies.index('iolatency')}]: {iolatency_missing(host)}")
        if mode == "v2":
            return
        for i, p in enumerate(self.spec.policies):
            if p in V2_ONLY:
                raise SpecError(f"policies[{i}]: {p} needs a cgroup v2 host (this host: {mode}); the v2 guest "
                                f"runs it (docs/guard.md)")
        for i, w in enumerate(self.spec.workloads):
            if w.neighbour_io == "buffered":
                raise SpecError(f"workloads[{i}].neighbour_io: buffered needs a cgroup v2 host (this host: {mode}:"
                                f" its writeback is charged to no cgroup, so no figure would see it)")

    def runtime_of(self, run: tuple) -> str:
        return self.spec.runtime

    def execute(self, store: Store, host_facts: dict) -> None:
        spec, con = self.spec, self.console
        runs = self.plan()
        capacity = ensure_capacity(["disk"], say=lambda s: con.print(s, highlight=False))
        trial_facts = facts_of_trial(host_facts, next((r for r in host_facts["runtimes"]
                                                       if r["name"] == spec.runtime), None))
        self.run_each(
            store, runs, [run_seconds(run[0]) for run in runs],
            f"[bold]{spec.name}[/bold]: {len(runs)} runs ({', '.join(w.name for w in spec.workloads)} × "
            f"{', '.join(v.label for v in spec.variants())} × {spec.repetitions} rep, each policy between two runs "
            f"under none) on "
            f"{capacity['disk_device']} "
            f"({capacity['disk_write_bw_bytes_s'] / 1e9:.1f} GB/s calibrated)",
            lambda run: f"{run[0].name} under {run[1]} r{run[2]}" + (f" (after {run[3]})" if run[3] else ""),
            lambda run, advance: run_guard_trial(
                spec, run[0], run[1], run[2], capacity, trial_facts,
                self.dir, after=run[3]))
