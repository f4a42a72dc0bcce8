"""docs/architecture.md's recipe for a kind, made true: tests/kinds/echo is a kind written by it, every file of it
in its folder, added by one line (`register`, the registry's line at run time), and `contend run`, `report` and
`compare` know it with nothing else edited."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from .conftest import find, needs_root, runtime_or_skip

ROOT = Path(__file__).resolve().parent.parent
ECHO = ROOT / "tests" / "kinds" / "echo"


def contend_with_echo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.kinds.contend_with_echo", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})


def test_the_test_kind_is_one_folder_named_as_the_recipe_says():
    assert sorted(p.name for p in ECHO.iterdir() if not p.name.startswith("__")) == [
        "cell.py", "metrics.py", "report.html.j2", "report.py", "spec.py", "study.py"]
    from contend.kinds import KINDS
    assert "echo" not in KINDS  # contend itself does not know it: only the line in contend_with_echo adds it
    text = (ECHO / "study.py").read_text()
    assert "class EchoStudy(Study, kind=\"echo\", model=EchoSpec, cell=EchoCell" in text


@needs_root
def test_a_kind_made_by_the_recipe_runs_reports_and_compares_end_to_end(tmp_path):
    runtime_or_skip("runc")
    spec = tmp_path / "echo.yaml"
    spec.write_text("kind: echo\nname: hello\nruntimes: [runc]\nrepetitions: 2\nwords: 5\n")
    out = tmp_path / "out"
    p = contend_with_echo("run", str(spec), "--out", str(out))
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = {r["metric"]: r for r in csv.DictReader(open(out / "metrics.csv"))}
    assert float(rows["words_back"]["value"]) == 5 and rows["words_back"]["n"] == "2"
    assert 0 < float(rows["echo_s"]["value"]) < 30 and rows["echo_s"]["runtime"] == "runc"
    html = (out / "report.html").read_text()
    assert "echo in a container" in html and "<h1>echo: hello</h1>" in html
    (out / "report.html").unlink()
    r = contend_with_echo("report", str(out))
    assert r.returncode == 0 and (out / "report.html").exists(), r.stdout[-2000:] + r.stderr[-2000:]
    c = contend_with_echo("compare", str(out), str(out), "--json")
    assert c.returncode == 0, c.stdout[-2000:] + c.stderr[-2000:]
    tally = json.loads(c.stdout)["tally"]
    assert tally["same"] == 2 and tally["unknown"] == 0, tally  # echo_s and words_back, judged by echo's directions
    assert find() == []
