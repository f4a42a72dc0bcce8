"""contend protect's model over a protect study's recorded frames: the changes it would make, per trial, with the
model as it is and with one of its settings changed (paired: the same frames, the setting the only difference).

A protect study keeps every trial's watch frames in its store. This replays them through this checkout's detector
and model (the pure parts: no cgroup is touched, and no culprit presses, so a hold is never kept past its blame by
pressing) and prints, per trial where either made a change, how many tightenings each made and when the first
came. It is the pure parts only: the actuators' presses and refusals are not replayed. Over the first control
run of 2026-12-07 it gave the one live tightening back exactly (runc harmony r3, 12.47 s, level 0.0535); in one
network trial of the second run it tightened a period before the live run did, which is not explained yet.

    .venv/bin/python bench/protect_replay.py results/protect-controls --set MIN_PART=0
"""
from __future__ import annotations

import argparse
from pathlib import Path

import contend.protect.model as model
from contend.kinds.detect.metrics import FRAME
from contend.protect.daemon import Protector
from contend.store import Store
from contend.watch.detector import Detector
from contend.watch.signals import Frame


def replay(frames: list[Frame]) -> list[float]:
    """When each tightening came (the trial's clock)."""
    d, m, out = Detector(), model.ProtectModel(), []
    for f in frames:
        d.step(f)
        out += [f.t for c in m.step(f.t, Protector.blames(d), {}, d.unsettled, d.severity) if c.why == "tighten"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path, help="a protect study's output directory")
    ap.add_argument("--set", default="MIN_PART=0", help="NAME=VALUE: a constant of protect/model.py for the B side")
    a = ap.parse_args()
    name, value = a.set.split("=", 1)
    was = getattr(model, name)
    store = Store(a.store, read_only=True)
    print(f"{'trial':40} {'as it is':>14} {a.set:>14}")
    for t in store.trials("ok"):
        frames = [Frame.from_json(e["detail"]) for e in store.events(t["trial_id"]) if e["kind"] == FRAME]
        setattr(model, name, was)
        now = replay(frames)
        setattr(model, name, type(was)(value))
        other = replay(frames)
        setattr(model, name, was)
        if now or other:
            def said(ts: list[float]) -> str:
                return f"{len(ts)} from {ts[0]:.1f} s" if ts else "0"
            print(f"{t['trial_id']:40} {said(now):>14} {said(other):>14}")


if __name__ == "__main__":
    main()
