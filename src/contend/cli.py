"""The contend command line (typer). Exit codes: 0 ok, 1 experiment failed, 2 bad input."""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  help="contend: how well are your containers isolated from each other?\n\n"
                       "Runs real containers under real OCI runtimes, loads them, watches them from the host "
                       "(cgroup counters, eBPF) and computes the isolation metrics of the literature.")
console = Console()


def fail(msg: str, code: int = 2) -> None:
    """One line, no traceback."""
    print(f"contend: {msg}", file=sys.stderr)  # never wrapped: one line, whatever the terminal width
    raise typer.Exit(code)


def need_root(what: str) -> None:
    if os.geteuid() != 0:
        fail(f"{what} needs root (containers, cgroups and eBPF are host facilities)")


def _term_as_interrupt() -> None:
    from .interrupts import handle_interrupts
    handle_interrupts()


@app.callback(invoke_without_command=True)
def main(version: bool = typer.Option(False, "--version", help="Print the version and exit.")):
    if version:
        console.print(f"contend {__version__}")
        raise typer.Exit()


# ---------------------------------------------------------------- doctor
@app.command()
def doctor(as_json: bool = typer.Option(False, "--json", help="Print the facts as JSON."),
           calibrate: bool = typer.Option(False, "--calibrate",
                                          help="Measure CPU, disk and memory capacity and save it "
                                               "(scenario limits and ramps are fractions of it)."),
           disk_dir: Path = typer.Option(None, help="Directory on the experiment device for disk calibration "
                                                    "(default /var/lib/contend/data).")):
    """What this host offers: runtimes (and whether they really run a container), cgroups, eBPF probes,
    load generators, disks, measured capacity."""
    from .doctor import calibrate as do_calibrate
    from .doctor import facts
    from .doctor.calibrate import CAPACITY_FILE
    from .paths import DATA
    if calibrate:
        need_root("doctor --calibrate")
        from .tools import ToolFailed
        try:
            with console.status("calibrating: CPU (3 s), disk (3 × 5 s fio), memory"):
                do_calibrate(disk_dir or DATA)
        except ToolFailed as e:
            fail(str(e), 1)
        if not as_json:
            console.print(f"capacity saved to {CAPACITY_FILE}")
    with console.status("looking at this host (starting a container per runtime)"):
        f = facts(try_runtimes=os.geteuid() == 0)
    if as_json:
        print(json.dumps(f, indent=2))
        return
    _print_facts(f)


def _yes(b) -> str:
    return "[green]yes[/green]" if b else ("[red]no[/red]" if b is not None else "[yellow]not tried[/yellow]")


def _print_facts(f: dict) -> None:
    h = f["host"]
    console.print(f"[bold]host[/bold] {h['hostname']}: kernel {h['kernel']}, {h['cpus']} CPUs, "
                  f"{h['memory_bytes'] / 2**30:.1f} GiB, root: {h['root']}")
    t = Table(title="runtimes", title_justify="left")
    for c in ("runtime", "found", "version", "runs a container", "why not"):
        t.add_column(c)
    for r in f["runtimes"]:
        t.add_row(r["name"], _yes(r["found"]), r["version"], _yes(r["runs"]), r["reason"])
    console.print(t)
    cg = f["cgroups"]
    console.print(f"[bold]cgroups[/bold] mode {cg['mode']}, controllers: {' '.join(cg['controllers'])}"
                  + (f", unified tree at {cg['unified']}" if cg["unified"] else ""))
    t = Table(title="eBPF (bpftrace " + (f["ebpf"]["bpftrace"] or "missing") + ")", title_justify="left")
    for c in ("probe", "attaches", "why not"):
        t.add_column(c)
    for name, r in f["ebpf"]["probe_types"].items():
        t.add_row(f"{name} (probe type)", _yes(r["attaches"]), r["reason"])
    for p in f["ebpf"]["probes"]:
        t.add_row(f"contend probe: {p['name']}" + (f" ({p['tracepoint']})" if p.get("tracepoint") else ""),
                  _yes(p["attaches"]), p["reason"])
    console.print(t)
    console.print("[bold]load generators[/bold] " + ", ".join(
        f"{k} {v}" if v else f"{k} [red]missing[/red]" for k, v in f["load_generators"].items()))
    t = Table(title="disks", title_justify="left")
    for c in ("disk", "MAJ:MIN", "rotational", "scheduler", "size"):
        t.add_column(c)
    for d in f["disks"]:
        t.add_row(d["name"], d["dev"], str(d["rotational"]), d["scheduler"], f"{d['size_bytes'] / 2**30:.0f} GiB")
    console.print(t)
    cap = f["capacity"]
    if cap:
        parts = [f"{cap.get('cpus')} CPUs × {cap.get('cpu_bogo_ops_s_per_cpu', 0):.0f} bogo ops/s "
                 f"({cap.get('cpu_agent_ops_s_per_cpu', 0):.0f} load-agent ops/s)"]
        if "disk_read_iops" in cap:
            disk = [f"{cap['disk_read_iops']:.0f} 4K read IOPS", f"{cap.get('disk_write_iops', 0):.0f} 4K write IOPS",
                    *(f"{v:.0f} {k.removeprefix('disk_write_iops_')} write IOPS" for k, v in cap.items()
                      if k.startswith("disk_write_iops_")),
                    f"{cap['disk_write_bw_bytes_s'] / 1e6:.0f} MB/s write"]
            parts.append(f"disk {cap['disk_device']}: " + ", ".join(disk))
        if "memory_bytes" in cap:
            parts.append(f"memory {cap['memory_bytes'] / 2**30:.1f} GiB")
        console.print(f"[bold]capacity[/bold] (calibrated {cap.get('calibrated_at', '?')}): " + "; ".join(parts))
    else:
        console.print("[bold]capacity[/bold] not calibrated: run [cyan]contend doctor --calibrate[/cyan]")


# ---------------------------------------------------------------- run
@app.command()
def run(spec_path: Optional[Path] = typer.Argument(None, metavar="SPEC", show_default=False,
                                                  help="Experiment spec (YAML), e.g. presets/quick.yaml."),
        out: Optional[Path] = typer.Option(None, "--out", "-o",
                                           help="Results directory (default results/<name>-<time>)."),
        repetitions: Optional[int] = typer.Option(None, "--repetitions", "-n", min=1,
                                                  help="Override the spec's repetitions (parallel: runs per container; "
                                                       "oltp: exactly N, the interval rule off)."),
        quick: bool = typer.Option(False, "--quick",
                                   help="A scaled-down pass of the whole matrix: the spec's `quick` section "
                                        "(repetitions, trial lengths, capacity) replaces the study's."),
        resume: Optional[Path] = typer.Option(None, "--resume", metavar="DIR",
                                              help="Continue the interrupted study in DIR: its finished trials are "
                                                   "kept, the rest run. SPEC may be left out (DIR's spec.yaml); "
                                                   "given, it must be the same study."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Check SPEC and say what would run; run nothing."),
        as_json: bool = typer.Option(False, "--json", help="Print the metrics as JSON at the end."),
        start_engines: bool = typer.Option(False, "--start-engines",
                                           help="If SPEC names docker and its engine is not running, start "
                                                "dockerd for this study (no bridge, no iptables) and stop it "
                                                "when the study ends.")):
    """Run an experiment: every runtime × scenario × resource × repetition of SPEC, then metrics, table
    and report. Other kinds of spec: guard (every workload under every guard policy side by side), parallel
    (CoPTS: benchmarks in N concurrent containers), diskfill (WISA 2025: neighbours write large files, a victim
    measures the disk), oltp (PDP 2015: a database next to a CPU, memory or disk bomb), detect (contend watch
    against injected antagonists and controls).
    Ctrl-C stops after cleaning up; finished trials are kept and --resume continues. A failed trial is tried
    again (the spec's `retries`, default 1). One study at a time per host; what a killed one left is removed
    first."""
    if resume is not None:
        spec, done = _resumed(resume, spec_path, quick, repetitions, out)
        directory = resume
    elif spec_path is None:
        fail("SPEC is required (or --resume DIR)")
    else:
        spec, done = _load_spec(spec_path, quick, repetitions), frozenset()
        directory = out or Path("results") / f"{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if dry_run:
        _say_plan(spec, directory, done)
        raise typer.Exit(0)
    need_root("contend run")
    from .runtimes.builds import build_named
    build_named(getattr(spec, "runtimes", ()), say=lambda s: console.print(s, highlight=False))
    study = _study(spec, directory, resuming=resume is not None)
    study.done = done
    _hold_host(directory)
    _term_as_interrupt()
    with _engines(spec, start_engines):
        code = study.run()
    if as_json:
        print(json.dumps(study.rows, indent=1, default=str))
    raise typer.Exit(code)


@contextmanager
def _engines(spec, start: bool):
    """docker's engine for the study when asked (--start-engines) and SPEC names docker: the host's if it
    runs, else one started here and stopped when the block ends (runtimes.engine.docker_session)."""
    if not (start and any(r.split("-")[0] == "docker" for r in getattr(spec, "runtimes", ()))):
        yield
        return
    from .runtimes.engine import docker_session
    with docker_session() as engine:
        if engine == "started":
            console.print("started dockerd for this study; it stops when the study ends", highlight=False)
        elif engine is None:
            console.print("[yellow]dockerd could not be started here: docker's trials will be n/a[/yellow]")
        yield


_LOCK = []  # the host lock, held until contend exits


def _hold_host(directory: Path) -> None:
    """One study per host (exit 2 if another runs), and what a killed one left removed first."""
    from .hostlock import HostBusy, host_lock
    from .study import remove_stale
    try:
        _LOCK.append(host_lock(directory))
    except HostBusy as e:
        fail(str(e))
    remove_stale(say=lambda s: console.print(s, highlight=False))


def _resumed(directory: Path, spec_path: Optional[Path], quick: bool, repetitions: Optional[int],
             out: Optional[Path]):
    """The study of a results directory to continue, and the trials it finished (exit 2 when it cannot be)."""
    from .kinds import load
    from .spec import SpecError, first_change
    from .store import DB, Store
    if out is not None and out != directory:
        fail(f"--out {out}: a resumed study stays in its directory ({directory})")
    if not (directory / "spec.yaml").is_file() or not (directory / DB).is_file():
        fail(f"{directory}: not a results directory of contend run (no spec.yaml or {DB})")
    try:
        kept = load(directory / "spec.yaml")
    except SpecError as e:
        fail(str(e))
    if spec_path is None:
        if quick or repetitions is not None:
            fail("--quick and -n apply to a SPEC; to resume, give the same SPEC and options, or neither")
        spec = kept
    else:
        spec = _load_spec(spec_path, quick, repetitions)
        change = first_change(kept.resolved(), spec.resolved())
        if change:
            fail(f"{spec_path}: not the study in {directory}: {change} (a resumed study must be the same; "
                 "start a new one with another --out)")
    from .kinds import study_for
    _fanned_out(study_for(spec, directory, console), directory, "cannot be resumed")
    try:
        with Store(directory, read_only=True) as store:
            done = frozenset(t["trial_id"] for t in store.trials())
    except Exception as e:  # duckdb: locked by a running study, not a database
        fail(f"{directory}: cannot open the store: {str(e).splitlines()[0]}")
    return spec, done


def _say_plan(spec, directory: Path, done: frozenset) -> None:
    """--dry-run: the spec checked as a run checks it (the host's preflight too), the plan said."""
    from .kinds import study_for
    from .spec import SpecError
    study = study_for(spec, directory, console)
    try:
        study.preflight()
    except SpecError as e:
        fail(str(e))
    if study.fans_out:
        planned = {t for t, _ in study.trials()}
        todo = f"{len(planned - done)} of {len(planned)} trials to run"
    else:
        todo = "its trials adapt to what they measure"
    console.print(f"{spec.name} (kind {spec.kind}): valid; {todo}; results would go to {directory} "
                  f"(dry run: nothing started)", highlight=False, soft_wrap=True)


def _load_spec(path: Path, quick: bool, repetitions: Optional[int]):
    """The spec as the study will run it (exit 2 with one line when it is not valid)."""
    from .kinds import load
    from .spec import SpecError
    try:
        spec = load(path)
    except SpecError as e:
        fail(str(e))
    from pydantic import ValidationError

    from .spec import format_error
    for flag, change in (("--quick", quick and (lambda s: s.quickened())),
                         (f"-n {repetitions}", repetitions is not None and (lambda s: s.repeated(repetitions)))):
        if not change:
            continue
        try:
            spec = change(spec)
        except ValidationError as e:  # the quick section or N does not fit the study's bounds
            fail(format_error(f"{path} ({flag})", e))
        except ValueError as e:
            fail(f"{path} ({flag}): {' '.join(str(e).split())}")
    return spec


def _study(spec, directory: Path, resuming: bool = False):
    """The study of a spec's kind, writing to an empty results directory, checked against this host."""
    from .kinds import study_for
    from .spec import SpecError
    if not resuming and directory.exists() and any(directory.iterdir()):
        fail(f"{directory}: results directory exists and is not empty (choose another --out)")
    made = directory.absolute()  # checked, not made: nothing is written before the host lock is held
    while not made.exists():
        made = made.parent
    if not os.access(made, os.W_OK):  # a read-only checkout as the working directory, say (EROFS binds root too)
        fail(f"{directory}: cannot make the results directory: {made} is not writable (choose another --out)")
    study = study_for(spec, directory, console)
    try:
        study.preflight()  # checks that need the host (e.g. free disk space): before anything is started
    except SpecError as e:
        fail(str(e))
    return study


# ---------------------------------------------------------------- trial
trial_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                        help="One trial of a study at a time: what a cluster's pods run (contend cluster).")
app.add_typer(trial_app, name="trial")

QUICK_HELP = "The spec's quick pass (as contend run --quick)."
REPS_HELP = "Override the spec's repetitions (as contend run -n)."


@trial_app.command("list")
def trial_list(spec_path: Path = typer.Argument(..., metavar="SPEC", help="Experiment spec (YAML)."),
               quick: bool = typer.Option(False, "--quick", help=QUICK_HELP),
               repetitions: Optional[int] = typer.Option(None, "--repetitions", "-n", min=1, help=REPS_HELP)):
    """Every trial of SPEC's plan: its id and runtime, one per line (tab-separated), in the order contend run
    takes them."""
    from .kinds import study_for
    spec = _load_spec(spec_path, quick, repetitions)
    for tid, rt in study_for(spec, Path("."), console).trials():
        print(f"{tid}\t{rt}")


@trial_app.command("run")
def trial_run(spec_path: Path = typer.Option(..., "--spec", metavar="SPEC", help="Experiment spec (YAML)."),
              trial_id: str = typer.Option(..., "--trial-id", metavar="ID", help="Which trial (contend trial list)."),
              out: Path = typer.Option(..., "--out", "-o", help="Where its results go (an empty directory)."),
              quick: bool = typer.Option(False, "--quick", help=QUICK_HELP),
              repetitions: Optional[int] = typer.Option(None, "--repetitions", "-n", min=1, help=REPS_HELP)):
    """Run one trial of SPEC on this host, as contend run would (the same code), and write it as a trial
    artifact: a results directory of that trial plus trial.json (which trial, which spec, which node, how it
    ended). `contend cluster collect` merges such artifacts into the study's results. Exit codes as contend
    run: 0 ok, 1 the trial failed, 130 interrupted."""
    from .cluster.collect import write_trial_json
    spec = _load_spec(spec_path, quick, repetitions)
    need_root("contend trial run")
    study = _fanned_out(_study(spec, out), spec_path)
    runtime = dict(study.trials()).get(trial_id)
    if runtime is None:
        fail(f"{spec_path}: no trial {trial_id!r} in this study (contend trial list {spec_path} lists them)")
    study.only = trial_id
    _hold_host(out)
    _term_as_interrupt()
    code = study.run()
    write_trial_json(out, spec, trial_id, runtime, code)
    raise typer.Exit(code)


def _fanned_out(study, where: Path, doing: str = "does not run trial by trial"):
    """The study, if its trials can run one by one, on any host or after an interruption (exit 2 otherwise)."""
    if not study.fans_out:
        fail(f"{where}: kind {study.spec.kind} {doing}: its trials depend on each other (the repetitions adapt)")
    return study


# ---------------------------------------------------------------- report
@app.command()
def report(directory: Path = typer.Argument(..., metavar="DIR", help="A results directory of contend run.")):
    """Rebuild metrics.csv, figures/ and report.html from the store alone (no experiment re-run)."""
    from .kinds import refresh
    from .store import DB, Store
    if not (directory / DB).is_file():
        fail(f"{directory}: no {DB} (not a contend results directory)")
    try:
        store = Store(directory)
    except Exception as e:  # duckdb: not a database, locked by a running study
        fail(f"{directory}: cannot open the store: {str(e).splitlines()[0]}")
    with store:
        if not store.trials():
            fail(f"{directory}: no trial finished in this study: nothing to report", 1)
        written = refresh(directory, store, title=str(directory))
    console.print(written.table)
    console.print(f"report: {written.path}")


@app.command()
def compare(a: Path = typer.Argument(..., metavar="A", help="The baseline results directory."),
            b: Path = typer.Argument(..., metavar="B", help="The results directory to judge against A."),
            as_json: bool = typer.Option(False, "--json", help="Print every cell as JSON instead of a table."),
            show_all: bool = typer.Option(False, "--all", help="List every cell, not only the changed ones."),
            min_change: float = typer.Option(0.05, "--min-change", min=0.0, metavar="X",
                                             help="A change smaller than X (in the metric's unit) is never "
                                                  "significant.")):
    """The same metrics of two results directories side by side: B − A, whether the 95 % intervals
    overlap, and a verdict per cell. Exit 1 when a metric got significantly worse (intervals apart, B on
    the worse side), so it can gate a pipeline; 0 otherwise. Cells with one repetition have no interval
    and are reported as untested. Needs no root: reads only metrics.csv."""
    from .kinds import headlines
    from .report.compare import as_json as to_json
    from .report.compare import compare_dirs, regressions, rich_compare
    try:
        comps = compare_dirs(a, b, min_change, headlines())
    except (ValueError, OSError) as e:
        fail(str(e).splitlines()[0])
    if as_json:
        print(json.dumps(to_json(a, b, min_change, comps), indent=1))
    else:
        # never cut a number short: a narrower terminal wraps the lines instead
        Console(width=max(console.width, 120)).print(rich_compare(a, b, comps, show_all))
    raise typer.Exit(1 if regressions(comps) else 0)


# ---------------------------------------------------------------- guard
@app.command()
def guard(target: list[str] = typer.Option([], "--target", "-t", metavar="SELECTOR",
                                           help="What to protect (repeatable): cgroup:PATH, docker:NAME, "
                                                "docker:label=K=V, podman:NAME, or contend (its containers)."),
          config: Optional[Path] = typer.Option(None, "--config", "-c",
                                                help="YAML with the same keys (targets with weights, disks, ...)."),
          policy: Optional[str] = typer.Option(None, help="contend (default), hybrid (BFQ weights, contend's caps "
                                                         "only while a target is pre-empted), bfq (weights only), "
                                                         "iocost (io.weight under io.cost, cgroup v2), "
                                                         "iolatency (io.latency targets for the heaviest "
                                                         "targets, cgroup v2), aridac, static or none."),
          capacity: list[str] = typer.Option([], "--capacity", metavar="MAJ:MIN=RATE",
                                             help="A disk to guard and what it delivers, e.g. 254:0=4G, or "
                                                  "254:0=auto to learn it (repeatable; default: the calibrated "
                                                  "disk, else the experiment disk, learnt). contend and hybrid "
                                                  "start from it and follow the disk down."),
          period_ms: Optional[int] = typer.Option(None, help="Collector and policy period (default: 1000 ms "
                                                             "for aridac, as its authors' code samples; else 100)."),
          window: Optional[int] = typer.Option(None, help="N: periods in a target's lifeline (default 30)."),
          p: Optional[float] = typer.Option(None, "--p", help="P: elastic ratio, cap = lifeline × (1 + P) "
                                                              "(default: contend 0.2; aridac 0.35, its code's "
                                                              "ELASTIC; the paper's text says 0.2)."),
          floor: Optional[float] = typer.Option(None, help="No cap below this share of capacity (default 0.02)."),
          backoff: Optional[float] = typer.Option(None, help="contend/hybrid: after a pre-emption the capacity "
                                                             "estimate drops to this × what the disk delivered "
                                                             "(default 0.9)."),
          climb: Optional[float] = typer.Option(None, help="contend/hybrid: the estimate's growth per period "
                                                           "while nobody is pre-empted, × the capacity (default "
                                                           "0.01; ten times slower near the level that hurt)."),
          latency_ms: Optional[float] = typer.Option(None, help="iolatency: the io.latency target of the targets "
                                                                "weighted heaviest, ms (default 5; set it 10-15 % "
                                                                "above their latency alone)."),
          io_bytes: Optional[float] = typer.Option(None, help="What one I/O costs beside its bytes, in bytes: usage "
                                                              "is bytes + IOs × this, and a cap bounds IOs/s as "
                                                              "well (cap / (this + 4 KiB)). Default: the disk's "
                                                              "calibration (1M write bandwidth / 4K write IOPS "
                                                              "- 4 KiB), else 12 KiB; 0: bytes/s alone."),
          dry_run: bool = typer.Option(False, "--dry-run", help="Decide and log, set no cap."),
          wait: Optional[float] = typer.Option(None, "--wait", metavar="SECONDS",
                                               help="At start, wait this long for a named target that does not "
                                                    "exist yet, e.g. a container started after the guard "
                                                    "(default 60)."),
          metrics: Optional[str] = typer.Option(None, help="Prometheus endpoint HOST:PORT, or off "
                                                           "(default 127.0.0.1:9731)."),
          alert_cmd: Optional[str] = typer.Option(None, help="Shell command run when an overload alert is "
                                                             "raised or cleared (CONTEND_ALERT_* in its env)."),
          duration: Optional[float] = typer.Option(None, min=0.1, help="Stop after this many seconds "
                                                                       "(default: until Ctrl-C / SIGTERM).")):
    """Protect containers' disk I/O from bursting neighbours: every period, read each target's I/O from its
    cgroup, let the policy decide caps, set them as io.max / blkio.throttle on the whole disk. Logs are JSON
    lines on stderr. Every cap is removed when the guard stops; `contend clean` removes those of a guard
    that was killed."""
    from .guard import Guard, TargetError
    from .guard.config import load
    from .spec import SpecError
    disks = _capacity_flags(capacity)
    try:
        cfg = load(config, {"targets": target, "policy": policy, "disks": disks, "period_ms": period_ms,
                            "window": window, "p": p, "floor": floor, "backoff": backoff, "climb": climb,
                            "latency_ms": latency_ms, "io_bytes": io_bytes, "dry_run": dry_run or None,
                            "metrics": metrics, "alert_cmd": alert_cmd, "wait_s": wait})
    except SpecError as e:
        fail(str(e))
    need_root("contend guard")
    capacities = _guard_disks({d.device: d.capacity for d in cfg.disks}, cfg.policy)
    _term_as_interrupt()
    try:
        g = Guard(cfg, capacities)
    except (OSError, ValueError) as e:  # the metrics port taken, a disk without BFQ for a policy that needs it
        fail(f"cannot start: {e}")
    try:
        g.wait_for_targets()
    except TargetError as e:
        g.close()
        fail(str(e))
    except KeyboardInterrupt:
        g.close()
        return
    try:
        g.run(duration=duration)  # removes every cap however it ends
    except KeyboardInterrupt:
        pass


# ---------------------------------------------------------------- watch
@app.command()
def watch(target: list[str] = typer.Option([], "--target", "-t", metavar="SELECTOR",
                                           help="What to watch (repeatable): cgroup:PATH or a glob, docker:NAME, "
                                                "docker:label=K=V, docker:*, podman:..., contend (its containers), "
                                                "k8s: (every pod on this node, as namespace/pod/container), "
                                                "k8s:NAMESPACE/*, k8s:label=K=V. Default: contend and docker:*."),
          period: float = typer.Option(1.0, min=0.1, max=60, help="Seconds per period."),
          duration: Optional[float] = typer.Option(None, min=0.1, help="Stop after this many seconds "
                                                                       "(default: until Ctrl-C / SIGTERM)."),
          as_json: bool = typer.Option(False, "--json", help="One JSON line per event on stdout (a verdict that "
                                                             "starts, changes or clears, with its evidence)."),
          record: Optional[Path] = typer.Option(None, "--record", metavar="FILE",
                                                help="Write every period's raw signals to FILE (JSON lines)."),
          replay: Optional[Path] = typer.Option(None, "--replay", metavar="FILE",
                                                help="Run the detector over a recording instead of this host "
                                                     "(no root needed); prints its events."),
          ebpf: bool = typer.Option(True, "--ebpf/--no-ebpf", help="Run-queue delay and preemptions by eBPF "
                                                                   "(else CPU pressure only)."),
          net_rtt: bool = typer.Option(True, "--net-rtt/--no-net-rtt",
                                       help="With eBPF, containers' TCP round-trip times (tcp_probe); it costs a "
                                            "loopback TCP flood ~10 % of its throughput (docs/watch.md). Off: "
                                            "retransmissions and drops only."),
          disk: list[str] = typer.Option([], "--disk", metavar="MAJ:MIN", help="A disk whose latency counts "
                                                                              "(repeatable; default: every disk)."),
          metrics: str = typer.Option("127.0.0.1:9733", help="Prometheus endpoint HOST:PORT, or off."),
          hook: str = typer.Option("", "--hook", metavar="CMD",
                                   help="Shell command run on every event (CONTEND_WATCH_* in its env, the event "
                                        "as JSON on its stdin); never waited for, killed after 30 s."),
          guard: bool = typer.Option(False, "--guard", help="Hand a disk culprit to the guard: while a container "
                                                            "is blamed for a disk (and while it presses against "
                                                            "its cap), the guard's policy caps the disk's users; "
                                                            "every cap removed when it stops."),
          capacity: list[str] = typer.Option([], "--capacity", metavar="MAJ:MIN=RATE",
                                             help="With --guard: a disk and what it delivers, e.g. 254:0=4G "
                                                  "(repeatable; default: the calibrated disk)."),
          cri: list[str] = typer.Option([], "--cri", metavar="unix:///PATH",
                                        help="The node's CRI socket, where k8s: targets get the pods' names "
                                             "(repeatable: the first that answers; default: containerd's "
                                             "/run/containerd/containerd.sock, then CRI-O's "
                                             "/var/run/crio/crio.sock).")):
    """Who hurts whom on this host, now: every period, each watched container's symptoms (run-queue delay,
    pressure, its own throttling, its disk's latency) against its own baseline, and a blame when a neighbour's
    use rose with it; a container held by its own limit is its own doing. Sets nothing, unless --guard
    (docs/watch.md)."""
    from .watch.daemon import WatchConfig, Watcher
    from .watch.view import event_line, table
    if record is not None and replay is not None:
        fail("--record and --replay: one or the other")

    def emit(e: dict) -> None:
        print(json.dumps(e) if as_json else event_line(e), flush=True)

    if replay is not None:
        return _watch_replay(replay, emit)
    targets = _watch_checks(target, metrics, disk, cri)
    if capacity and not guard:
        fail("--capacity: only with --guard")
    given = _guard_capacities(capacity)
    if ebpf or guard:  # the PSI-only watch reads world-readable files: any user may run it (a DaemonSet's nobody)
        need_root("contend watch" + (" --guard" if guard else " (eBPF: --no-ebpf watches without root)"))
    capacities = _guard_disks(given) if guard else {}
    try:
        out = open(record, "x") if record is not None else None
    except OSError as e:
        fail(f"--record {record}: {e.strerror or e}" + (" (not overwritten)" if isinstance(e, FileExistsError)
                                                         else ""))
    _term_as_interrupt()
    live = sys.stdout.isatty() and not as_json
    cfg = WatchConfig(targets, period=period, ebpf=ebpf, net_rtt=net_rtt, metrics=metrics, disks=list(disk) or None,
                      hook=hook, **({"cri": tuple(cri)} if cri else {}))
    try:
        w = Watcher(cfg, events=None if live else emit, record=out)
    except OSError as e:  # the metrics port taken, say
        fail(f"cannot start: {e}")
    except KeyboardInterrupt:  # stopped while it started (bpftrace compiling): what it started is stopped
        return
    if guard:
        from .watch.handoff import GuardHandoff
        # the guard's JSON log on stderr, but not under the live table
        w.handoff = GuardHandoff(targets, capacities, w.host, log=None if live else sys.stderr,
                                 clock0=w.collector.clock0).start()
    for prob in w.problems:
        print(f"contend: {prob}", file=sys.stderr)
    try:
        if live:
            from rich.live import Live
            with Live(table(None, []), console=console, auto_refresh=False) as lv:
                w.run(duration=duration, after_step=lambda x: lv.update(
                    table(x.last, x.detector.verdicts(), x.problems,
                          x.handoff.caps() if x.handoff is not None else None), refresh=True))
        else:
            w.run(duration=duration)
    except KeyboardInterrupt:
        pass
    finally:
        w.close()
        if out is not None:
            out.close()


def _watch_replay(path: Path, emit) -> None:
    """The detector over a recording's frames, its events emitted."""
    from .watch.detector import Detector
    from .watch.signals import Frame
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        fail(f"{path}: {e.strerror or e}")
    d = Detector()
    for i, ln in enumerate(lines, 1):
        if not ln.strip():
            continue
        try:
            f = Frame.from_json(ln)
        except (ValueError, KeyError, TypeError) as e:
            fail(f"{path}:{i}: not a frame of contend watch --record ({e})")
        for e in d.step(f):
            emit(e)


def _watch_checks(target: list[str], metrics: str, disk: list[str], cri: list[str]) -> list[str]:
    """The watch's options checked (exit 2, one line); its selectors."""
    import re

    from .watch.daemon import check_targets
    try:
        targets = check_targets(target or ["contend", "docker:*"])
    except ValueError as e:
        fail(str(e))
    if not re.fullmatch(r"off|[^:]*:[0-9]+", metrics):
        fail(f"--metrics {metrics!r}: HOST:PORT or off")
    for d in disk:
        if not re.fullmatch(r"[0-9]+:[0-9]+", d) or not Path(f"/sys/dev/block/{d}").exists():
            fail(f"--disk {d!r}: no such block device (MAJ:MIN)")
    for e in cri:
        if not e.startswith("unix:///"):
            fail(f"--cri {e!r}: a unix socket, unix:///path")
    return targets


# ---------------------------------------------------------------- cluster
cluster_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                          help="The same study on a Kubernetes cluster with Argo Workflows, and the guard as a "
                               "DaemonSet (docs/cluster.md).")
app.add_typer(cluster_app, name="cluster")
IMAGE_HELP = "The contend image the pods run (built from deploy/Dockerfile and pushed where the nodes pull)."
NS_HELP = "Namespace of the pods (the Argo controller must watch it)."


SCRAPER_HELP = ("The namespace of the Prometheus that scrapes the metrics: the only one the NetworkPolicy lets in "
                "(its kubernetes.io/metadata.name label).")


def _options(image: Optional[str], namespace: str, node_label: str, **kw):
    from .cluster.render import Options, k8s_name
    key = node_label.partition("=")[0]
    if node_label and not key.strip():
        fail(f"--node-label {node_label!r}: expected KEY or KEY=VALUE")
    for flag, ns in (("--namespace", namespace), ("--scraper-namespace", kw.get("scraper_namespace", namespace))):
        if k8s_name(ns) != ns:
            fail(f"{flag} {ns!r}: not a Kubernetes name (lowercase letters, digits, '-')")
    return Options(**({"image": image} if image else {}), namespace=namespace, node_label=node_label, **kw)


def _write_valid(out: Path, files: dict) -> None:
    """Write the manifests, then check them as written (a problem here is contend's bug: exit 1)."""
    from .cluster import render
    from .cluster.validate import ARGO, KUBERNETES_SAID, validate_file
    written = render.write(out, files)
    problems = [line for p in written for line in validate_file(p)]
    for line in problems:
        print(f"contend: {line}", file=sys.stderr)
    if problems:
        raise typer.Exit(1)
    for p in written:
        console.print(f"  {p}", highlight=False)
    console.print(f"valid against Kubernetes {KUBERNETES_SAID} and Argo Workflows {ARGO} (strict)", highlight=False)


@cluster_app.command("render")
def cluster_render(spec_path: Path = typer.Argument(..., metavar="SPEC", help="Experiment spec (YAML)."),
                   out: Path = typer.Option(..., "--out", "-o", help="Directory for the manifests."),
                   quick: bool = typer.Option(False, "--quick", help=QUICK_HELP),
                   repetitions: Optional[int] = typer.Option(None, "--repetitions", "-n", min=1, help=REPS_HELP),
                   image: Optional[str] = typer.Option(None, help=IMAGE_HELP + " Default contend:VERSION."),
                   namespace: str = typer.Option("argo", help=NS_HELP),
                   node_label: str = typer.Option("contend.io/node=true", metavar="KEY=VALUE",
                                                  help="The label of the nodes that take trials."),
                   parallelism: Optional[int] = typer.Option(None, min=1, help="At most this many trials at "
                                                             "once (default: as many as labelled nodes are free)."),
                   artifact_prefix: str = typer.Option("contend", help="Key prefix in Argo's artifact "
                                                       "repository: PREFIX/<workflow>/trials/<id>.tgz.")):
    """Kubernetes manifests that run SPEC's trials across a cluster: RuntimeClasses, the spec as a ConfigMap,
    the executor's ServiceAccount, and an Argo Workflow that runs every trial in a privileged contend pod on a
    labelled node (one at a time per node, never beside another trial, the node reset first) and collects
    them into one results directory. Written to OUT and checked against the pinned schemas."""
    from .cluster.render import HANDLERS, study_manifests
    from .kinds import study_for
    spec = _load_spec(spec_path, quick, repetitions)
    study = _fanned_out(study_for(spec, out, console), spec_path)
    if not artifact_prefix.strip("/"):
        fail(f"--artifact-prefix {artifact_prefix!r}: must not be empty")
    opt = _options(image, namespace, node_label, parallelism=parallelism,
                   artifact_prefix=artifact_prefix.strip("/"))
    trials = study.trials()
    console.print(f"[bold]{spec.name}[/bold]: {len(trials)} trials on nodes labelled {opt.node_label}, "
                  f"image {opt.image}, namespace {opt.namespace}", highlight=False)
    _write_valid(out, study_manifests(spec, trials, opt))
    no_class = sorted({rt for _, rt in trials} - set(HANDLERS))
    if no_class:
        console.print(f"no RuntimeClass for {', '.join(no_class)} (not a CRI runtime); its trials still need "
                      f"nodes labelled contend.io/runtime-<name>=true", highlight=False)
    setup = " ".join(f"-f {out / f}" for f in ("runtimeclasses.yaml", "rbac.yaml", "spec-configmap.yaml")
                     if (out / f).exists())
    console.print(f"next: kubectl apply {setup}\n      kubectl create -f {out / 'workflow.yaml'}   (or argo submit)\n"
                  "      contend cluster collect on its trials' artifacts (docs/cluster.md)", highlight=False)


def _guard_disks(given: dict[str, float], policy: str = "contend") -> dict[str, float]:
    """The disks a guard caps on and their capacities: those given, else the calibrated disk (never calibrated:
    learnt, or calibrated now for a policy that needs the number); each one checked to exist."""
    from .guard import default_disks
    from .spec import SpecError
    from .tools import ToolFailed
    try:
        capacities = given or default_disks(policy, say=lambda s: print(f"contend: {s}", file=sys.stderr))
    except SpecError as e:
        fail(str(e))
    except ToolFailed as e:  # the disk's calibration
        fail(str(e), 1)
    for dev in capacities:
        if not Path(f"/sys/dev/block/{dev}").exists():
            fail(f"disk {dev}: no such block device")
    return capacities


def _guard_capacities(capacity: list[str]) -> dict[str, float]:
    """--capacity flags checked as the guard checks them: MAJ:MIN -> bytes/s."""
    from .guard.config import load
    from .spec import SpecError
    try:
        cfg = load(None, {"targets": ["contend"], "disks": _capacity_flags(capacity)})
    except SpecError as e:
        fail(str(e))
    return {d.device: d.capacity for d in cfg.disks}


def _capacity_flags(capacity: list[str]) -> list[dict]:
    """--capacity MAJ:MIN=RATE flags as the guard config's disks."""
    disks = []
    for c in capacity:
        dev, sep, rate = c.partition("=")
        if not sep:
            fail(f"--capacity {c}: expected MAJ:MIN=RATE, e.g. 254:0=4G (or 254:0=auto)")
        disks.append({"device": dev, "capacity": rate})
    return disks


@cluster_app.command("render-guard")
def cluster_render_guard(out: Path = typer.Option(..., "--out", "-o", help="Directory for the manifests."),
                         config: Optional[Path] = typer.Option(None, "--config", "-c",
                                                               help="The guard's YAML config (as contend guard "
                                                                    "--config); default: every pod of the node "
                                                                    "under the contend policy."),
                         image: Optional[str] = typer.Option(None, help=IMAGE_HELP + " Default contend:VERSION."),
                         namespace: str = typer.Option("kube-system", help="Namespace of the DaemonSet."),
                         node_label: str = typer.Option("", metavar="KEY=VALUE",
                                                        help="Only nodes with this label (default: every node)."),
                         capacity: list[str] = typer.Option([], "--capacity", metavar="MAJ:MIN=RATE",
                                                            help="The nodes' disk and what it delivers, e.g. "
                                                                 "259:0=2G (repeatable; or disks: in --config). "
                                                                 "Required."),
                         scraper_namespace: str = typer.Option("monitoring", help=SCRAPER_HELP)):
    """A DaemonSet that runs `contend guard` on every node but the control plane's, its config in a
    ConfigMap, a headless Service that names the metrics port (for a Prometheus ServiceMonitor) and a
    NetworkPolicy that lets only metrics in. The guard runs without privileges or capabilities. Checked
    against the pinned schemas."""
    from .cluster.render import GUARD_DEFAULT, METRICS_PORT, guard_manifests
    from .guard.config import load as load_guard
    from .spec import SpecError
    source = str(config) if config else "the default DaemonSet config"
    disks = _capacity_flags(capacity)
    try:
        cfg = (load_guard(config, {"disks": disks}) if config
               else load_guard(None, {**GUARD_DEFAULT, "disks": disks}, source_flags=source))
    except SpecError as e:
        fail(str(e))
    if "metrics" not in cfg.model_fields_set:  # the pod's address, not loopback: Prometheus scrapes it there
        cfg = cfg.model_copy(update={"metrics": GUARD_DEFAULT["metrics"]})
    if not cfg.metrics.endswith(f":{METRICS_PORT}"):
        fail(f"{source}: metrics: the DaemonSet serves them on port {METRICS_PORT} (e.g. 0.0.0.0:{METRICS_PORT})")
    if any(t.target.startswith(("docker:", "podman:")) for t in cfg.targets):
        fail(f"{source}: targets: docker: and podman: name an engine's containers; on a Kubernetes node use "
             "cgroup:PATH or a cgroup glob")
    if not cfg.disks:
        fail(f"{source}: disks: required for a DaemonSet (without them every node would calibrate its disk at "
             "once, at its first start): --capacity MAJ:MIN=RATE, or disks: in --config")
    opt = _options(image, namespace, node_label, scraper_namespace=scraper_namespace)
    _write_valid(out, guard_manifests(cfg.model_dump(mode="json"), opt))
    console.print(f"next: kubectl apply -f {out}; metrics on port {METRICS_PORT} of each pod "
                  f"(Service contend-guard-metrics, port name metrics)", highlight=False)


@cluster_app.command("render-watch")
def cluster_render_watch(out: Path = typer.Option(..., "--out", "-o", help="Directory for the manifests."),
                         target: list[str] = typer.Option([], "--target", "-t", metavar="SELECTOR",
                                                          help="What to watch (repeatable): k8s:, k8s:NAMESPACE/*, "
                                                               "k8s:label=K=V, cgroup:PATH or a glob; default: every "
                                                               "pod of the node (k8s:)."),
                         ebpf: bool = typer.Option(False, "--ebpf/--no-ebpf",
                                                   help="Run-queue delay and the time each pod took, by eBPF: "
                                                        "root's uid with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN "
                                                        "(bpftrace 0.17 reads BTF only with it), not privileged. "
                                                        "Default: PSI only, as nobody with no capability."),
                         cri: str = typer.Option("unix:///run/containerd/containerd.sock", "--cri",
                                                 metavar="unix:///PATH",
                                                 help="The nodes' CRI socket, mounted read-only (CRI-O: "
                                                      "unix:///var/run/crio/crio.sock)."),
                         image: Optional[str] = typer.Option(None, help=IMAGE_HELP + " Default contend:VERSION."),
                         namespace: str = typer.Option("kube-system", help="Namespace of the DaemonSet."),
                         node_label: str = typer.Option("", metavar="KEY=VALUE",
                                                        help="Only nodes with this label (default: every node)."),
                         scraper_namespace: str = typer.Option("monitoring", help=SCRAPER_HELP)):
    """A DaemonSet that runs `contend watch` on every node but the control plane's: its verdicts as JSON lines in
    each pod's log, pods named namespace/pod/container through the node's CRI, Prometheus on port 9733 (a headless
    Service names it), a NetworkPolicy that lets only metrics in. Every host path read-only. By default
    unprivileged, without eBPF (on cgroup v2 nodes the CPU symptom is each pod's CPU pressure); --ebpf adds the
    run-queue delay with three capabilities (docs/cluster.md). Checked against the pinned schemas."""
    from .cluster.render import WATCH_PORT, WATCH_TARGETS, watch_manifests
    from .watch.daemon import check_targets
    try:
        targets = tuple(check_targets(target)) or WATCH_TARGETS
    except ValueError as e:
        fail(str(e))
    if any(t.startswith(("docker:", "podman:", "contend")) for t in targets):
        fail("--target: on a Kubernetes node use k8s:..., cgroup:PATH or a cgroup glob")
    if not cri.startswith("unix:///"):
        fail(f"--cri {cri!r}: a unix socket, unix:///path")
    _write_valid(out, watch_manifests(_options(image, namespace, node_label, scraper_namespace=scraper_namespace),
                                      targets, ebpf=ebpf, cri=cri))
    console.print(f"next: kubectl apply -f {out}; verdicts in each pod's log (kubectl logs -n {namespace} "
                  f"ds/contend-watch), metrics on port {WATCH_PORT} (Service contend-watch-metrics)", highlight=False)


@cluster_app.command("validate")
def cluster_validate(directory: Path = typer.Argument(..., metavar="DIR", help="Rendered manifests (*.yaml).")):
    """Check every manifest in DIR against Kubernetes 1.28's schema (1.33's where a document mounts a volume
    recursively read-only) and Argo Workflows v3.5.0's, strictly (unknown fields are errors). Exit 1 and one
    line per problem when any is invalid."""
    from .cluster.validate import ARGO, KUBERNETES_SAID, validate_dir
    if not directory.is_dir():
        fail(f"{directory}: no such directory")
    n, problems = validate_dir(directory)
    for line in problems:
        print(f"contend: {line}", file=sys.stderr)
    if n == 0:
        fail(f"{directory}: no manifests (*.yaml)")
    console.print(f"{n - len(problems)} of {n} documents valid (Kubernetes {KUBERNETES_SAID}, Argo Workflows {ARGO})",
                  highlight=False)
    raise typer.Exit(1 if problems else 0)


@cluster_app.command("collect")
def cluster_collect(sources: list[Path] = typer.Argument(..., metavar="SOURCE...",
                                                         help="Trial artifacts: directories (searched for "
                                                              "trial.json) or .tgz archives of them."),
                    out: Path = typer.Option(..., "--out", "-o", help="The results directory to make.")):
    """Merge trial artifacts (contend trial run's, e.g. downloaded from the cluster's artifact store) into one
    results directory: the store with every trial, metrics.csv, tables and report.html, as contend run
    writes them. Says which planned trials are missing. Exit 0 all there and ok, 1 some missing or failed,
    2 sources that do not fit together (another study, a trial not in the plan)."""
    from rich.text import Text

    from .cluster.collect import CollectError, collect
    from .kinds import refresh
    from .report.table import untrusted
    from .store import Store
    try:
        got = collect(sources, out)
    except CollectError as e:
        fail(str(e))
    with Store(out) as store:
        written = refresh(out, store, title=got.title)
    console.print(written.table)
    # what the artifacts say (ids, nodes, reasons) is theirs: printed as text, never as markup (report.table)
    for tid in got.duplicates:
        console.print(Text.assemble(untrusted(tid), " was found more than once; one copy kept"), highlight=False)
    for a in got.failed:
        m = a.meta
        console.print(Text.assemble(("failed ", "red"), untrusted(f"{m['trial_id']} on {m.get('node', '?')}: "
                                                                  f"{m.get('reason', '')}")), highlight=False)
    if got.missing:
        console.print(Text.assemble(("missing ", "yellow"), untrusted(
            f"{len(got.missing)} of {len(got.planned)} trials: " + ", ".join(got.missing[:10])
            + (" …" if len(got.missing) > 10 else ""))), highlight=False)
    console.print(f"{len(got.taken)} of {len(got.planned)} trials from "
                  f"{len({a.meta.get('node') for a in got.taken})} node(s)\nmetrics: {out / 'metrics.csv'}\n"
                  f"report:  {written.path}", highlight=False)
    raise typer.Exit(1 if got.missing or got.failed else 0)


# ---------------------------------------------------------------- clean
@app.command()
def clean(dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
          force: bool = typer.Option(False, "--force", help="Remove also what a running contend made (a study's "
                                     "containers are killed mid-trial), and even while a study holds the host."),
          unrecorded: bool = typer.Option(False, "--unrecorded", help="Remove also objects that carry contend's "
                                          "names but that no run of contend recorded (made by hand, or by a "
                                          "contend from before the records).")):
    """Remove what a killed or crashed contend left on this host: containers of every runtime, bundles,
    cgroups in every hierarchy, data directories, network namespaces, links, the caps of a guard that was
    killed. Only what a run of contend recorded when it made it, and only once that run is dead; the rest is
    listed as left alone, with why. Refuses while a study is running here, unless --force."""
    need_root("contend clean")
    from .clean import StudyRunning
    from .clean import clean as do_clean
    try:
        n = do_clean(dry_run, say=lambda s: console.print(s, markup=False, highlight=False), force=force,
                     unrecorded=unrecorded)
    except StudyRunning as e:
        fail(str(e))
    if n == 0 and not dry_run:
        console.print("nothing to remove")


if __name__ == "__main__":
    app()
