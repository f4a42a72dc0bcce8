"""The parallel suite's benchmarks (CoPTS, Bhaia et al. Middleware 2023, Table 1): how each is run inside a
container and how its own output becomes figures. Parsers are pure; the tests feed them real output.

linpack, noploop and stream are small C programs the project ships and builds (tools/, `build_tools`);
pidigits is a Python script run by the host's python3 (every container sees the host's /usr); sysbench and
fio come from the distribution.
"""
from __future__ import annotations

import hashlib
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ...failures import Failure
from ...paths import HOME
from ...tools import run_tool

TOOLS_SRC = Path(__file__).parent / "tools"
C_TOOLS = ("linpack", "noploop", "stream")
IN_CONTAINER = "/data/tools"  # where a container finds the built tools (its own /data)


class BenchmarkError(Failure):
    """A benchmark's output did not carry its figure (the message says what was missing)."""


@dataclass(frozen=True)
class Benchmark:
    name: str
    figure: str  # the headline figure, a key of parse()'s result (the paper's table)
    unit: str
    higher_is_better: bool
    resource: str  # what it stresses (CoPTS Table 1)
    argv: Callable[[dict], list[str]]  # sizes of this benchmark -> the command inside the container
    parse: Callable[[str], dict[str, float]]  # its stdout -> figures

    @property
    def change(self) -> str:
        """What the paper calls the change from the isolated run."""
        return "throughput loss" if self.higher_is_better else "runtime increase"


def _number(pattern: str, text: str, what: str) -> float:
    m = re.search(pattern, text, re.M)
    if not m:
        raise BenchmarkError(f"no {what} in its output")
    return float(m.group(1))


def parse_linpack(out: str) -> dict[str, float]:
    return {"mflops": _number(r"^MFLOPS:\s*([0-9.]+)", out, "MFLOPS")}


def parse_noploop(out: str) -> dict[str, float]:
    return {"ghz": _number(r"^GHz:\s*([0-9.]+)", out, "GHz"),
            "seconds": _number(r"seconds=([0-9.]+)", out, "seconds")}


def parse_stream(out: str) -> dict[str, float]:
    return {f"{k.lower()}_mb_s": _number(rf"^{k}:\s*([0-9.]+) MB/s", out, f"{k} rate")
            for k in ("Copy", "Scale", "Add", "Triad")}


def parse_sysbench_cpu(out: str) -> dict[str, float]:
    return {"seconds": _number(r"total time:\s*([0-9.]+)s", out, "total time"),
            "events_s": _number(r"events per second:\s*([0-9.]+)", out, "events per second")}


def parse_sysbench_memory(out: str) -> dict[str, float]:
    return {"mib_s": _number(r"MiB transferred \(([0-9.]+) MiB/sec\)", out, "MiB/sec")}


def parse_pidigits(out: str) -> dict[str, float]:
    return {"seconds": _number(r"^seconds:\s*([0-9.]+)", out, "seconds")}


def parse_fio(out: str) -> dict[str, float]:
    try:
        job = json.loads(out[out.index("{"):])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        raise BenchmarkError("no fio JSON report in its output") from None
    r, w = job.get("read", {}), job.get("write", {})
    return {"iops": float(r.get("iops", 0)) + float(w.get("iops", 0)),
            "lat_mean_us": (float(r.get("clat_ns", {}).get("mean", 0)) + float(w.get("clat_ns", {}).get("mean", 0)))
            / 2e3}


BENCHMARKS: dict[str, Benchmark] = {b.name: b for b in (
    Benchmark("linpack", "mflops", "MFLOPS", True, "cpu",
              lambda s: [f"{IN_CONTAINER}/linpack", str(s["n"]), str(s["min_seconds"])], parse_linpack),
    Benchmark("noploop", "ghz", "GHz", True, "cpu",
              lambda s: [f"{IN_CONTAINER}/noploop", f"{s['count']:.0f}"], parse_noploop),
    Benchmark("stream", "copy_mb_s", "MB/s (copy)", True, "memory",
              lambda s: [f"{IN_CONTAINER}/stream", str(s["mib_per_array"]), str(s["ntimes"])], parse_stream),
    Benchmark("sysbench-cpu", "seconds", "s", False, "cpu",
              lambda s: ["sysbench", "cpu", f"--cpu-max-prime={s['max_prime']}", f"--events={s['events']}",
                         "--time=0", "--threads=1", "run"], parse_sysbench_cpu),
    Benchmark("sysbench-memory", "mib_s", "MiB/s", True, "memory",
              lambda s: ["sysbench", "memory", f"--memory-block-size={s['block']}",
                         f"--memory-total-size={s['total']}", "--memory-oper=write", "--time=0", "--threads=1",
                         "run"], parse_sysbench_memory),
    Benchmark("pidigits", "seconds", "s", False, "cpu+memory",
              lambda s: ["python3", f"{IN_CONTAINER}/pidigits.py", str(s["digits"])], parse_pidigits),
    Benchmark("fio", "iops", "IOPS", True, "disk",
              lambda s: ["fio", "--name=copts", "--filename=/data/copts-fio.dat", f"--size={s['size']}",
                         "--rw=randrw", "--bs=4k", "--direct=1", "--ioengine=psync", "--time_based",
                         f"--runtime={s['seconds']}", "--output-format=json"], parse_fio),
)}


def last_level_cache_mib(cpu: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> float:
    """The largest cache of CPU 0 in MiB (the last level); 32 if the kernel does not say."""
    sizes = []
    for idx in cpu.glob("index*"):
        try:
            text = (idx / "size").read_text().strip()
        except OSError:
            continue
        mult = {"K": 1 / 1024, "M": 1.0, "G": 1024.0}.get(text[-1:], 1 / 1048576)
        sizes.append(float(text.rstrip("KMG")) * mult)
    return max(sizes) if sizes else 32.0


def sources_digest() -> str:
    h = hashlib.sha256()
    for p in sorted(TOOLS_SRC.iterdir()):
        if p.is_file():  # not the __pycache__ Python leaves beside pidigits.py
            h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()[:12]


def build_tools(cache: Path = HOME / "tools") -> Path:
    """The built tools (C programs compiled with -O2, and pidigits.py), in a directory named by the sources'
    digest: built once per version of the sources. Raises ToolFailed if the compiler is missing or fails."""
    out = cache / sources_digest()
    if all((out / t).is_file() for t in C_TOOLS) and (out / "pidigits.py").is_file():
        return out
    cc = shutil.which("cc") or shutil.which("gcc") or "cc"
    tmp = cache / f".{out.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for t in C_TOOLS:
        run_tool([cc, "-O2", "-o", str(tmp / t), str(TOOLS_SRC / f"{t}.c"), "-lm"], f"building {t}", timeout=300)
    shutil.copy(TOOLS_SRC / "pidigits.py", tmp / "pidigits.py")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out
