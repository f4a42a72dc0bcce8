"""A parallel-suite study (`contend run` of a spec with kind: parallel): every runtime × benchmark × count,
each cell committed to the store as it ends, then the CoPTS tables, CSVs and scaling curves."""
from __future__ import annotations

from ..cgroups import detect
from ..spec import ParallelStudy, size_bytes
from ..store import Store
from ..study import Study, facts_of_trial, progress_bar
from .benchmarks import BenchmarkError, build_tools, last_level_cache_mib
from .trial import Cell, CellResult, cell_record

SETUP_S = 1.5  # a container up and down, per container, for the ETA


class ParallelSuite(Study):
    spec: ParallelStudy
    title = "parallel suite"
    unit = "cells"

    def plan(self) -> list[tuple[str, str, int]]:
        """Per benchmark, every runtime isolated first (the normalisation's base), then the counts upwards."""
        return [(rt, b, n) for b in self.spec.benchmarks for n in self.spec.counts for rt in self.spec.runtimes]

    def execute(self, store: Store, host_facts: dict) -> None:
        spec, con = self.spec, self.console
        cells = self.plan()
        self.total = len(cells)
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        try:
            tools = build_tools()
        except BenchmarkError as e:
            tools, no_tools = None, str(e)
        capacity = {"cpus": host_facts["host"]["cpus"], "llc_mib": last_level_cache_mib()}
        per_run = {b: self._guess_run_s(b, capacity) for b in spec.benchmarks}
        # a cell's wall time: its N runs share the host's CPUs, each container at most its own limit
        cost = [0.0 if self._why_not(rt, runnable) else
                spec.containers_per_process * (SETUP_S + spec.runs_per_container * per_run[b]
                                               * max(1.0, n * min(1.0, spec.limits.cpus) / capacity["cpus"]))
                for rt, b, n in cells]
        done = [sum(cost[:i]) for i in range(len(cells) + 1)]
        con.print(f"[bold]{spec.name}[/bold]: {len(cells)} cells ({', '.join(spec.runtimes)} × "
                  f"{', '.join(spec.benchmarks)} × {', '.join(map(str, spec.counts))} containers; "
                  f"{spec.containers_per_process} container(s) per process, {spec.runs_per_container} run(s) each; "
                  f"{spec.limits.cpus:g} CPUs / {spec.limits.memory} per container), about {done[-1] / 60:.1f} min; "
                  f"results in {self.dir}", highlight=False)
        host = detect()
        with progress_bar(con) as bar:
            task = bar.add_task("starting", total=done[-1], trial=f"0/{len(cells)}")
            for i, (rt, b, n) in enumerate(cells):
                desc = f"{rt} {b} ×{n}"
                bar.update(task, completed=done[i], trial=f"{i + 1}/{len(cells)}", description=desc)
                rec = cell_record(spec, rt, b, n, capacity, facts_of_trial(host_facts, runnable.get(rt)))
                why = self._why_not(rt, runnable) or (no_tools if tools is None else "")
                if why:
                    rec.status, rec.reason = "n/a", why
                    result = CellResult(rec)
                else:
                    planned = n * spec.containers_per_process * spec.runs_per_container
                    progress = {"runs": 0}

                    def on_run(base=done[i], span=cost[i], planned=planned, progress=progress, desc=desc):
                        progress["runs"] += 1  # under the GIL; only the bar reads it
                        bar.update(task, completed=base + span * progress["runs"] / planned,
                                   description=f"{desc} run {progress['runs']}/{planned}")

                    result = Cell(spec, rt, b, n, tools, rec, host, on_run).run()
                store.add_trial(result.record, [], result.samples(), result.events)
                if rec.status == "failed":
                    self.failed += 1
                    con.print(f"[red]failed[/red] {rec.trial_id}: {rec.reason}", highlight=False)
                elif rec.reason and rec.status == "ok":
                    con.print(f"[yellow]partly failed[/yellow] {rec.trial_id}: {rec.reason}", highlight=False)
                bar.update(task, completed=done[i + 1])

    def _why_not(self, runtime: str, runnable: dict) -> str:
        avail = runnable.get(runtime)
        if avail is not None and not avail["runs"]:
            return f"{runtime} not available: {avail['reason']}"
        return ""

    def _guess_run_s(self, benchmark: str, capacity: dict) -> float:
        """A rough length of one isolated run, for the ETA only."""
        s = self.spec.sizes.of(benchmark)
        guess = {"linpack": lambda: s["min_seconds"] + 0.3, "noploop": lambda: s["count"] / 3e9,
                 "stream": lambda: 0.5 + s["ntimes"] * 0.05, "sysbench-cpu": lambda: s["events"] / 2000,
                 "sysbench-memory": lambda: size_bytes(s["total"]) / 9e9, "pidigits": lambda: (s["digits"] / 1e5) ** 1.6 * 1.8,
                 "fio": lambda: s["seconds"] + 1}
        return guess[benchmark]()

