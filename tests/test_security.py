"""contend runs as root: each test here reproduces an attack or a failure from the security review
(issue 21) against the real thing (a crafted archive, a real store, real cgroups, a real guard) and checks
that it no longer works."""
from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path

import pytest

from contend.doctor.calibrate import device_of
from contend.kinds.isolation.cell import IsolationCell
from contend.paths import DATA
from contend.store import DB, Store

from .conftest import CONTEND, contend, needs_root, one_line_exit_2, require, run_that_made, runtime_or_skip
from .guardkit import kill_guard_with_caps
from .test_guard import cg  # noqa: F401  (a fixture: a fresh cgroup of contend's, removed after)

PRESETS = Path(__file__).parent.parent / "presets"


# ------------------------------------------------------------------ cluster collect
def _member(tar: tarfile.TarFile, name: str, data: bytes = b"x", **attrs) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in attrs.items():
        setattr(info, k, v)
    tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def test_a_store_path_with_a_quote_cannot_run_sql(tmp_path):
    """A directory name from inside an archive reached ATTACH '...' as SQL: it could write any file."""
    pwned = tmp_path / "pwned.csv"
    evil = tmp_path / f"trial' AS src (READ_ONLY); COPY (SELECT 42) TO '{pwned}'; ATTACH '{tmp_path}/y"
    evil.mkdir(parents=True)  # its slashes make it a path of directories: the string is the same
    Store(evil).close()
    (tmp_path / "out").mkdir()
    with Store(tmp_path / "out", cell=IsolationCell) as store:
        assert store.merge(evil) == []
    assert not pwned.exists()


@pytest.mark.parametrize("what", [
    "CREATE OR REPLACE VIEW trials AS SELECT content AS trial_id FROM read_text('{secret}')",
    "CREATE MACRO leak() AS (SELECT content FROM read_text('{secret}'))",
    "CREATE TABLE stolen AS SELECT 1 AS x"])
def test_a_store_with_views_macros_or_tables_of_its_own_is_refused_never_read(tmp_path, what):
    """Issue 52 H1: ATTACH ? stopped injection through the name, but a store's own view ran as root when
    contend read it: a `trials` view over a root-only file copied the file into a merged store and report.html."""
    import duckdb
    secret = tmp_path / "secret"
    secret.write_text("root-only text")
    os.chmod(secret, 0o600)
    art = tmp_path / "art"
    art.mkdir()
    Store(art, cell=IsolationCell).close()
    with duckdb.connect(str(art / DB)) as con:
        if "VIEW trials" in what:
            con.execute("DROP TABLE trials")
        con.execute(what.format(secret=secret))
    for opener in (lambda: Store(art, read_only=True), lambda: Store(art, cell=IsolationCell)):
        with pytest.raises(ValueError, match="not a store contend wrote"):
            opener()
    (tmp_path / "out").mkdir()
    with Store(tmp_path / "out", cell=IsolationCell) as store, pytest.raises(ValueError, match="refused"):
        store.merge(art)
    p = contend("report", str(art))
    one_line_exit_2(p, "not a store contend wrote")
    assert "root-only" not in p.stdout + p.stderr


def test_a_store_cannot_reach_a_file_outside_it(tmp_path):
    """Even a query of contend's own could not read or write outside the store: no file access, no extension
    autoloaded (DuckDB's own guidance for files from elsewhere)."""
    import duckdb
    with Store(tmp_path) as store, pytest.raises(duckdb.Error, match="disabled by configuration"):
        store.con.execute("SELECT * FROM read_text('/etc/hostname')")


def _extract(tmp_path: Path, build) -> Path:
    from contend.cluster.collect import _extract
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        build(tar)
    buf.seek(0)
    dest = tmp_path / "dest"
    with tarfile.open(fileobj=buf) as tar:
        _extract(tar, dest)
    return dest


@pytest.mark.parametrize("name, attrs", [
    ("trial/link", {"type": tarfile.SYMTYPE, "linkname": "/etc"}),
    ("trial/hard", {"type": tarfile.LNKTYPE, "linkname": "/etc/shadow"}),
    ("trial/dev", {"type": tarfile.CHRTYPE, "devmajor": 1, "devminor": 3}),
    ("trial/fifo", {"type": tarfile.FIFOTYPE}),
    ("../outside", {}),
    ("/abs", {}),
    ("trial/../../outside", {}),
])
def test_the_extractor_refuses_links_devices_and_escapes_on_any_python(tmp_path, name, attrs):
    with pytest.raises(tarfile.TarError, match="refusing member"):
        _extract(tmp_path, lambda tar: _member(tar, name, **attrs))
    assert not (tmp_path / "outside").exists()


def test_the_extractor_drops_setuid_bits_and_the_archives_owner(tmp_path):
    dest = _extract(tmp_path, lambda tar: _member(tar, "trial/suid", b"#!/bin/sh\n", mode=0o4755, uid=0,
                                                  gid=0, uname="root", gname="root"))
    mode = (dest / "trial" / "suid").stat().st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID | stat.S_IXUSR) and stat.S_IMODE(mode) == 0o644


def test_the_extractor_refuses_too_many_members_before_unpacking_them(tmp_path, monkeypatch):
    from contend.cluster import collect
    monkeypatch.setattr(collect, "MAX_MEMBERS", 5)
    with pytest.raises(tarfile.TarError, match="more than 5 members"):
        _extract(tmp_path, lambda tar: [_member(tar, f"trial/f{i}") for i in range(6)])


def test_the_extractor_refuses_an_archive_too_big(tmp_path, monkeypatch):
    from contend.cluster import collect
    monkeypatch.setattr(collect, "MAX_BYTES", 1000)
    with pytest.raises(tarfile.TarError, match="more than"):
        _extract(tmp_path, lambda tar: _member(tar, "trial/big", b"x" * 2000))


def test_a_directory_source_is_copied_without_following_links(tmp_path):
    """A directory source (an artifact copied by hand) with a link to /etc put /etc's files in the results."""
    from contend.cluster.collect import _copy_extras
    src = tmp_path / "trial"
    (src / "logs").mkdir(parents=True)
    (src / "logs" / "guard.log").write_text("{}\n")
    (src / "etc").symlink_to("/etc")
    (src / "logs" / "shadow").symlink_to("/etc/shadow")
    os.chmod(src / "logs" / "guard.log", 0o4755)
    out = tmp_path / "out"
    out.mkdir()
    _copy_extras(src, out)
    assert (out / "logs" / "guard.log").read_text() == "{}\n"
    assert stat.S_IMODE((out / "logs" / "guard.log").stat().st_mode) == 0o644
    assert not (out / "etc").exists() and not (out / "logs" / "shadow").exists()


def test_report_never_writes_through_a_link_in_the_results_directory(tmp_path):
    """Issue 52 M1: a report.html linked to a 0600 file got that file overwritten by root."""
    from contend.paths import write_text
    secret = tmp_path / "secret"
    secret.write_text("keep me")
    os.chmod(secret, 0o600)
    (tmp_path / "report.html").symlink_to(secret)
    with pytest.raises(OSError):
        write_text(tmp_path / "report.html", "<html>")
    assert secret.read_text() == "keep me" and stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_collect_reads_no_link_and_copies_the_file_it_checked(tmp_path):
    """Issue 52 M2: a directory source's host.json linked to a root-only file came out 0644 in the output; a
    file swapped for a link after the check was chmod-ed through it."""
    from contend.cluster.collect import TRIAL_JSON, CollectError, _dirs
    from contend.paths import copy_plain
    secret = tmp_path / "secret"
    secret.write_text('{"root": "only"}')
    os.chmod(secret, 0o600)
    art = tmp_path / "art"
    art.mkdir()
    Store(art).close()
    (art / TRIAL_JSON).write_text(json.dumps({"trial_id": "a", "spec_digest": "d", "status": "ok"}))
    (art / "host.json").symlink_to(secret)
    with pytest.raises(CollectError, match="host.json is a link"):
        _dirs(art, shown=None)
    (art / "host.json").unlink()
    (art / TRIAL_JSON).rename(art / "label")
    (art / TRIAL_JSON).symlink_to(art / "label")
    with pytest.raises(CollectError, match="not a contend trial label"):
        _dirs(art, shown=None)
    link = tmp_path / "log"  # what the walk saw as a file is a link by the time it is copied
    link.symlink_to(secret)
    with pytest.raises(OSError):
        copy_plain(link, tmp_path / "copied")
    assert not (tmp_path / "copied").exists() and stat.S_IMODE(secret.stat().st_mode) == 0o600


def test_a_store_that_is_a_link_is_not_a_trial(tmp_path):
    from contend.cluster.collect import TRIAL_JSON, CollectError, _dirs
    art = tmp_path / "art"
    art.mkdir()
    Store(tmp_path).close()
    (art / DB).symlink_to(tmp_path / DB)
    (art / TRIAL_JSON).write_text(json.dumps({"trial_id": "a", "spec_digest": "d", "status": "ok"}))
    with pytest.raises(CollectError, match="without its store"):
        _dirs(art, shown=None)


@needs_root
def test_the_psi_only_watch_runs_as_nobody_and_nobody_cannot_write_a_cgroup(tmp_path):
    """Issue 52 M4: contend watch --no-ebpf asked for root though it only reads world-readable files, so its
    DaemonSet ran as uid 0 beside writable v1 controller mounts. As nobody it watches; nobody cannot write the
    root-owned files a non-recursive read-only mount leaves writable, and eBPF still needs root (one line)."""
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    p = subprocess.run([*nobody, *CONTEND, "watch", "--no-ebpf", "--json", "--duration", "2.5", "-t", "cgroup:*"],
                       capture_output=True, text=True, timeout=60, cwd="/")
    assert p.returncode == 0, p.stderr
    assert "needs root" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    writable = [f for f in Path("/sys/fs/cgroup").glob("*/cgroup.procs")][:3] or [Path("/sys/fs/cgroup/cgroup.procs")]
    for f in writable:
        w = subprocess.run([*nobody, "sh", "-c", f"echo 1 > {f}"], capture_output=True, text=True)
        assert w.returncode != 0 and "ermission denied" in w.stderr, (f, w.stderr)
    one_line_exit_2(subprocess.run([*nobody, *CONTEND, "watch", "--duration", "1"], capture_output=True, text=True,
                                   timeout=60, cwd="/"), "needs root", "--no-ebpf")


def test_root_reads_no_link_a_container_left_in_its_data_directory(tmp_path):
    """Issue 52 L3: a tenant's /data is the container's to write: a server.log or fio log it made a link to a
    root-only file was read by root into the store and the failure message."""
    from contend.kinds.guard.trial import read_io_log
    from contend.load.database import last_log_line
    secret = tmp_path / "secret"
    secret.write_text("1000,5000000,0,4096\nFATAL root-only text\n")
    os.chmod(secret, 0o600)
    (tmp_path / "server.log").symlink_to(secret)
    (tmp_path / "victim_lat.1.log").symlink_to(secret)
    assert last_log_line(tmp_path) == "no server log"
    assert len(read_io_log(tmp_path / "victim_lat.1.log")) == 0
    (tmp_path / "server.log").unlink()
    (tmp_path / "server.log").write_text("ok\nFATAL: its own\n")  # its own file is read as before
    assert last_log_line(tmp_path) == "FATAL: its own"


# ------------------------------------------------------------------ cgroups
def test_pid_0_in_cgroup_procs_is_never_a_process_to_kill():
    """v2 cgroup.procs reads 0 for a dying task or one outside the reader's PID namespace; kill(0, SIGKILL)
    is contend's own process group."""
    from contend.cgroups.base import parse_pids
    assert parse_pids("0\n12\n\n-1\n7\n0\n") == [12, 7]


def test_a_cgroup_path_cannot_leave_the_hierarchy():
    from contend.cgroups import detect
    with pytest.raises(ValueError, match="must stay inside"):
        detect().cgroup("../../../tmp")
    from contend.cgroups import IoLimit
    with pytest.raises(ValueError, match="not a block device"):
        IoLimit("8:0\n1:1 wbps=1")


# ------------------------------------------------------------------ the guard as root
@needs_root
@pytest.mark.parametrize("target, words", [
    ("cgroup:../../../tmp", ("must stay inside the cgroup hierarchy",)),
    ("cgroup:/sys/fs/cgroup/blkio/../../../../tmp", ("must stay inside the cgroup hierarchy",)),
])
def test_a_guard_target_outside_the_hierarchy_is_exit_2(target, words):
    p = contend("guard", "-t", target, "--capacity", "254:0=1G", "--metrics", "off", "--duration", "1")
    one_line_exit_2(p, *words)
    assert not Path("/tmp/io.max").exists() and not Path("/tmp/blkio.throttle.write_bps_device").exists()


@pytest.mark.parametrize("capacity, words", [
    ("0", ("capacity: must be a rate from 1M to 1T",)),
    ("-5M", ("not a rate",)),
    ("1e400", ("capacity: must be a rate from 1M to 1T",)),
    ("nan", ("not a rate",)),
    ("100", ("capacity: must be a rate from 1M to 1T",)),
])
def test_a_guard_capacity_of_zero_nan_or_inf_is_exit_2(capacity, words):
    one_line_exit_2(contend("guard", "-t", "contend", "--capacity", f"254:0={capacity}", "--metrics", "off"), *words)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "0", "1e400", "9" * 400])
def test_a_guard_config_capacity_of_inf_is_exit_2(tmp_path, value):
    cfg = tmp_path / "guard.yaml"
    cfg.write_text(f"targets: [contend]\ndisks:\n  - device: '254:0'\n    capacity: {value}\n")
    one_line_exit_2(contend("guard", "--config", str(cfg), "--metrics", "off"), "disks[0].capacity")


@needs_root
def test_a_calibrated_capacity_of_zero_is_exit_2_not_a_1_byte_cap(tmp_path):
    from contend.doctor.calibrate import load_capacity
    cap = load_capacity()
    if "disk_write_bw_bytes_s" not in cap:
        pytest.skip("the disk was never calibrated on this host")
    home = tmp_path / "home"
    home.mkdir()
    (home / "capacity.json").write_text(json.dumps({**cap, "disk_write_bw_bytes_s": 0,
                                                    "disk_dir": str(home / "data")}))
    p = contend("guard", "-t", "contend", "--metrics", "off", "--duration", "1",
                env={**os.environ, "CONTEND_HOME": str(home)})
    one_line_exit_2(p, "capacity.json: disk_write_bw_bytes_s: must be a rate from 1M to 1T")


def _guard_caps_listed(relpath: str) -> bool:
    return f"guard cap {relpath} " in contend("clean", "--dry-run").stdout


@needs_root
def test_a_live_guard_that_is_pid_1_of_its_namespace_is_not_taken_for_dead(cg):
    """In the DaemonSet every guard is PID 1 of its pod: its state was 1.json, and `contend clean` on the
    host read /proc/1 (the host's init), took the live guard for dead and removed its caps."""
    require("unshare")
    host, g = cg
    dev = device_of(DATA)
    p = subprocess.Popen(["unshare", "--pid", "--fork", "--mount-proc", *CONTEND, "guard", "-t",
                          f"cgroup:{g.relpath}", "--capacity", f"{dev}=200M", "--metrics", "off"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not g.io_limits().get(dev) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert g.io_limits().get(dev), "the guard set no cap"
        assert not _guard_caps_listed(g.relpath), "clean would remove a live guard's caps"
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    assert _guard_caps_listed(g.relpath), "a SIGKILLed guard's caps are not found"
    assert contend("clean").returncode == 0
    assert not g.io_limits().get(dev)


@needs_root
def test_a_guard_restarted_after_sigkill_restores_what_was_there_before_the_first(cg):
    """The restarted guard recorded its predecessor's cap as the 'original' and restored it on exit: the
    target stayed throttled for good, with no record left."""
    from contend.cgroups import IoLimit, Limits
    from contend.guard.limiter import GUARD_STATE, Limiter
    host, g = cg
    dev = device_of(DATA)
    g.set_limits(Limits(io=(IoLimit(dev, wbps=150_000_000),)))  # the user's own throttle
    before = set(GUARD_STATE.glob("*.json")) if GUARD_STATE.is_dir() else set()
    kill_guard_with_caps(g, dev)
    assert g.io_limits()[dev].wbps < 150_000_000  # the dead guard's cap stays
    second = Limiter(host)
    second.apply(g.relpath, dev, 100e6)
    assert g.io_limits()[dev].wbps == 100_000_000
    # two guards in one PID namespace, or one process: never the same state file
    assert Limiter(host).state_file != second.state_file
    assert set(GUARD_STATE.glob("*.json")) - before == {second.state_file}, "the dead guard's record was not taken over"
    second.release_all()
    assert g.io_limits()[dev] == IoLimit(dev, wbps=150_000_000)
    assert not _guard_caps_listed(g.relpath)


@needs_root
def test_a_forged_guard_state_is_dropped_never_acted_on(cg):
    """State entries restored any relative path and device string (a newline reached io.max), and a
    malformed one crashed `contend clean` and every `contend run`."""
    from contend.guard import scheduler
    from contend.guard.limiter import GUARD_STATE
    host, g = cg
    dev = device_of(DATA)
    own = scheduler.current(dev)
    GUARD_STATE.mkdir(parents=True, exist_ok=True)
    outside = Path(f"/tmp/contend-sectest-{uuid.uuid4().hex[:6]}")
    outside.mkdir()
    forged = {
        "traversal": {"caps": [{"cgroup": f"../../../..{outside}", "device": dev, "original": None}]},
        "newline": {"caps": [{"cgroup": g.relpath, "device": f"{dev}\n1:1", "original": None}]},
        "bad-original": {"caps": [{"cgroup": g.relpath, "device": dev, "original": {"device": dev, "wbps": -1}}]},
        "not-a-list": {"caps": "x"},
        "bad-scheduler": {"schedulers": [{"cgroup": "", "device": dev, "original": "bfq\nnone"}]},
        "scheduler-of-a-cgroup": {"schedulers": [{"cgroup": g.relpath, "device": dev, "original": "none"}]},
        "bad-weight": {"weights": [{"cgroup": g.relpath, "device": dev, "original": 5000}]},
        "bad-cost-weight": {"cost_weights": [{"cgroup": g.relpath, "device": dev, "original": 20000}]},
        "bad-latency-target": {"latency_targets": [{"cgroup": g.relpath, "device": dev, "original": "5000 x"}]},
        "bad-iocost": {"iocost": [{"cgroup": "", "device": dev, "original": {"enable": "1 rpct=99"}}]},
        "iocost-of-a-cgroup": {"iocost": [{"cgroup": g.relpath, "device": dev, "original": None}]},
        # a shape's device is an interface's name and its original an IFB of contend's: nothing else is deleted
        "shape-of-a-path": {"shapes": [{"cgroup": g.relpath, "device": "../eth0", "original": "contendqabcdef"}]},
        "shape-of-a-foreign-link": {"shapes": [{"cgroup": g.relpath, "device": "eth0", "original": "docker0"}]},
        "shape-of-a-newline": {"shapes": [{"cgroup": g.relpath, "device": "eth0\nlo", "original": "contendqabcdef"}]},
        "not-json": "{",
    }
    files = [GUARD_STATE / f"sectest-{uuid.uuid4().hex[:6]}-{k}.json" for k in forged]
    try:
        for f, doc in zip(files, forged.values()):
            f.write_text(doc if isinstance(doc, str) else json.dumps(doc))
        dry = contend("clean", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert all(f"guard cap {f}" in dry.stdout for f in files), dry.stdout  # listed as files to remove
        assert contend("clean").returncode == 0
        assert not any(f.exists() for f in files)
        assert list(outside.iterdir()) == [] and not g.io_limits() and not g.io_weights()
        assert scheduler.current(dev) == own  # no forged scheduler switched to
        assert "docker0" not in dry.stdout and Path("/sys/class/net/lo").exists()
    finally:
        for f in files:
            f.unlink(missing_ok=True)
        outside.rmdir()


# ------------------------------------------------------------------ clean and a running study
@needs_root
def test_clean_refuses_while_a_study_runs_unless_forced(cg):
    """clean listed (and would SIGKILL) a running study's containers and cgroups."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from pathlib import Path; "
                               "from contend.hostlock import host_lock; l = host_lock(Path('/tmp/r')); "
                               "print('held', flush=True); time.sleep(60)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        host, g = cg
        one_line_exit_2(contend("clean", "--dry-run"), "a contend study is running on this host",
                        f"pid {holder.pid}", "--force")
        one_line_exit_2(contend("clean"), "a contend study is running on this host")
        assert g.exists()
        forced = contend("clean", "--dry-run", "--force")
        assert forced.returncode == 0 and f"cgroup {g.relpath}" in forced.stdout
    finally:
        holder.kill()
        holder.wait()
    assert contend("clean", "--dry-run").returncode == 0


def test_repetitions_and_quick_are_held_to_the_specs_bounds():
    """-n went through model_copy, which validates nothing: -n 5000 --dry-run planned 20,000 trials."""
    one_line_exit_2(contend("run", str(PRESETS / "quick.yaml"), "-n", "5000", "--dry-run"),
                    "quick.yaml (-n 5000): repetitions: must be <= 1000")


def _huge_fio(doc: dict) -> None:
    doc["benchmarks"].append("fio")
    doc["sizes"].setdefault("fio", {})["size"] = "900T"


def _huge_database(doc: dict) -> None:
    doc["scale"]["pgbench_scale"] = 100_000


@needs_root
@pytest.mark.parametrize("preset, patch, words", [
    ("copts-middleware23.yaml", _huge_fio, ("fio in", "MiB are free")),
    ("xavier-pdp15-oltp.yaml", _huge_database, ("the victim's database takes", "MiB are free")),
])
def test_every_kind_that_writes_checks_free_space_first(tmp_path, preset, patch, words):
    """Only isolation-disk and diskfill checked: a pgbench_scale of 100,000 (about 1.5 TB) was accepted."""
    import yaml
    doc = yaml.safe_load((PRESETS / preset).read_text())
    patch(doc)
    spec = tmp_path / preset
    spec.write_text(yaml.safe_dump(doc))
    one_line_exit_2(contend("run", str(spec), "--dry-run"), *words)


@needs_root
def test_clean_leaves_a_namespace_or_link_that_only_starts_like_contends(cg):
    """Links matched the bare prefix `contend`, namespaces `contend-`: a user's `contendvpn` or
    `contend-mine` (and every process in it) went with contend's own."""
    require("ip")
    theirs_ns, theirs_link = "contend-mine", "contendvpn0"
    _, ours_ns = run_that_made(f"name = 'contend-{uuid.uuid4().hex[:8]}-abiding'; owned.record('netns', name)")
    try:
        subprocess.run(["ip", "netns", "add", theirs_ns], check=True)
        subprocess.run(["ip", "netns", "add", ours_ns], check=True)  # what the killed run was making
        subprocess.run(["ip", "link", "add", theirs_link, "type", "veth", "peer", "name", "vpnpeer0"], check=True)
        dry = contend("clean", "--dry-run").stdout
        assert f"would remove network namespace {ours_ns}" in dry
        assert theirs_ns not in dry and theirs_link not in dry
        assert contend("clean").returncode == 0
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert theirs_ns in left and ours_ns not in left
    finally:
        subprocess.run(["ip", "netns", "del", theirs_ns], capture_output=True)
        subprocess.run(["ip", "netns", "del", ours_ns], capture_output=True)
        subprocess.run(["ip", "link", "del", theirs_link], capture_output=True)


# ------------------------------------------------------------------ ownership by record (owned.py)
@needs_root
def test_clean_leaves_what_a_running_contend_made_even_as_pid_1_of_its_namespace():
    """clean took every `contend-*` container for a leftover: a `contend doctor` or a guard evaluation
    running beside it (no study lock held) lost its containers. The maker here is PID 1 of its own PID
    namespace, as in a pod: its liveness is its run's flock, never a PID."""
    require("unshare")
    rt = runtime_or_skip("runc")
    make = f"name = runtimes.get('runc').create(runtimes.ContainerSpec('live-{uuid.uuid4().hex[:6]}')).name"
    p, name = run_that_made(f"assert os.getpid() == 1\n{make}", then="live",
                            prefix=("unshare", "--pid", "--fork", "--mount-proc"))
    cgroup, _ = rt.cgroups_for(name)
    try:
        dry = contend("clean", "--dry-run").stdout
        assert f"left alone: runc container {name}: in use by a running contend" in dry, dry
        assert f"would remove runc container {name}" not in dry
        assert contend("clean").returncode == 0
        assert cgroup.exists() and name in rt.leftovers(), "clean removed a running contend's container"
        forced = contend("clean", "--force")
        assert forced.returncode == 0 and f"removing runc container {name}" in forced.stdout
        assert not cgroup.exists()
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        rt.remove_leftover(name)


@needs_root
def test_an_object_with_contends_name_that_no_run_recorded_is_left_alone_unless_asked():
    """Ownership was the name alone: anything called contend-<hex>-<tenant> was removed, processes killed."""
    require("ip")
    ns = f"contend-{uuid.uuid4().hex[:8]}-abiding"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        dry = contend("clean", "--dry-run").stdout
        assert f"left alone: network namespace {ns}: no run of contend recorded it (--unrecorded" in dry, dry
        assert contend("clean").returncode == 0
        assert (Path("/run/netns") / ns).exists()
        assert contend("clean", "--unrecorded").returncode == 0
        assert not (Path("/run/netns") / ns).exists()
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


@needs_root
def test_a_dead_runs_records_go_once_what_they_name_is_gone():
    from contend import owned
    _, name = run_that_made(f"name = 'contend-{uuid.uuid4().hex[:8]}-x'; owned.record('directory', name)")
    runs = [d for d in owned.RUNS.iterdir() if (d / f"directory:{name}").exists()]
    assert len(runs) == 1 and not owned.owners()[("directory", name)].alive
    assert contend("clean").returncode == 0  # the directory was never made: nothing to remove, record dropped
    assert not runs[0].exists()


def test_records_are_names_contend_gives_never_paths(tmp_path, monkeypatch):
    """A record is a file name and a clean target: a path or a foreign kind in it is refused, and a forged
    ledger (a run that is a symlink, a record that is a link, a run.json that is not JSON) is ignored."""
    from contend import owned
    monkeypatch.setattr(owned, "RUNS", tmp_path / "runs")
    monkeypatch.setattr(owned, "_run", None)
    for kind, name in (("container", "../../etc"), ("container", "a/b"), ("file", "contend-x"), ("netns", "")):
        with pytest.raises(ValueError, match="not a name contend gives"):
            owned.record(kind, name)
    owned.record("container", "contend-abc-victim")
    mine = owned.owners()[("container", "contend-abc-victim")]
    assert mine.alive and mine.mine
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "container:contend-evil-x").touch()
    (owned.RUNS / ("f" * 32)).symlink_to(elsewhere)
    forged = owned.RUNS / ("e" * 32)
    forged.mkdir()
    (forged / "run.json").write_text("{")
    (forged / "container:contend-link-x").symlink_to("/etc/passwd")
    (forged / "container:contend-ok-x").touch()
    got = owned.owners()
    assert ("container", "contend-evil-x") not in got and ("container", "contend-link-x") not in got
    assert got[("container", "contend-ok-x")] == owned.Owner("e" * 32, 0, False, False)
    owned.prune(set())
    assert not forged.exists() and (owned.RUNS / ("f" * 32)).is_symlink() and elsewhere.exists()
    owned.forget("container", "contend-abc-victim")
    owned._end()
    assert not list(owned.RUNS.glob("*/container:contend-abc-victim"))
@needs_root
def test_an_engine_image_or_container_contend_did_not_make_is_left_alone(docker_engine):
    """`docker rmi contend/hostfs:1` removed any image of that name, and any container with the label
    contend=1 and a contend- name was taken for contend's."""
    from contend import runtimes
    from contend.runtimes.engine import IMAGE, rootfs_tarball
    rt = runtime_or_skip("docker")
    foreign = "contend-foreign-" + uuid.uuid4().hex[:6]
    subprocess.run(["docker", "import", "-", IMAGE], input=rootfs_tarball(), check=True, capture_output=True)
    try:
        subprocess.run(["docker", "create", "--name", foreign, "--label", "contend=1", IMAGE, "/usr/bin/true"],
                       check=True, capture_output=True)
        dry = contend("clean", "--dry-run").stdout
        assert foreign not in dry and "docker image" not in dry, dry
        with pytest.raises(runtimes.RuntimeFailed, match="exists that contend did not import"):
            rt.create(runtimes.ContainerSpec("sectest-engine"))
        assert contend("clean").returncode == 0
        assert subprocess.run(["docker", "inspect", foreign], capture_output=True).returncode == 0
        assert subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True).returncode == 0
    finally:
        subprocess.run(["docker", "rm", "-f", foreign], capture_output=True)
        subprocess.run(["docker", "rmi", IMAGE], capture_output=True)


# ------------------------------------------------------------------ the containers' seccomp profile
def test_a_docker_format_profile_resolves_as_docker_resolves_it():
    from contend.runtimes.security import DENIED, oci_seccomp
    profile = {"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
               "archMap": [{"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86"]},
                           {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]}],
               "syscalls": [
                   {"names": ["read", "write", "mount", "unshare"], "action": "SCMP_ACT_ALLOW"},
                   {"names": ["arch_prctl"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64"]}},
                   {"names": ["arm_fadvise64_64"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["arm64"]}},
                   {"names": ["chroot"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYS_CHROOT"]}},
                   {"names": ["chroot"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                    "excludes": {"caps": ["CAP_SYS_CHROOT"]}},
                   {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
                    "args": [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]}]}
    out = oci_seccomp(profile, {"CAP_KILL"}, "amd64")
    assert out["defaultAction"] == "SCMP_ACT_ERRNO" and out["defaultErrnoRet"] == 38
    assert out["architectures"] == ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"]
    rules = {(tuple(r["names"]), r["action"]) for r in out["syscalls"]}
    assert (("read", "write"), "SCMP_ACT_ALLOW") in rules  # mount and unshare taken out of the allow rule ...
    assert (tuple(DENIED), "SCMP_ACT_ERRNO") in rules  # ... and denied outright
    assert (("arch_prctl",), "SCMP_ACT_ALLOW") in rules and not any("arm_fadvise64_64" in n for n, _ in rules)
    assert (("chroot",), "SCMP_ACT_ERRNO") in rules and (("chroot",), "SCMP_ACT_ALLOW") not in rules
    (pers,) = [r for r in out["syscalls"] if r["names"] == ["personality"]]
    assert pers["args"] == [{"index": 0, "value": 8, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]
    with_chroot = oci_seccomp(profile, {"CAP_SYS_CHROOT"}, "arm64")
    assert {(tuple(r["names"]), r["action"]) for r in with_chroot["syscalls"]} >= {
        (("chroot",), "SCMP_ACT_ALLOW"), (("arm_fadvise64_64",), "SCMP_ACT_ALLOW")}
    assert with_chroot["architectures"] == ["SCMP_ARCH_AARCH64", "SCMP_ARCH_ARM"]


KEYCTL = ("import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); "
          "r = libc.syscall(250, 0, -3, 0); print(r, os.strerror(ctypes.get_errno()) if r < 0 else 'ok')")  # keyctl


@needs_root
@pytest.mark.parametrize("runtime", ["runc", "crun", "lxc"])
def test_a_syscall_the_capabilities_allow_is_still_denied_by_the_profile(runtime):
    """keyctl needs no capability (the host's root and any user may call it): EPERM in a container is the
    seccomp profile's doing, not the capability set's."""
    from contend.runtimes import ContainerSpec
    if os.uname().machine != "x86_64":
        pytest.skip("the syscall number is x86_64's")
    host = subprocess.run([sys.executable, "-c", KEYCTL], capture_output=True, text=True).stdout
    assert "Operation not permitted" not in host, host
    rt = runtime_or_skip(runtime)
    c = rt.create(ContainerSpec(f"sectest-seccomp-{uuid.uuid4().hex[:6]}"))
    try:
        p = rt.run(c, ["python3", "-c", KEYCTL])
        assert p.stdout.split()[0] == "-1" and "Operation not permitted" in p.stdout, p.stdout + p.stderr
    finally:
        rt.delete(c)


# ------------------------------------------------------------------ the containers' user namespace
def test_a_host_user_or_subuid_range_inside_contends_uid_range_is_named(tmp_path):
    """A container's uids are host uids USERNS_BASE.. +65535: if a user of this host, or a range /etc/subuid
    gives someone, lies there, a container's root would own that user's files; runc and crun refuse then."""
    from contend.runtimes.security import USERNS_BASE, userns_clash
    passwd, subuid = tmp_path / "passwd", tmp_path / "subuid"
    passwd.write_text("root:x:0:0::/root:/bin/sh\nbob:x:1000:1000::/home/bob:/bin/sh\n")
    subuid.write_text("bob:100000:65536\n# a comment\nalice:x:y\n")
    names = (str(passwd), str(subuid))
    assert userns_clash(names) == ""
    subuid.write_text(f"bob:100000:65536\ncarol:{USERNS_BASE - 10}:11\n")
    assert userns_clash(names) == f"{subuid}:2: carol overlaps host uids {USERNS_BASE}-{USERNS_BASE + 65535}"
    subuid.write_text(f"carol:{USERNS_BASE - 10}:10\n")  # ends just below
    assert userns_clash(names) == ""


# ------------------------------------------------------------------ round three (issue 95)
ESCAPE = "x/../../../outside/pwned"  # a trial id that, made a path below figures/ or frames/, leaves the results


def _tampered(tmp_path: Path, trial_id: str = ESCAPE, table_set: tuple[str, ...] = (
        "trials", "cells_isolation", "steps", "samples", "events")) -> Path:
    """A results directory whose store names one trial `trial_id` in every table: what an artefact from a
    compromised node holds."""
    import duckdb

    from .reportkit import isolation_results
    art = isolation_results(tmp_path / "art", repetitions=1)
    with duckdb.connect(str(art / DB)) as con:
        for t in table_set:
            con.execute(f"UPDATE {t} SET trial_id = ? WHERE trial_id = 'runc.harmony.cpu.r1'", [trial_id])
    return art


def test_a_trial_id_from_a_store_never_becomes_a_path(tmp_path):
    """H1: `contend report` of a store whose trial id is `x/../../../outside/pwned` wrote
    figures/timeline-x/../../../outside/pwned.png, outside the results directory, as root. Now the store is
    refused at its first bad row, in one line, and nothing is written."""
    art = _tampered(tmp_path)
    p = contend("report", str(art))
    one_line_exit_2(p, "trials row", "trial_id", "not a name")
    assert not (tmp_path / "outside").exists()
    assert not (art / "figures").exists() and not (art / "report.html").exists()
    for opener in (lambda: Store(art, read_only=True), lambda: Store(art, cell=IsolationCell)):
        with pytest.raises(ValueError, match="trials row 3: trial_id"):
            opener()


@pytest.mark.parametrize("column, value", [("tenant", "../x"), ("runtime", "runc/../../x"), ("trial_id", "a b"),
                                           ("trial_id", "..")])
def test_every_name_a_store_gives_a_file_is_checked_where_it_is_read_and_merged(tmp_path, column, value):
    import duckdb

    from .reportkit import isolation_results
    art = isolation_results(tmp_path / "art", repetitions=1)
    table = {"tenant": "samples", "runtime": "trials", "trial_id": "steps"}[column]
    with duckdb.connect(str(art / DB)) as con:
        con.execute(f"UPDATE {table} SET {column} = ? WHERE trial_id = 'runc.escape.cpu.r1'", [value])
    (tmp_path / "out").mkdir()
    with Store(tmp_path / "out", cell=IsolationCell) as store, pytest.raises(ValueError, match=f"{table} row"):
        store.merge(art)
    with Store(tmp_path / "out", cell=IsolationCell) as store:
        assert store.trials() == []  # nothing of it taken


def test_merge_takes_only_the_trial_an_artefact_names(tmp_path):
    """An artefact labelled trial A whose store also holds trial B would replace B, another node's trial."""
    from .reportkit import isolation_results
    art = isolation_results(tmp_path / "art", repetitions=1)
    (tmp_path / "out").mkdir()
    with Store(tmp_path / "out", cell=IsolationCell) as store:
        with pytest.raises(ValueError, match="holds trial 'runc.harmony.cpu.r1', not only runc.escape.cpu.r1"):
            store.merge(art, only={"runc.escape.cpu.r1"})
        assert store.trials() == []
        assert len(store.merge(art, only={"runc.escape.cpu.r1", "runc.harmony.cpu.r1", "runsc.escape.cpu.r1"})) == 3


def test_a_trials_frames_go_below_frames_whatever_its_id(tmp_path):
    """H1 at the writer itself: write_frames with an id that is a path refuses; a name is written below frames/."""
    from contend.kinds.detect.report import write_frames
    from contend.paths import BadName

    class Rows:  # what write_frames reads of a store: the trials and their events
        def __init__(self, tid):
            self.tid = tid

        def trials(self):
            return [{"trial_id": self.tid}]

        def events(self, _tid):
            return [{"kind": "watch-frame", "detail": '{"t": 1}'}]
    (tmp_path / "res").mkdir()
    with pytest.raises(BadName):
        write_frames(tmp_path / "res", Rows(ESCAPE))  # type: ignore[arg-type]
    assert not (tmp_path / "outside").exists()
    write_frames(tmp_path / "res", Rows("runc.cpu.r1"))  # type: ignore[arg-type]
    assert (tmp_path / "res" / "frames" / "runc.cpu.r1.jsonl").read_text() == '{"t": 1}\n'


@pytest.mark.parametrize("planted", ["figures", "figures/x", "copts"])
def test_a_planted_link_below_a_results_directory_is_refused_at_every_component(tmp_path, planted):
    """L2: the round-two fix covered the last component only: a `figures -> elsewhere` planted in a results
    directory was followed by the next root `contend report`, which wrote its PNGs and SVGs there."""
    from contend.paths import Refused, open_under, write_under

    from .reportkit import isolation_results
    art = isolation_results(tmp_path / "art", repetitions=1)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = art / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(elsewhere)
    if planted == "figures":
        p = contend("report", str(art))
        one_line_exit_2(p, "figures", "refused")
    with pytest.raises(Refused):
        write_under(art, *planted.split("/"), "t.png", text="x")
    with pytest.raises(Refused):
        open_under(art, *planted.split("/"), "deeper", "t.png")
    assert list(elsewhere.iterdir()) == []


@needs_root
def test_a_guard_given_only_the_blkio_hierarchy_writes_caps_and_no_other_cgroup_file(cg):
    """Issue 95: the guard DaemonSet's /sys/fs/cgroup read-write let its uid 0 write any cgroup file. What
    `render-guard --blkio-only` mounts, made here in a mount namespace of its own (every hierarchy read-only, blkio
    writable): a cap is written; cpu.shares, memory.limit_in_bytes and the unified tree's cgroup.kill are not."""
    host, g = cg
    if host.mode == "v2":
        pytest.skip("a v2 host keeps io.max in every cgroup's own directory: no mount narrows it (docs/security.md)")
    dev = device_of(DATA)
    rel = g.relpath
    files = {"cap": f"/sys/fs/cgroup/blkio/{rel}/blkio.throttle.write_bps_device",
             "cpu": f"/sys/fs/cgroup/cpu/{rel}/cpu.shares",
             "memory": f"/sys/fs/cgroup/memory/{rel}/memory.limit_in_bytes"}
    if host.unified is not None and (host.unified / rel / "cgroup.kill").exists():
        files["kill"] = str(host.unified / rel / "cgroup.kill")
    values = {"cap": f"{dev} 1048576", "cpu": "512", "memory": "1073741824", "kill": "1"}
    writes = "; ".join(f"(echo '{values[k]}' > {f} && echo {k}=ok || echo {k}=refused)" for k, f in files.items())
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                        "for m in $(awk '$2 ~ \"^/sys/fs/cgroup\" {print $2}' /proc/self/mounts | sort -u); do "
                        "[ \"$m\" = /sys/fs/cgroup/blkio ] || mount -o remount,bind,ro \"$m\"; done; " + writes],
                       capture_output=True, text=True, timeout=30)
    said = dict(ln.split("=") for ln in p.stdout.split())
    try:
        assert said.pop("cap") == "ok", p.stdout + p.stderr
        assert set(said.values()) == {"refused"}, p.stdout + p.stderr
        assert "Read-only file system" in p.stderr
    finally:
        subprocess.run(["sh", "-c", f"echo '{dev} 0' > {files['cap']}"], check=False)
