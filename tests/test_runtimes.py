"""Real containers under runc, crun, runsc and lxc: limits checked from the inside and from the host."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from contend.cgroups import IoLimit, Limits
from contend.doctor.calibrate import device_of
from contend.paths import DATA
from contend.runtimes import ContainerSpec
from contend.runtimes.oci import Runsc, Youki
from contend.runtimes.security import USERNS_BASE

from .conftest import ALL_RUNTIMES, needs_root, require, runtime_or_skip

pytestmark = [needs_root, pytest.mark.root]


# the distribution's runtimes in make test; the releases contend builds and docker's engine in make test-all
@pytest.fixture(params=[r if r in ("runc", "crun", "runsc", "lxc") else pytest.param(r, marks=pytest.mark.slow)
                        for r in ALL_RUNTIMES])
def rt(request):
    if request.param == "docker":
        request.getfixturevalue("docker_engine")  # started for the session if none runs
    return runtime_or_skip(request.param)


@pytest.fixture
def container(rt, tmp_path):
    made = []

    def make(limits: Limits = Limits(), data: bool = False):
        data_dir = None
        if data:  # on the experiment device (tmp_path may be a tmpfs without a block device)
            data_dir = DATA / f"contend-test-{uuid.uuid4().hex[:6]}"
            data_dir.mkdir(parents=True)
            made.append(data_dir)
        c = rt.create(ContainerSpec(f"test-{rt.name}-{uuid.uuid4().hex[:6]}", limits, data_dir))
        made.append(c)
        return c
    yield make
    for x in made:
        if hasattr(x, "cgroup"):
            rt.delete(x)
        else:
            shutil.rmtree(x, ignore_errors=True)


def test_container_runs_with_security_defaults(rt, container):
    c = container()
    # directory listed with Python: runsc 2022 rejects the statx flags of coreutils 9 (`ls`: EINVAL); gVisor
    # 2026 without a network has no /sys/class/net
    p = rt.run(c, ["sh", "-c", "hostname; grep NoNewPrivs /proc/self/status; touch /usr/x 2>&1; "
                               "echo ok > /tmp/w && cat /tmp/w; "
                               "python3 -c \"import os; n = '/sys/class/net'; "
                               "print(' '.join(os.listdir(n)) if os.path.isdir(n) else '-')\""])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert c.name in out  # its own UTS namespace
    assert "Read-only file system" in out  # host binds are read-only
    assert "ok" in out  # private writable /tmp
    if not isinstance(rt, Runsc):  # gVisor's /proc/self/status and /sys are its own
        assert "NoNewPrivs:\t1" in out
        assert out.split()[-1] == "lo"  # no network but loopback


RUNC_SPEC_CAPS = (1 << 29) | (1 << 5) | (1 << 10)  # AUDIT_WRITE, KILL, NET_BIND_SERVICE: `runc spec`'s


def test_a_container_is_at_least_as_strict_as_runc_spec(rt, container):
    """Issue 21: six capabilities, no seccomp, 4 of runc's masked paths, no RLIMIT_NOFILE or pids limit,
    the host's /etc/shadow readable by the container's root, /data without nosuid/nodev."""
    c = container(data=True)
    p = rt.run(c, ["sh", "-c", "grep -E '^(CapEff|CapBnd|Seccomp):' /proc/self/status; "
                               "grep 'Max open files' /proc/1/limits; echo shadow=$(wc -c </etc/shadow); "
                               "echo kcore=$(wc -c </proc/kcore 2>/dev/null || echo masked); cat /proc/self/mounts"])
    assert p.returncode == 0, p.stderr
    out = p.stdout
    status = dict(line.split(":", 1) for line in out.splitlines() if line.startswith(("Cap", "Seccomp")))
    assert int(status["CapEff"], 16) == RUNC_SPEC_CAPS and int(status["CapBnd"], 16) == RUNC_SPEC_CAPS, out
    assert "shadow=0" in out  # the host's password hashes: masked
    assert "kcore=0" in out or "kcore=masked" in out
    if isinstance(rt, Runsc):
        return  # gVisor: the sandbox's own kernel; its /proc/1 and mounts are its own
    if isinstance(rt, Youki):  # youki 0.7.0's exec leaves the filter out (docs/runtimes.md): notice a fix
        assert status["Seccomp"].strip() == "0", "youki's exec now applies seccomp: update the docs"
    else:
        assert status["Seccomp"].strip() == "2", out  # a filter
    assert out.split("Max open files")[1].split()[:2] == ["1024", "1024"], out
    data = next(line.split()[3].split(",") for line in out.splitlines() if " /data " in line)
    if rt.name not in ("lxc", "docker"):  # neither can set them on a rw bind; no_new_privs and no CAP_MKNOD
        # cover what they would (docs/security.md)
        assert "nosuid" in data and "nodev" in data, data
    pids_max = [(d / "pids.max").read_text().strip() for d in c.cgroup.dirs() if (d / "pids.max").exists()]
    assert pids_max == ["4096"], pids_max  # a fork bomb stops in its tenant


def test_runc_specs_masked_and_read_only_paths_hold_in_every_runtime(rt, container):
    """Issue 52 M3: lxc had only `proc:mixed sys:ro`, so its root (host uid 0, no AppArmor here) wrote
    /proc/irq/*/smp_affinity and read /proc/keys and the ACPI tables. Every masked path of runc's that exists
    here reads empty; every read-only one refuses a write (even where the write would be a no-op)."""
    from contend.runtimes.security import MASKED_PATHS
    if isinstance(rt, Runsc):
        pytest.skip("gVisor's /proc and /sys are its own kernel's (docs/security.md)")
    c = container()
    masked = [m for m in MASKED_PATHS if Path(m).exists()]
    # a masked file reads 0 bytes, a masked directory lists nothing; a read-only path refuses a write
    script = "".join(f"echo {m}=$(cat {m} 2>/dev/null | wc -c)/$(ls -A {m} 2>/dev/null | wc -l); " for m in masked)
    ro = ["/proc/irq/default_smp_affinity", "/proc/sysrq-trigger", "/proc/sys/kernel/hostname"]
    script += "".join(f"(: > {f}) 2>/dev/null && echo {f}=written || echo {f}=refused; " for f in ro)
    p = rt.run(c, ["sh", "-c", script])
    assert p.returncode == 0, p.stderr
    seen = dict(line.split("=", 1) for line in p.stdout.split())
    for m in masked:
        n_bytes, n_entries = seen[m].split("/")
        assert n_bytes == "0" and (n_entries == "0" or Path(m).is_file()), (m, seen[m])
    assert all(seen[f] == "refused" for f in ro), seen


def test_no_device_but_the_few_a_container_needs(rt, container):
    """Issue 52 L1: no device deny-all in contend's OCI config; runc adds one itself, crun and youki on v1 left
    `a *:* rwm` in devices.list. The container may use /dev/null but not make or open the host's disk."""
    if isinstance(rt, Runsc):
        pytest.skip("gVisor's devices are its own kernel's")
    c = container()
    lists = [d / "devices.list" for d in c.cgroup.dirs() if (d / "devices.list").exists()]
    for f in lists:  # v1: the controller's list; v2 has none (an eBPF program instead)
        assert "a *:* rwm" not in f.read_text(), (f, f.read_text())
    disk = os.stat(next(p for p in ("/dev/vda", "/dev/sda", "/dev/nvme0n1") if os.path.exists(p))).st_rdev
    p = rt.run(c, ["sh", "-c", f"echo x > /dev/null && echo null-ok; mknod /tmp/d b {os.major(disk)} {os.minor(disk)} "
                               "2>/dev/null && head -c1 /tmp/d >/dev/null 2>&1 && echo disk-read || echo disk-denied"])
    assert "null-ok" in p.stdout and "disk-denied" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("userns", [True, False])
def test_a_containers_root_is_not_the_hosts_root(rt, userns):
    """Issue 21: no user namespace, so the container's uid 0 was host root: a root-only file of the host that
    reached the container (here through /data) was read in full. runc and crun now map it to an unprivileged
    host uid; `userns: false` keeps host root, for a load that needs it."""
    if not rt.does_userns:
        pytest.skip(f"{rt.name} does no user namespaces (docs/security.md)")
    data = DATA / f"contend-test-{uuid.uuid4().hex[:6]}"
    data.mkdir(parents=True)
    c = None
    try:
        secret = data / "secret"
        secret.write_text("host root's only\n")
        secret.chmod(0o600)
        c = rt.create(ContainerSpec(f"test-{rt.name}-{uuid.uuid4().hex[:6]}", data_dir=data, userns=userns))
        p = rt.run(c, ["sh", "-c",
                       "cat /proc/self/uid_map; id -u; echo mine > /data/mine; cat /data/secret 2>&1; true"])
        assert p.returncode == 0, p.stderr
        out = p.stdout
        assert out.split()[3] == "0", out  # root inside either way
        if userns:
            assert out.split()[:3] == ["0", str(USERNS_BASE), "65536"], out
            assert "Permission denied" in out and "host root's only" not in out, out
            assert (data / "mine").stat().st_uid == USERNS_BASE
        else:
            assert out.split()[:3] == ["0", "0", "4294967295"], out
            assert "host root's only" in out
            assert (data / "mine").stat().st_uid == 0
    finally:
        if c is not None:
            rt.delete(c)
        shutil.rmtree(data, ignore_errors=True)


def test_a_container_joining_a_network_namespace_contend_made_stays_in_the_hosts_user_namespace(rt):
    """runc 1.1.5 cannot exec into a container with a user namespace of its own that joined a network namespace
    the host's root made ("failed to setns into net namespace: operation not permitted"): a network trial's
    tenants run without one (docs/security.md), and still run."""
    if not rt.does_userns:
        pytest.skip(f"{rt.name} does no user namespaces (docs/security.md)")
    ns = f"contend-t{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    c = None
    try:
        c = rt.create(ContainerSpec(f"test-{rt.name}-{uuid.uuid4().hex[:6]}", netns=Path(f"/run/netns/{ns}")))
        p = rt.run(c, ["sh", "-c", "cat /proc/self/uid_map; ls /sys/class/net"])
        assert p.returncode == 0, p.stderr
        assert p.stdout.split()[:2] == ["0", "0"], p.stdout
        assert os.stat(f"/run/netns/{ns}").st_ino == os.stat(f"/proc/{rt.pids(c)[0]}/ns/net").st_ino
    finally:
        if c is not None:
            rt.delete(c)
        subprocess.run(["ip", "netns", "del", ns])


def test_delete_removes_container_and_cgroups(rt, container):
    c = container()
    assert rt.pids(c), "the container's processes are in its cgroup"
    rt.delete(c)
    assert not c.cgroup.exists()
    assert c.name not in rt.leftovers()


def busy_cpu(rt, c, seconds: float) -> tuple[float, float]:
    """Run one CPU-bound worker inside for `seconds`; return the CPUs it used as (the host saw, it saw itself).

    The host's view is the cgroup's CPU time over a window in the middle of the run, not over the exec around it:
    runsc's exec spends its own CPU in the sandbox's cgroup (0.55 over the whole exec), and a slow exec on a loaded
    host would count as idle. Inside, the worker's user and system time over its wall clock. Not its work done:
    this host's work per CPU-second moved from 713 to 1569 bogo ops between two runs seconds apart."""
    with ThreadPoolExecutor(1) as pool:
        run = pool.submit(rt.run, c, ["stress-ng", "--cpu", "1", "--cpu-method", "matrixprod", "--timeout",
                                      f"{seconds}s", "--metrics-brief", "--yaml", "/tmp/m.yaml"], timeout=seconds + 30)
        time.sleep(1.5)  # the exec done and the worker running (runsc's exec takes up to a second)
        u0, t0 = c.cgroup.stats().cpu_usage_ns, time.monotonic()
        time.sleep(seconds - 2.5)
        host = (c.cgroup.stats().cpu_usage_ns - u0) / 1e9 / (time.monotonic() - t0)
        p = run.result()
    assert p.returncode == 0, p.stderr
    y = rt.run(c, ["cat", "/tmp/m.yaml"]).stdout
    m = {k.strip(): float(v) for k, _, v in (ln.partition(":") for ln in y.splitlines()) if k.strip() in _TIMES}
    return host, (m["user-time"] + m["system-time"]) / m["wall-clock-time"]


_TIMES = ("wall-clock-time", "user-time", "system-time")


def test_cpu_quota_of_half_a_core_holds(rt, container):
    require("stress-ng")
    host, inside = busy_cpu(rt, container(Limits(cpu=0.5)), 5)  # 25 periods of the quota in the host's window
    # A ceiling: never above it (the 10 % is a period's slack), and the worker got close to it. Below by more than
    # 20 % is this shared host's steal.
    assert 0.4 <= host <= 0.55, f"the host saw {host:.3f} CPUs under a 0.5 quota"
    if isinstance(rt, Runsc):  # measured: 0.64-0.80 inside at the host's 0.50
        return  # gVisor counts a task's time from the sentry, which cannot see the host throttle its thread
    assert host == pytest.approx(inside, abs=0.05), f"host {host:.3f} vs inside {inside:.3f} CPUs"


def test_memory_limit_is_hit(rt, container):
    limit = 64 << 20
    c = container(Limits(memory=limit))
    p = rt.run(c, ["python3", "-c", "b = bytearray(256 << 20); b[::4096] = b'x' * len(b[::4096]); print('alive')"],
               timeout=60)
    st = c.cgroup.stats()
    # inside: the allocation beyond the limit does not survive; host: the cgroup hit its limit
    assert "alive" not in p.stdout and p.returncode != 0
    assert st.memory_events["max"] > 0 or st.memory_events["oom_kill"] > 0
    assert st.memory_peak <= limit + (1 << 20)


def test_io_bps_limit_holds_for_direct_io(rt, container):
    dev = device_of(DATA.parent if DATA.exists() else DATA.parent.parent)
    rate = 5 << 20
    c = container(Limits(io=(IoLimit(dev, wbps=rate),)), data=True)
    t0 = time.monotonic()
    p = rt.run(c, ["dd", "if=/dev/zero", "of=/data/f", "bs=1M", "count=10", "oflag=direct"], timeout=60)
    wall = time.monotonic() - t0
    assert p.returncode == 0, p.stderr
    achieved = (10 << 20) / wall
    if isinstance(rt, Runsc):
        # gVisor's gofer writes on the container's behalf from outside the throttled cgroup: the limit is
        # not enforced (a finding, DESIGN §4/§5). Check that this is still so, so the test notices a fix.
        assert achieved > 2 * rate, f"runsc held the I/O limit ({achieved / 2**20:.1f} MiB/s): update the docs"
        return
    assert achieved <= rate * 1.15, f"{achieved / 2**20:.1f} MiB/s under a 5 MiB/s limit"
    assert achieved >= rate * 0.5
    io = c.cgroup.stats().io
    assert io.get(dev) and io[dev].wbytes >= 10 << 20  # the host saw the container's writes
