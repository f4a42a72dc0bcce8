"""Kubernetes manifests from a spec (pure: spec, plan and options in, manifest documents out).

The study: one RuntimeClass per runtime under study, the spec in a ConfigMap, a ServiceAccount the Argo
executor can work with, and an Argo Workflow that runs each trial in a privileged contend pod on a labelled
node (one trial per node at a time, never beside another trial, the node reset first), uploads each trial's
artifact to the artifact repository, and ends with a step that collects them into one results directory.
The guard: a DaemonSet of `contend guard`, its policy in a ConfigMap, a Service naming its metrics port.
"""
from __future__ import annotations

import json
import re
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path

import yaml

from .. import __version__
from ..spec import dump

# the CRI handler a runtime is configured under (containerd: [plugins."io.containerd.grpc.v1.cri".containerd.
# runtimes.<handler>]); lxc, docker and podman are not CRI runtimes and get no RuntimeClass
HANDLERS = {"runc": "runc", "crun": "crun", "runsc": "runsc", "kata": "kata"}
ROLE_LABEL = "contend.io/role"
RUNTIME_LABEL = "contend.io/runtime-{}"  # a node with the runtime installed carries it, "true"
SPEC_MOUNT = "/etc/contend"
RESULTS = "/results"
METRICS_PORT = 9731
# the node's facilities a trial works on (see docs/cluster.md for what each is for)
HOST_PATHS = {"cgroup": ("/sys/fs/cgroup", "Directory"), "tracing": ("/sys/kernel/tracing", "Directory"),
              "debugfs": ("/sys/kernel/debug", "Directory"), "modules": ("/lib/modules", "Directory"),
              "contend-home": ("/var/lib/contend", "DirectoryOrCreate"),
              "contend-state": ("/run/contend", "DirectoryOrCreate"),
              # the guard's own state only: the rest of /run/contend holds trial pods' bundles (rewriting a
              # bundle's config.json is root on the node: issue 52 M4)
              "contend-guard-state": ("/run/contend/guard", "DirectoryOrCreate"),
              # the watch's eBPF: BTF (the TCP round-trip probe's types); the CRI's socket (pods' names)
              "btf": ("/sys/kernel/btf", "Directory"), "cri": ("/run/containerd/containerd.sock", "Socket"),
              # the kubelet's links <pod>_<ns>_<container>-<id>.log: the pods' names without the CRI's socket
              "pod-logs": ("/var/log/containers", "Directory"),
              # a v1 node's blkio hierarchy alone, writable over a read-only /sys/fs/cgroup (render-guard --blkio-only)
              "cgroup-blkio": ("/sys/fs/cgroup/blkio", "Directory")}
READ_ONLY = {"modules"}
# the guard writes caps and keeps its state; it traces nothing and, its disks configured, calibrates nothing
GUARD_HOST_PATHS = ("cgroup", "contend-guard-state")


def host_volumes(names, paths: dict[str, str] | None = None) -> list[dict]:
    """The host paths, each at HOST_PATHS' path unless `paths` names another (a CRI socket elsewhere)."""
    return [{"name": v, "hostPath": {"path": (paths or {}).get(v, HOST_PATHS[v][0]), "type": HOST_PATHS[v][1]}}
            for v in names]


def host_mounts(names, paths: dict[str, str] | None = None) -> list[dict]:
    """Each host path at the same path in the container (read-only where it only needs reading)."""
    return [{"name": v, "mountPath": (paths or {}).get(v, HOST_PATHS[v][0]),
             **({"readOnly": True} if v in READ_ONLY else {})} for v in names]


RESET = "contend clean && sync && echo 3 > /proc/sys/vm/drop_caches"  # the node as a fresh trial wants it


@dataclass(frozen=True)
class Options:
    image: str = f"contend:{__version__}"
    namespace: str = "argo"
    node_label: str = "contend.io/node=true"  # KEY=VALUE of the nodes that take trials
    parallelism: int | None = None  # at most this many trials at once (default: one per labelled node)
    artifact_prefix: str = "contend"  # keys in the artifact repository: PREFIX/<workflow>/trials/<id>.tgz
    service_account: str = "contend"
    scraper_namespace: str = "monitoring"  # the only namespace a node daemon's metrics port admits


def k8s_name(text: str, limit: int = 50) -> str:
    """A DNS-1123 label from any name (lowercase alphanumerics and '-')."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:limit].strip("-")
    return name or "study"


def study_manifests(spec, trials: list[tuple[str, str]], opt: Options) -> dict[str, list[dict]]:
    """file name → its documents, for a study whose plan is `trials` [(trial id, runtime)]."""
    name = f"contend-{k8s_name(spec.name)}"
    runtimes = sorted({rt for _, rt in trials}, key=[rt for _, rt in trials].index)
    meta = {"labels": {"app.kubernetes.io/name": "contend", "app.kubernetes.io/version": __version__,
                       "contend.io/study": k8s_name(spec.name)}}
    return {
        "runtimeclasses.yaml": [runtime_class(rt, meta) for rt in runtimes if rt in HANDLERS],
        "rbac.yaml": executor_rbac(opt, meta),
        "spec-configmap.yaml": [{"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": f"{name}-spec", "namespace": opt.namespace, **meta},
                                 "data": {"spec.yaml": dump(spec)}}],
        "workflow.yaml": [workflow(name, trials, opt, meta)],
    }


def runtime_class(runtime: str, meta: dict) -> dict:
    return {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": runtime, **meta},
            "handler": HANDLERS[runtime],
            "scheduling": {"nodeSelector": {RUNTIME_LABEL.format(runtime): "true"}}}


def executor_rbac(opt: Options, meta: dict) -> list[dict]:
    """What Argo's executor (v3.5, emissary) needs in the pods' namespace: to report each step's outputs."""
    sa = opt.service_account
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": opt.namespace, **meta}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": f"{sa}-executor", "namespace": opt.namespace, **meta},
         "rules": [{"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"],
                    "verbs": ["create", "patch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{sa}-executor", "namespace": opt.namespace, **meta},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": f"{sa}-executor"},
         "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": opt.namespace}]},
    ]


def _node_label(opt: Options) -> tuple[str, str]:
    key, _, value = opt.node_label.partition("=")
    return key, value or "true"


def workflow(name: str, trials: list[tuple[str, str]], opt: Options, meta: dict) -> dict:
    key, value = _node_label(opt)
    trial_key = f"{opt.artifact_prefix}/{{{{workflow.name}}}}/trials"
    mounts = [{"name": "spec", "mountPath": SPEC_MOUNT, "readOnly": True},
              {"name": "results", "mountPath": RESULTS}]
    node = host_mounts(HOST_PATHS)
    privileged = {"privileged": True}
    spec_file = f"{SPEC_MOUNT}/spec.yaml"
    wf_spec: dict = {
        "entrypoint": "study",
        "serviceAccountName": opt.service_account,
        "volumes": [{"name": "spec", "configMap": {"name": f"{name}-spec"}},
                    *host_volumes(HOST_PATHS)],
        "templates": [
            {"name": "study", "steps": [
                [{"name": "trial", "template": "trial", "continueOn": {"failed": True},
                  "arguments": {"parameters": [{"name": "trial-id", "value": "{{item.id}}"},
                                               {"name": "runtime", "value": "{{item.runtime}}"}]},
                  "withItems": [{"id": tid, "runtime": rt} for tid, rt in trials]}],
                [{"name": "collect", "template": "collect"}]]},
            {"name": "trial",
             "inputs": {"parameters": [{"name": "trial-id"}, {"name": "runtime"}]},
             "metadata": {"labels": {ROLE_LABEL: "trial", **meta["labels"]}},
             "affinity": {
                 # on a node labelled for trials that has this trial's runtime installed
                 "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                     {"matchExpressions": [
                         {"key": key, "operator": "In", "values": [value]},
                         {"key": RUNTIME_LABEL.format("{{inputs.parameters.runtime}}"), "operator": "In",
                          "values": ["true"]}]}]}},
                 # never beside another trial, of this study or any other, in any namespace
                 "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                     {"labelSelector": {"matchLabels": {ROLE_LABEL: "trial"}}, "namespaceSelector": {},
                      "topologyKey": "kubernetes.io/hostname"}]}},
             # host PIDs: the probes and the runtimes' processes are the node's
             "podSpecPatch": json.dumps({"hostPID": True}),
             "volumes": [{"name": "results", "emptyDir": {}}],
             "initContainers": [{"name": "reset", "image": opt.image, "command": ["sh", "-c", RESET],
                                 "securityContext": privileged, "volumeMounts": node}],
             "container": {"name": "main", "image": opt.image,
                           "command": ["contend", "trial", "run", "--spec", spec_file,
                                       "--trial-id", "{{inputs.parameters.trial-id}}", "--out", f"{RESULTS}/trial"],
                           # trial.json names the node (a pod's hostname is the pod's name)
                           "env": [{"name": "CONTEND_NODE",
                                    "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                           "securityContext": privileged, "volumeMounts": [*mounts, *node]},
             "outputs": {"artifacts": [{"name": "trial", "path": f"{RESULTS}/trial",
                                        "s3": {"key": f"{trial_key}/{{{{inputs.parameters.trial-id}}}}.tgz"}}]}},
            {"name": "collect",
             "inputs": {"artifacts": [{"name": "trials", "path": "/in", "s3": {"key": trial_key}}]},
             "volumes": [{"name": "results", "emptyDir": {}}],
             "container": {"name": "main", "image": opt.image,
                           "command": ["contend", "cluster", "collect", "/in", "--out", f"{RESULTS}/study"],
                           "volumeMounts": [{"name": "results", "mountPath": RESULTS}]},
             "outputs": {"artifacts": [{"name": "study", "path": f"{RESULTS}/study",
                                        "s3": {"key": f"{opt.artifact_prefix}/{{{{workflow.name}}}}/study.tgz"}}]}},
        ],
    }
    if opt.parallelism:
        wf_spec["parallelism"] = opt.parallelism
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
            "metadata": {"generateName": f"{name}-", "namespace": opt.namespace, **meta}, "spec": wf_spec}


CONTROL_PLANE = "node-role.kubernetes.io/control-plane"
# what writing io.max / blkio.throttle.* (root-owned files, written by their owner) and reading /sys and
# /proc/diskstats need: root's uid and no capability at all
GUARD_SECURITY = {"privileged": False, "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                  "runAsUser": 0, "capabilities": {"drop": ["ALL"]}, "seccompProfile": {"type": "RuntimeDefault"}}
# the PSI-only watch reads world-readable files: nobody's uid. Its cgroup mount is read-only recursively: a plain
# readOnly leaves the v1 controllers' own mounts below /sys/fs/cgroup writable (Kubernetes 1.33 or later)
WATCH_SECURITY = {**GUARD_SECURITY, "runAsUser": 65534, "runAsGroup": 65534, "runAsNonRoot": True}


def guard_manifests(config: dict, opt: Options, blkio_only: bool = False) -> dict[str, list[dict]]:
    """A DaemonSet of `contend guard` on every node (or those with the node label), its config in a
    ConfigMap, and a Service that names the metrics port (what a ServiceMonitor selects). uid 0 with
    /sys/fs/cgroup writable may write any cgroup file (cgroup.kill, the kubelet's memory.max); `blkio_only` (every
    node cgroup v1 or hybrid) mounts /sys/fs/cgroup read-only and only its blkio hierarchy writable over it, which
    is all the guard writes there. A v2 node keeps io.max in every cgroup's own directory: no mount narrows that."""
    paths = ("cgroup", "cgroup-blkio", "contend-guard-state") if blkio_only else GUARD_HOST_PATHS
    return node_daemon("guard", ["contend", "guard", "--config", f"{SPEC_MOUNT}/guard.yaml"], METRICS_PORT, opt,
                       paths, config={"guard.yaml": yaml.safe_dump(config, sort_keys=False)},
                       read_only={"cgroup"} if blkio_only else frozenset(),
                       grace_s=30)  # the guard removes every cap on SIGTERM: the grace period gives it time to


WATCH_PORT = 9733
# every pod of the node by namespace/pod/container through the node's CRI (by its cgroup's path where the CRI
# does not answer); the watch reads, so its every mount is read-only
WATCH_TARGETS = ("k8s:",)
CRI_SOCKET = "unix:///run/containerd/containerd.sock"
# the eBPF watch: root's uid (the CRI's socket is root's) with what loading and reading its programs needs, under
# the runtime's default seccomp profile (tests/test_watch_k8s.py runs the watch's program so, through the CRI):
# - CAP_BPF and CAP_PERFMON (Linux 5.8 or later): its maps and programs, the tracepoints;
# - CAP_SYS_ADMIN: the image's bpftrace (Debian 12's, 0.17) reads the kernel's BTF only with it, and without BTF
#   (a node has no kernel headers) the sched_switch program does not compile ("unknown type name 'pid_t'");
# - not CAP_SYS_RESOURCE: since 5.11 a BPF map's memory is charged to its cgroup, not RLIMIT_MEMLOCK, and a
#   capability the node's runtime does not hold fails the pod (this VM's root lacks it: "unable to apply caps")
EBPF_CAPS = ["BPF", "PERFMON", "SYS_ADMIN"]
WATCH_EBPF_SECURITY = {**GUARD_SECURITY, "capabilities": {"drop": ["ALL"], "add": EBPF_CAPS}}


def watch_manifests(opt: Options, targets: tuple[str, ...] = WATCH_TARGETS, ebpf: bool = False,
                    cri: str = CRI_SOCKET, pod_names: str = "logs") -> dict[str, list[dict]]:
    """A DaemonSet of `contend watch` on every node (or those with the node label): verdicts as JSON lines in
    the pod's log, Prometheus on its port, pods named as `pod_names` says: `logs` (the default) from the kubelet's
    links in /var/log/containers, mounted read-only, with no socket; `cri` through the node's CRI socket (the pods'
    labels too), eBPF only: whoever may connect(2) to that socket may create a privileged pod, read-only mount or
    not, so it is mounted only where the watch is root already; `paths` neither. Without eBPF it runs as nobody
    with no capability, and the CPU symptom is the pod's CPU pressure (PSI, cgroup v2 nodes). With eBPF, root's uid
    with EBPF_CAPS (not privileged, but CAP_SYS_ADMIN and CAP_BPF: node-root-equivalent, docs/security.md),
    tracefs and BTF read-only: the run-queue delay and the time each pod took."""
    if pod_names == "cri" and not ebpf:
        raise ValueError("--pod-names cri: the PSI-only watch runs as nobody, who cannot connect to the CRI's "
                         "socket (and must not: it is root on the node); --pod-names logs names the pods without it")
    if pod_names != "cri" and any(t.startswith("k8s:label=") for t in targets):
        raise ValueError(f"--target {next(t for t in targets if t.startswith('k8s:label='))}: pods' labels come "
                         "only through the CRI's socket (--ebpf --pod-names cri)")
    command = ["contend", "watch", "--json", *([] if ebpf else ["--no-ebpf"]), "--metrics", f"0.0.0.0:{WATCH_PORT}",
               "--pod-names", pod_names, *({"cri": ["--cri", cri], "logs": ["--pod-logs", HOST_PATHS["pod-logs"][0]]}
                                           .get(pod_names, []))]
    for t in targets:
        command += ["-t", t]
    names = {"cri": ("cri",), "logs": ("pod-logs",)}.get(pod_names, ())
    paths = ("cgroup", *names, *(("tracing", "btf") if ebpf else ()))
    return node_daemon("watch", command, WATCH_PORT, opt, paths, read_only=set(paths), grace_s=10,
                       security=WATCH_EBPF_SECURITY if ebpf else WATCH_SECURITY,
                       paths={"cri": cri.removeprefix("unix://")})


def read_only_mount(m: dict) -> dict:
    """Read-only, and recursively so for a directory (the mounts below it: the v1 controllers' below
    /sys/fs/cgroup); a socket is a file, with nothing below it."""
    return {**m, "readOnly": True, **({} if HOST_PATHS[m["name"]][1] == "Socket" else {"recursiveReadOnly": "Enabled"})}


def node_daemon(app: str, command: list[str], port: int, opt: Options, host_paths: tuple[str, ...],
                config: dict[str, str] | None = None, read_only: AbstractSet[str] = frozenset(),
                grace_s: int = 30, security: dict = GUARD_SECURITY,
                paths: dict[str, str] | None = None) -> dict[str, list[dict]]:
    """A contend daemon on every node but the control plane's: its DaemonSet (unprivileged, no token), its
    config in a ConfigMap if it has one, a NetworkPolicy that lets only its metrics in, a Service naming the
    metrics port."""
    name = f"contend-{app}"
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/version": __version__}
    ns = opt.namespace
    mounts = [*([{"name": "config", "mountPath": SPEC_MOUNT, "readOnly": True}] if config else []),
              *(read_only_mount(m) if m["name"] in read_only else m for m in host_mounts(host_paths, paths))]
    volumes = [*([{"name": "config", "configMap": {"name": name}}] if config else []),
               *host_volumes(host_paths, paths)]
    pod: dict = {
        "terminationGracePeriodSeconds": grace_s,
        # no tolerations: a tainted node (the control plane's) is not the daemon's; nor one labelled so
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": CONTROL_PLANE, "operator": "DoesNotExist"}]}]}}},
        "automountServiceAccountToken": False,  # it never talks to the API server
        "containers": [{
            "name": app, "image": opt.image, "command": command,
            "ports": [{"name": "metrics", "containerPort": port, "protocol": "TCP"}],
            "readinessProbe": {"httpGet": {"path": "/metrics", "port": "metrics"}, "periodSeconds": 10},
            "securityContext": security, "volumeMounts": mounts,
            "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}}],
        "volumes": volumes,
    }
    if opt.node_label:
        key, value = _node_label(opt)
        pod["nodeSelector"] = {key: value}
    meta = {"name": name, "namespace": ns, "labels": labels}
    out = {f"{app}-configmap.yaml": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": config}]
           } if config else {}
    return {
        **out,
        f"{app}-daemonset.yaml": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta,
                                   "spec": {"selector": {"matchLabels": {"app.kubernetes.io/name": name}},
                                            "updateStrategy": {"type": "RollingUpdate"},
                                            "template": {"metadata": {"labels": labels}, "spec": pod}}}],
        # metrics in from the scraper's namespace only, nothing out: the daemon reads (and the guard writes) files
        # of its node only
        f"{app}-networkpolicy.yaml": [{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
                                       "spec": {"podSelector": {"matchLabels": {"app.kubernetes.io/name": name}},
                                                "policyTypes": ["Ingress", "Egress"],
                                                "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {
                                                    "kubernetes.io/metadata.name": opt.scraper_namespace}}}],
                                                    "ports": [{"protocol": "TCP", "port": port}]}],
                                                "egress": []}}],
        f"{app}-service.yaml": [{"apiVersion": "v1", "kind": "Service",
                                 "metadata": {**meta, "name": f"{name}-metrics"},
                                 "spec": {"clusterIP": "None", "selector": {"app.kubernetes.io/name": name},
                                          "ports": [{"name": "metrics", "port": port, "targetPort": "metrics"}]}}],
    }


GUARD_DEFAULT = {
    "policy": "contend",
    # every pod of the node: Guaranteed pods sit right under kubepods, Burstable and BestEffort one level
    # down; "pod" then a hex digit (the pod's uid) matches both cgroup drivers' names (kubepods/pod1f2e...,
    # kubepods-burstable-pod1f2e_....slice) and not kubepods-burstable.slice itself
    "targets": ["cgroup:kubepods*/*pod[0-9a-f]*", "cgroup:kubepods*/*/*pod[0-9a-f]*"],
    "metrics": f"0.0.0.0:{METRICS_PORT}",  # the pod's address: Prometheus scrapes it through the Service
}


def write(out: Path, files: dict[str, list[dict]]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for fname, docs in files.items():
        if not docs:
            continue
        p = out / fname
        p.write_text(yaml.safe_dump_all(docs, sort_keys=False, width=120))
        written.append(p)
    return written
