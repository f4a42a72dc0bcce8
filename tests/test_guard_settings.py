"""The guard's settings table (guard/settings.py) drives every surface: the config's fields, `contend guard`'s
options, a study's sweep keys, the policy's constructor and the docs. Pure, no root."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from contend.cli import app
from contend.guard.config import GuardSettings
from contend.guard.policy import POLICIES, make
from contend.guard.settings import BY_NAME, KNOBS, NAMES, POLICY_ARGS, POLICY_OWN, policy_args, reads
from contend.kinds.guard.spec import READS, SETTINGS, GuardSpec

GONE = ("rise", "spread", "patience", "memory")  # measured, not kept, deleted 2026-12-07


def test_the_config_holds_every_knob_with_the_tables_default_bounds_and_meaning():
    assert tuple(GuardSettings.model_fields) == NAMES
    for k in KNOBS:
        f = GuardSettings.model_fields[k.name]
        assert f.default == k.default and f.description == k.help, k.name
        got = {type(m).__name__.lower(): getattr(m, type(m).__name__.lower()) for m in f.metadata}
        assert got == k.bounds, (k.name, got)


def test_contend_guard_has_one_option_per_knob_with_its_help():
    cmd = typer.main.get_command(app).commands["guard"]  # type: ignore[attr-defined]
    params = {p.name: p for p in cmd.params}
    for k in KNOBS:
        assert params[k.name].help == k.help, k.name
    assert not set(GONE) & set(params)
    out = CliRunner().invoke(app, ["guard", "--help"], terminal_width=200).output
    for k in KNOBS:
        assert (k.flags[0].split("/")[0] if k.flags else "--" + k.name.replace("_", "-")) in out, k.name


@pytest.mark.parametrize("args, message", [
    (["--hysteresis", "1"], "hysteresis: must be < 1"), (["--climb", "0"], "climb: must be > 0"),
    (["--period-ms", "5"], "period_ms: must be >= 10")])
def test_a_knob_out_of_its_bounds_is_one_line_naming_it(args, message):
    r = CliRunner().invoke(app, ["guard", "-t", "contend", *args])
    assert r.exit_code == 2 and message in r.output, r.output


def test_a_deleted_knob_is_refused_by_the_cli_the_config_and_a_study():
    r = CliRunner().invoke(app, ["guard", "-t", "contend", "--patience", "30"])
    assert r.exit_code == 2 and "No such option" in r.output
    with pytest.raises(ValueError, match="rise"):
        GuardSettings.model_validate({"rise": 0.1})
    doc = {"kind": "guard", "name": "g", "policies": ["none", "contend"],
           "workloads": [{"name": "w"}]}
    GuardSpec.model_validate({**doc, "sweep": {"backoff": [0.9, 0.7]}})  # the same study, a knob that is
    with pytest.raises(ValueError, match="memory: not a setting"):
        GuardSpec.model_validate({**doc, "sweep": {"memory": [0, 300]}})


def test_every_knob_can_be_swept_and_each_policy_reads_what_the_table_says():
    assert SETTINGS == ("capacity", *NAMES)
    for policy in POLICIES:
        assert set(READS[policy]) - {"capacity"} == set(reads(policy))
        assert ("capacity" in READS[policy]) == (policy in ("static", "aridac", "contend", "hybrid"))


def test_the_policy_gets_the_settings_it_reads_and_its_own_defaults_for_the_rest():
    values = {"window": 7, "p": 0.5, "backoff": 0.7, "climb": 0.05, "latency_ms": 2.0}
    assert set(values) == set(POLICY_ARGS) and set(POLICY_OWN) == set(POLICY_ARGS) - {"window"}
    for name in POLICIES:
        pol = make(name, **values, floor=0.1, period_ms=250)  # the guard's own: never the policy's
        for k, v in values.items():
            if name in BY_NAME[k].reads:
                assert getattr(pol, k) == v, (name, k)
        assert policy_args(name, {k: None for k in values}) == {}  # None: the class's own
    assert make("hybrid", backoff=0.7).inner.backoff == 0.7  # the hybrid's contend policy runs with its settings


def test_docs_guard_md_names_every_knob_and_none_deleted():
    table = Path(__file__).parents[1].joinpath("docs/guard.md").read_text().split("| option | meaning |")[1]
    table = table.split("\n\n")[0]
    for k in KNOBS:
        assert "--" + k.name.replace("_", "-") in table, k.name
    assert not re.search(r"--(rise|spread|patience|memory)\b", table)
