"""The detector of two revisions over the same recorded frames: paired, so the change is the only difference.

A detect study keeps every trial's watch frames whole (`frames/TRIAL.jsonl`, and in its store). This replays them
through the detector of this checkout and of `--before` (another checkout's `src`, a `git worktree`), judges each
against the trial's known answer as the study's report does (this checkout's judging for both), and prints per
case: found, ranked first, the detection latency (median and worst over the found trials, from the antagonist's
first use) and false blames, one line per revision. The replay of the study's own revision gives its live
verdicts back exactly: the frames are what the watch saw, so the same trials judged twice differ only by the
detector.

    git worktree add /tmp/wb HEAD~1
    .venv/bin/python bench/detect_replay.py --before /tmp/wb/src /var/tmp/crowd/rec100-1 /var/tmp/crowd/rec0-2
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import types
from collections import defaultdict
from pathlib import Path

from contend.kinds.detect.cell import DetectCell
from contend.kinds.detect.metrics import FRAME
from contend.kinds.detect.report import judged
from contend.store import Store
from contend.watch.signals import Frame

HERE = Path(__file__).resolve().parents[1] / "src"


def detector_of(src: Path) -> type:
    """The Detector class of a checkout's `src` (its watch/detector.py alone; Frame and the rest from this one)."""
    text = (src / "contend/watch/detector.py").read_text().replace("from .signals import",
                                                                   "from contend.watch.signals import")
    module = types.ModuleType(f"detector_{abs(hash(str(src)))}")
    sys.modules[module.__name__] = module  # dataclasses look their module up by name
    exec(compile(text, str(src / "contend/watch/detector.py"), "exec"), module.__dict__)
    return module.Detector


def judge(detector: type, studies: list[str]) -> list[dict]:
    """Each ok trial's figures, its frames replayed through a fresh `detector`."""
    out = []
    for d in studies:
        st = Store(Path(d), read_only=True, cell=DetectCell)
        for t in st.trials("ok"):
            frames = [Frame.from_json(e["detail"]) for e in st.events(t["trial_id"]) if e["kind"] == FRAME]
            if frames:
                det = detector()
                out.append({"case": t["scenario"], **judged(t, [e for f in frames for e in det.step(f)])})
    return out


def table(rows: list[dict]) -> dict[str, str]:
    cells: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        cells[r["case"]].append(r)
    out = {}
    for case, ms in sorted(cells.items()):
        def mean(k: str) -> str:
            v = [m[k] for m in ms if k in m and math.isfinite(m[k])]
            return f"{statistics.mean(v):.2f}" if v else "-"
        lat = [m["latency_s"] for m in ms if math.isfinite(m.get("latency_s", math.nan))]
        p50, worst = (statistics.median(lat), max(lat)) if lat else (math.nan, math.nan)
        out[case] = (f"n={len(ms):2d} found {mean('detected'):>4} first {mean('first_right'):>4} "
                     f"latency p50 {p50:5.2f} max {worst:5.2f} "
                     f"false {sum(m.get('false_blames', 0.0) for m in ms):3.0f}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("studies", nargs="+", help="detect studies' results directories (their contend.duckdb)")
    ap.add_argument("--before", type=Path, help="another checkout's src: its detector replayed beside this one's")
    a = ap.parse_args()
    revs = [("before", a.before.resolve())] if a.before else []
    tabs = {name: table(judge(detector_of(src), a.studies)) for name, src in [*revs, ("now", HERE)]}
    for case in sorted({c for t in tabs.values() for c in t}):
        for name, t in tabs.items():
            print(f"{case:12} {name:7} {t.get(case, '-')}")


if __name__ == "__main__":
    main()
