"""The cluster box: manifests rendered from specs and checked against the pinned Kubernetes 1.28 and Argo
Workflows v3.5.0 schemas (no cluster needed), and the per-trial path that a cluster's pods run (contend trial
run) with the merge of its artifacts (contend cluster collect), run here on real containers."""
from __future__ import annotations

import copy
import csv
import json
import tarfile
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from contend.cluster import render
from contend.cluster.validate import kubernetes_for, problem, validate_dir
from contend.kinds import load, open_store, parse, study_for
from contend.spec import digest
from contend.store import Store

from .conftest import contend, needs_root, one_line_exit_2, require, runtime_or_skip, tiny_spec

PRESETS = Path(__file__).parent.parent / "presets"
FANNED_OUT = ["volpert-icpe24.yaml", "quick.yaml", "aridac-workloads.yaml", "copts-middleware23.yaml",
              "wisa25-diskfill.yaml"]


def docs(directory: Path, name: str) -> list[dict]:
    return list(yaml.safe_load_all((directory / name).read_text()))


@pytest.mark.parametrize("preset", FANNED_OUT)
def test_every_fanned_out_preset_renders_valid_manifests(preset, tmp_path):
    p = contend("cluster", "render", str(PRESETS / preset), "--quick", "--out", str(tmp_path), "--parallelism", "6")
    assert p.returncode == 0, p.stdout + p.stderr
    n, problems = validate_dir(tmp_path)
    assert problems == [] and n >= 5
    spec = load(PRESETS / preset).quickened()
    trials = study_for(spec, tmp_path, None).trials()
    (wf,) = docs(tmp_path, "workflow.yaml")
    study, trial, collect = wf["spec"]["templates"]
    items = study["steps"][0][0]["withItems"]
    assert [(i["id"], i["runtime"]) for i in items] == trials  # one pod per trial of the plan, in its order
    assert study["steps"][1][0]["template"] == "collect" and wf["spec"]["parallelism"] == 6
    # the pod's spec is the study's: it plans the same trials under the same digest
    (cm,) = docs(tmp_path, "spec-configmap.yaml")
    again = parse(cm["data"]["spec.yaml"])
    assert digest(again) == digest(spec) and study_for(again, tmp_path, None).trials() == trials
    classes = {d["metadata"]["name"]: d for d in docs(tmp_path, "runtimeclasses.yaml")}
    assert set(classes) == {rt for _, rt in trials} & set(render.HANDLERS)  # lxc has no CRI handler


def test_a_trial_pod_is_privileged_alone_on_a_node_with_its_runtime_and_resets_it_first(tmp_path):
    assert contend("cluster", "render", str(PRESETS / "quick.yaml"), "--out", str(tmp_path),
                   "--node-label", "lab=isolation", "--image", "reg.example/contend:1").returncode == 0
    (wf,) = docs(tmp_path, "workflow.yaml")
    trial = wf["spec"]["templates"][1]
    aff = trial["affinity"]
    (term,) = aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {e["key"]: e["values"] for e in term["matchExpressions"]} == {
        "lab": ["isolation"], "contend.io/runtime-{{inputs.parameters.runtime}}": ["true"]}
    (anti,) = aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["topologyKey"] == "kubernetes.io/hostname" and anti["namespaceSelector"] == {}
    assert anti["labelSelector"]["matchLabels"] == {"contend.io/role": "trial"}
    assert trial["metadata"]["labels"]["contend.io/role"] == "trial"
    assert json.loads(trial["podSpecPatch"]) == {"hostPID": True}
    (reset,) = trial["initContainers"]
    assert "contend clean" in reset["command"][-1] and "drop_caches" in reset["command"][-1]
    main = trial["container"]
    assert main["image"] == "reg.example/contend:1" and main["securityContext"] == {"privileged": True}
    assert main["command"][:3] == ["contend", "trial", "run"] and "{{inputs.parameters.trial-id}}" in main["command"]
    assert main["env"] == [{"name": "CONTEND_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
    mounts = {m["mountPath"] for m in main["volumeMounts"]}
    assert {"/sys/fs/cgroup", "/sys/kernel/tracing", "/var/lib/contend", "/run/contend"} <= mounts
    (art,) = trial["outputs"]["artifacts"]
    assert art["s3"]["key"] == "contend/{{workflow.name}}/trials/{{inputs.parameters.trial-id}}.tgz"
    (inp,) = wf["spec"]["templates"][2]["inputs"]["artifacts"]
    assert inp["s3"]["key"] == "contend/{{workflow.name}}/trials"  # the collect step reads every trial's


def test_the_validators_are_strict(tmp_path):
    """Each schema rejects what the API server would: an unknown field, a wrong type, a missing field."""
    render.write(tmp_path, render.study_manifests(load(PRESETS / "quick.yaml"), [("runc.harmony.cpu.r1", "runc")],
                                                  render.Options()))
    render.write(tmp_path, render.guard_manifests(render.GUARD_DEFAULT, render.Options(node_label="")))
    (wf,) = docs(tmp_path, "workflow.yaml")
    assert problem(wf) is None
    bad = copy.deepcopy(wf)
    bad["spec"]["templates"][1]["hostPID"] = True  # a pod field, not a template's: what podSpecPatch is for
    assert "('hostPID' was unexpected)" in problem(bad) and "Argo Workflows v3.5.0" in problem(bad)
    bad = copy.deepcopy(wf)
    bad["spec"]["templates"][1]["container"]["command"] = "contend trial run"
    assert "spec.templates[1].container.command" in problem(bad) and "not of type 'array'" in problem(bad)
    (ds,) = docs(tmp_path, "guard-daemonset.yaml")
    assert problem(ds) is None
    ds["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = "metrics"
    assert problem(ds).startswith("spec.template.spec.containers[0].ports[0].containerPort: 'metrics' is not of "
                                  "type 'integer'")
    (rc,) = docs(tmp_path, "runtimeclasses.yaml")
    del rc["handler"]
    assert problem(rc) == "(top): 'handler' is a required property (Kubernetes 1.28.0)"
    assert "not a kind of Kubernetes" in problem({"apiVersion": "apps/v1", "kind": "DeamonSet"})
    (tmp_path / "broken.yaml").write_text(yaml.safe_dump(rc))
    p = contend("cluster", "validate", str(tmp_path))
    assert p.returncode == 1 and "broken.yaml: document 1 (RuntimeClass runc): (top): 'handler'" in p.stderr


def test_the_watch_daemonset_reads_every_pod_unprivileged_and_serves_metrics(tmp_path):
    p = contend("cluster", "render-watch", "--out", str(tmp_path))
    assert p.returncode == 0, p.stdout + p.stderr
    assert validate_dir(tmp_path) == (3, [])
    (ds,) = docs(tmp_path, "watch-daemonset.yaml")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["command"][:3] == ["contend", "watch", "--json"] and "--no-ebpf" in c["command"]
    assert "k8s:" in c["command"] and "0.0.0.0:9733" in c["command"]
    # issue 95 M1: no CRI socket (a read-only mount of it still lets connect(2) create a privileged pod:
    # test_security); the pods' names from the kubelet's links, their directory read-only
    assert "--cri" not in c["command"] and "cri" not in {v["name"] for v in pod["volumes"]}
    assert c["command"][c["command"].index("--pod-names") + 1] == "logs"
    assert c["command"][c["command"].index("--pod-logs") + 1] == "/var/log/containers"
    assert {"name": "pod-logs", "hostPath": {"path": "/var/log/containers", "type": "Directory"}} in pod["volumes"]
    assert not any(v["hostPath"]["type"] == "Socket" for v in pod["volumes"] if "hostPath" in v)
    assert all(m.get("readOnly") for m in c["volumeMounts"])
    assert c["securityContext"]["privileged"] is False and c["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # issue 52 M4: read-only all the way down (the v1 controllers are mounts of their own below /sys/fs/cgroup), a
    # field Kubernetes 1.28 does not have: this document is checked against 1.33's schema, and 1.28's refuses it
    assert [(m.get("readOnly"), m.get("recursiveReadOnly")) for m in c["volumeMounts"]
            if m["mountPath"] == "/sys/fs/cgroup"] == [(True, "Enabled")]
    assert kubernetes_for(ds) == "1.33.0" and "mountPropagation" not in str(c["volumeMounts"])
    with pytest.raises(kubernetes_validate.ValidationError, match="recursiveReadOnly"):
        kubernetes_validate.validate(ds, "1.28.0", strict=True)
    # issue 52 M4: the PSI-only watch is nobody (contend watch --no-ebpf needs no root: test_watch)
    assert c["securityContext"]["runAsUser"] == 65534 and c["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False
    (svc,) = docs(tmp_path, "watch-service.yaml")
    assert svc["spec"]["ports"][0]["port"] == 9733 and svc["spec"]["selector"] == ds["spec"]["selector"]["matchLabels"]
    one_line_exit_2(contend("cluster", "render-watch", "--out", str(tmp_path / "2"), "-t", "docker:web"),
                    "cgroup:PATH")
    one_line_exit_2(contend("cluster", "render-watch", "--out", str(tmp_path / "3"), "--cri", "/run/x.sock"),
                    "--cri", "unix:///")
    one_line_exit_2(contend("cluster", "render-watch", "--out", str(tmp_path / "4"), "--pod-names", "cri"),
                    "--pod-names cri", "nobody")
    one_line_exit_2(contend("cluster", "render-watch", "--out", str(tmp_path / "5"), "-t", "k8s:label=a=b"),
                    "labels", "--pod-names cri")


def test_the_ebpf_watch_daemonset_holds_two_capabilities_as_root_and_mounts_tracefs_and_btf_read_only(tmp_path):
    p = contend("cluster", "render-watch", "--out", str(tmp_path), "--ebpf", "--pod-names", "cri", "--cri",
                "unix:///var/run/crio/crio.sock", "-t", "k8s:shop/*")
    assert p.returncode == 0, p.stdout + p.stderr
    assert validate_dir(tmp_path) == (3, [])
    (ds,) = docs(tmp_path, "watch-daemonset.yaml")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert "--no-ebpf" not in c["command"] and c["command"][-2:] == ["-t", "k8s:shop/*"]
    sc = c["securityContext"]
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["BPF", "PERFMON", "SYS_ADMIN"]} and sc["runAsUser"] == 0
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and "hostPID" not in pod
    mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
    assert set(mounts) == {"/sys/fs/cgroup", "/sys/kernel/tracing", "/sys/kernel/btf", "/var/run/crio/crio.sock"}
    assert all(m["readOnly"] for m in mounts.values())
    assert mounts["/sys/kernel/tracing"]["recursiveReadOnly"] == "Enabled"


def test_the_guard_daemonset_protects_every_pod_and_serves_metrics(tmp_path):
    p = contend("cluster", "render-guard", "--out", str(tmp_path), "--capacity", "259:0=2G")
    assert p.returncode == 0, p.stdout + p.stderr
    assert validate_dir(tmp_path) == (4, [])
    (ds,) = docs(tmp_path, "guard-daemonset.yaml")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    assert c["ports"][0]["name"] == "metrics"
    assert "/sys/fs/cgroup" in {m["mountPath"] for m in c["volumeMounts"]} and "nodeSelector" not in pod
    (svc,) = docs(tmp_path, "guard-service.yaml")
    assert svc["spec"]["ports"][0]["name"] == "metrics"
    assert svc["spec"]["selector"] == ds["spec"]["selector"]["matchLabels"]
    (cm,) = docs(tmp_path, "guard-configmap.yaml")
    from contend.guard.config import load as load_guard
    cfg = load_guard(None, yaml.safe_load(cm["data"]["guard.yaml"]))
    assert cfg.policy == "contend" and cfg.metrics == "0.0.0.0:9731"
    # the default targets name pods under both cgroup drivers, not the QoS slices themselves
    import fnmatch
    pats = [t.target.removeprefix("cgroup:") for t in cfg.targets]
    for path in ("kubepods/pod0f1e2d", "kubepods/burstable/pod0f1e2d", "kubepods.slice/kubepods-pod0f1e_2d.slice",
                 "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod0f1e_2d.slice"):
        assert any(fnmatch.fnmatchcase(path, p) and path.count("/") == p.count("/") for p in pats), path
    for path in ("kubepods.slice/kubepods-burstable.slice", "kubepods/burstable"):
        assert not any(fnmatch.fnmatchcase(path, p) and path.count("/") == p.count("/") for p in pats), path
    assert [d.device for d in cfg.disks] == ["259:0"]
    cfg_file = tmp_path / "g.yaml"
    cfg_file.write_text("targets: ['cgroup:kubepods*/*pod[0-9a-f]*']\npolicy: aridac\n"
                        "disks: [{device: '259:0', capacity: 2G}]\n")
    assert contend("cluster", "render-guard", "--out", str(tmp_path / "2"), "--config", str(cfg_file),
                   "--node-label", "disk=nvme").returncode == 0
    (ds,) = docs(tmp_path / "2", "guard-daemonset.yaml")
    assert ds["spec"]["template"]["spec"]["nodeSelector"] == {"disk": "nvme"}


def test_the_guard_daemonset_has_least_privilege(tmp_path):
    """Issue 21: privileged, every node (control plane included), the service-account token, metrics open
    to all, no memory limit, and a first start that calibrated every node's disk at once."""
    assert contend("cluster", "render-guard", "--out", str(tmp_path), "--capacity", "259:0=2G").returncode == 0
    (ds,) = docs(tmp_path, "guard-daemonset.yaml")
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    sc = c["securityContext"]
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"]
    assert sc["capabilities"] == {"drop": ["ALL"]} and sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "tolerations" not in pod and pod["automountServiceAccountToken"] is False
    (term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [{"key": "node-role.kubernetes.io/control-plane", "operator": "DoesNotExist"}]
    assert c["resources"]["limits"]["memory"] and c["resources"]["limits"]["cpu"]
    assert "/var/lib/contend" not in {m["mountPath"] for m in c["volumeMounts"]}  # nothing to calibrate
    (np_,) = docs(tmp_path, "guard-networkpolicy.yaml")
    # issue 52 M4: metrics from the scraper's namespace only (every pod's was let in), and of /run/contend only
    # the guard's own state (trial pods' bundles are there: rewriting one's config.json is root on the node)
    assert np_["spec"]["egress"] == [] and np_["spec"]["ingress"] == [{
        "from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ports": [{"protocol": "TCP", "port": 9731}]}]
    assert np_["spec"]["podSelector"] == ds["spec"]["selector"]
    paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert paths == {"/sys/fs/cgroup", "/run/contend/guard"}, paths
    assert contend("cluster", "render-guard", "--out", str(tmp_path / "3"), "--capacity", "259:0=2G",
                   "--scraper-namespace", "prom").returncode == 0
    (np_,) = docs(tmp_path / "3", "guard-networkpolicy.yaml")
    assert np_["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "prom"}
    one_line_exit_2(contend("cluster", "render-guard", "--out", str(tmp_path / "4"), "--capacity", "259:0=2G",
                            "--scraper-namespace", "Prom_1"), "--scraper-namespace 'Prom_1'")
    one_line_exit_2(contend("cluster", "render-guard", "--out", str(tmp_path / "2")),
                    "disks: required for a DaemonSet", "--capacity")


@pytest.mark.parametrize("args, words", [
    (["cluster", "render", str(PRESETS / "xavier-pdp15-oltp.yaml")], ["kind oltp does not run trial by trial"]),
    (["cluster", "render", str(PRESETS / "quick.yaml"), "--node-label", "=x"], ["--node-label"]),
    (["cluster", "render", str(PRESETS / "quick.yaml"), "--namespace", "Lab_1"], ["--namespace 'Lab_1'"]),
    (["cluster", "render", str(PRESETS / "quick.yaml"), "--artifact-prefix", "/"], ["--artifact-prefix"]),
    (["cluster", "render", "nope.yaml"], ["nope.yaml: no such file"]),
    (["trial", "list", "nope.yaml"], ["nope.yaml: no such file"]),
])
def test_bad_render_input_is_one_line_and_exit_2(args, words, tmp_path):
    one_line_exit_2(contend(*args, "--out", str(tmp_path)) if args[0] == "cluster" else contend(*args), *words)


@pytest.mark.parametrize("config, words", [
    ("targets: [docker:web]\n", ["targets: docker: and podman:"]),
    ("targets: [cgroup:kubepods*/*pod*]\nmetrics: 'off'\n", ["port 9731"]),
    ("targets: [cgroup:x]\np: -1\n", ["p: must be >= 0"]),
    ("targets: []\n", ["targets"]),
])
def test_bad_guard_config_is_one_line_and_exit_2(config, words, tmp_path):
    f = tmp_path / "g.yaml"
    f.write_text(config)
    one_line_exit_2(contend("cluster", "render-guard", "--out", str(tmp_path / "o"), "--config", str(f)), *words)


def test_collect_refuses_an_archive_that_would_write_outside_its_place(tmp_path):
    from contend.cluster.collect import CollectError, find_artifacts
    evil = tmp_path / "evil.tgz"
    (tmp_path / "x").write_text("x")
    with tarfile.open(evil, "w:gz") as tar:
        tar.add(tmp_path / "x", arcname="../../outside")
    (tmp_path / "scratch").mkdir()
    with pytest.raises(CollectError, match="evil.tgz: not a trial archive"):
        find_artifacts([evil], tmp_path / "scratch")
    assert not (tmp_path / "outside").exists()


def test_collect_refuses_a_kind_that_does_not_fan_out(tmp_path):
    from contend.cluster.collect import TRIAL_JSON, CollectError, collect
    from contend.spec import dump
    spec = load(PRESETS / "xavier-pdp15-oltp.yaml")
    art = tmp_path / "art"
    art.mkdir()
    (art / "spec.yaml").write_text(dump(spec))
    Store(art).close()
    (art / TRIAL_JSON).write_text(json.dumps({"trial_id": "runc.postgresql.r1", "spec": spec.name,
                                              "spec_digest": digest(spec), "status": "ok"}))
    with pytest.raises(CollectError, match="kind oltp does not run trial by trial"):
        collect([art], tmp_path / "out")


def test_trial_list_is_the_plan():
    p = contend("trial", "list", str(PRESETS / "quick.yaml"))
    assert p.returncode == 0
    lines = p.stdout.splitlines()  # the demo: 3 repetitions of 4 cells
    assert len(lines) == 12 and lines[:4] == ["runc.harmony.cpu.r1\trunc", "runc.escape.cpu.r1\trunc",
                                              "runsc.harmony.cpu.r1\trunsc", "runsc.escape.cpu.r1\trunsc"]
    assert lines[-1] == "runsc.escape.cpu.r3\trunsc"
    assert len(contend("trial", "list", str(PRESETS / "quick.yaml"), "-n", "1").stdout.splitlines()) == 4


# ------------------------------------------------------------------ the per-trial path, on real containers
@pytest.fixture(scope="module")
def cluster_of_trials(tmp_path_factory):
    """The study run locally, and the same study as its two trials run one by one (one artifact archived as
    Argo archives it), as two nodes would."""
    require("stress-ng")
    runtime_or_skip("runc")
    d = tmp_path_factory.mktemp("cluster")
    spec = tiny_spec(d / "s.yaml", scenarios=("harmony", "escape"))
    local = contend("run", str(spec), "--out", str(d / "local"))
    assert local.returncode == 0, local.stdout[-2000:] + local.stderr[-2000:]
    arts = d / "artifacts"
    for tid in ("runc.harmony.cpu.r1", "runc.escape.cpu.r1"):
        p = contend("trial", "run", "--spec", str(spec), "--trial-id", tid, "--out", str(d / "pods" / tid))
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    arts.mkdir()
    with tarfile.open(arts / "runc.escape.cpu.r1.tgz", "w:gz") as tar:  # what Argo uploads
        tar.add(d / "pods" / "runc.escape.cpu.r1", arcname="trial")
    return d, spec


@needs_root
@pytest.mark.slow
def test_a_trial_run_alone_is_one_trial_of_the_study_with_its_label(cluster_of_trials):
    d, spec = cluster_of_trials
    art = d / "pods" / "runc.harmony.cpu.r1"
    meta = json.loads((art / "trial.json").read_text())
    assert meta["trial_id"] == "runc.harmony.cpu.r1" and meta["status"] == "ok" and meta["exit_code"] == 0
    assert meta["spec_digest"] == digest(load(spec)) and meta["node"]
    with Store(art, read_only=True) as s:
        assert [t["trial_id"] for t in s.trials()] == ["runc.harmony.cpu.r1"]
        assert len(s.samples("runc.harmony.cpu.r1").t) > 100


@needs_root
@pytest.mark.slow
def test_collect_merges_trials_into_the_results_a_local_study_gives(cluster_of_trials):
    d, _ = cluster_of_trials
    out = d / "collected"
    p = contend("cluster", "collect", str(d / "pods" / "runc.harmony.cpu.r1"), str(d / "artifacts"), "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 of 2 trials" in p.stdout
    local = d / "local"
    with Store(local, read_only=True) as a, Store(out, read_only=True) as b:
        assert sorted((t["trial_id"], t["status"]) for t in a.trials()) == \
            sorted((t["trial_id"], t["status"]) for t in b.trials())
    # the same metrics in every view (their values are measurements: the runs differ, so do they)
    keys = lambda res: {(r["runtime"], r["scenario"], r["resource"], r["view"], r["metric"])
                        for r in csv.DictReader(open(res / "metrics.csv"))}
    assert keys(local) == keys(out) and len(keys(out)) > 20
    # nothing lost in the merge: each trial's metrics are those its pod computed from the same samples
    # (compared as repr, so that an undefined metric, nan, equals itself)
    with open_store(str(out), read_only=True) as merged:  # a path as a str opens it as well
        got = {(m["trial_id"], m["view"], m["metric"]): repr(m["value"]) for m in merged.trial_metric_rows()}
    for tid in ("runc.harmony.cpu.r1", "runc.escape.cpu.r1"):
        with open_store(d / "pods" / tid, read_only=True) as pod:
            mine = {(m["trial_id"], m["view"], m["metric"]): repr(m["value"]) for m in pod.trial_metric_rows()}
        assert mine and mine == {k: v for k, v in got.items() if k[0] == tid}
    files = lambda res: {str(f.relative_to(res)) for f in res.rglob("*") if f.is_file()}
    assert files(local) == files(out) - {"nodes.json"}  # the same tables, figures and report
    assert json.loads((out / "nodes.json").read_text()).keys() == {"runc.harmony.cpu.r1", "runc.escape.cpu.r1"}
    assert (out / "spec.yaml").read_text() == (local / "spec.yaml").read_text()
    # contend report rebuilds it like any results directory
    assert contend("report", str(out)).returncode == 0


@needs_root
@pytest.mark.slow
def test_collect_says_what_is_missing_twice_or_from_another_study(cluster_of_trials, tmp_path):
    d, spec = cluster_of_trials
    one = d / "pods" / "runc.harmony.cpu.r1"
    p = contend("cluster", "collect", str(one), str(one), "--out", str(tmp_path / "a"))
    assert p.returncode == 1  # a planned trial is missing
    assert "missing 1 of 2 trials: runc.escape.cpu.r1" in p.stdout.replace("\n", " ")
    assert "runc.harmony.cpu.r1 was found more than once" in p.stdout.replace("\n", " ")
    other = tmp_path / "other"
    other.mkdir()
    for f in one.iterdir():
        if f.is_file():
            (other / f.name).write_bytes(f.read_bytes())
    meta = json.loads((other / "trial.json").read_text())
    (other / "trial.json").write_text(json.dumps({**meta, "spec_digest": "0" * 16, "spec": "else"}))
    one_line_exit_2(contend("cluster", "collect", str(one), str(other), "--out", str(tmp_path / "b")),
                    "from another study", "'else'")
    assert not (tmp_path / "b").exists()
    one_line_exit_2(contend("cluster", "collect", str(tmp_path / "empty"), "--out", str(tmp_path / "c")),
                    "no such file or directory")
    (tmp_path / "empty").mkdir()
    one_line_exit_2(contend("cluster", "collect", str(tmp_path / "empty"), "--out", str(tmp_path / "c")),
                    "no trial artifacts")
    one_line_exit_2(contend("cluster", "collect", str(one), "--out", str(d / "local")), "not empty")


@needs_root
def test_trial_run_refuses_an_unknown_trial_or_a_kind_that_does_not_fan_out(tmp_path):
    spec = tiny_spec(tmp_path / "s.yaml", scenarios=("harmony", "escape"))
    one_line_exit_2(contend("trial", "run", "--spec", str(spec), "--trial-id", "runc.steal.cpu.r1",
                            "--out", str(tmp_path / "o")), "no trial 'runc.steal.cpu.r1'", "contend trial list")
    one_line_exit_2(contend("trial", "run", "--spec", str(PRESETS / "xavier-pdp15-oltp.yaml"), "--trial-id", "x",
                            "--out", str(tmp_path / "o")), "kind oltp")
    assert not (tmp_path / "o").exists()


def test_the_guard_daemonset_can_be_narrowed_to_the_blkio_hierarchy_on_v1_nodes(tmp_path):
    """Issue 95: uid 0 with /sys/fs/cgroup read-write can write any cgroup file (cgroup.kill, the kubelet's
    memory.max). --blkio-only: the whole tree read-only (recursively), the blkio hierarchy writable over it (what
    the mounts then allow is checked on this host's kernel: test_security)."""
    p = contend("cluster", "render-guard", "--out", str(tmp_path), "--capacity", "259:0=2G", "--blkio-only")
    assert p.returncode == 0, p.stdout + p.stderr
    assert validate_dir(tmp_path) == (4, [])
    (ds,) = docs(tmp_path, "guard-daemonset.yaml")
    (c,) = ds["spec"]["template"]["spec"]["containers"]
    mounts = [(m["mountPath"], m.get("readOnly", False), m.get("recursiveReadOnly")) for m in c["volumeMounts"]
              if m["mountPath"].startswith("/sys")]
    assert mounts == [("/sys/fs/cgroup", True, "Enabled"), ("/sys/fs/cgroup/blkio", False, None)], mounts
