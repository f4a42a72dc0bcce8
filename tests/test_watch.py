"""contend watch against real cgroups and real antagonists on this host (stress-ng, dd), and its command line.
The detector itself is tested on frames with known answers in test_watch_detector.py."""
from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from contend.cgroups import CgroupHost, Limits, detect
from contend.cgroups.v1 import v1_hierarchies
from contend.pageout import give_back
from contend.paths import DATA
from contend.probes.ebpf import give_back_compiler
from contend.watch.collector import DETAIL_EVERY, WatchCollector, detail_signals, host_netns, wants_detail
from contend.watch.daemon import WatchConfig, Watcher
from contend.watch.detector import ENDS
from contend.watch.runq import BTF, RunqProbe
from contend.watch.signals import Frame

from .conftest import CONTEND, contend, loop_disk, needs_root, one_line_exit_2, require, unused_loop, written_on


class Box:
    """A cgroup of contend's (and its unified mirror on a hybrid host) with real processes in it."""

    def __init__(self, host, run: str, name: str, limits: Limits | None = None):
        self.host = host
        self.name = f"contend/{run}-{name}"
        self.cg = host.cgroup(self.name)
        self.cg.create()
        self.tracking = host.tracking(self.name) if host.mode == "hybrid" else None
        if self.tracking is not None:
            self.tracking.create()
        if limits is not None:
            self.cg.set_limits(limits)
        self.procs: list[subprocess.Popen] = []

    def run(self, *argv: str) -> subprocess.Popen:
        def enter():
            self.cg.add_pid(os.getpid())
            if self.tracking is not None:
                self.tracking.add_pid(os.getpid())
        p = subprocess.Popen(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=enter)
        self.procs.append(p)
        return p

    def remove(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.cg.remove()
        if self.tracking is not None:
            self.tracking.remove()


@pytest.fixture
def boxes():
    host = detect()
    run = f"wtest-{uuid.uuid4().hex[:6]}"
    made: list[Box] = []

    def make(name: str, limits: Limits | None = None) -> Box:
        made.append(Box(host, run, name, limits))
        return made[-1]
    make.run = run
    yield make
    for b in made:
        b.remove()


def watch_while(run: str, act, seconds: float, period: float = 0.5, ebpf: bool = True,
                targets: list[str] | None = None, after_step=None, **cfg):
    """A Watcher on the run's cgroups (or `targets`) in a thread; `act(t0)` starts the loads; returns (events,
    frames). `after_step(watcher)` is called after each period; `cfg` goes to its WatchConfig."""
    events: list[dict] = []
    frames: list[Frame] = []
    w = Watcher(WatchConfig(targets or [f"cgroup:contend/{run}-*"], period=period, ebpf=ebpf,
                            **{"metrics": "off", **cfg}), events=events.append)
    w.start()  # its first reading and probes ready before the loads start
    stop = threading.Event()

    def step(x: Watcher) -> None:
        frames.append(x.last)
        if after_step is not None:
            after_step(x)
    th = threading.Thread(target=w.run, args=(stop,), kwargs={"after_step": step})
    th.start()
    try:
        t0 = time.monotonic() - w.collector.clock0
        act(t0)
        time.sleep(max(0.0, seconds - (time.monotonic() - w.collector.clock0 - t0)))
    finally:
        stop.set()
        th.join(timeout=30)
    assert w.problems == [] or not ebpf, w.problems
    return events, frames


def started(events: list[dict], kind: str | None = None) -> list[tuple]:
    return [(e["victim"].rsplit("-", 1)[-1], e["resource"], e["kind"], e["culprit"].rsplit("-", 1)[-1])
            for e in events if e["event"] not in ENDS and (kind is None or e["kind"] == kind)]


@needs_root
@pytest.mark.parametrize("ebpf", [True, pytest.param(False, marks=pytest.mark.slow)],  # psi-only: make test-all
                         ids=["ebpf", "psi-only"])
def test_a_cpu_antagonist_is_blamed_within_two_seconds(boxes, ebpf):
    require("stress-ng")
    victim, noisy = boxes("victim"), boxes("noisy")
    at = {}

    def act(t0):  # t0: the watcher's clock (its frames' t) now
        begun = time.monotonic()
        victim.run("stress-ng", "--cpu", "2", "--timeout", "14")
        time.sleep(5)  # the victim's baseline: both CPUs its own
        at["antagonist"] = t0 + time.monotonic() - begun
        noisy.run("stress-ng", "--cpu", "2", "--timeout", "8")
    events, frames = watch_while(boxes.run, act, 11, ebpf=ebpf)
    blames = [e for e in events if e["kind"] == "blame"]
    assert started(events, "blame") and all(b == ("victim", "cpu", "blame", "noisy")
                                            for b in started(events, "blame")), events
    assert not [e for e in events if e["kind"] == "blame" and e["culprit"].endswith("victim")]
    first = blames[0]
    assert 0 < first["t"] - at["antagonist"] <= 2.0, (first, at)
    if ebpf:
        assert first["evidence"]["preemptions_s"] > 10


@needs_root
def test_two_cpu_antagonists_the_one_that_took_the_time_is_first_throughout(boxes):
    """Issue 51's scene, shortened: a CPU hog beside a two-worker victim, then a writer that wakes on every
    direct write (preempting the victim far more often than the hog does). The verdict stays on the hog when
    the writer joins; the time the kernel saw taken is the victim's wait."""
    require("stress-ng")
    require("fio")
    victim, hog, writer = boxes("victim"), boxes("hog"), boxes("writer")
    DATA.mkdir(parents=True, exist_ok=True)
    file = DATA / f"{boxes.run}-writer.dat"
    at = {}

    def act(t0):  # t0: the watcher's clock (its frames' t) now
        begun = time.monotonic()
        victim.run("stress-ng", "--cpu", "2", "--timeout", "20")
        time.sleep(5)  # the baseline: both CPUs the victim's
        hog.run("stress-ng", "--cpu", "1", "--timeout", "15")
        time.sleep(5)
        at["writer"] = t0 + time.monotonic() - begun
        # at 200 MB/s: the writer used 0.2 CPU; unbounded on a faster disk it takes half a CPU, and
        # then it does take the victim's time (0.46 of it against the hog's 0.44, 1 run in 3 on 2026-11-28)
        writer.run("fio", "--name=w", f"--filename={file}", "--size=1G", "--rw=write", "--bs=1M", "--direct=1",
                   "--iodepth=16", "--ioengine=libaio", "--rate=200m", "--time_based", "--runtime=9")
    try:
        # laid out before the watch: fio's own layout of a new 1 GiB file is a burst of the writer's CPU when
        # it joins (which then did take the victim's time: the verdict moved to it in one CI run of 2026-11-28)
        with open(file, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, 1 << 30)
        events, frames = watch_while(boxes.run, act, 18)
    finally:
        file.unlink(missing_ok=True)
    cpu = [e for e in events if e["resource"] == "cpu" and e["victim"].endswith("victim") and e["event"] not in ENDS]
    assert cpu and all(e["kind"] == "blame" and e["culprit"].endswith("hog") for e in cpu), \
        [(e["t"], e["kind"], e["culprits"], e["why"]) for e in cpu]
    both = [f for f in frames if f.t - f.dt >= at["writer"] + 1]  # it writes to the watch's end
    # (at 200 MB/s it uses under 0.05 CPU: its bytes say it ran; they are read while the victim may suffer)
    assert any(f.get(writer.name, "io_bytes") > 50e6 for f in both), "the writer never ran"
    pre = {k: sum(f.preempt.get(victim.name, {}).get(k, 0.0) for f in both) for k in (hog.name, writer.name)}
    # ranked by preemptions the writer would be first (hog 0-43/s, writer 250-2,800/s here). By the time taken,
    # directly (hog and victim worker on one CPU) or by crowding (the hog alone on one CPU, the victim's two
    # workers on the other: then all its wait is its own), the hog is first, as asserted above
    assert pre[writer.name] > pre[hog.name], pre
    # two views of one wait: what the kernel charged to those who ran, and what the victim's tasks waited
    waited = sum(f.get(victim.name, "rq_delay") for f in frames[4:])
    charged = sum(sum(f.taken.get(victim.name, {}).values()) for f in frames[4:])
    assert charged == pytest.approx(waited, rel=0.1), (charged, waited)


def test_the_watch_loads_the_disk_model_without_the_guards_policy_or_its_libraries():
    """The watch's collector settles the disk's bytes with the guard's model (contend.diskuse), which sits below
    both: importing the watch loads no guard policy, no guard configuration, no numpy and no pydantic."""
    code = ("import sys, contend.watch.collector, contend.watch.daemon, contend.watch.detector; "
            "print(' '.join(m for m in ('numpy', 'pydantic', 'contend.guard.policy', 'contend.guard.config', "
            "'contend.guard.collector') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [], p.stdout


def test_the_detail_is_read_every_period_only_while_someone_may_suffer_on_memory_disk_or_network():
    """Pure: a calm node (its containers' memory and I/O stall under DETAIL_PSI, no slow TCP round trip, no
    verdict on those going on) has its memory, disk and network counters read in turns; anything else, every
    period. Unknown PSI is not calm."""
    calm = {"a": {"mem_psi": 0.0, "io_psi": 0.004, "net_rtt_ms": math.nan}, "b": {"mem_psi": 0.0, "io_psi": 0.0}}
    assert not wants_detail(calm, hot=False)
    assert wants_detail(calm, hot=True)
    assert wants_detail({**calm, "c": {"mem_psi": 0.03, "io_psi": 0.0}}, hot=False)
    assert wants_detail({**calm, "c": {"mem_psi": 0.0, "io_psi": 0.5}}, hot=False)
    assert wants_detail({**calm, "c": {"mem_psi": 0.0, "io_psi": 0.0, "net_rtt_ms": 20.0}}, hot=False)
    assert wants_detail({**calm, "c": {"mem_psi": math.nan, "io_psi": 0.0}}, hot=False)


def test_detail_signals_are_rates_over_the_readings_interval_and_unknown_where_unread():
    """Pure: counters read 2.5 s apart (a calm container's turn comes every DETAIL_EVERY periods) give per-second
    rates over those 2.5 s; an unreadable memory file makes its memory signals nan, not 0."""
    from contend.cgroups.base import IoCounters, Stats
    before = Stats(memory_majfaults=100, memory_events={"oom_kill": 1},
                   io={"8:0": IoCounters(rbytes=0, wbytes=1000, rios=0, wios=1)})
    now = Stats(memory_current=5 << 20, memory_majfaults=350, memory_events={"oom_kill": 1},
                io={"8:0": IoCounters(rbytes=0, wbytes=26_000, rios=0, wios=11)})
    out, busiest, moved = detail_signals(now, before, 2.5)
    assert out["majfault"] == 100 and out["oom_kill"] == 0 and out["mem"] == 5 << 20
    assert out["io_wbytes"] == 10_000 and out["io_ios"] == 4 and busiest == "8:0" and moved == 10_000
    now.unreadable["/sys/fs/cgroup/memory/x/memory.stat"] = "No such file or directory"
    out, _, _ = detail_signals(now, before, 2.5)
    assert math.isnan(out["majfault"]) and math.isnan(out["mem"]) and out["io_wbytes"] == 10_000


@needs_root
def test_a_calm_node_reads_memory_and_disk_in_turns_and_every_period_once_someone_waits_on_io(boxes):
    """Six containers, five asleep: each container's memory and disk counters are due once in DETAIL_EVERY
    periods (one or two containers a period) while nobody stalls, and are not read again while it does not run
    (its counters the same, its rates 0); once one of them reads the disk at random, waiting for each read,
    every container's are read every period, the reader's bytes among them."""
    require("fio")
    idle = [boxes(f"idle{i}") for i in range(5)]
    for b in idle:
        b.run("sleep", "60")
    reader = boxes("reader")
    DATA.mkdir(parents=True, exist_ok=True)
    file = DATA / f"{boxes.run}-reader.dat"
    at: dict[str, float] = {}
    seen: list[tuple[float, int, int]] = []

    def act(t0):
        time.sleep(4)
        at["io"] = t0 + 4
        reader.run("fio", "--name=r", f"--filename={file}", "--size=64M", "--rw=randread", "--bs=4k", "--direct=1",
                   "--time_based", "--runtime=6")
    try:
        _, frames = watch_while(boxes.run, act, 9, period=0.25,
                                after_step=lambda w: seen.append((w.last.t, w.collector.detailed, len(w.targets),
                                                                  w.collector.idle)))
    finally:
        file.unlink(missing_ok=True)
    # calm: after the period all six were first read together (as new targets: 1.61 s into a CI run on a busy
    # host, past the 1.5 s this test used to assume), before the reader starts
    first = next(t for t, _, n, _ in seen if n == 6)
    calm = [(d, i) for t, d, n, i in seen if max(1.5, first) < t < at["io"] and n == 6]
    assert len(calm) >= 5 and max(d for d, _ in calm) <= 2 and sum(d for d, _ in calm[:DETAIL_EVERY]) == 6, seen
    # each asleep container's second turn on: ran no nanosecond since its first reading, not read
    later = calm[DETAIL_EVERY + 1:]
    assert later and all(i == d for d, i in later) and sum(i for _, i in later) > 0, seen
    asleep = [f for f in frames if 1.5 < f.t < at["io"]]
    assert len(asleep) > DETAIL_EVERY + 1
    assert all(f.get(idle[0].name, "io_bytes") == 0 and f.get(idle[0].name, "majfault") == 0
               for f in asleep[DETAIL_EVERY + 1:])
    busy = [(f.t, d, i) for f, (t, d, n, i) in zip(frames, seen) if f.get(reader.name, "io_ios") > 100]
    assert len(busy) >= 8 and all(d == 6 and i == 0 for _, d, i in busy[1:]), (busy, seen)
    reads = [f.get(reader.name, "io_bytes") for f in frames if f.t > at["io"] + 2 and f.get(reader.name, "io_ios") > 0]
    assert len(set(reads)) == len(reads), "the reader's bytes were read anew every period"


@needs_root
def test_a_container_held_by_its_own_quota_blames_no_neighbour(boxes):
    require("stress-ng")
    victim, noisy = boxes("victim", Limits(cpu=0.3)), boxes("noisy")

    def act(t0):
        time.sleep(2.5)  # a calm baseline, then its own load beyond its quota, then a neighbour too
        victim.run("stress-ng", "--cpu", "1", "--timeout", "10")
        time.sleep(3)
        noisy.run("stress-ng", "--cpu", "1", "--timeout", "5")  # a neighbour that fits beside it
    events, frames = watch_while(boxes.run, act, 10)
    # no neighbour blamed; on CPU its own doing. (Its start can stall it on memory a moment, reading stress-ng
    # back from disk after a test that dropped the caches: `unattributed`, nobody's fault, seen once in 2026-11-27's
    # fresh-clone make test.)
    assert not [e for e in events if e["kind"] == "blame"], events
    cpu = [e for e in events if e["resource"] == "cpu" and e["event"] not in ENDS]
    assert cpu and set(started(cpu)) == {("victim", "cpu", "self", "victim")}, events
    assert "quota" in cpu[0]["why"]
    assert max(f.get(victim.name, "throttled") for f in frames) > 0.5


@needs_root
@pytest.mark.parametrize("set_when", ["made", "watched"])
def test_a_container_at_its_own_memory_limit_is_its_own_doing(boxes, set_when):
    """`watched`: its limit set after the watch found it, as protect's hold is: the verdict says the limit's
    value read when it was hit, not the one of the last rescan (it said "69 of nan MiB")."""
    require("stress-ng")
    victim = boxes("victim", Limits(memory=64 << 20) if set_when == "made" else None)

    def act(t0):
        time.sleep(2.5)
        if set_when == "watched":
            victim.cg.set_limits(Limits(memory=64 << 20))
        victim.run("stress-ng", "--vm", "1", "--vm-bytes", "200M", "--vm-keep", "--timeout", "6")
    events, frames = watch_while(boxes.run, act, 8)
    mem = started([e for e in events if e["resource"] == "memory"])
    assert mem and set(mem) == {("victim", "memory", "self", "victim")}, events
    assert not started(events, "blame"), events
    said = [e["why"] for e in events if e["resource"] == "memory" and e["event"] not in ENDS]
    assert all(" of 64 MiB" in r for r in said), said


@needs_root
def test_a_disk_antagonist_is_blamed(boxes):
    require("fio")
    victim, noisy = boxes("victim"), boxes("noisy")
    DATA.mkdir(parents=True, exist_ok=True)
    files = [DATA / f"{boxes.run}-{n}.dat" for n in ("victim", "noisy")]

    def act(t0):
        victim.run("fio", "--name=v", f"--filename={files[0]}", "--size=64M", "--rw=randread", "--bs=4k",
                   "--direct=1", "--iodepth=1", "--time_based", "--runtime=13", "--ioengine=psync")
        time.sleep(5)
        noisy.run("fio", "--name=n", f"--filename={files[1]}", "--size=1G", "--rw=write", "--bs=1M",
                  "--direct=1", "--iodepth=32", "--ioengine=libaio", "--time_based", "--runtime=6")
    try:
        events, frames = watch_while(boxes.run, act, 12)
    finally:
        for f in files:
            f.unlink(missing_ok=True)
    disk = started([e for e in events if e["resource"] == "disk"])
    assert ("victim", "disk", "blame", "noisy") in disk, (events, [f.host for f in frames])
    assert all(b[3] == "noisy" for b in disk if b[2] == "blame"), events


@pytest.mark.slow  # 19 s; in make test-all (and CI): make test stays under its 12 minutes (issue 50)
@needs_root
def test_watch_records_and_replay_gives_the_same_events(boxes, tmp_path):
    require("stress-ng")
    victim, noisy = boxes("victim"), boxes("noisy")
    rec = tmp_path / "rec.jsonl"
    victim.run("stress-ng", "--cpu", "2", "--timeout", "16")
    # noisy once the watcher has its baseline: its start (python, bpftrace attaching) takes a few seconds
    later = threading.Timer(8, lambda: noisy.run("stress-ng", "--cpu", "2", "--timeout", "5"))
    later.start()
    try:
        p = contend("watch", "-t", f"cgroup:contend/{boxes.run}-*", "--duration", "13", "--json",
                    "--metrics", "off", "--record", str(rec))
    finally:
        later.join()
    assert p.returncode == 0, p.stderr
    live = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert ("victim", "cpu", "blame", "noisy") in started(live), (live, rec.read_text()[-6000:])
    r = contend("watch", "--replay", str(rec), "--json")
    assert r.returncode == 0 and [json.loads(ln) for ln in r.stdout.splitlines()] == live
    again = contend("watch", "--record", str(rec), "--duration", "1", "--metrics", "off")
    one_line_exit_2(again, "exists", "not overwritten")


@needs_root
def test_watch_hands_a_disk_culprit_to_the_guard_and_tells_its_hook_every_event(boxes, tmp_path):
    """--guard: the blamed writer is capped while it is blamed (and while it presses against its cap), and
    every cap is gone when the watch stops; --hook: each event reaches the operator's command as JSON."""
    require("fio")
    from contend.doctor.calibrate import device_of
    victim, noisy = boxes("victim"), boxes("noisy")
    DATA.mkdir(parents=True, exist_ok=True)
    files = [DATA / f"{boxes.run}-{n}.dat" for n in ("victim", "noisy")]
    dev, told = device_of(DATA), tmp_path / "told.jsonl"
    caps: list[int] = []

    def poll(stop: threading.Event):
        while not stop.wait(0.25):
            lim = noisy.cg.io_limits().get(dev)
            if lim is not None and lim.wbps:
                caps.append(lim.wbps)
    victim.run("fio", "--name=v", f"--filename={files[0]}", "--size=64M", "--rw=randread", "--bs=4k", "--direct=1",
               "--iodepth=1", "--time_based", "--runtime=20", "--ioengine=psync")
    later = threading.Timer(8, lambda: noisy.run(
        "fio", "--name=n", f"--filename={files[1]}", "--size=1G", "--rw=write", "--bs=1M", "--direct=1",
        "--iodepth=32", "--ioengine=libaio", "--time_based", "--runtime=8"))
    stop = threading.Event()
    poller = threading.Thread(target=poll, args=(stop,))
    later.start()
    poller.start()
    try:
        p = contend("watch", "-t", f"cgroup:contend/{boxes.run}-*", "--duration", "16", "--json", "--metrics",
                    "off", "--guard", "--capacity", f"{dev}=4G", "--hook", f"cat >> {told}")
    finally:
        later.join()
        stop.set()
        poller.join()
        for f in files:
            f.unlink(missing_ok=True)
    assert p.returncode == 0, p.stderr[-3000:]
    events = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert ("victim", "disk", "blame", "noisy") in started(events), events
    assert caps and min(caps) < 4e9, p.stderr[-3000:]  # capped below the disk's capacity while it hurt
    log = [json.loads(ln) for ln in p.stderr.splitlines() if ln.startswith("{")]
    assert any(e["event"] == "cap" and e["target"].endswith("noisy") and e["cap_bytes_s"] for e in log)
    assert noisy.cg.io_limits() == {} and victim.cg.io_limits() == {}  # every cap gone with the watch
    time.sleep(0.5)  # the last hook's cat
    assert sorted(json.loads(ln)["t"] for ln in told.read_text().splitlines()) == [e["t"] for e in events]


def test_a_replay_of_something_else_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t": 1, "dt": 1, "containers": {}}\nnot json\n')
    one_line_exit_2(contend("watch", "--replay", str(bad)), "bad.jsonl:2", "not a frame")
    one_line_exit_2(contend("watch", "--replay", str(tmp_path / "none.jsonl")), "none.jsonl")


@pytest.mark.parametrize("args, words", [
    (["-t", "cgroup:../../etc"], ["no '..'"]),
    (["-t", "kube:x"], ["unknown target"]),
    (["--metrics", "nowhere"], ["--metrics"]),
    (["--disk", "999:999"], ["999:999", "no such block device"]),
    (["--capacity", "254:0=4G"], ["--capacity", "only with --guard"]),
    (["--guard", "--capacity", "254:0=fast"], ["fast"]),
])
def test_bad_watch_options_are_one_line_and_exit_2(args, words):
    one_line_exit_2(contend("watch", *args, "--duration", "1"), *words)


@needs_root
@pytest.mark.parametrize("after_s", [pytest.param(0.0, id="while-bpftrace-compiles"), pytest.param(6.0, id="watching")])
def test_sigterm_stops_the_watch_and_its_probe_with_it(after_s):
    """SIGTERM while it watches, and while its bpftrace still compiles (a fresh clone's CI run sent it there: the
    interrupt escaped the start, exit 130, and bpftrace, in a session of its own, was left running)."""
    require("bpftrace")
    p = subprocess.Popen([*CONTEND, "watch", "-t", "contend", "--json", "--metrics", "off"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        probe = []
        while not probe and time.monotonic() < deadline:  # its bpftrace, attached
            time.sleep(0.5)
            probe = [int(c) for c in subprocess.run(["pgrep", "-P", str(p.pid), "bpftrace"], capture_output=True,
                                                    text=True).stdout.split()]
        assert probe, "the watch started no bpftrace"
        time.sleep(after_s)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0 and "Traceback" not in err, (p.returncode, err)
    time.sleep(0.5)  # bpftrace is stopped by the watch, not by the signal: give it its exit
    assert all(not os.path.exists(f"/proc/{pid}") for pid in probe), "bpftrace outlived the watch"


def resident_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return math.nan


@needs_root
def test_bpftrace_gives_its_compilers_pages_back_once_attached_and_keeps_counting():
    """A real bpftrace's file pages of LLVM and clang are paged out once its probes are attached (compiled, they
    are not used again): its resident file pages fall well below what they were, its own memory is untouched,
    and it still counts and prints every tick, without reading its compiler back in. Its malloc is told to give
    back what compiling freed (MALLOC_TUNABLES)."""
    require("bpftrace")
    probe = RunqProbe(0.25, net_rtt=False).launch()
    try:
        ready = probe._ready
        assert ready is not None and ready.wait(30)
        pid = probe._proc.pid
        assert b"GLIBC_TUNABLES=glibc.malloc.trim_threshold=" in Path(f"/proc/{pid}/environ").read_bytes()
        file_before = resident_mib(pid, "RssFile")
        assert give_back_compiler(pid) > 0
        after = resident_mib(pid, "RssFile")
        assert file_before > 40 and after < file_before / 3, (file_before, after)
        probe.take()
        time.sleep(1.2)
        assert probe.take().span > 0.7 and resident_mib(pid, "RssFile") < file_before / 3
    finally:
        probe.stop()
    assert give_back_compiler(os.getpid()) == 0  # no compiler of its own here: nothing to give


MAPS_AND_WAITS = ("import mmap, sys; f = open(sys.argv[1], 'rb'); m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ);"
                  " sum(m[i] for i in range(0, len(m), 4096)); print('mapped', flush=True); sys.stdin.read()")


@needs_root
def test_a_process_gives_back_the_pages_of_a_library_it_alone_maps_and_keeps_those_another_maps(tmp_path):
    """pageout.give_back, as the watch gives back what it needed to start (START_LIBS): a real process's pages of a
    file it mapped and read leave its resident set; where another process maps the same pages, the kernel keeps
    them (why bench/watch_node.py gives back its own first). A file it does not map: nothing advised."""
    import mmap
    lib = tmp_path / "lib-of-its-own.so"
    lib.write_bytes(os.urandom(16 << 20))
    child = subprocess.Popen([sys.executable, "-c", MAPS_AND_WAITS, str(lib)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "mapped"
        with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as ours:
            sum(ours[i] for i in range(0, len(ours), 4096))  # this process maps them too: kept
            before = resident_mib(child.pid, "RssFile")
            assert give_back(child.pid, (lib.name,)) >= 16 << 20
            assert resident_mib(child.pid, "RssFile") > before - 2, "pages another process maps were dropped"
        assert give_back(child.pid, (lib.name,)) >= 16 << 20  # its alone now
        assert resident_mib(child.pid, "RssFile") < before - 14
        assert give_back(child.pid, ("no-such-library",)) == 0
    finally:
        child.kill()
        child.wait()


@needs_root
def test_the_probe_reads_tcp_round_trips_per_network_namespace_unless_told_not_to():
    """Real TCP over this namespace's loopback: the probe's RTT is keyed by the namespace's inode; with net_rtt
    off the tracepoint is not attached at all (its cost is the tracepoint's, docs/watch.md)."""
    require("bpftrace")
    if not BTF.exists():
        pytest.skip("no BTF: no RTT probe")
    off = RunqProbe(net_rtt=False).start()
    try:
        assert off.attached == ["runq"], off.problems
    finally:
        off.stop()
    probe = RunqProbe().start()
    try:
        assert probe.attached == ["runq", "tcp_rtt"], probe.problems
        srv = socket.create_server(("127.0.0.1", 0))
        cli = socket.create_connection(srv.getsockname())
        conn, _ = srv.accept()
        rtt: dict = {}
        deadline = time.monotonic() + 10  # bpftrace says it attached a little before its probes fire: go on
        while str(host_netns()) not in rtt and time.monotonic() < deadline:  # until a period has counted some
            for _ in range(1000):  # many small round trips: segments taken in on both sockets
                cli.sendall(b"x" * 512)
                conn.recv(4096)
            time.sleep(0.6)  # two of the probe's periods
            rtt = probe.take().rtt_ms
        for s in (cli, conn, srv):
            s.close()
    finally:
        probe.stop()
    assert str(host_netns()) in rtt, rtt
    assert 0 < rtt[str(host_netns())] < 50, rtt  # ms: loopback's round trips are µs


@needs_root
def test_the_probe_gives_the_span_its_totals_cover_by_whole_ticks():
    """take() returns what whole ticks counted and the kernel-clock span they cover: a take right after another
    covers no tick (span 0: its rates nan, not 0), one after a second covers about a second, whatever the
    number of ticks (a frame of half a period, the watcher's second look, takes one tick of two)."""
    require("bpftrace")
    probe = RunqProbe(0.25, net_rtt=False).start()
    try:
        assert probe.attached == ["runq"], probe.problems
        probe.take()
        t0 = time.monotonic()
        time.sleep(1.0)
        whole = probe.take()
        took_s = time.monotonic() - t0
        again = probe.take()
    finally:
        probe.stop()
    assert 0.5 <= whole.span <= took_s + 0.05, (whole.span, took_s)
    assert whole.span in (pytest.approx(0.25 * n, abs=0.02) for n in range(2, 6)), whole.span
    assert again.span == 0.0 and math.isnan(again.rate(0.0))
    assert whole.rate(whole.span / 2) == pytest.approx(0.5)


@needs_root
def test_a_disk_nobody_ever_throttled_is_counted_once_the_watch_starts(fresh_disk):
    """Issue 51's silent zero: on cgroup v1 a disk's I/O counters are kept by blk-throttle, which Linux 6.9+
    starts on a disk at its first throttle rule; before that every cgroup reads 0 bytes on it. The watch turns
    them on (from a cgroup of its own) and a container it did not make reads what it wrote."""
    host = detect()
    if host.mode not in ("v1", "hybrid"):
        pytest.skip("v2 counts every disk's I/O from the start (io.stat)")
    dev, mm = fresh_disk
    blkio = v1_hierarchies()["blkio"] / f"wtest-{uuid.uuid4().hex[:6]}"  # a cgroup not contend's
    blkio.mkdir()
    try:
        def write_8m():
            subprocess.run(["sh", "-c", f"echo $$ > {blkio}/cgroup.procs && exec dd if=/dev/zero of={dev} bs=1M "
                            "count=8 oflag=direct status=none"], check=True, timeout=60)
        write_8m()
        assert written_on(blkio, mm) == 0  # the failure mode, as a fresh machine has it
        WatchCollector(host, ebpf=False).close()
        write_8m()
        assert written_on(blkio, mm) == 8 << 20
    finally:
        blkio.rmdir()


@needs_root
def test_a_disk_removed_and_added_again_under_its_number_is_counted_again(tmp_path):
    """A long-lived watch remembers which disks it turned the counters on for. A disk that goes and comes back
    under the same MAJ:MIN (a loop device or a hot-plugged volume attached again) is a new disk to blk-throttle,
    which has not started on it: remembered by its number alone, it read 0 bytes for as long as the process lived."""
    host = detect()
    if host.mode not in ("v1", "hybrid"):
        pytest.skip("v2 counts every disk's I/O from the start (io.stat)")
    require("losetup")
    img, n = tmp_path / "disk.img", unused_loop()
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    with loop_disk(img, n) as (_, mm):
        WatchCollector(host, ebpf=False).close()  # counted, once
    blkio = v1_hierarchies()["blkio"] / f"wtest-{uuid.uuid4().hex[:6]}"  # a cgroup not contend's
    blkio.mkdir()
    try:
        with loop_disk(img, n) as (dev, again):
            assert again == mm  # the same number, a new disk
            WatchCollector(host, ebpf=False).close()
            subprocess.run(["sh", "-c", f"echo $$ > {blkio}/cgroup.procs && exec dd if=/dev/zero of={dev} bs=1M "
                            "count=8 oflag=direct status=none"], check=True, timeout=60)
            assert written_on(blkio, mm) == 8 << 20
    finally:
        blkio.rmdir()


@needs_root
def test_a_cgroup_of_contends_counts_its_io_on_a_disk_nobody_ever_throttled(fresh_disk, boxes):
    host = detect()
    if host.mode not in ("v1", "hybrid"):
        pytest.skip("v2 counts every disk's I/O from the start (io.stat)")
    dev, mm = fresh_disk
    box = boxes("writer")
    box.run("dd", "if=/dev/zero", f"of={dev}", "bs=1M", "count=8", "oflag=direct", "status=none").wait(timeout=60)
    assert box.cg.stats().io[mm].wbytes == 8 << 20


@needs_root
def test_a_disk_counter_the_watch_cannot_read_is_unknown_and_said_once(tmp_path):
    """A cgroup v2 tree without the io controller has no io.stat (a v2 host where io is not delegated; here
    the hybrid host's unified tree): the writer's disk use is nan, not 0, and an `unreadable` event names the
    file and the error, once."""
    host = detect()
    if host.mode != "hybrid" or host.unified is None:
        pytest.skip("needs a cgroup v2 tree without the io controller (a hybrid host's unified one)")
    v2 = CgroupHost("v2", unified=host.unified)
    name = f"contend/wtest-{uuid.uuid4().hex[:6]}"
    cg = v2.cgroup(name)
    cg.create()
    DATA.mkdir(parents=True, exist_ok=True)
    out = DATA / f"{name.rsplit('/', 1)[-1]}.dat"
    p = subprocess.Popen(["sh", "-c", f"echo $$ > {cg.dir}/cgroup.procs && exec dd if=/dev/zero of={out} bs=1M "
                          "count=100000 oflag=direct status=none"])
    events: list[dict] = []
    frames: list[Frame] = []
    w = Watcher(WatchConfig([f"cgroup:{name}"], period=0.5, ebpf=False, metrics="off"), host=v2,
                events=events.append)
    try:
        w.run(duration=2.6, after_step=lambda x: frames.append(x.last))
    finally:
        p.kill()
        p.wait()
        out.unlink(missing_ok=True)
        cg.remove()
    told = [e for e in events if e["event"] == "unreadable"]
    assert len(told) == 1 and told[0]["victim"] == name, events
    assert "io.stat: No such file or directory" in told[0]["why"], told
    seen = [f.containers[name] for f in frames if name in f.containers]
    assert seen and all(math.isnan(s["io_bytes"]) for s in seen) and all(s["cpu"] > 0.01 for s in seen), seen


@needs_root
def test_a_container_with_no_memory_cgroup_of_its_own_reads_unknown_memory_and_is_said_once(boxes):
    """A container whose cgroup is missing from the memory hierarchy (a runtime that placed it below its own
    memory cgroup: containerd given a relative cgroup parent did so here) reads no memory counter: its memory
    signals are nan, not 0, and one `unreadable` event names the file (before, read_int's default made it 0)."""
    host = detect()
    if host.mode == "v2":
        pytest.skip("v1 memory hierarchy only")
    box = boxes("nomem")
    memdir = host.v1["memory"] / box.name
    memdir.rmdir()  # empty yet: the memory hierarchy alone loses it
    box.run("sleep", "30")
    events: list[dict] = []
    frames: list[Frame] = []
    w = Watcher(WatchConfig([f"cgroup:{box.name}"], period=0.5, ebpf=False, metrics="off"), events=events.append)
    w.run(duration=2.6, after_step=lambda x: frames.append(x.last))
    told = [e for e in events if e["event"] == "unreadable"]
    assert len(told) == 1 and told[0]["resource"] == "memory", events
    assert "memory.usage_in_bytes: No such file or directory" in told[0]["why"], told
    seen = [f.containers[box.name] for f in frames if box.name in f.containers]
    assert seen and all(math.isnan(s["mem"]) and math.isnan(s["refault"]) for s in seen), seen
    assert all(math.isfinite(s["cpu"]) for s in seen)


# ------------------------------------------------------------------ untrusted names on root's terminal (issue 95 L1)
EVIL = ("[/]", "[bold]x", "a\x1b[2Jb", "\x1b]0;owned\x07", "n" * 10_000)


def _evil_frames(victim: str, noisy: str) -> list[Frame]:
    """A CPU antagonist `noisy` hurting `victim` from frame 10: the detector blames it (test_watch_detector)."""
    calm = {victim: {"cpu": 0.95, "rq_delay": 0.01, "throttled": 0.0},
            noisy: {"cpu": 0.05, "rq_delay": 0.0, "throttled": 0.0}}
    out = []
    for i in range(20):
        bad = i >= 10
        cs = {victim: {**calm[victim], **({"cpu": 0.55, "rq_delay": 0.45} if bad else {})},
              noisy: {**calm[noisy], **({"cpu": 1.6} if bad else {})}}
        out.append(Frame(float(i + 1), 1.0, cs, {victim: {noisy: 180.0}} if bad else {}))
    return out


def _no_escape(text: str) -> None:
    for seq in ("\x1b[2J", "\x1b]0;", "\x07"):
        assert seq not in text, repr(text[:300])


@pytest.mark.parametrize("name", EVIL, ids=["close-tag", "bold", "esc", "osc", "10kB"])
def test_a_name_with_markup_escapes_or_10_kb_reaches_the_terminal_as_text(name):
    """A local user's delegated cgroup named `[/]` killed the live watch with MarkupError (and with --guard every
    cap went with it); a name with ESC sequences reached root's terminal. Now every name goes through
    terminal.plain: shown as text, `\\x1b` spelt out, a 10 kB name as its start and its length."""
    import io

    from rich.console import Console

    from contend.watch.detector import Detector
    from contend.watch.view import event_line, table
    frames = _evil_frames(name, "noisy" + name)
    d = Detector()
    events = [e for f in frames for e in d.step(f)]
    assert events and events[0]["event"] == "blame"
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=200).print(table(frames[-1], d.verdicts(), [f"problem {name}"],
                                                                  {name: "disk 1 MB/s"}))
    shown = out.getvalue()
    _no_escape(shown)
    if name.startswith("[") or "\x1b[2J" in name:
        assert name.replace("\x1b", "\\x1b") in shown
    lines = [event_line(e) for e in events]
    for ln in lines:
        _no_escape(ln)
        assert len(ln) < 3000
    spelt = name.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert "(10000 characters)" in lines[0] if len(name) > 1000 else spelt in lines[0]


def test_a_replayed_recording_shows_its_names_as_text(tmp_path):
    """--replay: a shared frames/*.jsonl is anybody's text; its names reach the terminal spelt out."""
    rec = tmp_path / "evil.jsonl"
    rec.write_text("".join(f.to_json() + "\n" for f in _evil_frames("v" + EVIL[2] + EVIL[0], "n" + EVIL[3])))
    p = contend("watch", "--replay", str(rec))
    assert p.returncode == 0 and "blame" in p.stdout, p.stdout + p.stderr
    _no_escape(p.stdout)
    assert "\\x1b[2J" in p.stdout and "[/]" in p.stdout


@needs_root
def test_the_live_watch_shows_a_real_cgroup_named_with_markup_and_escapes(boxes):
    """The live view over a real cgroup whose name holds `[/]` and an ESC sequence: rendered, never raised."""
    import io

    from rich.console import Console

    from contend.watch.view import table
    parent = boxes("ev[")  # `[/]` is a cgroup `[` with a child `]`: the child's path holds the markup
    b = Box(parent.host, boxes.run, "ev[/]il\x1b[2J")
    try:
        b.run("sleep", "30")
        events, frames = watch_while("", lambda t0: None, 2.0, ebpf=False, targets=[f"cgroup:{b.name}"])
    finally:
        b.remove()
    assert any(b.name in f.containers for f in frames), [list(f.containers) for f in frames]
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=200).print(table(frames[-1], []))
    _no_escape(out.getvalue())
    assert "ev[/]il\\x1b[2J" in out.getvalue()


@needs_root
def test_a_disk_culprit_the_guard_cannot_cap_is_said_once_and_strict_would_stop_on_it(boxes):
    """Issue 95 M2: a blamed culprit the guard has no target for was silence. Now, once the guard has scanned
    since the blame began, it is said once (the live view, the log) and `--strict` stops the watch with exit 1."""
    from contend.doctor.calibrate import device_of
    from contend.guard.targets import Resolved
    from contend.watch.detector import Verdict
    from contend.watch.handoff import GuardHandoff
    b = boxes("known")
    known = {b.name: Resolved(b.name, b.name)}
    DATA.mkdir(parents=True, exist_ok=True)
    h = GuardHandoff([f"cgroup:{b.name}"], lambda: known, {device_of(DATA): 4e9}, b.host)
    try:
        blame = Verdict("victim", "disk", "blame", "elsewhere/pod/ctr", 1.0, 0.0, "test")
        h.guard.scan()
        h.update([blame])
        assert h.problems == []  # blamed after the guard's last scan: it may resolve it at the next
        h.guard.scan()
        assert set(h.guard.targets) == {b.name}  # the watch's targets, by the watch's names
        for _ in range(3):
            h.update([blame])
        assert len(h.problems) == 1 and "elsewhere/pod/ctr" in h.problems[0] and "cannot cap" in h.problems[0]
        h.update([Verdict("victim", "disk", "blame", b.name, 1.0, 0.0, "test")])
        assert len(h.problems) == 1
        # its container ends while the verdict on its victim still stands (CI, 2026-12-07: a k8s writer pod's
        # fio ended): a target the guard had is no target it missed
        known.clear()
        h.guard.scan()
        for _ in range(3):
            h.update([Verdict("victim", "disk", "blame", b.name, 1.0, 0.0, "test")])
        assert len(h.problems) == 1, h.problems
    finally:
        h.close()
    one_line_exit_2(contend("watch", "--strict", "--duration", "1", "--metrics", "off"), "--strict", "--guard")
