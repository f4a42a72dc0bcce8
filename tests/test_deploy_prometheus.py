"""The Prometheus rules and the Grafana dashboard people load (deploy/prometheus, deploy/grafana): promtool
checks and unit-tests the rules; every query of the rules and the dashboard names only metrics, labels and
signals the watch really exports (its exporter, WatchMetrics, fed a frame and a verdict)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml
from prometheus_client import generate_latest

from contend.watch.daemon import WatchMetrics
from contend.watch.detector import Verdict
from contend.watch.signals import Frame

from .conftest import needs_root, require

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "deploy/prometheus/contend-watch.rules.yaml"
RULE_TESTS = ROOT / "tests/prometheus/contend-watch.test.yaml"
DASHBOARD = ROOT / "deploy/grafana/contend-watch.json"
SCRAPED = {"instance", "job"}  # the labels Prometheus adds to every scraped series
BUILTIN = {"up": SCRAPED, "ALERTS": {"alertname", "alertstate"}}  # Prometheus's own series


def exported() -> dict[str, set[str]]:
    """Each metric the watch exports with its label names, from its real exporter after a period with a verdict
    of two culprits."""
    m = WatchMetrics("off")
    frame = Frame(1.0, 1.0, {"a/victim/c": {s: 0.5 for s in WatchMetrics.SHOWN}, "b/noisy/c": {"cpu": 1.0}})
    v = Verdict("a/victim/c", "cpu", "blame", "b/noisy/c", 0.8, 0.0, "test",
                culprits=[("b/noisy/c", 0.8), ("host", 0.1)])
    m.update(frame, [v])
    text = generate_latest(m.registry).decode()
    out: dict[str, set[str]] = {}
    for line in text.splitlines():
        if match := re.match(r"(\w+)\{([^}]*)\}", line):
            out.setdefault(match[1], set()).update(re.findall(r'(\w+)="', match[2]))
    return {name: labels | SCRAPED for name, labels in out.items()}


def rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]


def known() -> dict[str, set[str]]:
    """Metrics a query may name: the watch's, Prometheus's own, and the recording rules' (with the labels their
    `by` keeps, else their source's; ALERTS carries every label of the alerts)."""
    out = {**exported(), **{k: set(v) for k, v in BUILTIN.items()}}
    for r in rules():
        if "record" in r:
            by = re.search(r"by \(([^)]*)\)", r["expr"])
            src = metrics_in(r["expr"])
            out[r["record"]] = ({x.strip() for x in by[1].split(",")} if by
                                else set().union(*(out[s] for s in src)))
        else:
            out["ALERTS"] |= set(r.get("labels", {})) | set().union(*(out[s] for s in metrics_in(r["expr"])))
            out["ALERTS"] |= set(re.findall(r'"(\w+)", "\$1"', r["expr"]))  # label_replace's new labels
    return out


def strip_strings(expr: str) -> str:
    return re.sub(r'"[^"]*"', '""', expr)


def metrics_in(expr: str) -> set[str]:
    """The series names a PromQL expression selects (contend's, the recording rules', Prometheus's own)."""
    bare = strip_strings(expr)
    names = set(re.findall(r"\b(contend_\w+|[a-z_]+:[a-z_]+:\w+)\b", bare))
    return names | {b for b in BUILTIN if re.search(rf"\b{b}\b\s*(\{{|\)|$| )", bare)}


def labels_in(expr: str, legend: str = "") -> set[str]:
    """Every label name an expression matches on, groups by or a legend shows."""
    out = {lab for sel in re.findall(r"\{([^}]*)\}", expr) for lab in re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", sel)}
    for grouped in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", strip_strings(expr)):
        out |= {x.strip() for x in grouped.split(",") if x.strip()}
    return out | set(re.findall(r"\{\{\s*(\w+)\s*\}\}", legend))


def signals_in(expr: str) -> set[str]:
    return set(re.findall(r'signal="(\w+)"', expr))


def queries() -> list[tuple[str, str, str]]:
    """(where, expr, legend) of every query the dashboard and the rules make."""
    dash = json.loads(DASHBOARD.read_text())
    out = [(f"panel {p['id']} ({p['title']})", t["expr"], t.get("legendFormat", ""))
           for p in dash["panels"] for t in p.get("targets", [])]
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+), (\w+)\)", v["definition"])
            assert m, f"variable {v['name']}: {v['definition']}"
            out.append((f"variable {v['name']}", m[1] + "{" + m[2] + '=""}', ""))
    out += [(r.get("record") or r["alert"], r["expr"], "") for r in rules()]
    return out


def test_every_query_names_what_the_watch_exports():
    have = known()
    assert {"contend_watch_verdict", "contend_watch_blame_share", "contend_watch_signal"} <= set(have)
    qs = queries()
    assert len(qs) >= 12
    for where, expr, legend in qs:
        names = metrics_in(expr)
        assert names, f"{where}: selects no metric: {expr}"
        unknown = names - set(have)
        assert not unknown, f"{where}: {sorted(unknown)} is exported by nothing (the watch exports {sorted(have)})"
        labels = set().union(*(have[n] for n in names))
        assert labels_in(expr, legend) <= labels, \
            f"{where}: labels {sorted(labels_in(expr, legend) - labels)} are not on {sorted(names)}"
        assert signals_in(expr) <= set(WatchMetrics.SHOWN), f"{where}: a signal the watch does not export"


def test_the_checks_catch_a_wrong_name_label_or_signal():
    have = known()
    assert metrics_in('rate(contend_watch_verdicts_total[5m])') - set(have) == {"contend_watch_verdicts_total"}
    assert labels_in('sum by (pod) (contend_watch_blame_share)') - have["contend_watch_blame_share"] == {"pod"}
    assert labels_in("contend_watch_signal", "{{ node }}") - have["contend_watch_signal"] == {"node"}
    assert signals_in('contend_watch_signal{signal="net_rtt_ms"}') - set(WatchMetrics.SHOWN) == {"net_rtt_ms"}


def test_the_dashboard_is_one_grafana_can_import():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["uid"] and dash["title"] and isinstance(dash["schemaVersion"], int)
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for p in dash["panels"]:
        assert {"x", "y", "w", "h"} <= set(p["gridPos"]) and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["datasource"]["uid"] == "${datasource}", f"panel {p['id']}: not the dashboard's data source"
        assert [t["refId"] for t in p["targets"]], f"panel {p['id']}: no query"
    assert {v["name"] for v in dash["templating"]["list"]} == {"datasource", "node"}


@needs_root
def test_promtool_checks_the_rules_and_their_unit_tests_pass():
    require("promtool")
    check = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(rules())} rules found" in check.stdout
    run = subprocess.run(["promtool", "test", "rules", str(RULE_TESTS)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0 and "SUCCESS" in run.stdout, run.stdout + run.stderr


@needs_root
def test_promtool_fails_the_alert_without_its_minute(tmp_path):
    """The unit tests can fail: the alert firing at once (no `for`) breaks their first expectation."""
    require("promtool")
    text = RULES.read_text()
    assert "        for: 1m\n" in text
    (tmp_path / "deploy/prometheus").mkdir(parents=True)
    (tmp_path / "deploy/prometheus" / RULES.name).write_text(text.replace("        for: 1m\n", "", 1))
    (tmp_path / "tests/prometheus").mkdir(parents=True)
    (tmp_path / "tests/prometheus" / RULE_TESTS.name).write_text(RULE_TESTS.read_text())
    run = subprocess.run(["promtool", "test", "rules", str(tmp_path / "tests/prometheus" / RULE_TESTS.name)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and "FAILED" in run.stdout + run.stderr


def test_the_exporters_series_follow_the_frames_kept_between_periods_removed_when_gone():
    """WatchMetrics keeps each container's series from one period to the next (made anew each period, they cost
    4 ms a period on a node of 110 pods): a value is set again, a signal that reads nan and a container gone
    leave the endpoint, as they did when every series was made anew."""
    m = WatchMetrics("off")

    def shown() -> dict[tuple[str, str], float]:
        text = generate_latest(m.registry).decode()
        return {(c, s): float(v) for c, s, v in
                re.findall(r'contend_watch_signal\{container="([^"]+)",signal="([^"]+)"\} (\S+)', text)}
    m.update(Frame(1.0, 1.0, {"a": {"cpu": 0.5, "mem": 1e6}, "b": {"cpu": 1.0}}), [])
    assert shown() == {("a", "cpu"): 0.5, ("a", "mem"): 1e6, ("b", "cpu"): 1.0}
    m.update(Frame(2.0, 1.0, {"a": {"cpu": 0.7, "mem": float("nan")}}), [])
    assert shown() == {("a", "cpu"): 0.7}
    m.update(Frame(3.0, 1.0, {"a": {"cpu": 0.1, "mem": 2e6}, "b": {"cpu": 0.2}}), [])
    assert shown() == {("a", "cpu"): 0.1, ("a", "mem"): 2e6, ("b", "cpu"): 0.2}
