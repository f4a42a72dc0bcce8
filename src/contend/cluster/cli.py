"""`contend cluster`: the same study on a Kubernetes cluster with Argo Workflows, the guard and the watch as
DaemonSets, the manifests validated, the trials' artifacts collected (docs/cluster.md)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from ..guard.cli import capacity_flags
from ..prepare import QUICK_HELP, REPS_HELP, fanned_out, load_spec
from ..terminal import console, fail

cluster_app = typer.Typer(no_args_is_help=True, rich_markup_mode="rich",
                          help="The same study on a Kubernetes cluster with Argo Workflows, and the guard as a "
                               "DaemonSet (docs/cluster.md).")
IMAGE_HELP = "The contend image the pods run (built from deploy/Dockerfile and pushed where the nodes pull)."
NS_HELP = "Namespace of the pods (the Argo controller must watch it)."


SCRAPER_HELP = ("The namespace of the Prometheus that scrapes the metrics: the only one the NetworkPolicy lets in "
                "(its kubernetes.io/metadata.name label).")


def _options(image: Optional[str], namespace: str, node_label: str, **kw):
    from ..cluster.render import Options, k8s_name
    key = node_label.partition("=")[0]
    if node_label and not key.strip():
        fail(f"--node-label {node_label!r}: expected KEY or KEY=VALUE")
    for flag, ns in (("--namespace", namespace), ("--scraper-namespace", kw.get("scraper_namespace", namespace))):
        if k8s_name(ns) != ns:
            fail(f"{flag} {ns!r}: not a Kubernetes name (lowercase letters, digits, '-')")
    return Options(image=image or Options.image, namespace=namespace, node_label=node_label, **kw)


def _write_valid(out: Path, files: dict) -> None:
    """Write the manifests, then check them as written (a problem here is contend's bug: exit 1)."""
    from ..cluster import render
    from ..cluster.validate import ARGO, KUBERNETES_SAID, validate_file
    written = render.write(out, files)
    problems = [line for p in written for line in validate_file(p)]
    for line in problems:
        print(f"contend: {line}", file=sys.stderr)
    if problems:
        raise typer.Exit(1)
    for p in written:
        console.print(f"  {p}", highlight=False)
    console.print(f"valid against Kubernetes {KUBERNETES_SAID} and Argo Workflows {ARGO} (strict)", highlight=False)


@cluster_app.command("render")
def cluster_render(spec_path: Path = typer.Argument(..., metavar="SPEC", help="Experiment spec (YAML)."),
                   out: Path = typer.Option(..., "--out", "-o", help="Directory for the manifests."),
                   quick: bool = typer.Option(False, "--quick", help=QUICK_HELP),
                   repetitions: Optional[int] = typer.Option(None, "--repetitions", "-n", min=1, help=REPS_HELP),
                   image: Optional[str] = typer.Option(None, help=IMAGE_HELP + " Default contend:VERSION."),
                   namespace: str = typer.Option("argo", help=NS_HELP),
                   node_label: str = typer.Option("contend.io/node=true", metavar="KEY=VALUE",
                                                  help="The label of the nodes that take trials."),
                   parallelism: Optional[int] = typer.Option(None, min=1, help="At most this many trials at "
                                                             "once (default: as many as labelled nodes are free)."),
                   artifact_prefix: str = typer.Option("contend", help="Key prefix in Argo's artifact "
                                                       "repository: PREFIX/<workflow>/trials/<id>.tgz.")):
    """Kubernetes manifests that run SPEC's trials across a cluster: RuntimeClasses, the spec as a ConfigMap,
    the executor's ServiceAccount, and an Argo Workflow that runs every trial in a privileged contend pod on a
    labelled node (one at a time per node, never beside another trial, the node reset first) and collects
    them into one results directory. Written to OUT and checked against the pinned schemas."""
    from ..cluster.render import HANDLERS, study_manifests
    from ..kinds import study_for
    spec = load_spec(spec_path, quick, repetitions)
    study = fanned_out(study_for(spec, out, console), spec_path)
    if not artifact_prefix.strip("/"):
        fail(f"--artifact-prefix {artifact_prefix!r}: must not be empty")
    opt = _options(image, namespace, node_label, parallelism=parallelism,
                   artifact_prefix=artifact_prefix.strip("/"))
    trials = study.trials()
    console.print(f"[bold]{spec.name}[/bold]: {len(trials)} trials on nodes labelled {opt.node_label}, "
                  f"image {opt.image}, namespace {opt.namespace}", highlight=False)
    _write_valid(out, study_manifests(spec, trials, opt))
    no_class = sorted({rt for _, rt in trials} - set(HANDLERS))
    if no_class:
        console.print(f"no RuntimeClass for {', '.join(no_class)} (not a CRI runtime); its trials still need "
                      f"nodes labelled contend.io/runtime-<name>=true", highlight=False)
    setup = " ".join(f"-f {out / f}" for f in ("runtimeclasses.yaml", "rbac.yaml", "spec-configmap.yaml")
                     if (out / f).exists())
    console.print(f"next: kubectl apply {setup}\n      kubectl create -f {out / 'workflow.yaml'}   (or argo submit)\n"
                  "      contend cluster collect on its trials' artifacts (docs/cluster.md)", highlight=False)


@cluster_app.command("render-guard")
def cluster_render_guard(out: Path = typer.Option(..., "--out", "-o", help="Directory for the manifests."),
                         config: Optional[Path] = typer.Option(None, "--config", "-c",
                                                               help="The guard's YAML config (as contend guard "
                                                                    "--config); default: every pod of the node "
                                                                    "under the contend policy."),
                         image: Optional[str] = typer.Option(None, help=IMAGE_HELP + " Default contend:VERSION."),
                         namespace: str = typer.Option("kube-system", help="Namespace of the DaemonSet."),
                         node_label: str = typer.Option("", metavar="KEY=VALUE",
                                                        help="Only nodes with this label (default: every node)."),
                         capacity: list[str] = typer.Option([], "--capacity", metavar="MAJ:MIN=RATE",
                                                            help="The nodes' disk and what it delivers, e.g. "
                                                                 "259:0=2G (repeatable; or disks: in --config). "
                                                                 "Required."),
                         blkio_only: bool = typer.Option(False, "--blkio-only",
                                                         help="Every node is cgroup v1 or hybrid: /sys/fs/cgroup "
                                                              "read-only and only its blkio hierarchy writable (the "
                                                              "guard then cannot write cgroup.kill, memory.max or "
                                                              "any other controller's file). A v2 node keeps io.max "
                                                              "in each cgroup's own directory: no mount narrows "
                                                              "it there (docs/security.md)."),
                         scraper_namespace: str = typer.Option("monitoring", help=SCRAPER_HELP)):
    """A DaemonSet that runs `contend guard` on every node but the control plane's, its config in a
    ConfigMap, a headless Service that names the metrics port (for a Prometheus ServiceMonitor) and a
    NetworkPolicy that lets only metrics in. The guard runs without privileges or capabilities. Checked
    against the pinned schemas."""
    from ..cluster.render import GUARD_DEFAULT, METRICS_PORT, guard_manifests
    from ..guard.config import load as load_guard
    from ..spec import SpecError
    source = str(config) if config else "the default DaemonSet config"
    disks = capacity_flags(capacity)
    try:
        cfg = (load_guard(config, {"disks": disks}) if config
               else load_guard(None, {**GUARD_DEFAULT, "disks": disks}, source_flags=source))
    except SpecError as e:
        fail(str(e))
    if "metrics" not in cfg.model_fields_set:  # the pod's address, not loopback: Prometheus scrapes it there
        cfg = cfg.model_copy(update={"metrics": GUARD_DEFAULT["metrics"]})
    if not cfg.metrics.endswith(f":{METRICS_PORT}"):
        fail(f"{source}: metrics: the DaemonSet serves them on port {METRICS_PORT} (e.g. 0.0.0.0:{METRICS_PORT})")
    if any(t.target.startswith(("docker:", "podman:")) for t in cfg.targets):
        fail(f"{source}: targets: docker: and podman: name an engine's containers; on a Kubernetes node use "
             "cgroup:PATH or a cgroup glob")
    if not cfg.disks:
        fail(f"{source}: disks: required for a DaemonSet (without them every node would calibrate its disk at "
             "once, at its first start): --capacity MAJ:MIN=RATE, or disks: in --config")
    opt = _options(image, namespace, node_label, scraper_namespace=scraper_namespace)
    _write_valid(out, guard_manifests(cfg.model_dump(mode="json"), opt, blkio_only=blkio_only))
    console.print(f"next: kubectl apply -f {out}; metrics on port {METRICS_PORT} of each pod "
                  f"(Service contend-guard-metrics, port name metrics)", highlight=False)


@cluster_app.command("render-watch")
def cluster_render_watch(out: Path = typer.Option(..., "--out", "-o", help="Directory for the manifests."),
                         target: list[str] = typer.Option([], "--target", "-t", metavar="SELECTOR",
                                                          help="What to watch (repeatable): k8s:, k8s:NAMESPACE/*, "
                                                               "k8s:label=K=V, cgroup:PATH or a glob; default: every "
                                                               "pod of the node (k8s:)."),
                         ebpf: bool = typer.Option(False, "--ebpf/--no-ebpf",
                                                   help="Run-queue delay and the time each pod took, by eBPF: "
                                                        "root's uid with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN "
                                                        "(bpftrace 0.17 reads BTF only with it), not privileged. "
                                                        "Default: PSI only, as nobody with no capability."),
                         pod_names: str = typer.Option("logs", "--pod-names", metavar="logs|cri|paths",
                                                       help="Where the pods' names come from: logs (the kubelet's "
                                                            "links in /var/log/containers, read-only: no socket, "
                                                            "no labels), cri (the CRI's socket, with --ebpf only: "
                                                            "whoever may connect to it is root on the node), paths "
                                                            "(the cgroups' paths)."),
                         cri: str = typer.Option("unix:///run/containerd/containerd.sock", "--cri",
                                                 metavar="unix:///PATH",
                                                 help="With --pod-names cri: the nodes' CRI socket (CRI-O: "
                                                      "unix:///var/run/crio/crio.sock)."),
                         image: Optional[str] = typer.Option(None, help=IMAGE_HELP + " Default contend:VERSION."),
                         namespace: str = typer.Option("kube-system", help="Namespace of the DaemonSet."),
                         node_label: str = typer.Option("", metavar="KEY=VALUE",
                                                        help="Only nodes with this label (default: every node)."),
                         scraper_namespace: str = typer.Option("monitoring", help=SCRAPER_HELP)):
    """A DaemonSet that runs `contend watch` on every node but the control plane's: its verdicts as JSON lines in
    each pod's log, pods named namespace/pod/container from the kubelet's links (no CRI socket: whoever may connect
    to it is root on the node), Prometheus on port 9733 (a headless Service names it), a NetworkPolicy that lets
    only metrics in. Every host path read-only. By default unprivileged, without eBPF (on cgroup v2 nodes the CPU
    symptom is each pod's CPU pressure); --ebpf adds the run-queue delay with three capabilities, which make it
    node-root-equivalent (docs/security.md). Checked against the pinned schemas."""
    from ..cluster.render import WATCH_PORT, WATCH_TARGETS, watch_manifests
    from ..watch.daemon import check_targets
    try:
        targets = tuple(check_targets(target)) or WATCH_TARGETS
    except ValueError as e:
        fail(str(e))
    if any(t.startswith(("docker:", "podman:", "contend")) for t in targets):
        fail("--target: on a Kubernetes node use k8s:..., cgroup:PATH or a cgroup glob")
    if not cri.startswith("unix:///"):
        fail(f"--cri {cri!r}: a unix socket, unix:///path")
    if pod_names not in ("logs", "cri", "paths"):
        fail(f"--pod-names {pod_names!r}: logs, cri or paths")
    try:
        files = watch_manifests(_options(image, namespace, node_label, scraper_namespace=scraper_namespace), targets,
                                ebpf=ebpf, cri=cri, pod_names=pod_names)
    except ValueError as e:
        fail(str(e))
    _write_valid(out, files)
    console.print(f"next: kubectl apply -f {out}; verdicts in each pod's log (kubectl logs -n {namespace} "
                  f"ds/contend-watch), metrics on port {WATCH_PORT} (Service contend-watch-metrics)", highlight=False)


@cluster_app.command("validate")
def cluster_validate(directory: Path = typer.Argument(..., metavar="DIR", help="Rendered manifests (*.yaml).")):
    """Check every manifest in DIR against Kubernetes 1.28's schema (1.33's where a document mounts a volume
    recursively read-only) and Argo Workflows v3.5.0's, strictly (unknown fields are errors). Exit 1 and one
    line per problem when any is invalid."""
    from ..cluster.validate import ARGO, KUBERNETES_SAID, validate_dir
    if not directory.is_dir():
        fail(f"{directory}: no such directory")
    n, problems = validate_dir(directory)
    for line in problems:
        print(f"contend: {line}", file=sys.stderr)
    if n == 0:
        fail(f"{directory}: no manifests (*.yaml)")
    console.print(f"{n - len(problems)} of {n} documents valid (Kubernetes {KUBERNETES_SAID}, Argo Workflows {ARGO})",
                  highlight=False)
    raise typer.Exit(1 if problems else 0)


@cluster_app.command("collect")
def cluster_collect(sources: list[Path] = typer.Argument(..., metavar="SOURCE...",
                                                         help="Trial artifacts: directories (searched for "
                                                              "trial.json) or .tgz archives of them."),
                    out: Path = typer.Option(..., "--out", "-o", help="The results directory to make.")):
    """Merge trial artifacts (contend trial run's, e.g. downloaded from the cluster's artifact store) into one
    results directory: the store with every trial, metrics.csv, tables and report.html, as contend run
    writes them. Says which planned trials are missing. Exit 0 all there and ok, 1 some missing or failed,
    2 sources that do not fit together (another study, a trial not in the plan)."""
    from rich.text import Text

    from ..cluster.collect import CollectError, collect
    from ..kinds import refresh
    from ..store import Store
    from ..terminal import untrusted
    try:
        got = collect(sources, out)
    except CollectError as e:
        fail(str(e))
    with Store(out) as store:
        written = refresh(out, store, title=got.title)
    console.print(written.terminal(got.title))
    # what the artifacts say (ids, nodes, reasons) is theirs: printed as text, never as markup (report.table)
    for tid in got.duplicates:
        console.print(Text.assemble(untrusted(tid), " was found more than once; one copy kept"), highlight=False)
    for a in got.failed:
        m = a.meta
        console.print(Text.assemble(("failed ", "red"), untrusted(f"{m['trial_id']} on {m.get('node', '?')}: "
                                                                  f"{m.get('reason', '')}")), highlight=False)
    if got.missing:
        console.print(Text.assemble(("missing ", "yellow"), untrusted(
            f"{len(got.missing)} of {len(got.planned)} trials: " + ", ".join(got.missing[:10])
            + (" …" if len(got.missing) > 10 else ""))), highlight=False)
    console.print(f"{len(got.taken)} of {len(got.planned)} trials from "
                  f"{len({a.meta.get('node') for a in got.taken})} node(s)\nmetrics: {out / 'metrics.csv'}\n"
                  f"report:  {written.path}", highlight=False)
    raise typer.Exit(1 if got.missing or got.failed else 0)


# ---------------------------------------------------------------- clean
