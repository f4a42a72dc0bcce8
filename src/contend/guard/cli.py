"""`contend guard`: its options, checked (exit 2, one line), and the disks it guards with what each delivers
(also what `contend watch --guard` and `contend cluster render-guard` take)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..terminal import fail, need_root, term_as_interrupt
from .settings import options


@options  # one option per knob of the settings table (settings.KNOBS), given to it as `settings`
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
          settings: Optional[dict] = None,
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
    from ..guard import Guard, TargetError
    from ..guard.config import load
    from ..spec import SpecError
    disks = capacity_flags(capacity)
    try:
        cfg = load(config, {"targets": target, "policy": policy, "disks": disks, **(settings or {}),
                            "dry_run": dry_run or None,
                            "metrics": metrics, "alert_cmd": alert_cmd, "wait_s": wait})
    except SpecError as e:
        fail(str(e))
    need_root("contend guard")
    capacities = guard_disks({d.device: d.capacity for d in cfg.disks}, cfg.policy)
    term_as_interrupt()
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


def guard_disks(given: dict[str, float], policy: str = "contend") -> dict[str, float]:
    """The disks a guard caps on and their capacities: those given, else the calibrated disk (never calibrated:
    learnt, or calibrated now for a policy that needs the number); each one checked to exist."""
    from ..guard import default_disks
    from ..spec import SpecError
    from ..tools import ToolFailed
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


def guard_capacities(capacity: list[str]) -> dict[str, float]:
    """--capacity flags checked as the guard checks them: MAJ:MIN -> bytes/s."""
    from ..guard.config import load
    from ..spec import SpecError
    try:
        cfg = load(None, {"targets": ["contend"], "disks": capacity_flags(capacity)})
    except SpecError as e:
        fail(str(e))
    return {d.device: d.capacity for d in cfg.disks}


def capacity_flags(capacity: list[str]) -> list[dict]:
    """--capacity MAJ:MIN=RATE flags as the guard config's disks."""
    disks = []
    for c in capacity:
        dev, sep, rate = c.partition("=")
        if not sep:
            fail(f"--capacity {c}: expected MAJ:MIN=RATE, e.g. 254:0=4G (or 254:0=auto)")
        disks.append({"device": dev, "capacity": rate})
    return disks
