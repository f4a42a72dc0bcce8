"""The rendered pods, run for real without a cluster: build the contend image (deploy/Dockerfile) and run the
containers of `contend cluster render`'s Workflow and `render-guard`'s DaemonSet under docker, each with the
command, environment, host mounts and privileges its manifest gives it.

    sudo .venv/bin/python deploy/check_image.py [--spec presets/quick.yaml] [--trials 2]

Without an image registry, the base image (debian:bookworm-slim) is built from Debian's mirror with mmdebstrap
when docker does not have it. `privileged: true` is given as every capability the host itself has, with
seccomp, AppArmor and the masked /proc paths off (this VM's root lacks CAP_SYS_RESOURCE, so docker's
--privileged cannot start a container here).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from contend import __version__
from contend.runtimes.engine import docker_session

IMAGE = f"contend:{__version__}"
BASE = "debian:bookworm-slim"
CAPS = {0: "CHOWN", 1: "DAC_OVERRIDE", 2: "DAC_READ_SEARCH", 3: "FOWNER", 4: "FSETID", 5: "KILL", 6: "SETGID",
        7: "SETUID", 8: "SETPCAP", 9: "LINUX_IMMUTABLE", 10: "NET_BIND_SERVICE", 11: "NET_BROADCAST",
        12: "NET_ADMIN", 13: "NET_RAW", 14: "IPC_LOCK", 15: "IPC_OWNER", 16: "SYS_MODULE", 17: "SYS_RAWIO",
        18: "SYS_CHROOT", 19: "SYS_PTRACE", 20: "SYS_PACCT", 21: "SYS_ADMIN", 22: "SYS_BOOT", 23: "SYS_NICE",
        24: "SYS_RESOURCE", 25: "SYS_TIME", 26: "SYS_TTY_CONFIG", 27: "MKNOD", 28: "LEASE", 29: "AUDIT_WRITE",
        30: "AUDIT_CONTROL", 31: "SETFCAP", 32: "MAC_OVERRIDE", 33: "MAC_ADMIN", 34: "SYSLOG", 35: "WAKE_ALARM",
        36: "BLOCK_SUSPEND", 37: "AUDIT_READ", 38: "PERFMON", 39: "BPF", 40: "CHECKPOINT_RESTORE"}


def sh(*argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], text=True, **kw)


def privileged() -> list[str]:
    """docker flags for a manifest's `privileged: true`, within what this host's root may grant."""
    bnd = int(next(line.split()[1] for line in Path("/proc/self/status").read_text().splitlines()
                   if line.startswith("CapBnd")), 16)
    missing = [name for bit, name in CAPS.items() if not bnd >> bit & 1]
    return ["--cap-add", "ALL", *(a for c in missing for a in ("--cap-drop", c)),
            "--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined",
            "--security-opt", "systempaths=unconfined", "--device-cgroup-rule", "a *:* rwm"]


def base_image() -> None:
    if sh("docker", "image", "inspect", BASE, capture_output=True).returncode == 0:
        return
    if shutil.which("mmdebstrap") is None:
        sys.exit(f"no {BASE} image and no mmdebstrap to build it (apt-get install mmdebstrap)")
    print(f"building {BASE} from Debian's mirror (mmdebstrap)", flush=True)
    with tempfile.TemporaryDirectory() as d:
        tar = Path(d) / "base.tar"
        sh("mmdebstrap", "--variant=minbase", "--format=tar", "bookworm", tar, check=True, capture_output=True)
        with open(tar, "rb") as f:
            sh("docker", "import", "-", BASE, stdin=f, check=True, capture_output=True)


def build() -> float:
    cas = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))  # a TLS-intercepting proxy's, if any
    copied = []
    for ca in cas:
        dest = ROOT / "deploy" / "ca" / ca.name
        if not dest.exists():
            shutil.copy(ca, dest)
            copied.append(dest)
    t0 = time.monotonic()
    try:
        p = sh("docker", "build", "--network=host", "-f", ROOT / "deploy" / "Dockerfile", "-t", IMAGE, ROOT,
               capture_output=True, env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    finally:
        for c in copied:
            c.unlink()
    if p.returncode != 0:
        sys.exit(f"docker build failed:\n{p.stdout[-3000:]}{p.stderr[-3000:]}")
    return time.monotonic() - t0


def container_args(tpl: dict, volumes: dict, mounts_from: dict, scratch: Path) -> list[str]:
    """docker run flags for one of the manifest's containers: its volume mounts (hostPath as is, the ConfigMap
    and emptyDir as directories under scratch), env (the node's name for fieldRefs) and privileges."""
    args = []
    for m in tpl.get("volumeMounts", []):
        vol = volumes[m["name"]]
        src = vol["hostPath"]["path"] if "hostPath" in vol else mounts_from[m["name"]]
        args += ["-v", f"{src}:{m['mountPath']}{':ro' if m.get('readOnly') else ''}"]
    for e in tpl.get("env", []):
        args += ["-e", f"{e['name']}={e.get('value') or 'node-' + scratch.name}"]
    sc = tpl.get("securityContext", {})
    if sc.get("privileged"):
        args += privileged()
    else:  # the hardened guard's: no capability, a read-only root, no privilege escalation
        args += [a for c in sc.get("capabilities", {}).get("drop", []) for a in ("--cap-drop", c)]
        args += ["--read-only"] if sc.get("readOnlyRootFilesystem") else []
        args += ["--security-opt", "no-new-privileges"] if sc.get("allowPrivilegeEscalation") is False else []
        args += ["--user", str(sc["runAsUser"])] if "runAsUser" in sc else []
    return args


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default=str(ROOT / "presets" / "quick.yaml"))
    ap.add_argument("--trials", type=int, default=2, help="How many of the plan's trials to run (default 2).")
    a = ap.parse_args()
    with docker_session() as engine:
        if engine is None:
            sys.exit("no docker engine here")
        base_image()
        print(f"image {IMAGE} built in {build():.0f} s", flush=True)
        work = Path(tempfile.mkdtemp(prefix="contend-image-"))
        rendered = work / "manifests"
        sh(sys.executable, "-m", "contend.cli", "cluster", "render", a.spec, "--out", rendered, check=True,
           capture_output=True)
        wf = yaml.safe_load((rendered / "workflow.yaml").read_text())
        (cm,) = yaml.safe_load_all((rendered / "spec-configmap.yaml").read_text())
        spec_dir = work / "spec"
        spec_dir.mkdir()
        (spec_dir / "spec.yaml").write_text(cm["data"]["spec.yaml"])
        volumes = {v["name"]: v for v in wf["spec"]["volumes"]}
        templates = {t["name"]: t for t in wf["spec"]["templates"]}
        trial = templates["trial"]
        volumes |= {v["name"]: v for v in trial.get("volumes", [])}
        hostpid = ["--pid=host"] if json.loads(trial.get("podSpecPatch", "{}")).get("hostPID") else []
        items = templates["study"]["steps"][0][0]["withItems"][:a.trials]
        artifacts = work / "artifacts"
        artifacts.mkdir()
        rows = []
        for i, item in enumerate(items):
            node = work / f"pod{i}"
            (node / "results").mkdir(parents=True)
            mounts = {"spec": spec_dir, "results": node / "results"}
            sub = lambda s: s.replace("{{inputs.parameters.trial-id}}", item["id"])
            for c in [*trial.get("initContainers", []), trial["container"]]:
                t0 = time.monotonic()
                p = sh("docker", "run", "--rm", *hostpid, *container_args(c, volumes, mounts, node), c["image"],
                       *map(sub, c["command"]), capture_output=True)
                rows.append((f"{item['id']}: {c.get('name', 'main')}", p.returncode, time.monotonic() - t0))
                if p.returncode != 0:
                    print(p.stdout[-2000:], p.stderr[-2000:])
            # what Argo's executor uploads: the output path, archived
            (out,) = trial["outputs"]["artifacts"]
            with tarfile.open(artifacts / f"{item['id']}.tgz", "w:gz") as tar:
                tar.add(node / "results" / Path(out["path"]).name, arcname=Path(out["path"]).name)
        collect = templates["collect"]
        (inp,) = collect["inputs"]["artifacts"]
        study = work / "study"
        study.mkdir()
        t0 = time.monotonic()
        p = sh("docker", "run", "--rm", "-v", f"{artifacts}:{inp['path']}:ro", "-v", f"{study}:/results",
               collect["container"]["image"], *collect["container"]["command"], capture_output=True)
        rows.append(("collect", p.returncode, time.monotonic() - t0))
        print(p.stdout[-1500:])
        rows.append(guard(work))
    print(f"\n{'container':<40} {'exit':>4} {'seconds':>8}")
    for name, code, secs in rows:
        print(f"{name:<40} {code:>4} {secs:>8.1f}")
    print(f"results: {work}")
    expected_collect = 0 if a.trials >= len(templates["study"]["steps"][0][0]["withItems"]) else 1
    ok = all(code == 0 for name, code, _ in rows if name != "collect") and rows[-2][1] == expected_collect
    return 0 if ok else 1


def guard(work: Path) -> tuple[str, int, float]:
    """render-guard's DaemonSet container: it must find a pod's cgroup by its glob, serve metrics and remove
    its caps on SIGTERM."""
    from contend.cgroups import detect
    from contend.doctor.calibrate import device_of
    from contend.paths import DATA
    rendered = work / "guard"
    sh(sys.executable, "-m", "contend.cli", "cluster", "render-guard", "--out", rendered, "--capacity",
       f"{device_of(DATA)}=1G", check=True, capture_output=True)
    (ds,) = yaml.safe_load_all((rendered / "guard-daemonset.yaml").read_text())
    (cm,) = yaml.safe_load_all((rendered / "guard-configmap.yaml").read_text())
    pod = ds["spec"]["template"]["spec"]
    (c,) = pod["containers"]
    cfg = work / "guard-config"
    cfg.mkdir()
    (cfg / "guard.yaml").write_text(cm["data"]["guard.yaml"])
    host = detect()
    fake_pod = host.cgroup("kubepods/burstable/pod0f1e2d3c")  # where a Burstable pod's cgroup would be
    fake_pod.create()
    t0 = time.monotonic()
    name = f"contend-guard-check-{int(t0)}"
    try:
        sh("docker", "run", "-d", "--name", name, "--network=host",
           *container_args(c, {v["name"]: v for v in pod["volumes"]}, {"config": cfg}, work), c["image"],
           *c["command"], check=True, capture_output=True)
        metrics = ""
        for _ in range(40):
            time.sleep(0.5)
            try:
                metrics = urllib.request.urlopen("http://127.0.0.1:9731/metrics", timeout=2).read().decode()
                if "pod0f1e2d3c" in metrics:
                    break
            except OSError:
                continue
        sh("docker", "stop", "-t", str(pod["terminationGracePeriodSeconds"]), name, capture_output=True)
        logs = sh("docker", "logs", name, capture_output=True).stderr
        code = int(sh("docker", "inspect", name, "--format", "{{.State.ExitCode}}", capture_output=True).stdout)
    finally:
        sh("docker", "rm", "-f", name, capture_output=True)
        fake_pod.remove()
        for rel in ("kubepods/burstable", "kubepods"):
            host.cgroup(rel).remove()
    found = 'target="kubepods/burstable/pod0f1e2d3c"' in metrics
    capped = '"event": "cap"' in logs and '"cap_bytes_s": null' not in logs.split('"event": "cap"')[1].split("\n")[0]
    removed = '"caps_removed": true' in logs
    print(f"guard (unprivileged, no capability): pod cgroup found by glob and in metrics: {found}; a cap written: "
          f"{capped}; caps removed on SIGTERM: {removed}")
    return "guard daemonset", code if found and capped and removed else 1, time.monotonic() - t0


if __name__ == "__main__":
    sys.exit(main())
