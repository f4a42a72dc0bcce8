"""contend watch on a Kubernetes node without a cluster (issue 54): a containerd of contend's own with its CRI
plugin (contend.cri.node), pods made through the CRI in the cgroups a kubelet gives them, real loads in them,
and the watch naming them namespace/pod/container through the same CRI."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
import uuid

import pytest

from contend.cgroups import detect
from contend.cri.client import Cri, CriError, connect, container_id, qos_class
from contend.cri.node import CriNode, process_runs
from contend.guard.targets import TargetError, resolve
from contend.paths import STATE
from contend.watch.daemon import WatchConfig, Watcher
from contend.watch.signals import Frame

from .conftest import CONTEND, contend, needs_root, one_line_exit_2, require
from .test_watch import watch_while

HEX = "0123456789abcdef" * 4


@pytest.fixture(scope="module")
def node(root):
    require("containerd")
    require("stress-ng")
    with CriNode() as n:
        yield n
    host = detect()
    left = [d for d in [*host.v1.values(), host.unified] if d is not None and (d / "kubepods").exists()]
    assert not left, f"the pods' cgroups were left in {left}"


@pytest.fixture
def pods(node):
    """node.run_pod, every pod it made removed after the test (whatever the test did)."""
    made = []

    def make(*args, **kw):
        made.append(node.run_pod(*args, **kw))
        return made[-1]
    yield make
    for p in made:
        if p in node.pods:
            node.remove_pod(p)


@needs_root
def test_a_cpu_antagonist_pod_is_named_by_namespace_pod_container_within_two_seconds_and_its_victim_gone(node, pods):
    web = pods("shop", "web-7f9c4", qos="burstable")
    etl = pods("batch", "etl-2xk", qos="besteffort", labels={"tier": "batch"})
    dns = pods("kube-system", "coredns-1", qos="guaranteed")
    node.run(dns, "coredns", ["/usr/bin/sleep", "60"])
    at: dict[str, float] = {}
    scraped: list[str] = []

    def act(t0):  # t0: the watcher's clock now
        begun = time.monotonic()
        node.run(web, "app", ["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "20"])
        time.sleep(5)  # the victim's baseline: both CPUs its own
        at["antagonist"] = t0 + time.monotonic() - begun
        node.run(etl, "hog", ["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "15"])
        time.sleep(5)
        at["deleted"] = t0 + time.monotonic() - begun
        node.remove_pod(web)  # a pod deleted while it is blamed for

    def scrape(w: Watcher) -> None:
        if not scraped and any(v.culprit == "batch/etl-2xk/hog" for v in w.detector.verdicts()):
            assert w.metrics.server is not None
            port = w.metrics.server.server_port
            scraped.append(urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode())
    events, frames = watch_while("", act, 13, targets=["k8s:"], cri=(node.endpoint,), metrics="127.0.0.1:0",
                                 after_step=scrape)
    seen = set().union(*(f.containers for f in frames))
    assert {"shop/web-7f9c4/app", "batch/etl-2xk/hog", "kube-system/coredns-1/coredns"} <= seen, seen
    assert not [n for n in seen if container_id(n)], f"a sandbox or a path among the names: {seen}"
    blames = [e for e in events if e["event"] == "blame"]
    said = [(e["t"], e["event"], e["victim"], e["culprits"]) for e in events]
    # the pod's start is the node's work first (containerd, its shim and runc ran outside every pod: `host`)
    assert {(e["victim"], e["culprit"]) for e in blames} <= {("shop/web-7f9c4/app", "batch/etl-2xk/hog"),
                                                             ("shop/web-7f9c4/app", "host")}, said
    hog = [e for e in blames if e["culprit"] == "batch/etl-2xk/hog"]
    assert hog and 0 < hog[0]["t"] - at["antagonist"] <= 2.0, (said, at)
    assert scraped and 'culprit="batch/etl-2xk/hog"' in scraped[0] and 'victim="shop/web-7f9c4/app"' in scraped[0]
    gone = [e for e in events if e["event"] == "gone"]
    assert [e["victim"] for e in gone] == ["shop/web-7f9c4/app"] and gone[0]["t"] >= at["deleted"], said


@needs_root
def test_k8s_selectors_by_namespace_pod_and_label_with_each_pods_qos_class(node, pods):
    for p in [pods("shop", "web-1", qos="guaranteed"), pods("shop", "cart-1", qos="burstable"),
              pods("batch", "etl-1", qos="besteffort", labels={"tier": "batch"})]:
        node.run(p, "main", ["/usr/bin/sleep", "60"])
    host, cri = detect(), Cri(node.endpoint)
    try:
        def names(sel: str) -> dict[str, str]:
            return {r.name: r.qos for r in resolve(host, sel, cri=cri)}
        assert names("k8s:") == {"shop/web-1/main": "Guaranteed", "shop/cart-1/main": "Burstable",
                                 "batch/etl-1/main": "BestEffort"}
        assert set(names("k8s:shop/*")) == {"shop/web-1/main", "shop/cart-1/main"}
        assert set(names("k8s:shop/web-*/main")) == {"shop/web-1/main"}
        assert set(names("k8s:label=tier=batch")) == {"batch/etl-1/main"}
        assert names("k8s:label=tier=web") == {} and names("k8s:nowhere/*") == {}
        # without a CRI: every pod's containers (and their sandboxes) by path; a selection names nothing
        by_path = resolve(host, "k8s:")
        assert len(by_path) == 6 and all(r.name == r.relpath and r.name.startswith("kubepods/") for r in by_path)
        with pytest.raises(TargetError, match="no CRI"):
            resolve(host, "k8s:shop/*")
    finally:
        cri.close()


@needs_root
def test_a_watch_whose_cri_does_not_answer_says_so_once_and_names_pods_by_path(node, pods, capsys):
    pod = pods("shop", "web-2")
    node.run(pod, "main", ["/usr/bin/sleep", "60"])
    w = Watcher(WatchConfig(["k8s:"], ebpf=False, metrics="off", cri=("unix:///run/contend/no-such-cri.sock",)))
    try:
        w.scan()
        w.scan()
        assert len(w.targets) == 2 and all(n.startswith("kubepods/burstable/pod") for n in w.targets), w.targets
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no CRI runtime answered" in err[0] and "cgroups' paths" in err[0], err
        w.cfg.cri = (node.endpoint,)  # the runtime answers again: names from the next scan
        w.scan()
        assert set(w.targets) == {"shop/web-2/main"}
        assert "pods named through" in capsys.readouterr().err
    finally:
        w.close()
    with pytest.raises(CriError, match="no CRI runtime answered"):
        connect(["unix:///run/contend/no-such-cri.sock"])


@pytest.mark.parametrize("args, words", [
    (["-t", "k8s:a/b/c/d"], ["k8s:a/b/c/d", "NAMESPACE"]),
    (["-t", "k8s:tier=batch"], ["label=KEY=VALUE"]),
    (["--cri", "/run/containerd/containerd.sock"], ["--cri", "unix:///"]),
])
def test_bad_k8s_options_are_one_line_and_exit_2(args, words):
    one_line_exit_2(contend("watch", *args, "--duration", "1"), *words)


def test_a_cgroup_path_gives_its_container_and_qos_under_either_driver():
    assert container_id(f"kubepods/burstable/pod1b2c3d4e-0000-1111-2222-333344445555/{HEX}") == HEX
    assert container_id(f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c3d4e_0000_1111_2222_"
                        f"333344445555.slice/cri-containerd-{HEX}.scope") == HEX
    assert container_id(f"kubepods.slice/kubepods-pod1.slice/crio-{HEX}.scope") == HEX
    assert container_id("kubepods/burstable/pod1b2c3d4e-0000-1111-2222-333344445555") == ""
    assert container_id(f"contend/{HEX}x") == ""
    assert qos_class(f"kubepods/burstable/podX/{HEX}") == "Burstable"
    assert qos_class(f"kubepods.slice/kubepods-besteffort.slice/x/{HEX}") == "BestEffort"
    assert qos_class(f"kubepods/podX/{HEX}") == "Guaranteed"
    assert qos_class(f"kubepods.slice/kubepods-podX.slice/{HEX}") == "Guaranteed"
    assert qos_class(f"contend/{HEX}") == ""


@needs_root
def test_contend_watch_k8s_from_the_cli_names_the_antagonist_pod_within_two_seconds_of_its_first_use(node, pods,
                                                                                                      tmp_path):
    """As a user runs it on a node: `contend watch -t k8s:... --cri ... --json`; the latency is read from its own
    recording (the first period in which the hog's pod used CPU, to the first blame naming it)."""
    web, etl = pods("shop", "web-9"), pods("batch", "etl-9")
    node.run(web, "app", ["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "25"])
    rec = tmp_path / "frames.jsonl"
    proc = subprocess.Popen([*CONTEND, "watch", "-t", "k8s:shop/*", "-t", "k8s:batch/*", "--cri", node.endpoint,
                             "--json", "--period", "0.5", "--duration", "14", "--metrics", "off",
                             "--record", str(rec)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(7)  # bpftrace's start, then the victim's baseline
        node.run(etl, "hog", ["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "12"])
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "pods named through" in err and "Traceback" not in err, err
    events = [json.loads(ln) for ln in out.splitlines()]
    frames = [Frame.from_json(ln) for ln in rec.read_text().splitlines()]
    used = [f.t - f.dt for f in frames if f.get("batch/etl-9/hog", "cpu") > 0.5]
    named = [e["t"] for e in events if e["event"] == "blame" and e["culprit"] == "batch/etl-9/hog"]
    assert used and named, (events, err)
    assert all(e["victim"] == "shop/web-9/app" for e in events if e["event"] == "blame"), events
    assert 0 < named[0] - used[0] <= 2.0, (named[0], used[0])


@needs_root
def test_the_ebpf_daemonsets_capabilities_load_the_watchs_program_under_the_runtimes_seccomp(node, pods):
    """The securityContext `contend cluster render-watch --ebpf` writes, given to a container through the CRI as a
    kubelet gives it (capabilities without CAP_, the runtime's default seccomp profile, its host paths read-only):
    bpftrace loads and runs the watch's own program in it; with CAP_BPF and CAP_PERFMON alone it reads no BTF
    and the program does not compile; with none it does not run either."""
    require("bpftrace")
    from contend.cluster.render import Options, watch_manifests
    from contend.probes.ebpf import script
    from contend.watch.runq import RUNQ
    (ds,) = watch_manifests(Options(image="contend:test"), ebpf=True)["watch-daemonset.yaml"]
    (c,) = ds["spec"]["template"]["spec"]["containers"]
    sc = c["securityContext"]
    binds = tuple(m["mountPath"] for m in c["volumeMounts"] if m["mountPath"].startswith("/sys/kernel"))
    assert sc["seccompProfile"]["type"] == "RuntimeDefault" and binds == ("/sys/kernel/tracing", "/sys/kernel/btf")
    program = script([RUNQ], 500) + "interval:s:2 { exit(); }\n"
    logs = {}
    for name, caps in (("granted", tuple(sc["capabilities"]["add"])), ("bpf", ("BPF", "PERFMON")), ("none", ())):
        pod = pods("kube-system", f"contend-watch-{name}")
        node.run(pod, "watch", ["/usr/bin/bpftrace", "-f", "json", "-e", program], caps=caps, binds=binds)
        logs[name] = pod
    time.sleep(7)
    logs = {k: node.log(p, "watch") for k, p in logs.items()}
    assert '"type": "attached_probes"' in logs["granted"] and '"@rq_ns"' in logs["granted"], logs["granted"][-2000:]
    assert "unknown type name 'pid_t'" in logs["bpf"] and "@rq_ns" not in logs["bpf"], logs["bpf"][-2000:]
    assert "attached_probes" not in logs["none"] and "@rq_ns" not in logs["none"], logs["none"][-2000:]


@needs_root
def test_a_node_whose_containerd_died_leaves_no_shim_pod_or_cgroup_behind(tmp_path):
    """containerd killed under a running pod (its CRI answers nothing after): stop() still leaves no shim (they run
    in sessions of their own and would wait for it for ever), no process of the pod, no cgroup of its."""
    require("containerd")
    n = CriNode(home=tmp_path / "home", state=STATE / f"cri-died-{os.getpid()}")
    try:
        n.start()
        pod = n.run_pod("default", "orphan", qos="besteffort")
        n.run(pod, "sleeper", ["/usr/bin/sleep", "600"])
        shims = n.shims()
        assert shims, "no shim found for the node's pod"
        assert n.proc is not None
        os.killpg(n.proc.pid, signal.SIGKILL)
        n.proc.wait()
        with pytest.raises(CriError):
            n.remove_pod(pod)
    finally:
        n.stop()
    assert not [p for p in shims if process_runs(p)], "a shim outlived its containerd"
    assert not n.shims()
    assert not detect().cgroup(pod.cgroup).exists(), f"the pod's cgroup {pod.cgroup} was left"


@needs_root
def test_watch_guard_with_a_k8s_selector_caps_the_pod_it_blames_by_the_same_name(node, pods):
    """Issue 95 M2: `contend watch --guard -t 'k8s:batch/*'` blamed the writer and capped nobody: the guard
    resolved the selectors again without a CRI, got a TargetError, and a non-strict scan dropped it. Now the guard's
    targets are the watch's own: the pod it blames is the pod it caps, under the name the watch gives it."""
    require("fio")
    from contend.doctor.calibrate import device_of
    from contend.paths import DATA
    DATA.mkdir(parents=True, exist_ok=True)
    tag = uuid.uuid4().hex[:6]
    files = [DATA / f"contend-k8sguard-{tag}-{n}.dat" for n in ("web", "etl")]
    web, etl = pods("shop", f"web-{tag}"), pods("batch", f"etl-{tag}")
    dev, caps = device_of(DATA), []
    node.run(web, "app", ["/usr/bin/fio", "--name=v", f"--filename=/data/{files[0].name}", "--size=64M",
                          "--rw=randread", "--bs=4k", "--direct=1", "--iodepth=1", "--time_based", "--runtime=22",
                          "--ioengine=psync"], data=DATA)
    host = detect()
    proc = subprocess.Popen([*CONTEND, "watch", "-t", "k8s:shop/*", "-t", "k8s:batch/*", "--cri", node.endpoint,
                             "--json", "--duration", "18", "--metrics", "off", "--guard", "--capacity", f"{dev}=4G"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(8)
        cid = node.run(etl, "writer", ["/usr/bin/fio", "--name=n", f"--filename=/data/{files[1].name}", "--size=1G",
                                       "--rw=write", "--bs=1M", "--direct=1", "--iodepth=32", "--ioengine=libaio",
                                       "--time_based", "--runtime=8"], data=DATA)
        cg = host.cgroup(f"{etl.cgroup}/{cid}")
        while proc.poll() is None:
            lim = cg.io_limits().get(dev) if cg.exists() else None
            if lim is not None and lim.wbps:
                caps.append(lim.wbps)
            time.sleep(0.25)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        for f in files:
            f.unlink(missing_ok=True)
    assert proc.returncode == 0, err[-3000:]
    culprit = f"batch/etl-{tag}/writer"
    events = [json.loads(ln) for ln in out.splitlines()]
    assert any(e["event"] == "blame" and e["resource"] == "disk" and e["culprit"] == culprit for e in events), events
    log = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    assert any(e["event"] == "cap" and e["target"] == culprit and e["cap_bytes_s"] for e in log), err[-3000:]
    assert caps and min(caps) < 4e9, err[-3000:]  # the blamed pod's own cgroup capped, below the disk's capacity
    assert not any(e["event"] == "guard-cannot-cap" for e in log), err[-3000:]
    assert cg.io_limits() == {} if cg.exists() else True  # every cap gone with the watch


UID = f"{'1' * 8}-{'2' * 4}-{'3' * 4}-{'4' * 4}-{'5' * 12}"


@pytest.mark.parametrize("name, target, want", [
    (f"web-1_shop_app-{HEX}.log", f"/var/log/pods/shop_web-1_{UID}/app/0.log", (HEX, "shop", "web-1", "app", UID)),
    (f"web-1_shop_app-{HEX}.log", "", (HEX, "shop", "web-1", "app", "")),  # not a link: the name alone
    # cut at 255 characters: the id's end lost, the names from the link's target
    (("p" * 200 + "_shop_app-" + HEX)[:251] + ".log",
     f"/var/log/pods/shop_{'p' * 200}_{UID}/app/3.log", (HEX[:251 - 210], "shop", "p" * 200, "app", UID)),
    ("kube-proxy.log", "", None), (f"a_b_c-{HEX}.txt", "", None)])
def test_a_kubelets_link_names_its_container(name, target, want):
    from contend.cri.logs import from_link
    c = from_link(name, target)
    assert (c if c is None else (c.id, c.namespace, c.pod, c.container, c.pod_uid)) == want


@needs_root
def test_pods_are_named_without_the_socket_from_the_kubelets_links(node, pods):
    """Issue 95 M1: naming pods needs no CRI socket (whoever may connect to it is root on the node): the
    kubelet's links in /var/log/containers name every pod container the socket names, by the same names, read
    by nobody's uid; label selectors say they need the socket."""
    for p in [pods("shop", "web-3", qos="guaranteed"), pods("batch", "etl-3", qos="besteffort")]:
        node.run(p, "main", ["/usr/bin/sleep", "60"])
        node.run(p, "side", ["/usr/bin/sleep", "60"])
    links = str(node.logs / "containers")
    host, cri = detect(), Cri(node.endpoint)
    from contend.cri.logs import PodLogs
    try:
        by_cri = {r.name: r.relpath for r in resolve(host, "k8s:", cri=cri)}
        by_links = {r.name: r.relpath for r in resolve(host, "k8s:", cri=PodLogs(links))}
        assert by_links == by_cri and len(by_cri) == 4, (by_links, by_cri)
        assert {r.name for r in resolve(host, "k8s:batch/*", cri=PodLogs(links))} == {"batch/etl-3/main",
                                                                                     "batch/etl-3/side"}
        with pytest.raises(TargetError, match="no labels"):
            resolve(host, "k8s:label=tier=batch", cri=PodLogs(links))
    finally:
        cri.close()
    w = Watcher(WatchConfig(["k8s:shop/*"], ebpf=False, metrics="off", cri=(), pod_names="logs", pod_logs=links))
    try:
        w.scan()
        assert set(w.targets) == {"shop/web-3/main", "shop/web-3/side"}
    finally:
        w.close()
    one_line_exit_2(contend("watch", "-t", "k8s:label=a=b", "--pod-names", "logs"), "labels", "CRI's socket")
    one_line_exit_2(contend("watch", "--pod-names", "kubelet"), "--pod-names")


@needs_root
def test_a_crash_looping_container_keeps_one_series_when_its_name_is_known(node, pods):
    """Issue 95 L3: named by cgroup path, each restart of a crash-looping container made new series in the
    scraper's database (8 per container); named by namespace/pod/container (the kubelet's links, or the CRI), a
    restart keeps its series. Measured here, side by side: the container names the metrics carried while the
    container restarted `restarts` times."""
    pod = pods("batch", "loop-1", qos="besteffort")
    cid = node.run(pod, "crash", ["/usr/bin/sleep", "60"])
    links = str(node.logs / "containers")
    watchers = {mode: Watcher(WatchConfig(["k8s:"], ebpf=False, metrics="127.0.0.1:0", cri=(),
                                          pod_names=mode, pod_logs=links)) for mode in ("paths", "logs")}
    named: dict[str, set[str]] = {m: set() for m in watchers}
    restarts = 6
    try:
        for w in watchers.values():
            w.start()
        for i in range(restarts + 1):
            for _ in range(2):
                time.sleep(0.5)
                for mode, w in watchers.items():
                    w.scan()
                    w.step()
                    named[mode] |= {c for c in w.metrics._signals if c.startswith(("batch/loop-1/", pod.cgroup))}
            if i < restarts:
                cid = node.restart(pod, "crash", cid, ["/usr/bin/sleep", "60"])
    finally:
        for w in watchers.values():
            w.close()
    print(f"\ncontainer names carried by contend_watch_signal over {restarts} restarts: by path "
          f"{len(named['paths'])}, by the kubelet's links {len(named['logs'])}")
    assert named["logs"] == {"batch/loop-1/crash"}, named
    assert len(named["paths"]) >= restarts, named  # a new name, and its series, per restart


@needs_root
def test_a_read_only_mount_of_the_cri_socket_still_creates_a_pod(node, tmp_path):
    """Issue 95 M1, the attack: the watch DaemonSet mounted the CRI's socket `readOnly: true` as if that protected
    the node. connect(2) on a unix socket needs write permission on the file, never a writable mount: code in such
    a container creates a pod sandbox (and from there a privileged container with / mounted). So the DaemonSet
    mounts no socket unless it is root already (render-watch --ebpf --pod-names cri), and docs/security.md says so."""
    ro = STATE / f"ro-cri-{uuid.uuid4().hex[:6]}.sock"
    ro.touch()
    script = ("import sys, uuid; from contend.cri.client import Cri; from contend.cri import api_pb2 as api; "
              f"c = Cri('unix://{ro}'); cfg = api.PodSandboxConfig(metadata=api.PodSandboxMetadata("
              "name='through-ro', uid=str(uuid.uuid4()), namespace='attack'), linux=api.LinuxPodSandboxConfig("
              "security_context=api.LinuxSandboxSecurityContext(namespace_options=api.NamespaceOption("
              "network=api.NODE)))); print(c.call('RunPodSandbox', api.RunPodSandboxRequest(config=cfg))"
              ".pod_sandbox_id)")
    try:
        p = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {node.sock} {ro} && mount -o remount,bind,ro "
                            f"{ro} && grep -q ' {ro} ro,' /proc/self/mountinfo && exec {CONTEND[0]} -c \"{script}\""],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr[-2000:]
        made = p.stdout.strip()
        from contend.cri import api_pb2 as api
        assert node.cri is not None
        pods = node.cri.call("ListPodSandbox", api.ListPodSandboxRequest()).items
        assert made in {x.id for x in pods}  # created through a read-only mount
    finally:
        ro.unlink(missing_ok=True)
        if node.cri is not None:
            from contend.cri import api_pb2 as api
            for x in node.cri.call("ListPodSandbox", api.ListPodSandboxRequest()).items:
                if x.metadata.namespace == "attack":
                    node.cri.call("StopPodSandbox", api.StopPodSandboxRequest(pod_sandbox_id=x.id))
                    node.cri.call("RemovePodSandbox", api.RemovePodSandboxRequest(pod_sandbox_id=x.id))


@needs_root
def test_protect_with_a_victim_class_by_label_and_qos_holds_the_besteffort_pod_for_the_labelled_one(node, pods):
    """Issue 96: the victim class chosen by a pod's label (through the CRI) or QoS class. web (burstable, labelled
    tier=latency) is in the class by its label, dns (guaranteed) by its QoS; the batch pod's hog is held back on
    CPU for web's harm, by the name the watch gives it, and its weight is put back when protect stops."""
    tag = uuid.uuid4().hex[:6]
    web = pods("shop", f"web-{tag}", qos="burstable", labels={"tier": "latency"})
    etl = pods("batch", f"etl-{tag}", qos="besteffort")
    dns = pods("kube-system", f"dns-{tag}", qos="guaranteed")
    node.run(dns, "dns", ["/usr/bin/sleep", "40"])
    node.run(web, "app", ["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "24"])
    host = detect()
    proc = subprocess.Popen([*CONTEND, "protect", "-t", "k8s:", "--cri", node.endpoint, "--victims",
                             "k8s:label=tier=latency", "--victims", "qos:Guaranteed", "--resource", "cpu", "--json",
                             "--duration", "18", "--metrics", "off", "--period", "0.5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    weights = []
    try:
        time.sleep(6)
        cid = node.run(etl, "hog", ["/usr/bin/stress-ng", "--cpu", "2", "--timeout", "14"])
        cg = host.cgroup(f"{etl.cgroup}/{cid}")
        wf = "cpu.weight" if cg.control("cpu.weight").exists() else "cpu.shares"
        before = cg.control(wf).read_text()
        while proc.poll() is None:
            if cg.exists():
                weights.append(cg.control(wf).read_text())
            time.sleep(0.25)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    acts = [json.loads(ln) for ln in err.splitlines() if ln.startswith("{")]
    acts = [a for a in acts if a["event"] == "protect"]
    assert acts, err[-3000:]
    assert {a["culprit"] for a in acts} == {f"batch/etl-{tag}/hog"}, acts
    assert all(a["victims"] == [f"shop/web-{tag}/app"] for a in acts if a["action"] == "tighten"), acts
    assert any(w != before for w in weights), weights  # held while it ran
    assert not cg.exists() or cg.control(wf).read_text() == before  # put back when protect stopped
