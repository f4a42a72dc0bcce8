"""Fuzzed spec documents: the presets mutated (values replaced, keys removed or added, numbers scaled to 0,
negative or huge), random YAML values, and text that is not YAML at all. Each goes through `contend run SPEC
--dry-run` in process, and must validate (exit 0, nothing created) or be an exit-2 error of one line.

    .venv/bin/python fuzz/specs.py [-n 20000]      # more than the 2,000 of tests/test_fuzz.py
"""
from __future__ import annotations

import argparse
import copy
import sys
import tempfile
import time
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
PRESET_DOCS = [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "presets").glob("*.yaml"))]
WORDS = ["runc", "runsc", "crun", "lxc", "kata", "docker", "cpu", "memory", "disk", "network", "harmony",
         "escape", "overcommit", "steal", "guard", "parallel", "diskfill", "oltp", "isolation", "1G", "512Mi",
         "10%", "-5%", "0", "-1", "", "auto", "linpack", "stream", "fio", "postgresql", "contend", "aridac"]
scalars = (st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=10) | st.sampled_from(WORDS))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8) | st.sampled_from(WORDS), inner, max_size=4),
                      max_leaves=8)


def _nodes(doc, parent=None, key=None):
    """(parent, key) of every node below the top."""
    if parent is not None:
        yield parent, key
    if isinstance(doc, dict):
        for k in list(doc):
            yield from _nodes(doc[k], doc, k)
    elif isinstance(doc, list):
        for i in range(len(doc)):
            yield from _nodes(doc[i], doc, i)


@st.composite
def documents(draw) -> tuple[str, list[str]]:
    """(the spec file's text, extra command-line arguments)."""
    extra = draw(st.sampled_from([[], ["--quick"], ["-n", "1"], ["--quick", "-n", "3"]]))
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.text(max_size=80)), extra
    if shape == 1:
        return yaml.safe_dump(draw(values)), extra
    doc = copy.deepcopy(draw(st.sampled_from(PRESET_DOCS)))
    for _ in range(draw(st.integers(0, 3))):
        nodes = list(_nodes(doc))
        if not nodes:
            break
        parent, key = draw(st.sampled_from(nodes))
        op = draw(st.sampled_from(["set", "delete", "add", "scale", "scale"]))
        old = parent[key]
        if op == "set":
            parent[key] = draw(values)
        elif op == "delete":
            del parent[key]
        elif op == "add" and isinstance(old, dict):
            old[draw(st.text(max_size=8) | st.sampled_from(WORDS))] = draw(values)
        elif op == "scale" and isinstance(old, (int, float)) and not isinstance(old, bool):
            parent[key] = old * draw(st.sampled_from([0, -1, 0.5, 1000, 1e9]))
    return yaml.safe_dump(doc, sort_keys=False), extra


def check_document(case: tuple[str, list[str]], tmp: Path) -> int:
    """Run one document through the CLI; assert the contract; return the exit code."""
    from typer.testing import CliRunner

    from contend.cli import app
    text, extra = case
    spec, out = tmp / "spec.yaml", tmp / "out"
    spec.write_text(text)
    r = CliRunner().invoke(app, ["run", str(spec), "--dry-run", "--out", str(out), *extra])
    said = f"\n--- document ---\n{text}\n--- args {extra}\n--- stdout ---\n{r.stdout}\n--- stderr ---\n{r.stderr}"
    assert r.exception is None or isinstance(r.exception, SystemExit), f"{r.exception!r}{said}"
    assert r.exit_code in (0, 2), f"exit {r.exit_code}{said}"
    assert "Traceback" not in r.stdout + r.stderr, said
    if r.exit_code == 2:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("contend: "), said
    else:
        out_text = " ".join(r.stdout.split())
        assert "valid;" in out_text and "nothing started" in out_text, said
    assert not out.exists(), "a dry run created the results directory" + said
    return r.exit_code


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=20_000, help="How many documents (default 20,000).")
    a = ap.parse_args()
    codes = {0: 0, 2: 0}
    t0 = time.monotonic()

    @settings(max_examples=a.n, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(case=documents())
    def run(case):
        with tempfile.TemporaryDirectory() as d:
            codes[check_document(case, Path(d))] += 1

    run()
    secs = time.monotonic() - t0
    print(f"{sum(codes.values())} documents in {secs:.0f} s: {codes[0]} valid, {codes[2]} refused with one line "
          f"(exit 2); no traceback, nothing started")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    sys.exit(main())
