"""Measure the capacities scenarios are fractions of: CPU per core, disk IOPS and bandwidth, memory."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

from ..load.fio import layout
from ..paths import DATA, HOME
from ..tools import ToolFailed, last_line, run_tool, workdir

CAPACITY_FILE = HOME / "capacity.json"


def load_capacity() -> dict:
    try:
        return json.loads(CAPACITY_FILE.read_text())
    except (OSError, json.JSONDecodeError):
        return {}


def save_capacity(cap: dict) -> None:
    CAPACITY_FILE.parent.mkdir(parents=True, exist_ok=True)
    tmp = CAPACITY_FILE.with_suffix(".tmp")
    tmp.write_text(json.dumps(cap, indent=2))
    os.replace(tmp, CAPACITY_FILE)


def agent_cpu_capacity(n: int, seconds: float = 2.0) -> dict:
    """The load agent's matrix products per second per CPU, every CPU busy (the isolation trials' guest
    unit of CPU), from its own reports after its first interval."""
    from ..load.agent import Agent, AgentError, agent_digest, build_agent
    try:
        a = Agent.start([str(build_agent()), "-i", "100", "cpu", str(n)],
                        lambda argv, **kw: subprocess.Popen(argv, cwd=workdir(), **kw))
        try:
            a.set(n)
            time.sleep(seconds)
        finally:
            a.stop()
    except AgentError as e:
        raise ToolFailed("CPU calibration", "the load agent", str(e)) from None
    steady = a.reports[2:]  # the first intervals hold the start
    took = steady[-1].t - a.reports[1].t if len(steady) > 1 else 0.0
    return {"cpu_agent_ops_s_per_cpu": sum(r.work for r in steady) / took / n if took > 0 else 0.0,
            "cpu_agent": agent_digest()}


def cpu_capacity(seconds: float = 3.0) -> dict:
    """stress-ng matrixprod on every CPU at once: bogo ops/s per CPU (the parallel suite's and the guard's
    unit of CPU), and the load agent's matrix products per CPU (the isolation trials' guest unit)."""
    n = os.cpu_count() or 1
    with tempfile.TemporaryDirectory(dir=workdir()) as d:
        out = Path(d) / "cpu.yaml"
        run_tool(["stress-ng", "--cpu", str(n), "--cpu-method", "matrixprod", "--timeout", f"{seconds:g}s",
                  "--temp-path", d, "--metrics-brief", "--yaml", str(out)], "CPU calibration",
                 timeout=seconds + 60)
        try:
            doc = yaml.safe_load(out.read_text())
            total = next(float(m["bogo-ops-per-second-real-time"]) for m in doc["metrics"] if m["stressor"] == "cpu")
        except (OSError, yaml.YAMLError, TypeError, KeyError, ValueError, StopIteration):
            raise ToolFailed("CPU calibration", "stress-ng", f"wrote no cpu metrics to {out.name}") from None
    return {"cpus": n, "cpu_bogo_ops_s_per_cpu": total / n, **agent_cpu_capacity(n)}


def device_of(path: Path) -> str:
    """MAJ:MIN of the whole disk holding path, or that will once it is made (a fresh host has no
    /var/lib/contend/data yet); throttles apply to whole disks."""
    while not path.exists() and path != path.parent:
        path = path.parent
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    sysdev = Path(f"/sys/dev/block/{dev}")
    if (sysdev / "partition").exists():
        return (sysdev.resolve().parent / "dev").read_text().strip()
    return dev


def _fio(args: list[str]) -> dict:
    p = run_tool(["fio", "--output-format=json", *args], "disk calibration", timeout=600)
    try:
        return json.loads(p.stdout)["jobs"][0]
    except (json.JSONDecodeError, KeyError, IndexError, TypeError):
        raise ToolFailed("disk calibration", "fio", f"printed no job results: {last_line(p.stdout)}") from None


def write_iops_key(block: str) -> str:
    """The capacity key of the random-write IOPS at a block size (4K's is the historical disk_write_iops)."""
    return "disk_write_iops" if block.upper() == "4K" else f"disk_write_iops_{block.upper()}"


def disk_capacity(directory: Path, seconds: int = 5, size: str = "512M", blocks: tuple[str, ...] = ("4K",)) -> dict:
    """fio direct I/O on the experiment device: 4k random read IOPS, random write IOPS of two writers
    together at each block size (the disk scenarios' unit: what the two tenants of a trial can get at most)
    and 1M sequential write bandwidth."""
    directory.mkdir(parents=True, exist_ok=True)
    f = directory / "contend-calibrate.fio"
    common = [f"--filename={f}", f"--size={size}", "--direct=1", "--ioengine=libaio", "--time_based",
              f"--runtime={seconds}", "--group_reporting"]
    try:
        run_tool(layout(str(f), size), "disk calibration", timeout=600)  # written once: no unwritten extents
        w = _fio(["--name=seqwrite", "--rw=write", "--bs=1M", "--iodepth=16", *common])
        r = _fio(["--name=randread", "--rw=randread", "--bs=4k", "--iodepth=32", *common])
        # as many writers as a trial has tenants: one job at depth 32 leaves this virtio disk a third idle
        rw = {write_iops_key(b): _fio(["--name=randwrite", "--rw=randwrite", f"--bs={b}", "--iodepth=32",
                                       "--numjobs=2", *common])["write"]["iops"] for b in blocks}
    finally:
        f.unlink(missing_ok=True)
    return {"disk_device": device_of(directory), "disk_dir": str(directory),
            "disk_read_iops": r["read"]["iops"], **rw, "disk_write_bw_bytes_s": w["write"]["bw_bytes"]}


def meminfo() -> dict[str, int]:
    """/proc/meminfo in bytes."""
    out = {}
    for line in Path("/proc/meminfo").read_text().splitlines():
        k, _, v = line.partition(":")
        out[k] = int(v.split()[0]) * 1024
    return out


def memory_capacity() -> dict:
    m = meminfo()
    return {"memory_bytes": m.get("MemTotal", 0), "memory_available_bytes": m.get("MemAvailable", 0)}


def calibrate(disk_dir: Path = DATA, disk: bool = True) -> dict:
    cap = load_capacity()
    cap.update(cpu_capacity())
    cap.update(memory_capacity())
    if disk and shutil.which("fio"):
        # every block size a study has asked for before is measured again with the rest
        extra = tuple(k.removeprefix("disk_write_iops_") for k in cap if k.startswith("disk_write_iops_"))
        cap.update(disk_capacity(disk_dir, blocks=("4K", *extra)))
    cap["calibrated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    save_capacity(cap)
    return cap


def ensure_capacity(resources: Sequence[str] = ("cpu",), say=print, disk_block: str = "4K") -> dict:
    """The run needs the capacity of its resources: measure what was never calibrated on this host
    (CPU 5 s; disk 15 s, only for disk trials; 20 s when the disk load's block size is not 4K)."""
    cap = load_capacity()
    changed = False
    from ..load.agent import agent_digest
    if cap.get("cpus") != os.cpu_count() or cap.get("cpu_agent") != agent_digest():
        say("no CPU calibration on this host for this version of the load agent yet: measuring it (5 s; "
            "`contend doctor --calibrate` does all)")
        cap.update(cpu_capacity())
        changed = True
    if "disk" in resources and (write_iops_key(disk_block) not in cap or "disk_write_iops" not in cap
                                or cap.get("disk_dir") != str(DATA)):
        blocks = tuple(dict.fromkeys(("4K", disk_block.upper())))
        say(f"no disk calibration for {DATA} at {', '.join(blocks)} yet: measuring it (fio, {10 + 5 * len(blocks)} s)")
        cap.update(disk_capacity(DATA, blocks=blocks))
        changed = True
    if changed:
        cap.setdefault("calibrated_at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        save_capacity(cap)
    return cap
