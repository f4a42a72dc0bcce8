"""Real cgroup v2: these run inside the v2 guest (scripts/cgroup2-guest.sh, started by test_cgroup2_guest.py)
and skip on any host whose cgroups are not v2. Every name says `real_v2`; the laid-out tree tests are in
test_cgroups.py (`v2_laid_out_tree`)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from contend.cgroups import IoLimit, Limits, V2Cgroup, detect
from contend.probes import BpftraceProbes, Target
from contend.runtimes import ContainerSpec

from .conftest import IS_ROOT, require, runtime_or_skip

HOST = detect() if IS_ROOT else None
pytestmark = [pytest.mark.cgroup2,
              pytest.mark.skipif(HOST is None or HOST.mode != "v2",
                                 reason="not a cgroup v2 host (make test boots a v2 guest for these)")]
DISK = "254:0"  # the guest's raw virtio disk


@pytest.fixture
def cg():
    g = V2Cgroup(f"contend/test-{uuid.uuid4().hex[:6]}", HOST.unified)
    g.create()
    yield g
    g.remove()


def start_in(g: V2Cgroup, argv: list[str]) -> subprocess.Popen:
    """Start argv already inside g (the shell joins, then execs), so every byte it uses is charged there."""
    return subprocess.Popen(["sh", "-c", f'echo $$ > {g.dir}/cgroup.procs && exec "$@"', "sh", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_real_v2_controllers_enabled_for_contend(cg):
    assert {"cpu", "memory", "io", "pids"} <= set(cg.controllers())


def test_real_v2_cpu_max_of_half_a_cpu_holds_and_throttles(cg):
    cg.set_limits(Limits(cpu=0.5))
    assert (cg.dir / "cpu.max").read_text().split() == ["50000", "100000"]
    p = start_in(cg, ["sh", "-c", "while :; do :; done"])
    try:
        time.sleep(0.5)
        s0, t0 = cg.stats(), time.monotonic()
        time.sleep(2.0)
        s1, t1 = cg.stats(), time.monotonic()
    finally:
        p.kill()
        p.wait()
    used = (s1.cpu_usage_ns - s0.cpu_usage_ns) / 1e9 / (t1 - t0)
    assert used == pytest.approx(0.5, rel=0.10)
    assert s1.nr_throttled > s0.nr_throttled and s1.throttled_ns > s0.throttled_ns
    assert s1.pressure["cpu.some.total_us"] > s0.pressure["cpu.some.total_us"]  # PSI saw the stalls


def test_real_v2_memory_max_triggers_oom_kill_event(cg):
    cg.set_limits(Limits(memory=32 << 20))
    p = start_in(cg, [sys.executable, "-c", "b = bytearray(128 << 20); b[::4096] = b'x' * len(b[::4096])"])
    p.wait(timeout=120)
    assert p.returncode == -9
    ev = cg.stats().memory_events
    assert ev["oom_kill"] >= 1 and ev["max"] >= 1
    assert cg.stats().memory_peak <= (32 << 20) + (1 << 20)


def timed(g: V2Cgroup, argv: list[str]) -> float:
    t0 = time.monotonic()
    p = start_in(g, argv)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return time.monotonic() - t0


def test_real_v2_io_max_holds_for_direct_writes_and_io_stat_counts(cg):
    cg.set_limits(Limits(io=(IoLimit(DISK, wbps=1 << 20),)))
    assert cg.io_limits()[DISK].wbps == 1 << 20
    wall = timed(cg, ["dd", "if=/dev/zero", "of=/dev/vda", "bs=256k", "count=12", "oflag=direct"])
    assert wall >= 2.4, f"3 MiB at 1 MiB/s took {wall:.1f}s"
    assert cg.stats().io[DISK].wbytes >= 3 << 20


@pytest.fixture
def ext4(tmp_path):
    require("mkfs.ext4")
    # inode tables and journal zeroed now, not by ext4lazyinit in the background: its writes, charged to no
    # cgroup, would be the disk's unattributed writes during a test
    subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", "/dev/vda"],
                   check=True, capture_output=True)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "/dev/vda", str(mnt)], check=True)
    yield mnt
    subprocess.run(["umount", str(mnt)], check=True)


def test_real_v2_io_max_holds_for_buffered_writes_through_writeback(cg, ext4):
    """v2 throttles writeback on the writer's behalf (v1's blkio.throttle does not)."""
    cg.set_limits(Limits(io=(IoLimit(DISK, wbps=2 << 20),)))
    wall = timed(cg, ["dd", "if=/dev/zero", f"of={ext4}/f", "bs=1M", "count=8", "conv=fsync"])
    assert wall >= 3.0, f"8 MiB buffered at 2 MiB/s took {wall:.1f}s"
    assert cg.stats().io[DISK].wbytes >= 8 << 20


def test_real_v2_runc_container_with_contend_limits():
    require("stress-ng")
    rt = runtime_or_skip("runc")
    c = rt.create(ContainerSpec(f"v2-{uuid.uuid4().hex[:6]}", Limits(cpu=0.5, memory=128 << 20, pids=64)))
    try:
        assert isinstance(c.cgroup, V2Cgroup) and c.tracking.dir == c.cgroup.dir  # on v2 the same cgroup
        assert (c.cgroup.dir / "cpu.max").read_text().split() == ["50000", "100000"]
        assert (c.cgroup.dir / "memory.max").read_text().strip() == str(128 << 20)
        before, t0 = c.cgroup.stats().cpu_usage_ns, time.monotonic()
        p = rt.run(c, ["timeout", "2", "sh", "-c", "while :; do :; done"], timeout=60)
        used = (c.cgroup.stats().cpu_usage_ns - before) / 1e9 / (time.monotonic() - t0)
        assert p.returncode == 124
        assert used == pytest.approx(0.5, abs=0.1)
    finally:
        rt.delete(c)
    assert not c.cgroup.exists()


def test_real_v2_doctor_reports_v2():
    p = subprocess.run([sys.executable, "-m", "contend.cli", "doctor", "--json"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout)
    cg = facts["cgroups"]
    assert cg["mode"] == "v2" and {"cpu", "io", "memory"} <= set(cg["controllers"])
    if facts["ebpf"]["bpftrace"]:  # every probe has a variant for this kernel, and doctor says which
        probes = {p["name"]: p for p in facts["ebpf"]["probes"]}
        assert all(p["attaches"] for p in probes.values()), probes
        if not Path("/sys/kernel/tracing/events/block/block_io_start").exists():  # Linux < 6.5
            assert probes["block"]["tracepoint"] == "block:block_bio_queue"


def integral(samples, quantity: str) -> float:
    """A rate's samples summed over their buckets' real lengths (a bucket ends where the next begins): on
    emulated CPUs a 100 ms tick can come late, and rate × 0.1 s undercounted 20 MiB as 15.5 on the 6.1 guest."""
    xs = sorted((s.t, s.value) for s in samples if s.quantity == quantity)
    gaps = [b[0] - a[0] for a, b in zip(xs, xs[1:])]
    return sum(v * dt for (_, v), dt in zip(xs, gaps + [sorted(gaps)[len(gaps) // 2] if gaps else 0.1]))


def test_real_v2_ebpf_attributes_a_containers_cpu_and_block_io(ext4):
    """The eBPF view on this kernel (the guest's 6.1 has no block_io_start: the block probe's older variant)."""
    require("bpftrace")
    rt = runtime_or_skip("runc")
    c = rt.create(ContainerSpec(f"v2-{uuid.uuid4().hex[:6]}", Limits(cpu=0.5), ext4))
    try:
        probes = BpftraceProbes([Target("t", c.cgroup, c.tracking)], period=0.1, wanted=("cpu", "block")).start(
            timeout=180)  # bpftrace compiles its program on emulated CPUs
        assert probes.attached == ["cpu", "block"], probes.problems
        used0, t0 = c.cgroup.stats().cpu_usage_ns, time.monotonic()
        p = rt.run(c, ["sh", "-c", "dd if=/dev/zero of=/data/f bs=1M count=20 oflag=direct 2>/dev/null; "
                                   "timeout 2 sh -c 'while :; do :; done'"], timeout=300)
        used, wall = (c.cgroup.stats().cpu_usage_ns - used0) / 1e9, time.monotonic() - t0
        samples = probes.stop()
    finally:
        rt.delete(c)
    assert p.returncode in (0, 124)
    blk, cpu_s = integral(samples, "blk_bytes_s"), integral(samples, "cpu")
    stamps = sorted(s.t for s in samples if s.quantity == "cpu")
    ticks = f"ticks every {(stamps[-1] - stamps[0]) / max(1, len(stamps) - 1):.3f} s" if stamps else "no ticks"
    assert blk == pytest.approx(20 << 20, rel=0.15), f"{blk / 2**20:.1f} MiB attributed ({probes.tracepoints}, {ticks})"
    # the quota holds in both views, and they agree (the container's CPU: dd's writes, then 2 s of spinning)
    assert 0.9 <= used <= 0.5 * wall + 0.3, f"cpu.stat: {used:.2f} CPU-s in {wall:.1f} s under a 0.5 quota"
    assert cpu_s == pytest.approx(used, rel=0.15), f"eBPF {cpu_s:.2f} CPU-s, cpu.stat {used:.2f}"


def test_real_v2_guard_caps_appear_follow_the_load_and_disappear_on_exit(cg):
    """The guard's collector (io.stat) and limiter (io.max) on a real v2 kernel."""
    from .guardkit import write_under_guard
    w = write_under_guard(HOST, cg, DISK, "/dev/vda", 20e6, mbytes=60, idle_periods=40)  # window 30 + 10
    assert w.during and max(w.during) >= 0.8 * 20e6, w.trace(200)
    busy = sorted(u for r in w.records for u in r.usage.values() if u > 0.5 * 20e6)
    assert busy and busy[len(busy) // 2] <= 1.2 * 20e6  # io.max holds (median: the first period runs uncapped)
    assert w.after_writer is not None and w.after_writer < 0.5 * 20e6, w.trace()
    assert w.after_exit is None or not (w.after_exit.wbps or w.after_exit.rbps)


@pytest.mark.parametrize("mode", ["buffered", "fsync"])
def test_real_v2_writeback_is_charged_to_the_writer_and_held_by_its_cap(cg, ext4, mode):
    """v2 charges writeback to the cgroup that owns the file's pages (cgroup writeback), whoever starts it: 60 MiB
    written into a new file's page cache and then fsynced, by dd itself or from outside its cgroup, are charged
    to dd's cgroup, reach the disk no faster than the guard's cap lets them, and the guard says no escape (v1's
    flusher finding, test_guard.py, does not hold). A file whose pages a removed cgroup owned would be charged
    there instead: the kernel moves an inode to its new writer's cgroup only after a while."""
    from .guardkit import write_under_guard
    t0 = time.monotonic()
    w = write_under_guard(HOST, cg, DISK, str(ext4 / f"f-{mode}"), 20e6, mbytes=60, idle_s=1.0, mode=mode)
    took = time.monotonic() - t0
    unattributed = sum(r.unattributed_bytes_s * 0.1 for r in w.records if r.unattributed_bytes_s > 0)
    assert not any(r.escaping for r in w.records), f"escape said, {unattributed / 2**20:.0f} MiB unattributed"
    assert cg.stats().io[DISK].wbytes >= 0.9 * (60 << 20)  # charged to dd's cgroup
    assert took >= 0.6 * (60 << 20) / 20e6, f"60 MiB in {took:.1f} s: the 20 MB/s cap did not hold the writeback"


def test_real_v2_sigkilled_guard_leaves_io_max_that_clean_removes(cg):
    from contend.clean import clean

    from .guardkit import kill_guard_with_caps
    kill_guard_with_caps(cg, DISK)
    clean()
    assert not cg.exists() or not (cg.io_limits().get(DISK) and cg.io_limits()[DISK].wbps)


def _weighted(cg: V2Cgroup, policy: str):
    """A guard of `policy` over cg (weight 2) on the guest's disk, after two periods: its weights are set."""
    from contend.guard import Guard, GuardConfig
    g = Guard(GuardConfig(policy=policy, targets=[{"target": f"cgroup:{cg.relpath}", "weight": 2}], metrics="off"),
              {DISK: 20e6}, HOST, log=None)
    g.scan(strict=True)
    for _ in range(2):  # the first period only reads the counters
        g.step()
        time.sleep(0.1)
    return g


def test_real_v2_iocost_weights_are_set_and_restored_and_clean_restores_a_killed_guards(cg):
    """io.weight under io.cost (the root's io.cost.qos) on a real v2 kernel: turned on with the guard, the
    target weighted, both put back when it stops; after a SIGKILL, by `contend clean`."""
    from contend.clean import clean
    from contend.guard import scheduler
    before = (scheduler.iocost_qos(DISK, HOST.unified) or {}).get("enable", "0")
    g = _weighted(cg, "iocost")
    try:
        assert scheduler.iocost_qos(DISK, HOST.unified)["enable"] == "1"
        assert cg.io_weights("cost").get(DISK) == 200
    finally:
        g.close()
    assert (scheduler.iocost_qos(DISK, HOST.unified) or {}).get("enable", "0") == before
    assert DISK not in cg.io_weights("cost")
    p = subprocess.Popen([sys.executable, "-m", "contend.cli", "guard", "--policy", "iocost", "-t",
                          f"cgroup:{cg.relpath}", "--capacity", f"{DISK}=20M", "--metrics", "off"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 90  # the guard's Python start in the emulated guest
        while DISK not in cg.io_weights("cost") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert cg.io_weights("cost").get(DISK) == 100
    finally:
        p.kill()
        p.wait()
    assert scheduler.iocost_qos(DISK, HOST.unified)["enable"] == "1"  # SIGKILL: nothing could put it back
    clean()
    assert scheduler.iocost_qos(DISK, HOST.unified)["enable"] == before and DISK not in cg.io_weights("cost")


def test_real_v2_iolatency_targets_the_heaviest_and_clean_restores_a_killed_guards(cg, tmp_path):
    """io.latency on a real v2 kernel: the heavier of two siblings gets the guard's target, the other none; the
    kernel reads it back; the guard's exit takes it off, and after a SIGKILL `contend clean` does. A kernel built
    without it (Debian's: CONFIG_BLK_CGROUP_IOLATENCY is not set) is told from the io.max beside no io.latency,
    and the guard refuses in one line (exit 2), changing nothing."""
    from contend.clean import clean
    from contend.guard import Guard, GuardConfig
    from contend.guard.daemon import iolatency_missing
    peer = V2Cgroup(f"contend/test-{uuid.uuid4().hex[:6]}", HOST.unified)
    peer.create()
    cfg = tmp_path / "guard.yaml"  # weights need the config file: -t takes none
    cfg.write_text(json.dumps({"policy": "iolatency", "metrics": "off",
                               "disks": [{"device": DISK, "capacity": "20M"}],
                               "targets": [{"target": f"cgroup:{cg.relpath}", "weight": 2},
                                           f"cgroup:{peer.relpath}"]}))
    guard = [sys.executable, "-m", "contend.cli", "guard", "-c", str(cfg), "--latency-ms", "3"]
    try:
        if not (cg.dir / "io.latency").exists():
            assert "built without CONFIG_BLK_CGROUP_IOLATENCY" in iolatency_missing(HOST)
            p = subprocess.run([*guard, "--duration", "1"], capture_output=True, text=True, timeout=120)
            assert p.returncode == 2 and "io.latency: this kernel" in p.stderr, p.stderr
            assert len(p.stderr.strip().splitlines()) == 1
            return
        g = Guard(GuardConfig(policy="iolatency", latency_ms=2, metrics="off",
                              targets=[{"target": f"cgroup:{cg.relpath}", "weight": 2},
                                       {"target": f"cgroup:{peer.relpath}"}]), {DISK: 20e6}, HOST, log=None)
        try:
            g.scan(strict=True)
            for _ in range(2):  # the first period only reads the counters
                g.step()
                time.sleep(0.1)
            assert cg.io_weights("latency") == {DISK: 2000} and peer.io_weights("latency") == {}
        finally:
            g.close()
        assert cg.io_weights("latency") == {}
        p = subprocess.Popen(guard, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 90  # the guard's Python start in the emulated guest
            while DISK not in cg.io_weights("latency") and time.monotonic() < deadline:
                time.sleep(0.2)
            assert cg.io_weights("latency") == {DISK: 3000}
        finally:
            p.kill()
            p.wait()
        assert cg.io_weights("latency") == {DISK: 3000}  # SIGKILL: nothing could put it back
        clean()
        assert cg.io_weights("latency") == {} and peer.io_weights("latency") == {}
    finally:
        peer.remove()


def test_real_v2_bfq_weights_are_set_with_the_scheduler_and_restored(cg):
    from contend.guard import scheduler
    if "bfq" not in scheduler.offered(DISK):
        pytest.skip(f"the guest's disk offers no bfq ({scheduler.offered(DISK)})")
    own = scheduler.current(DISK)
    g = _weighted(cg, "bfq")
    try:
        assert scheduler.current(DISK) == "bfq" and cg.io_weights("bfq").get(DISK) == 200
    finally:
        g.close()
    assert scheduler.current(DISK) == own


def test_real_v2_watch_blames_a_cpu_antagonist_from_psi_and_ebpf():
    """contend watch on v2: each container's own cgroup is its unified one (PSI, eBPF id, cpu.max)."""
    from contend.watch.daemon import WatchConfig, Watcher
    run = f"contend/wv2-{uuid.uuid4().hex[:6]}"
    victim, noisy = V2Cgroup(f"{run}-victim", HOST.unified), V2Cgroup(f"{run}-noisy", HOST.unified)
    for g in (victim, noisy):
        g.create()
    spin = ["sh", "-c", "while :; do :; done"]
    procs = [start_in(victim, spin), start_in(victim, spin)]
    events, frames = [], []
    w = Watcher(WatchConfig([f"cgroup:{run}-*"], period=0.5, metrics="off"), HOST, events=events.append)
    w.start()  # its first reading and probes ready before the loads start
    stop = threading.Event()
    th = threading.Thread(target=w.run, args=(stop,), kwargs={"after_step": lambda x: frames.append(x.last)})
    th.start()
    try:
        time.sleep(5)
        procs += [start_in(noisy, spin), start_in(noisy, spin)]
        time.sleep(5)
    finally:
        stop.set()
        th.join(timeout=30)
        for p in procs:
            p.kill()
            p.wait()
        for g in (victim, noisy):
            g.remove()
    v = victim.relpath
    assert all(f.get(v, "cpu_psi") >= 0 for f in frames[1:]), "PSI of the container's own cgroup"
    blames = [(e["victim"], e["culprit"]) for e in events if e["event"] == "blame" and e["resource"] == "cpu"]
    assert (v, noisy.relpath) in blames, (events, w.problems)
    assert not [b for b in blames if b[1] == v], events
