"""Bad input gets exit 2 and one line naming file, field path and rule; never a traceback."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contend.kinds import MODELS, load, parse
from contend.kinds.isolation.plan import plan
from contend.spec import STANDARD, SpecError

from .conftest import contend

ROOT = Path(__file__).resolve().parents[1]
GOOD = {"name": "t", "runtimes": ["runc"], "scenarios": ["harmony"], "resources": ["cpu"]}


@pytest.mark.parametrize("preset", sorted((ROOT / "presets").rglob("*.yaml")),  # presets/guard-studies/ too
                         ids=lambda p: p.name)
def test_presets_validate(preset):
    assert isinstance(load(preset), tuple(MODELS.values()))


@pytest.mark.parametrize("change,expected", [
    ({"repetitions": "three"}, "spec.yaml: repetitions: input should be a valid integer"),
    ({"trial": {"steps": -2}}, "spec.yaml: trial.steps: must be > 0"),
    ({"trial": {"step_s": 0}}, "spec.yaml: trial.step_s: must be > 0"),
    ({"colour": "red"}, "spec.yaml: colour: unknown key"),
    ({"trial": {"stepz": 3}}, "spec.yaml: trial.stepz: unknown key"),
    ({"runtimes": ["runc", "dockr"]}, "spec.yaml: runtimes[1]: unknown runtime 'dockr'"),
    ({"scenarios": ["harmony", {"name": "x", "w_a": 1, "l_a": 2, "w_d": 1, "l_d": 0.5}]},
     "spec.yaml: scenarios[1].l_a: must be <= 1"),
    ({"scenarios": ["harmony", "harmonie"]}, "spec.yaml: scenarios[1]: unknown scenario 'harmonie'"),
    ({"resources": []}, "spec.yaml: resources: must have at least 1 item"),
    ({"resources": ["gpu"]}, "spec.yaml: resources[0]: must be one of"),
    ({"resources": ["cpu", "disk", "cpu"]}, "spec.yaml: resources[2]: resource 'cpu' given twice"),
    ({"trial": {"steps": 0}}, "spec.yaml: trial.steps: must be > 0"),
    ({"scenarios": [{"name": "x", "w_a": 1, "l_a": 0.5, "w_d": 1, "l_d": 1.2}]},
     "spec.yaml: scenarios[0].l_d: must be <= 1"),
    ({"capacity": {"memory_bytes": 1000}}, "spec.yaml: capacity.memory_bytes: must be >= 67108864"),
    ({"quick": {"trial": {"steps": 0}}}, "spec.yaml: quick.trial.steps: must be > 0"),
    ({"capacity": {"disk_block": "6K"}}, "spec.yaml: capacity.disk_block: must be a multiple of 4K from 4K to 4M"),
    ({"capacity": {"disk_block": "8M"}}, "spec.yaml: capacity.disk_block: must be a multiple of 4K from 4K to 4M"),
    ({"capacity": {"disk_block": "1MB"}}, "spec.yaml: capacity.disk_block: must match"),
])
def test_malformed_spec_is_one_clear_line_and_exit_2(tmp_path, change, expected):
    doc = {**GOOD, **change}
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(doc))
    p = contend("run", "spec.yaml", cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    assert expected in lines[0], lines[0]
    assert not (tmp_path / "results").exists(), "nothing was started"


def test_missing_file_and_broken_yaml(tmp_path):
    p = contend("run", str(tmp_path / "nope.yaml"))
    assert p.returncode == 2 and p.stderr.strip() == f"contend: {tmp_path / 'nope.yaml'}: no such file"
    (tmp_path / "bad.yaml").write_text("name: [unclosed\n")
    p = contend("run", str(tmp_path / "bad.yaml"))
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1
    assert "not valid YAML" in p.stderr
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    p = contend("run", str(tmp_path / "list.yaml"))
    assert p.returncode == 2 and "must be a mapping" in p.stderr


def test_standard_scenarios_are_volpert_table_1():
    assert {k: (s.w_a, s.l_a, s.w_d, s.l_d) for k, s in STANDARD.items()} == {
        "harmony": (1.0, 0.5, 1.0, 0.5), "escape": (1.0, 0.5, 1.5, 0.5),
        "overcommit": (1.0, 0.5, 1.0, 0.75), "steal": (0.5, 0.5, 1.0, 0.75)}
    assert STANDARD["escape"].disruptive_level == pytest.approx(0.75)


def test_quick_replaces_repetitions_trial_and_capacity():
    spec = load(ROOT / "presets" / "volpert-icpe24.yaml")
    q = spec.quickened()
    assert spec.repetitions == 10 and q.repetitions == 1 and q.name == "volpert-icpe24-quick"
    assert q.trial == spec.quick.trial and q.capacity == spec.quick.capacity
    assert q.resources == ["cpu", "memory", "disk", "network"] and q.runtimes == spec.runtimes


def test_memory_overcommit_is_planned_but_not_run():
    spec = load(ROOT / "presets" / "volpert-icpe24.yaml")
    skipped = {(t.scenario.name, t.resource) for t in plan(spec) if t.not_run}
    assert skipped == {("overcommit", "memory")}


def test_planner_puts_repetitions_outermost():
    spec = parse(yaml.safe_dump({**GOOD, "runtimes": ["runc", "runsc"], "repetitions": 2}))
    ids = [t.id for t in plan(spec)]
    assert ids == ["runc.harmony.cpu.r1", "runsc.harmony.cpu.r1", "runc.harmony.cpu.r2", "runsc.harmony.cpu.r2"]


# Fuzzed documents: every one validates or raises SpecError with one line (issue 8 extends this).
values = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True) | st.text(max_size=8),
                      lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3),
                      max_leaves=8)
keys = st.sampled_from(["name", "runtimes", "scenarios", "resources", "repetitions", "trial", "probes", "metrics",
                        "description", "x"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.booleans(), extra=st.dictionaries(keys, values, max_size=4))
def test_fuzzed_specs_validate_or_fail_in_one_line(base, extra):
    doc = {**(GOOD if base else {}), **extra}
    try:
        parse(yaml.safe_dump(doc), "fuzz.yaml")
    except SpecError as e:
        msg = str(e)
        assert msg.startswith("fuzz.yaml") and "\n" not in msg
