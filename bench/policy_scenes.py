"""Every policy on every scene of the regression suite (guard/scenes.py), on the simulated disk: the victim's
isolation mean and p05, its reaction (periods from the neighbour's burst until it gets 0.95 of its ask 5 periods
in a row; "-" never) and the neighbours' share of the spare. Pure and deterministic: the same figures on any machine.

    .venv/bin/python bench/policy_scenes.py [--policies contend,aridac] [--scenes steady,jittery]
                                            [--json after.json] [--before before.json]

A row of contend's below its floor (scenes.FLOORS) is marked "!" with what fell short, and the command exits 1.
Before and after a change to a policy: run it on the old commit with --json, then on the new with --before, e.g.

    git worktree add /tmp/before HEAD && (cd /tmp/before && .venv/bin/python bench/policy_scenes.py --json /tmp/b.json)
    .venv/bin/python bench/policy_scenes.py --before /tmp/b.json
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from contend.guard.policy import make
from contend.guard.scenes import FLOORS, SCENES, score, short_of


def cell(v: float | int | None, before: float | int | None = None, digits: str = ".3f") -> str:
    now = "-" if v is None else format(v, digits)
    if before is None or v is None or round(before, 3) == round(v, 3):
        return now
    return f"{format(before, digits)}→{now}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policies", default="none,static,aridac,contend,hybrid")
    ap.add_argument("--scenes", default=",".join(s.name for s in SCENES))
    ap.add_argument("--json", help="write the scores here (policy → scene → score)")
    ap.add_argument("--before", help="scores written by --json before a change: each figure shown as before→now")
    a = ap.parse_args()
    names = a.scenes.split(",")
    unknown = set(names) - {s.name for s in SCENES}
    if unknown:
        ap.error(f"--scenes: no scene {', '.join(sorted(unknown))} (there are {', '.join(s.name for s in SCENES)})")
    before = json.load(open(a.before)) if a.before else {}
    scores: dict[str, dict[str, dict]] = {}
    short = 0
    print(f"{'policy':8} {'scene':15} {'isol':>13} {'p05':>13} {'react':>7} {'spare':>13}")
    for pol in a.policies.split(","):
        for scene in (s for s in SCENES if s.name in names):
            got = score(make(pol), scene)
            scores.setdefault(pol, {})[scene.name] = asdict(got)
            was = before.get(pol, {}).get(scene.name, {})
            miss = short_of(got, FLOORS[scene.name]) if pol == "contend" else []
            short += bool(miss)
            print(f"{pol:8} {scene.name:15} {cell(got.isolation, was.get('isolation')):>13} "
                  f"{cell(got.p05, was.get('p05')):>13} {cell(got.reaction, was.get('reaction'), 'd'):>7} "
                  f"{cell(got.spare, was.get('spare')):>13}" + (f"  ! {'; '.join(miss)}" if miss else ""))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(scores, f, indent=1)
    if short:
        print(f"{short} scene(s) below contend's floor (guard/scenes.py FLOORS)", file=sys.stderr)
    return 1 if short else 0


if __name__ == "__main__":
    sys.exit(main())
