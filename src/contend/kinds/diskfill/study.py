"""The disk-fill attack (Kim, Choi, Park, WISA 2025): containers A, B, C write one large file each with
ordinary buffered writes while container D measures the disk (random reads and writes, direct I/O).

Per runtime and repetition one trial: D's baseline with A-C idle, then an attack per file size (the files'
total fits in the host's memory, or goes well beyond it), the files removed and the page cache dropped
between. Host view: the disk's own counters (utilisation, queue depth, bytes) and each tenant's cgroup
counters, so the table can say how much of the disk's writing any tenant's cgroup was charged with.
"""
from __future__ import annotations

import json
import subprocess
import time
from string import ascii_lowercase

from ...cgroups import Limits
from ...doctor import ensure_capacity
from ...doctor.calibrate import device_of, meminfo
from ...load.fio import iops_log, victim_argv, victim_figures, victim_prepare
from ...metrics import StepWindow
from ...paths import DATA, free_space, open_existing
from ...probes.base import Sample
from ...spec import SpecError, size_bytes
from ...store import TrialRecord
from ...study import Advance, Study, facts_of_trial, lazy, unavailable
from ...tenants import Tenants, TrialResult, recorded, reset_host, stop
from .cell import DiskFillCell
from .metrics import DIRECTIONS
from .spec import DiskFillSpec

BASELINE = "baseline"
VICTIM = "d"
WRITE_GUESS_BPS = 3e9  # for the ETA only: what the attackers write together per second (this host: ~3.3 GB/s)


def attack_sizes(memory_bytes: int, multiples: dict[str, float], attackers: int) -> dict[str, int]:
    """Each attacker's file per attack: the attack's total (a multiple of the host's memory) shared
    equally, in whole MiB (dd writes 1 MiB blocks)."""
    return {name: max(1, int(m * memory_bytes / attackers) >> 20) << 20 for name, m in multiples.items()}


def space_problem(free_bytes: int, need_bytes: int, margin_bytes: int, where: str) -> str:
    """Why an attack must not start ("" = it may): it would leave less than the margin free."""
    left = free_bytes - need_bytes
    if left >= margin_bytes:
        return ""
    return (f"{where}: the largest attack writes {need_bytes / 2**30:.1f} GiB and would leave "
            f"{max(left, 0) / 2**30:.1f} GiB of {free_bytes / 2**30:.1f} GiB free, below the safety margin of "
            f"{margin_bytes / 2**30:.1f} GiB (lower files.beyond-memory, or free_margin)")


class DiskFillStudy(Study, kind="diskfill", model=DiskFillSpec, cell=DiskFillCell, title="disk-fill attack",
               report=lazy(f"{__package__}.report", "refresh_diskfill"), directions=DIRECTIONS):
    spec: DiskFillSpec

    def tenants(self) -> list[str]:
        """The attackers a, b, c (…), then the victim d (the paper's names)."""
        return [x for x in ascii_lowercase if x != VICTIM][:self.spec.attackers] + [VICTIM]

    def sizes(self) -> dict[str, int]:
        return attack_sizes(meminfo()["MemTotal"], self.spec.files.multiples(), self.spec.attackers)

    def space(self) -> str:
        """The disk-safety rule: why the largest attack (its files and D's) must not start now ("" = it may)."""
        free, total = free_space(DATA)
        need = max(self.sizes().values()) * self.spec.attackers + 2 * size_bytes(self.spec.victim.file)
        return space_problem(free, need, self.spec.margin_bytes(total), str(DATA))

    def preflight(self) -> None:
        if self.space():
            raise SpecError(self.space())

    def plan(self) -> list[tuple[str, int]]:
        return [(rt, r) for r in range(1, self.spec.repetitions + 1) for rt in self.spec.runtimes]

    def ident(self, item: tuple[str, int]) -> str:
        return f"{item[0]}.diskfill.r{item[1]}"

    def runtime_of(self, item: tuple[str, int]) -> str:
        return item[0]

    def execute(self, store, host_facts: dict) -> None:
        spec = self.spec
        items = self.plan()
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        sizes = self.sizes()
        capacity = {k: v for k, v in ensure_capacity(["disk"], say=lambda s: self.console.print(s)).items()
                    if k.startswith("disk") or k == "cpus"}
        capacity |= {"memory_bytes": meminfo()["MemTotal"], "file_bytes": sizes}
        per_phase = spec.settle_s + spec.victim.seconds + 2
        cost = [0.0 if unavailable(rt, runnable) else
                5 + per_phase * (1 + len(sizes)) + sum(sizes.values()) * spec.attackers / WRITE_GUESS_BPS
                for rt, _ in items]

        def one(item: tuple[str, int], advance: Advance) -> TrialResult:
            rt, rep = item
            rec = TrialRecord(trial_id=self.ident(item), runtime=rt, repetition=rep, cell=DiskFillCell(
                {"sizes": sizes, "attackers": spec.attackers, "limits": spec.limits.model_dump(),
                 "victim": spec.victim.model_dump()}), capacity=capacity,
                facts=facts_of_trial(host_facts, runnable.get(rt)))
            if unavailable(rt, runnable):
                rec.status, rec.reason = "n/a", unavailable(rt, runnable)
                return TrialResult(rec)
            if self.space():  # checked again before each trial: the disk may have filled since
                rec.reason = self.space()
                return TrialResult(rec)
            return FillTrial(spec, rec, sizes, self.tenants(), advance).run()

        self.run_each(store, items, cost,
                      f"[bold]{spec.name}[/bold]: {len(items)} trials ({', '.join(spec.runtimes)} × {spec.repetitions} "
                      f"rep; {spec.attackers} attackers writing "
                      + ", ".join(f"{n} {s * spec.attackers / 2**30:.1f} GiB" for n, s in sizes.items())
                      + f"; {spec.limits.cpus:g} CPU / {spec.limits.memory} each)",
                      lambda item: f"{item[0]} r{item[1]}", one)


class FillTrial:
    """One runtime, one repetition: baseline, then each attack."""

    def __init__(self, spec: DiskFillSpec, record: TrialRecord, sizes: dict[str, int], tenants: list[str],
                 advance: Advance):
        self.spec, self.rec, self.sizes, self.advance = spec, record, sizes, advance
        self.attackers, self.victim = tenants[:-1], tenants[-1]
        self.steps: list[StepWindow] = []
        self.guest: list[Sample] = []

    def run(self) -> TrialResult:
        spec = self.spec
        lim = Limits(cpu=spec.limits.cpus, memory=spec.limits.memory_bytes)
        samples: list = []
        t = Tenants(self.rec.runtime, {name: lim for name in [*self.attackers, self.victim]}, device=device_of(DATA),
                    userns=spec.userns)
        # measured before a failure, the baseline stands
        try:
            with recorded(self.rec, stands=lambda: any(st.phase == BASELINE for st in self.steps)), t:
                t.run(self.victim, victim_prepare(spec.victim.file), what="fio (laying out the victim's files)")
                t.start_sampling()
                try:
                    phases = [BASELINE, *self.sizes]
                    for i, phase in enumerate(phases):
                        self.advance(i / len(phases), phase)
                        reset_host("disk")
                        self._phase(t, i, phase)
                    self.rec.status = "ok"
                finally:  # what was measured stays, whatever ends the trial
                    samples = t.stop_sampling()
        finally:
            reset_host("disk")
        return TrialResult(self.rec, self.steps, [*samples, *self.guest], t.events)

    def _phase(self, t: Tenants, index: int, phase: str) -> None:
        spec = self.spec
        size = self.sizes.get(phase, 0)
        writers: dict[str, subprocess.Popen] = {}
        started = t.now()
        try:
            for a in self.attackers if size else []:  # ordinary buffered writes: the "innocuous" behaviour
                writers[a] = t.exec(a, ["dd", "if=/dev/zero", "of=/data/fill", "bs=1M", f"count={size >> 20}"])
            if writers:
                t.event("attackers", "attack-start", f"{phase}: {len(writers)} × {size / 2**30:.2f} GiB", started)
                time.sleep(spec.settle_s)
            t0 = t.now()
            out = t.run(self.victim, victim_argv(spec.victim.file, spec.victim.block, spec.victim.iodepth,
                                                 spec.victim.seconds, "/data/v"),
                        timeout=spec.victim.seconds + 120, what="fio (the victim's measurement)").stdout
            t1 = t.now()
            figures = victim_figures(json.loads(out[out.find("{"):]))
            if not figures:
                raise ValueError(f"{phase}: fio reported no read or write job")
            self.steps.append(StepWindow(index, phase, t0, t1, {self.victim: float(size * len(writers))}))
            self.guest += [Sample((t0 + t1) / 2, self.victim, "guest", k, v) for k, v in figures.items()]
            self._iops_logs(t, t0)
            self._await(t, writers, phase, started, (t0 + t1) / 2)
        finally:  # an interrupted or failed attack leaves no writer and no file behind
            stop(list(writers.values()))
            for a in writers:
                t.kill(a, "dd")
                (t.data[a] / "fill").unlink(missing_ok=True)

    def _iops_logs(self, t: Tenants, t0: float) -> None:
        """The victim's IOPS every 500 ms (fio's logs, job 1 reads, job 2 writes) as samples."""
        for job, d in (("1", "read"), ("2", "write")):
            log = t.data[self.victim] / f"v_iops.{job}.log"
            try:  # the container's directory: never through a link it left there (issue 52 L3)
                with open_existing(log) as f:
                    points = iops_log(f.read())
            except OSError:
                continue
            self.guest += [Sample(t0 + s, self.victim, "guest", f"{d}_iops_t", v) for s, v in points]
            log.unlink()

    def _await(self, t: Tenants, writers: dict[str, subprocess.Popen], phase: str, started: float,
               mid: float) -> None:
        """The attack runs to its end (each file written once), up to attack_timeout_s from its start; how
        long the slowest attacker took is kept with the window (its mid-time `mid`)."""
        deadline = time.monotonic() + max(0.0, self.spec.attack_timeout_s - (t.now() - started))
        for a, p in writers.items():
            try:
                _, err = p.communicate(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                t.event(a, "attack-stopped", f"{phase}: still writing after {self.spec.attack_timeout_s:.0f} s")
                continue
            last = (err or "").strip().splitlines()
            kind = "attack-done" if p.returncode == 0 else "attack-failed"
            t.event(a, kind, f"{phase}: {last[-1] if last else p.returncode}")
        if writers:
            self.guest.append(Sample(mid, "attackers", "guest", "attack_s", t.now() - started))
