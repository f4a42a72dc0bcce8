from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

from .. import cgroups, runtimes
from ..probes import probe_catalogue
from ..probes.ebpf import probe_types
from .calibrate import load_capacity, meminfo

LOAD_GENERATORS = {"stress-ng": ["--version"], "fio": ["--version"], "iperf3": ["--version"],
                   "sysbench": ["--version"], "bpftrace": ["--version"], "pgbench": ["--version"],
                   "mariadbd": ["--version"]}


def _version(binary: str, args: list[str]) -> str:
    if shutil.which(binary) is None:
        return ""
    try:
        p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=10)
    except (subprocess.TimeoutExpired, OSError):
        return "?"
    text = (p.stdout or p.stderr).strip().splitlines()
    m = re.search(r"\d+\.\d+(\.\d+)?", text[0] if text else "")
    return m.group(0) if m else (text[0][:40] if text else "?")


def disks() -> list[dict]:
    out = []
    for d in sorted(Path("/sys/block").iterdir()):
        try:
            size = int((d / "size").read_text()) * 512
        except OSError:
            continue
        if size == 0 or d.name.startswith(("loop", "ram")):
            continue
        sched = (d / "queue/scheduler").read_text().strip() if (d / "queue/scheduler").exists() else ""
        m = re.search(r"\[(\S+)\]", sched)
        out.append({"name": d.name, "dev": (d / "dev").read_text().strip(),
                    "rotational": (d / "queue/rotational").read_text().strip() == "1",
                    "scheduler": m.group(1) if m else sched or "none",
                    "schedulers": sched.replace("[", "").replace("]", "").split(),
                    "size_bytes": size})
    return out


def facts(try_runtimes: bool = True, try_probes: bool = True) -> dict:
    """Everything doctor reports, as plain data (also stored with every trial)."""
    host = cgroups.detect()
    mem = meminfo()
    return {
        "host": {"hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
                 "memory_bytes": mem.get("MemTotal", 0), "root": os.geteuid() == 0},
        "runtimes": [vars(runtimes.availability(r, try_runtimes)) for r in runtimes.all_runtimes(host)],
        "cgroups": {"mode": host.mode, "controllers": host.controllers(),
                    "unified": str(host.unified) if host.unified else None},
        "ebpf": {"bpftrace": _version("bpftrace", ["--version"]),
                 "probe_types": ({k: {"attaches": ok, "reason": why} for k, (ok, why) in probe_types().items()}
                                 if try_probes else {}),
                 "probes": [{"name": n, "attaches": ok, "tracepoint": tp, "reason": why}
                            for n, ok, tp, why in probe_catalogue()]},
        "load_generators": {b: _version(b, a) for b, a in LOAD_GENERATORS.items()},
        "disks": disks(),
        "capacity": load_capacity(),
    }
