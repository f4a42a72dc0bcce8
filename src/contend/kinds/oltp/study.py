"""The database victim (Xavier et al., PDP 2015): a database server in one container loaded by its client at
a fixed rate of transactions, and in the other, in turn, a CPU bomb, a memory bomb and a disk bomb. Each
tenant gets the same share of the host's CPUs, of the memory pool and of the disk's calibrated bandwidth and
IOPS (the paper: half).

One trial per runtime × database × repetition: the server set up afresh (no residue between repetitions),
its base window (after `warmup_s` of the client unmeasured), then one window per disruptor (the disruptor
started `warmup_s` before, killed after, a pause for the server to recover). The cell's first repetition
first runs the client unthrottled: `rate` × that TPS is the fixed rate of every window of the cell.
Repetitions go on until the 95 % interval of every measured TPS is within ±ci_pct % of its mean, or the cap.
"""
from __future__ import annotations

import time
from collections import defaultdict

from ...cgroups import IoLimit, Limits
from ...doctor import ensure_capacity
from ...doctor.calibrate import meminfo
from ...load.database import DATABASES, ClientResult, Database, DatabaseError
from ...metrics import StepWindow
from ...probes.base import Sample
from ...spec import size_bytes
from ...store import TrialRecord
from ...study import Advance, Study, facts_of_trial, lazy, need_space, unavailable
from ...tenants import Tenants, TrialResult, recorded, reset_host
from ...tools import failure
from .cell import OltpCell
from .metrics import DIRECTIONS, converged
from .spec import OltpSpec

VICTIM, DISRUPTOR = "victim", "disruptor"
SETUP_S = 12.0  # containers, server init and data load: for the ETA
GIVE_UP = 2  # a cell whose trials failed this often runs no more repetitions


def bomb(name: str, seconds: float, memory_limit: int) -> list[str]:
    """The disruptor's command, ending by itself after `seconds`. cpu-bomb: every CPU the container sees
    (PDP: "all CPU cores simultaneously"); memory-bomb: past its memory limit, OOM-killed and restarted by
    stress-ng for as long as it runs (PDP's memorybomb loops allocations "to reach the limits"); disk-bomb:
    fio sequential and random writes (the IOzone role), direct so a v1 throttle sees them."""
    s = str(max(1, round(seconds)))
    if name == "cpu-bomb":
        return ["stress-ng", "--cpu", "0", "--cpu-method", "int64", "-t", s]
    if name == "memory-bomb":
        return ["stress-ng", "--vm", "1", "--vm-bytes", str(int(memory_limit * 1.25)), "--vm-keep", "-t", s]
    if name == "disk-bomb":
        common = ["--direct=1", "--ioengine=libaio", "--iodepth=16", "--size=1G", "--time_based", f"--runtime={s}"]
        return ["fio", "--name=seq", "--rw=write", "--bs=1M", "--filename=/data/bomb-seq", *common,
                "--name=rand", "--rw=randwrite", "--bs=4k", "--filename=/data/bomb-rand", *common]
    raise ValueError(f"unknown disruptor {name!r}")


# what a database's data takes on disk, tables and indexes: pgbench's ~15 MiB per scale unit (its docs), a
# sysbench row ~250 B with its index; the check wants half as much again
PG_BYTES_PER_SCALE = 16 << 20
SYSBENCH_BYTES_PER_ROW = 250


class OltpStudy(Study, kind="oltp", model=OltpSpec, cell=OltpCell, title="database victim",
                 report=lazy(f"{__package__}.report", "refresh_oltp"), directions=DIRECTIONS):
    spec: OltpSpec
    fans_out = False  # a cell's repetitions go on until its interval settles, at the rate its first one measured

    def preflight(self) -> None:
        sc = self.spec.scale
        need = max(PG_BYTES_PER_SCALE * sc.pgbench_scale if "postgresql" in self.spec.databases else 0,
                   SYSBENCH_BYTES_PER_ROW * sc.sysbench_tables * sc.sysbench_table_size
                   if "mariadb" in self.spec.databases else 0)
        need_space(need * 3 // 2, f"the victim's database takes about {need / 2**20:.0f} MiB there")

    def execute(self, store, host_facts: dict) -> None:
        spec = self.spec
        runnable = {r["name"]: r for r in host_facts["runtimes"]}
        cal = ensure_capacity(["disk"], say=lambda s: self.console.print(s))
        pool = size_bytes(spec.memory_pool) if spec.memory_pool else meminfo()["MemTotal"]
        capacity = {"cpus": cal["cpus"], "memory_pool_bytes": pool,
                    **{k: cal[k] for k in ("disk_device", "disk_write_bw_bytes_s", "disk_read_iops",
                                           "disk_write_iops")}}
        f = spec.share
        limits = Limits(cpu=f * capacity["cpus"], memory=int(f * pool), io=(IoLimit(
            capacity["disk_device"], rbps=int(f * capacity["disk_write_bw_bytes_s"]),
            wbps=int(f * capacity["disk_write_bw_bytes_s"]), riops=max(1, int(f * capacity["disk_read_iops"])),
            wiops=max(1, int(f * capacity["disk_write_iops"]))),))
        self.rates: dict[tuple[str, str], float] = {}
        self.seen: dict[tuple[str, str], list[dict]] = defaultdict(list)  # per cell: each repetition's TPS
        failed: dict[tuple[str, str], int] = defaultdict(int)
        reps = spec.repetitions
        items = [(rt, db, r) for r in range(1, reps.max + 1) for db in spec.databases for rt in spec.runtimes]
        ld = spec.load
        window = ld.seconds + 1
        per_trial = SETUP_S + ld.warmup_s + window + len(spec.disruptors) * (ld.warmup_s + window + ld.pause_s)
        cost = [0.0 if unavailable(rt, runnable) else per_trial + (ld.calibrate_s if r == 1 else 0)
                for rt, _, r in items]

        def one(item: tuple[str, str, int], advance: Advance) -> TrialResult | None:
            rt, db, rep = item
            if (rep > reps.min and self.settled(rt, db)) or failed[(rt, db)] >= GIVE_UP:
                return None
            rec = TrialRecord(trial_id=f"{rt}.{db}.r{rep}", runtime=rt, repetition=rep, cell=OltpCell(
                db, {"share": f, "disruptors": spec.disruptors, "load": ld.model_dump(),
                     "scale": spec.scale.model_dump()}), capacity=capacity,
                facts=facts_of_trial(host_facts, runnable.get(rt)))
            if unavailable(rt, runnable):
                if rep > 1:
                    return None  # said once per cell
                rec.status, rec.reason = "n/a", unavailable(rt, runnable)
                return TrialResult(rec)
            trial = OltpTrial(spec, rec, DATABASES[db](spec.scale), limits, self.rates.get((rt, db)), advance)
            result = trial.run()
            if trial.rate:
                self.rates[(rt, db)] = trial.rate
            if result.record.status == "ok":
                self.seen[(rt, db)].append(trial.tps)
            else:
                failed[(rt, db)] += 1
            return result

        self.run_each(store, items, cost,
                      f"[bold]{spec.name}[/bold]: at most {len(items)} trials ({', '.join(spec.runtimes)} × "
                      f"{', '.join(spec.databases)} × {reps.min}-{reps.max} rep until the 95 % interval is within "
                      f"±{reps.ci_pct:g} %; disruptors {', '.join(spec.disruptors)}; {f:.0%} of CPU, memory and disk "
                      "each)", lambda item: f"{item[0]} {item[1]} r{item[2]}", one)

    def settled(self, rt: str, db: str) -> bool:
        """Every TPS this cell measured (base and disturbed, each transaction type) within the interval rule."""
        reps = self.seen[(rt, db)]
        keys = set().union(*reps) if reps else set()
        return bool(keys) and all(converged([r[k] for r in reps if k in r], self.spec.repetitions.ci_pct)
                                  for k in keys)


class OltpTrial:
    def __init__(self, spec: OltpSpec, record: TrialRecord, db: Database, limits: Limits, rate: float | None,
                 advance: Advance):
        self.spec, self.rec, self.db, self.limits, self.rate, self.advance = spec, record, db, limits, rate, advance
        self.steps: list[StepWindow] = []
        self.guest: list[Sample] = []
        self.tps: dict[tuple[str, str], float] = {}  # (window, type) -> TPS: the repetition rule's input

    def run(self) -> TrialResult:
        spec, ld = self.spec, self.spec.load
        samples: list = []
        reset_host("disk")
        t = Tenants(self.rec.runtime, {VICTIM: self.limits, DISRUPTOR: self.limits}, caps={VICTIM: self.db.caps},
                    userns=spec.userns)
        # measured before a failure, the base window stands
        with recorded(self.rec, stands=lambda: any(st.phase == "base" for st in self.steps)), t:
            try:
                self.advance(0.0, f"{self.db.name} up")
                self.db.start(t, VICTIM)
                if self.rate is None:
                    self.advance(0.1, "calibrating")
                    top = self._window(t, "calibration", 0, 0.0, ld.calibrate_s)
                    self.rate = spec.load.rate * sum(v["tps"] for k, v in top.types.items()
                                                     if k not in ("read", "write", "other"))
                    t.event(VICTIM, "rate", f"{self.db.name} unthrottled {self.rate / spec.load.rate:.1f} tps; "
                                            f"fixed rate {self.rate:.1f} tps")
                assert isinstance(self.rec.cell, OltpCell)
                self.rec.cell.params["rate_tps"] = self.rate
                t.start_sampling()
                self.advance(0.2, "base")
                if ld.warmup_s >= 1:  # warm at the rate first: each disturbed window follows a measured one
                    t.run(VICTIM, self.db.client(ld.clients, self.rate, ld.warmup_s), timeout=ld.warmup_s + 120,
                          what=f"{self.db.name} client (warm-up)")
                self._window(t, "base", 1, self.rate, ld.seconds)
                for i, name in enumerate(spec.disruptors, 2):
                    self.advance(0.2 + 0.8 * (i - 2) / len(spec.disruptors), name)
                    self._disturbed(t, i, name)
                self.db.stop(t, VICTIM)
                self.rec.status = "ok"
            finally:  # what was measured stays, whatever ends the trial
                samples = t.stop_sampling()
        return TrialResult(self.rec, self.steps, [*samples, *self.guest], t.events)

    def _disturbed(self, t: Tenants, index: int, name: str) -> None:
        ld = self.spec.load
        assert self.rate is not None  # measured (or carried over) before the base window
        run_s = ld.warmup_s + ld.seconds + 5
        argv = bomb(name, run_s, self.limits.memory or 0)
        proc = t.exec(DISRUPTOR, argv)
        try:
            time.sleep(ld.warmup_s)
            if proc.poll() is not None and proc.returncode != 0:  # no disruptor: no disturbed window to measure
                t.event(DISRUPTOR, "disruptor-failed", failure(name, argv[0], proc.returncode, proc.communicate()[1]))
            else:
                self._window(t, name, index, self.rate, ld.seconds)
        except DatabaseError as e:  # this window has no figures; the next disruptor still runs
            t.event(VICTIM, "window-failed", f"{name}: {e}")
        finally:
            # the bomb's processes only: killing all but pid 1 would end an lxc container (lxc-init follows
            # its command)
            t.kill(DISRUPTOR, "stress-ng.*|fio")
            proc.communicate(timeout=30)
            for f in t.data[DISRUPTOR].glob("bomb-*"):  # the disk bomb's files (host side: also when it is gone)
                f.unlink(missing_ok=True)
        time.sleep(ld.pause_s)

    def _window(self, t: Tenants, phase: str, index: int, rate: float, seconds: float) -> ClientResult:
        """One measurement: the client for `seconds` at `rate` (0: unthrottled); its figures as samples."""
        t0 = t.now()
        p = t.run(VICTIM, self.db.client(self.spec.load.clients, rate, seconds), timeout=seconds + 120,
                  what=f"{self.db.name} client ({phase})", error=DatabaseError)
        t1 = t.now()
        res = self.db.parse(p.stdout + p.stderr)
        self.steps.append(StepWindow(index, phase, t0, t1, {VICTIM: rate}))
        mid = (t0 + t1) / 2
        for kind, figures in res.types.items():
            for k, v in figures.items():
                self.guest.append(Sample(mid, VICTIM, "guest", f"{self.db.name}:{kind}/{k}", v))
            if phase != "calibration":
                self.tps[(phase, kind)] = figures["tps"]
        # per second, for the timeline (PDP Fig. 5); the client's clock starts about when we started it
        self.guest += [Sample(t0 + s, VICTIM, "guest", f"{self.db.name}/tps_t", v) for s, v in res.per_second]
        return res
