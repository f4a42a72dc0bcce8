"""The contend command line (typer). Exit codes: 0 ok, 1 experiment failed, 2 bad input."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from . import __version__
from .cluster.cli import cluster_app
from .guard.cli import guard
from .prepare import (
    QUICK_HELP,
    REPS_HELP,
    engines,
    fanned_out,
    hold_host,
    load_spec,
    resumed,
    say_plan,
    study_of,
)
from .protect.cli import protect
from .terminal import console, fail, need_root, term_as_interrupt
from .watch.cli import watch

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="rich",
                  help="contend: how well are your containers isolated from each other?\n\n"
                       "Runs real containers under real OCI runtimes, loads them, watches them from the host "
                       "(cgroup counters, eBPF) and computes the isolation metrics of the literature.")


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
        as_json: bool = typer.Option(False, "--json", help="Print the answers and the metrics as JSON at the end."),
        views: str = typer.Option("read", "--views", metavar="read|all|VIEW,...",
                                   help="The views the terminal's tables show: read (the one the answers read: "
                                        "the host's counters where measured), all, or some of ebpf,host,guest. "
                                        "report.html and table4-<view>.md have every view."),
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
    continued = None  # the study of --resume DIR, built once
    if resume is not None:
        spec, done, continued = resumed(resume, spec_path, quick, repetitions, out)
        directory = resume
    elif spec_path is None:
        fail("SPEC is required (or --resume DIR)")
    else:
        spec, done = load_spec(spec_path, quick, repetitions), frozenset()
        directory = out or Path("results") / f"{spec.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    if dry_run:
        say_plan(spec, directory, done)
        raise typer.Exit(0)
    need_root("contend run")
    from .runtimes.builds import build_named
    build_named(getattr(spec, "runtimes", ()), say=lambda s: console.print(s, highlight=False))
    study = study_of(spec, directory, continued)
    study.done = done
    study.views = check_views(views)
    hold_host(directory)
    term_as_interrupt()
    with engines(spec, start_engines):
        code = study.run()
    if as_json:
        print(json.dumps(study.written.as_json() if study.written is not None else {"answers": [], "metrics": []},
                         indent=1, default=str))
    raise typer.Exit(code)


def check_views(views: str) -> str:
    if views in ("read", "all") or all(v in ("ebpf", "host", "guest") for v in views.split(",")):
        return views
    fail(f"--views {views!r}: read, all, or some of ebpf,host,guest (comma-separated)")


# ---------------------------------------------------------------- trial
trial_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                        help="One trial of a study at a time: what a cluster's pods run (contend cluster).")
app.add_typer(trial_app, name="trial")



@trial_app.command("list")
def trial_list(spec_path: Path = typer.Argument(..., metavar="SPEC", help="Experiment spec (YAML)."),
               quick: bool = typer.Option(False, "--quick", help=QUICK_HELP),
               repetitions: Optional[int] = typer.Option(None, "--repetitions", "-n", min=1, help=REPS_HELP)):
    """Every trial of SPEC's plan: its id and runtime, one per line (tab-separated), in the order contend run
    takes them."""
    from .kinds import study_for
    spec = load_spec(spec_path, quick, repetitions)
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
    spec = load_spec(spec_path, quick, repetitions)
    need_root("contend trial run")
    study = fanned_out(study_of(spec, out), spec_path)
    runtime = dict(study.trials()).get(trial_id)
    if runtime is None:
        fail(f"{spec_path}: no trial {trial_id!r} in this study (contend trial list {spec_path} lists them)")
    study.only = trial_id
    hold_host(out)
    term_as_interrupt()
    code = study.run()
    write_trial_json(out, spec, trial_id, runtime, code)
    raise typer.Exit(code)


# ---------------------------------------------------------------- report
@app.command()
def report(directory: Path = typer.Argument(..., metavar="DIR", help="A results directory of contend run."),
           views: str = typer.Option("read", "--views", metavar="read|all|VIEW,...",
                                   help="The views the terminal's tables show: read (the one the answers read: "
                                        "the host's counters where measured), all, or some of ebpf,host,guest. "
                                        "report.html and table4-<view>.md have every view."),
           as_json: bool = typer.Option(False, "--json", help="Print the answers and the metrics as JSON instead "
                                                              "of the tables.")):
    """Rebuild metrics.csv, figures/ and report.html from the store alone (no experiment re-run), and print the
    answer per cell first, then the tables."""
    check_views(views)
    from .kinds import refresh
    from .paths import BadName, Refused
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
        try:
            written = refresh(directory, store, title=str(directory))
        except (Refused, BadName) as e:  # a planted link below the directory, a name that is no name
            fail(str(e))
    if as_json:
        print(json.dumps(written.as_json(), indent=1, default=str))
        return
    console.print(written.terminal(str(directory), views))
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
    from .kinds import directions, headlines
    from .report.compare import as_json as to_json
    from .report.compare import compare_dirs, regressions, rich_compare
    try:
        comps = compare_dirs(a, b, min_change, directions(), headlines())
    except (ValueError, OSError) as e:
        fail(str(e).splitlines()[0])
    if as_json:
        print(json.dumps(to_json(a, b, min_change, comps), indent=1))
    else:
        # never cut a number short: a narrower terminal wraps the lines instead
        Console(width=max(console.width, 120)).print(rich_compare(a, b, comps, show_all))
    raise typer.Exit(1 if regressions(comps) else 0)


# ---------------------------------------------------------------- guard


# ---------------------------------------------------------------- guard, watch, cluster: their packages' own
app.command()(guard)
app.command()(watch)
app.command()(protect)
app.add_typer(cluster_app, name="cluster")


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
