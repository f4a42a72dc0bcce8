"""A parallel-suite study (`contend run` of a spec with kind: parallel): every runtime × benchmark × count,
each cell committed to the store as it ends, then the CoPTS tables, CSVs and scaling curves."""
from __future__ import annotations

from ...cgroups import detect
from ...spec import size_bytes
from ...store import Store
from ...study import Advance, Study, facts_of_trial, lazy, need_space, unavailable
from ...tenants import TrialResult
from ...tools import ToolFailed
from .benchmarks import BENCHMARKS, build_tools, last_level_cache_mib
from .cell import ParallelCell
from .metrics import DIRECTIONS
from .spec import ParallelSpec
from .trial import ParallelTrial, cell_id, cell_record

SETUP_S = 1.5  # a container up and down, per container, for the ETA


class ParallelStudy(Study, kind="parallel", model=ParallelSpec, cell=ParallelCell, title="parallel suite",
                    report=lazy(f"{__package__}.report", "refresh_scaling"), unit="cells",
                    directions=DIRECTIONS):
    spec: ParallelSpec

    @staticmethod
    def headlines() -> dict[str, int]:
        """The benchmarks' own figures: a throughput is better higher, a time lower (its ratios follow it)."""
        return {name: 1 if b.higher_is_better else -1 for name, b in BENCHMARKS.items()}

    def preflight(self) -> None:
        spec = self.spec
        if "fio" in spec.benchmarks:  # every concurrent container writes its own fio file
            n, size = max(spec.counts), spec.sizes.fio.size
            need_space(n * size_bytes(size) * 3 // 2, f"fio in {n} concurrent containers writes {n} × {size} there")

    def plan(self) -> list[tuple[str, str, int]]:
        """Per benchmark, every runtime isolated first (the normalisation's base), then the counts upwards."""
        return [(rt, b, n) for b in self.spec.benchmarks for n in self.spec.counts for rt in self.spec.runtimes]

    def ident(self, cell: tuple[str, str, int]) -> str:
        return cell_id(*cell)

    def runtime_of(self, cell: tuple[str, str, int]) -> str:
        return cell[0]

    def execute(self, store: Store, host_facts: dict) -> None:
        spec = self.spec
        cells = self.plan()
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        try:
            tools, no_tools = build_tools(), ""
        except ToolFailed as e:  # every trial fails with the reason; the study says so and goes on
            tools, no_tools = None, str(e)
        capacity = {"cpus": host_facts["host"]["cpus"], "llc_mib": last_level_cache_mib()}
        per_run = {b: self._guess_run_s(b) for b in spec.benchmarks}
        host = detect()

        def why_not(rt: str) -> str:
            return unavailable(rt, runnable) or no_tools

        def one(cell: tuple[str, str, int], advance: Advance) -> TrialResult:
            rt, b, n = cell
            rec = cell_record(spec, rt, b, n, capacity, facts_of_trial(host_facts, runnable.get(rt)))
            if why_not(rt):  # a runtime this host lacks is n/a; benchmarks that did not build, a failure
                rec.status, rec.reason = "n/a" if unavailable(rt, runnable) else "failed", why_not(rt)
                return TrialResult(rec)
            planned = n * spec.containers_per_process * spec.runs_per_container
            assert tools is not None  # (why_not says no_tools otherwise)
            return ParallelTrial(spec, rt, b, n, tools, rec, host,
                        lambda k: advance(k / planned, f"run {k}/{planned}")).run()

        # a cell's wall time: its N runs share the host's CPUs, each container at most its own limit
        cost = [0.0 if why_not(rt) else
                spec.containers_per_process * (SETUP_S + spec.runs_per_container * per_run[b]
                                               * max(1.0, n * min(1.0, spec.limits.cpus) / capacity["cpus"]))
                for rt, b, n in cells]
        self.run_each(store, cells, cost,
                      f"[bold]{spec.name}[/bold]: {len(cells)} cells ({', '.join(spec.runtimes)} × "
                      f"{', '.join(spec.benchmarks)} × {', '.join(map(str, spec.counts))} containers; "
                      f"{spec.containers_per_process} container(s) per process, {spec.runs_per_container} run(s) "
                      f"each; {spec.limits.cpus:g} CPUs / {spec.limits.memory} per container)",
                      lambda cell: f"{cell[0]} {cell[1]} ×{cell[2]}", one)

    def _guess_run_s(self, benchmark: str) -> float:
        """A rough length of one isolated run, for the ETA only."""
        s = self.spec.sizes.of(benchmark)
        guess = {"linpack": lambda: s["min_seconds"] + 0.3, "noploop": lambda: s["count"] / 3e9,
                 "stream": lambda: 0.5 + s["ntimes"] * 0.05, "sysbench-cpu": lambda: s["events"] / 2000,
                 "sysbench-memory": lambda: size_bytes(s["total"]) / 9e9,
                 "pidigits": lambda: (s["digits"] / 1e5) ** 1.6 * 1.8,
                 "fio": lambda: s["seconds"] + 1}
        return guess[benchmark]()

