"""cgroups: v1/hybrid against this host's real hierarchies, v2 against the real unified tree for what it
holds here, and against a cgroupfs tree laid out as a v2 host lays it out for the rest (names say which)."""
from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from contend.cgroups import IoLimit, Limits, V1Cgroup, V2Cgroup, detect
from contend.cgroups.base import KeptOpen, mirror_members, read_text
from contend.cgroups.host import kernel_option

from .conftest import IS_ROOT, needs_root

HYBRID_MOUNTS = """cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0
cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""


def test_detect_modes_from_mount_tables():
    h = detect(HYBRID_MOUNTS)
    assert h.mode == "hybrid" and h.v1["cpu"] == Path("/sys/fs/cgroup/cpu") and "systemd" in h.v1
    assert h.unified == Path("/sys/fs/cgroup/unified")
    assert detect("cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n").mode == "v2"
    assert detect("\n".join(HYBRID_MOUNTS.splitlines()[:4])).mode == "v1"
    assert detect("proc /proc proc rw 0 0\n").mode == "none"


def test_kernel_option_read_from_a_kernel_config_gzipped_or_plain(tmp_path):
    """y and m are built, "is not set" and an absent line are not; the first readable config decides; none
    readable: cannot tell (None)."""
    import gzip
    text = ("CONFIG_BLK_CGROUP=y\nCONFIG_BLK_CGROUP_IOCOST=m\n# CONFIG_BLK_CGROUP_IOLATENCY is not set\n"
            "CONFIG_BLK_CGROUP_IOLATENCY_X=y\n")
    gz, plain = tmp_path / "config.gz", tmp_path / "config-6.1"
    gz.write_bytes(gzip.compress(text.encode()))
    plain.write_text("CONFIG_BLK_CGROUP_IOLATENCY=y\n")
    missing = str(tmp_path / "none.gz")
    assert kernel_option("BLK_CGROUP", [gz]) == (True, str(gz))
    assert kernel_option("BLK_CGROUP_IOCOST", [gz]) == (True, str(gz))
    assert kernel_option("BLK_CGROUP_IOLATENCY", [missing, gz, plain]) == (False, str(gz))
    assert kernel_option("NOT_THERE", [gz]) == (False, str(gz))
    assert kernel_option("BLK_CGROUP_IOLATENCY", [missing, plain]) == (True, str(plain))
    assert kernel_option("BLK_CGROUP_IOLATENCY", [missing]) == (None, "")


@pytest.mark.skipif(not Path("/proc/config.gz").exists(), reason="this kernel does not show its config")
def test_this_kernels_own_config_agrees_with_its_cgroups():
    """Read from the running kernel: the block cgroup controller this host mounts is built (a cross-check of the
    reader against the real thing); io.latency's answer is a yes or a no from the same file (this VM's 6.18:
    no, docs/results/archive.md 2026-11-27)."""
    assert ("blkio" in detect().v1 or "io" in detect().controllers()) and kernel_option("BLK_CGROUP")[0] is True
    built, source = kernel_option("BLK_CGROUP_IOLATENCY")
    assert built in (True, False) and source == "/proc/config.gz"


def test_cpu_and_cpuacct_mounted_together_map_to_one_directory():
    h = detect("cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n")
    assert h.v1["cpu"] == h.v1["cpuacct"]
    assert len(V1Cgroup("contend/x", h.v1).dirs()) == 1


# ----------------------------------------------------------------- v2, laid-out tree
def lay_out_v2(root: Path, relpath: str) -> Path:
    """A cgroupfs tree with the files a v2 host has (controllers enabled at the root)."""
    (root / "cgroup.controllers").write_text("cpuset cpu io memory hugetlb pids rdma misc\n")
    (root / "cgroup.subtree_control").write_text("")
    d = root / relpath
    d.mkdir(parents=True)
    files = {
        "cgroup.controllers": "cpu io memory pids\n", "cgroup.subtree_control": "", "cgroup.procs": "123\n456\n",
        "cpu.max": "max 100000\n", "memory.max": "max\n", "io.max": "", "pids.max": "max\n",
        "cpu.stat": "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 40\n"
                    "nr_throttled 7\nthrottled_usec 350000\n",
        "memory.current": "52428800\n", "memory.peak": "67108864\n",
        "memory.events": "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n",
        "io.stat": "254:0 rbytes=4096 wbytes=10485760 rios=1 wios=10 dbytes=0 dios=0\n"
                   "253:0 rbytes=8192 wbytes=0 rios=2 wios=0 dbytes=0 dios=0\n",
        "cpu.pressure": "some avg10=1.50 avg60=0.20 avg300=0.00 total=123456\n"
                        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        "io.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n"
                       "full avg10=0.00 avg60=0.00 avg300=0.00 total=40\n",
        "memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                           "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
    }
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def test_v2_laid_out_tree_limits_are_written_as_v2_expects(tmp_path):
    d = lay_out_v2(tmp_path, "contend/ct")
    cg = V2Cgroup("contend/ct", tmp_path)
    (d / "cpu.max").write_text("max 100000\n")
    (d / "memory.max").write_text("max\n")
    assert cg.ceilings() == (None, None)
    cg.set_limits(Limits(cpu=0.5, memory=256 << 20, pids=64,
                         io=(IoLimit("254:0", rbps=1 << 20, wiops=500),)))
    assert cg.ceilings() == (0.5, 256 << 20)
    assert (d / "cpu.max").read_text() == "50000 100000"
    assert (d / "memory.max").read_text() == str(256 << 20)
    assert (d / "pids.max").read_text() == "64"
    assert (d / "io.max").read_text() == "254:0 rbps=1048576 wbps=max riops=max wiops=500"
    cg.clear_io_limits("254:0")
    assert (d / "io.max").read_text() == "254:0 rbps=max wbps=max riops=max wiops=max"


def test_v2_laid_out_tree_io_latency_targets_as_the_kernel_writes_them(tmp_path):
    """io.latency (the real one: test_cgroup2.py in the v2 guest): `MAJ:MIN target=µs` read back, written, and
    `target=max` to remove one; v1 has no io.latency."""
    d = lay_out_v2(tmp_path, "contend/ct")
    cg = V2Cgroup("contend/ct", tmp_path)
    (d / "io.latency").write_text("254:0 target=5000\n8:0 target=250\n")
    assert cg.io_weights("latency") == {"254:0": 5000, "8:0": 250}
    cg.set_io_weight("254:0", 2000, "latency")
    assert (d / "io.latency").read_text() == "254:0 target=2000"
    cg.set_io_weight("254:0", None, "latency")
    assert (d / "io.latency").read_text() == "254:0 target=max"
    with pytest.raises(ValueError, match="not a latency weight"):
        cg.set_io_weight("254:0", 0, "latency")
    with pytest.raises(ValueError, match="io.latency weights need cgroup v2"):
        V1Cgroup("contend/ct", tmp_path).set_io_weight("254:0", 5000, "latency")


def test_v2_laid_out_tree_io_max_read_back(tmp_path):
    d = lay_out_v2(tmp_path, "contend/ct")
    (d / "io.max").write_text("254:0 rbps=max wbps=1048576 riops=max wiops=100\n")
    lim = V2Cgroup("contend/ct", tmp_path).io_limits()["254:0"]
    assert (lim.rbps, lim.wbps, lim.riops, lim.wiops) == (None, 1 << 20, None, 100)


def test_v2_laid_out_tree_stats_parse_every_counter(tmp_path):
    lay_out_v2(tmp_path, "contend/ct")
    s = V2Cgroup("contend/ct", tmp_path).stats()
    assert s.cpu_usage_ns == 2_500_000_000
    assert (s.nr_periods, s.nr_throttled, s.throttled_ns) == (40, 7, 350_000_000)
    assert (s.memory_current, s.memory_peak) == (50 << 20, 64 << 20)
    assert s.memory_events["oom_kill"] == 1 and s.memory_events["max"] == 12
    assert s.io["254:0"].wbytes == 10 << 20 and s.io["254:0"].wios == 10 and s.io["253:0"].rios == 2
    assert s.pressure["cpu.some.avg10"] == 1.5 and s.pressure["cpu.some.total_us"] == 123456
    assert s.pressure["io.full.total_us"] == 40
    assert V2Cgroup("contend/ct", tmp_path).procs() == [123, 456]


def test_v2_laid_out_tree_create_enables_controllers_top_down(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu io memory pids rdma\n")
    (tmp_path / "cgroup.subtree_control").write_text("")
    V2Cgroup("contend/new", tmp_path).create()
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu +memory +io +pids"
    assert (tmp_path / "contend/new").is_dir()


# ----------------------------------------------------------------- real hierarchies
@pytest.fixture
def spin():
    """A CPU-bound process with no children (so moving its pid moves all of it); killed whatever happens."""
    procs = []

    def start() -> subprocess.Popen:
        procs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
        return procs[-1]
    yield start
    for p in procs:
        p.kill()
        p.wait()


@pytest.fixture
def relpath():
    rel = f"contend/test-cg-{uuid.uuid4().hex[:6]}"
    yield rel
    # A test's cgroup left behind makes every later test that checks `contend clean` finds nothing fail (one CI run
    # had 21 such failures): remove it until no hierarchy holds it, and fail here, naming the hierarchy, if one does.
    host = detect()
    left: list[Path] = []
    for _ in range(20):
        for g in (host.cgroup(rel), host.tracking(rel)):
            if g is not None:
                try:
                    g.remove()
                except OSError:
                    pass
        left = [r.parent / rel for r in host.roots() if (r.parent / rel).exists()]
        if not left:
            return
        time.sleep(0.5)
    pytest.fail(f"the test's cgroup outlived it in {left}: {[(d / 'cgroup.procs').read_text() for d in left]}")


@needs_root
@pytest.mark.skipif(IS_ROOT and detect().mode not in ("v1", "hybrid"), reason="host is not cgroup v1/hybrid")
def test_v1_real_hierarchy_limits_and_stats(relpath, spin):
    host = detect()
    cg = host.cgroup(relpath)
    assert isinstance(cg, V1Cgroup)
    cg.create()
    assert cg.ceilings() == (None, None)  # a new cgroup: no quota, no memory limit
    cg.set_limits(Limits(cpu=0.25, memory=128 << 20, pids=50, io=(IoLimit("254:0", wbps=1 << 20),)))
    assert cg.ceilings() == (0.25, 128 << 20)
    cpu = host.v1["cpu"] / relpath
    assert (cpu / "cpu.cfs_quota_us").read_text().strip() == "25000"
    assert (host.v1["memory"] / relpath / "memory.limit_in_bytes").read_text().strip() == str(128 << 20)
    assert cg.io_limits()["254:0"].wbps == 1 << 20
    cg.clear_io_limits("254:0")
    assert "254:0" not in cg.io_limits()
    p = spin()
    cg.add_pid(p.pid)
    assert p.pid in cg.procs()
    t0, s0 = time.monotonic(), cg.stats()
    time.sleep(1.0)
    s1, t1 = cg.stats(), time.monotonic()
    used = (s1.cpu_usage_ns - s0.cpu_usage_ns) / 1e9 / (t1 - t0)
    assert used == pytest.approx(0.25, abs=0.05), "the quota holds, read back from cpuacct"
    assert s1.nr_throttled > 0  # (v1 memory does not move charges with a task: memory_current stays 0)
    cg.remove()
    p.wait()
    assert not cg.exists()


@needs_root
@pytest.mark.skipif(IS_ROOT and detect().mode != "hybrid", reason="host is not hybrid")
def test_hybrid_real_mirror_members_finds_new_processes_and_reads_the_tracking_cgroup_only_then(relpath, spin):
    """contend watch mirrors each container's processes into its tracking cgroup every period, passing back
    what it mirrored last: a new process is mirrored; with none new, the tracking cgroup is left unread (a
    process taken out of it behind the watch's back stays out, which shows the read was skipped)."""
    host = detect()
    cg, t = host.cgroup(relpath), host.tracking(relpath)
    cg.create()
    t.create()
    a, b = spin(), spin()
    cg.add_pid(a.pid)
    seen = mirror_members(cg, t)
    assert seen == {a.pid} and t.procs() == [a.pid]
    cg.add_pid(b.pid)
    seen = mirror_members(cg, t, seen)
    assert seen == {a.pid, b.pid} and sorted(t.procs()) == sorted(seen)
    (host.unified / "cgroup.procs").write_text(str(a.pid))  # out of the tracking cgroup, behind its back
    assert mirror_members(cg, t, seen) == seen and t.procs() == [b.pid]
    assert mirror_members(cg, t) == seen and sorted(t.procs()) == sorted(seen)  # with nothing passed: read, mirrored
    for p in (a, b):
        p.kill()
        p.wait()


@needs_root
@pytest.mark.skipif(IS_ROOT and detect().mode not in ("v1", "hybrid"), reason="host is not cgroup v1/hybrid")
def test_real_files_kept_open_read_anew_each_time_dropped_when_removed_and_process_lists_never_kept(relpath, spin):
    """KeptOpen (contend watch's reads): a kept file reads what the kernel counts now; a process list is read
    through a new open (v1 serves a kept cgroup.procs' old list for a second: a new process unseen); a removed
    cgroup's file raises and is closed, and the same path made again is read again; sweep closes the unread."""
    host = detect()
    cg = host.cgroup(relpath)
    cg.create()
    kept = KeptOpen()
    with kept.active():
        assert cg.members() == [] and cg.stats().cpu_usage_ns == 0
        p = spin()
        cg.add_pid(p.pid)
        assert cg.members() == [p.pid], "a process list read through a kept file: v1's stale list"
        first = cg.stats().cpu_usage_ns
        time.sleep(0.3)
        assert cg.stats().cpu_usage_ns > first + 100_000_000  # 0.3 s of a spinning process, read anew
    usage = host.v1["cpuacct"] / relpath / "cpuacct.usage"
    assert str(usage) in kept.fds and not any(k.endswith("cgroup.procs") for k in kept.fds)
    p.kill()
    p.wait()
    cg.remove()
    with kept.active():
        with pytest.raises(OSError):
            read_text(usage)
        assert str(usage) not in kept.fds
        cg.create()
        assert read_text(usage).strip() == "0"
    n = len(kept.fds)
    kept.sweep()  # every file was read since the start: all kept
    assert len(kept.fds) == n
    kept.sweep()  # none read since: all closed
    assert kept.fds == {}


def test_a_kernel_file_longer_than_one_read_is_read_whole_even_where_a_read_comes_back_short():
    """A kernel seq file may hand back less than asked while it has more (/proc/kallsyms: a page's worth of its
    5 MB a read here): a short read is not its end, so read_text and KeptOpen read on until a read is empty."""
    whole = Path("/proc/kallsyms").read_text()
    assert len(whole) > 65536
    assert read_text("/proc/kallsyms") == whole
    kept = KeptOpen()
    with kept.active():
        assert read_text("/proc/kallsyms") == whole and read_text("/proc/kallsyms") == whole  # kept, read again
    kept.close()


def test_files_kept_open_beyond_the_limit_are_read_and_closed(tmp_path):
    files = [tmp_path / f"f{i}" for i in range(3)]
    for i, f in enumerate(files):
        f.write_text(f"{i}\n")
    kept = KeptOpen(limit=2)
    with kept.active():
        assert [read_text(f) for f in files] == ["0\n", "1\n", "2\n"]
        files[0].write_text("changed\n")
        assert read_text(files[0]) == "changed\n"
    assert sorted(kept.fds) == [str(files[0]), str(files[1])]
    assert read_text(files[2]) == "2\n"  # outside active(): as ever
    kept.close()
    assert kept.fds == {}


@needs_root
@pytest.mark.skipif(IS_ROOT and detect().unified is None, reason="no cgroup2 mount on this host")
def test_v2_real_unified_tree_tracking_id_procs_and_pressure(relpath, spin):
    host = detect()
    t = host.tracking(relpath)
    t.create()
    p = spin()
    t.add_pid(p.pid)
    assert t.procs() == [p.pid]
    assert t.inode() == os.stat(host.unified / relpath).st_ino
    # the process's own view of its v2 cgroup is the tracking cgroup
    assert f"0::/{relpath}" in Path(f"/proc/{p.pid}/cgroup").read_text()
    s = t.stats()
    assert "cpu.some.total_us" in s.pressure  # PSI is per cgroup even without controllers
    if "cpu" in t.controllers():
        assert s.cpu_usage_ns > 0
    t.remove()
    p.wait()
    assert not t.exists()


def test_read_fields_gives_each_key_a_whole_parse_gives_and_no_line_a_key_ends(tmp_path):
    """memory.stat's few lines contend watch needs, found rather than parsed: `dirty` is not `total_dirty`, a
    key absent is left out; on this host's own memory.stat, the same numbers as read_keyed's."""
    from contend.cgroups.base import read_fields, read_keyed
    f = tmp_path / "memory.stat"
    f.write_text("cache 10\ndirty 3\ntotal_dirty 5\ntotal_pgmajfault 7\n")
    assert read_fields(f, ("dirty", "total_dirty", "total_pgmajfault", "total_writeback")) == \
        {"dirty": 3, "total_dirty": 5, "total_pgmajfault": 7}
    assert read_fields(tmp_path / "absent", ("dirty",)) == {}
    for real in ("/sys/fs/cgroup/memory/memory.stat", "/sys/fs/cgroup/memory.stat"):
        if os.path.exists(real):
            before = read_keyed(real)
            keys = tuple(before)
            got, after = read_fields(real, keys), read_keyed(real)
            assert set(got) == set(keys)
            assert all(got[k] == before[k] for k in keys if before[k] == after[k])  # the host's own moves
