"""A refactoring keeps every number: the same stored studies reported by the code before a change and by this
checkout must write byte-identical metrics.csv (and the same table files). Issue 53's check.

    .venv/bin/python bench/same_results.py --before SRC DIR [DIR ...]
    .venv/bin/python bench/same_results.py --make ROOT --kinds isolation detect ...   (small studies, as root)

Each results DIR is copied twice; `contend report` of the code in SRC (a `src` directory of a checkout before
the change: `git worktree add /tmp/before REV`) rewrites one copy, this checkout's the other; their metrics.csv and
*.md tables are compared byte for byte (report.html and the figures carry the time they were written). `--make`
runs one small study of each kind named into ROOT/<kind> first with the code before (real containers: root,
make setup), for a machine with no stored studies. Prints one line per directory; exit 1 when any differs.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMALL = {  # each kind's small study: seconds to minutes on a 2-CPU VM
    "isolation": "name: same\nruntimes: [runc]\nscenarios: [harmony, escape]\nresources: [cpu]\n"
                 "trial: {baseline_s: 2, steps: 2, step_s: 2}\nrepetitions: 2\n",
    "detect": "kind: detect\nname: same\nruntimes: [runc]\ncases: [cpu, own-quota]\nrepetitions: 2\n"
              "trial: {baseline_s: 4, jitter_s: 1, attack_s: 4, tail_s: 1, period_s: 0.5}\n",
    "guard": "kind: guard\nname: same\nruntime: runc\npolicies: [none, contend]\n"
             "workloads: [{name: workload2, burst_at_s: 3, burst_volume_s: 1.5, after: steady, tail_s: 2}]\n",
    "parallel": "kind: parallel\nname: same\nruntimes: [runc]\nbenchmarks: [noploop]\ncounts: [1, 2]\n"
                "runs_per_container: 2\nsizes: {noploop: {count: 2.0e+8}}\n",
    "diskfill": "kind: diskfill\nname: same\nruntimes: [runc]\nfiles: {fits-memory: 0.1, beyond-memory: null}\n"
                "victim: {file: 64M, seconds: 3}\nrepetitions: 2\n",
    "oltp": "kind: oltp\nname: same\nruntimes: [runc]\ndatabases: [postgresql]\ndisruptors: [cpu-bomb]\n"
            "load: {seconds: 4, warmup_s: 2, pause_s: 1, calibrate_s: 2}\nscale: {pgbench_scale: 1}\n"
            "repetitions: {min: 2, max: 2}\n",
}


def contend(src: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(src), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "contend.cli", *args], capture_output=True, text=True, env=env,
                          timeout=3600)


def make(root: Path, kinds: list[str], before: Path) -> list[Path]:
    """Studies stored as the code before the change stores them."""
    out = []
    for kind in kinds:
        spec = root / f"{kind}.yaml"
        root.mkdir(parents=True, exist_ok=True)
        spec.write_text(SMALL[kind])
        p = contend(before, "run", str(spec), "--out", str(root / kind))
        print(f"made {root / kind}: exit {p.returncode}", flush=True)
        out.append(root / kind)
    return out


def same(before: Path, directory: Path) -> list[str]:
    """The files of `directory`'s report that differ between the code in `before` and this checkout's."""
    with tempfile.TemporaryDirectory() as tmp:
        copies = {}
        work = Path(tmp) / directory.name  # each report at the same path: its tables' titles name it
        for who, src in (("before", before), ("after", ROOT / "src")):
            shutil.copytree(directory, work)
            (work / "metrics.csv").unlink(missing_ok=True)
            p = contend(src, "report", str(work))
            if p.returncode != 0:
                return [f"contend report ({who}) exited {p.returncode}: {p.stderr.strip()[-300:]}"]
            copies[who] = work.rename(Path(tmp) / who)
        names = sorted({f.name for who in copies for f in copies[who].iterdir()
                        if f.name == "metrics.csv" or f.suffix == ".md"})
        return [n for n in names if not (copies["before"] / n).exists() or not (copies["after"] / n).exists()
                or not filecmp.cmp(copies["before"] / n, copies["after"] / n, shallow=False)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="*", type=Path, help="results directories")
    ap.add_argument("--before", type=Path, required=True, help="the src directory of the code before the change")
    ap.add_argument("--make", type=Path, metavar="ROOT", help="first run a small study of each --kinds into ROOT")
    ap.add_argument("--kinds", nargs="*", default=list(SMALL), choices=list(SMALL))
    a = ap.parse_args()
    if not (a.before / "contend" / "cli.py").is_file():
        sys.exit(f"--before {a.before}: no contend/cli.py there (give the src directory of a checkout)")
    dirs = list(a.dirs) + (make(a.make, a.kinds, a.before) if a.make else [])
    bad = 0
    for d in dirs:
        rows = sum(1 for _ in open(d / "metrics.csv")) - 1 if (d / "metrics.csv").exists() else 0
        diff = same(a.before, d)
        bad += bool(diff)
        print(f"{d}: {'identical' if not diff else 'DIFFERS: ' + ', '.join(diff)} ({rows} rows of metrics.csv)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
