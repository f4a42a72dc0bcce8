"""How long `contend` takes to answer a spec it refuses (exit 2), two checkouts side by side: what every CLI test
of the unit tier and every user's typo waits for. The two alternate in each round, so the noisy host's minute is
the same for both.

    .venv/bin/python bench/cli_start.py A B [--rounds 10]     # A, B: checkouts, each with its own .venv

e.g. A a worktree of the commit before (`git worktree add /tmp/before HEAD~1`, then `make -C /tmp/before venv`)
and B this one. Prints each one's median and the ratio B / A. PYTHONDONTWRITEBYTECODE is left as the caller has
it (this VM sets it: then only what `make venv` compiled is cached).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

BAD = "name: x\nruntimes: [runc]\nscenarios: [harmony]\nresources: [cpu]\ntrial: {steps: 0}\n"


def once(checkout: Path, spec: Path) -> float:
    t0 = time.monotonic()
    p = subprocess.run([str(checkout / ".venv/bin/python"), "-m", "contend.cli", "run", str(spec)], cwd=checkout,
                       capture_output=True, text=True)
    assert p.returncode == 2 and "trial.steps" in p.stderr, (checkout, p.returncode, p.stderr[-500:])
    return time.monotonic() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        spec = Path(d) / "bad.yaml"
        spec.write_text(BAD)
        times: dict[Path, list[float]] = {args.a: [], args.b: []}
        for _ in range(args.rounds):
            for c in (args.a, args.b):
                times[c].append(once(c, spec))
    a, b = (statistics.median(times[c]) for c in (args.a, args.b))
    print(f"A {args.a}: median {a:.2f} s over {args.rounds}")
    print(f"B {args.b}: median {b:.2f} s over {args.rounds}")
    print(f"B / A = {b / a:.2f}")


if __name__ == "__main__":
    main()
