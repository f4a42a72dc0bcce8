"""The load agent, the contended link and the memory/network probes, against real containers.

Each load must apply the level it is asked for (rate-controlled), change it in place, and report its own
figure every interval (the guest view); the link must be a real bottleneck; every runtime that can must
join a tenant's namespace.
"""
from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from functools import partial
from pathlib import Path

import pytest

from contend.cgroups import Limits
from contend.load import CpuLoad, DiskLoad, MemoryLoad, NetworkLoad
from contend.load.agent import Agent, build_agent, start_in
from contend.network import SINK_IP, Link, counter
from contend.paths import DATA
from contend.probes import BpftraceProbes, CgroupSampler, Target
from contend.probes.ebpf import per_tenant
from contend.runtimes import ContainerSpec

from .conftest import find, needs_root, require, runtime_or_skip

MiB = 1 << 20


# ---------------------------------------------------------------- pure: what each generator is asked to do
def test_generators_turn_a_level_into_the_agents_units():
    cpu = CpuLoad(2)
    assert cpu.agent_args("abiding") == ["cpu", "2"] and cpu.value(0.75) == 1.5  # 1.5 CPUs of 2
    m = MemoryLoad(1 << 30, headroom=0.05, limits={"abiding": 0.5, "disruptive": 0.5})
    assert m.target(0.5, "abiding") == int(0.5 * (1 << 30) * 0.95)  # at its limit: the headroom
    assert m.target(0.25, "disruptive") == int(0.25 * (1 << 30))  # below it: the level as it is
    assert m.target(0.49, "disruptive") == int(0.475 * (1 << 30))  # near it: never past the headroom
    assert m.target(0.75, "disruptive") == int(0.75 * (1 << 30))  # escape: crosses the limit on purpose
    assert m.target(0.5) == 1 << 29 and m.value(0.5, "abiding") == m.target(0.5, "abiding")
    m.settle("abiding", 13 * MiB)  # the runtime's own memory (gVisor's sentry) comes off the ceiling
    assert m.target(0.5, "abiding") == int(0.5 * (1 << 30) * 0.95) - 13 * MiB
    assert m.target(0.25, "abiding") == int(0.25 * (1 << 30))  # well below it: as asked
    assert m.target(0.75, "abiding") == int(0.75 * (1 << 30))  # above the limit: crossed on purpose
    disk = DiskLoad(40_000, block="1M")
    assert disk.value(0.25) == 10_000 and disk.agent_args("t") == ["disk", DiskLoad.FILE, "256M", "1M", "32"]
    assert "--create_only=1" in disk.prepare() and f"--filename={DiskLoad.FILE}" in disk.prepare()
    net = NetworkLoad(1e9, SINK_IP, {"abiding": 5201, "disruptive": 5202})
    assert net.value(0.3) == pytest.approx(0.3e9 / 8) and net.agent_args("disruptive") == ["net", SINK_IP, "5202"]


def test_an_agents_interval_report_is_the_guest_view():
    assert CpuLoad(2).guest(0.1, 500, 0) == {"ops_s": pytest.approx(5000)}
    assert MemoryLoad(1).guest(0.1, 1234, 0) == {"rss_bytes": 1234.0}
    assert DiskLoad(1).guest(0.5, 100, 5000) == {"iops": 200.0, "lat_mean_us": 50.0}
    assert DiskLoad(1).guest(0.5, 0, 0) == {"iops": 0.0}  # no write, no latency
    assert NetworkLoad(1e9, SINK_IP, {}).guest(2.0, 125, 0) == {"bps": 500.0}
    assert CpuLoad(2).guest(0.0, 5, 0) == {"ops_s": 0.0}


def test_bpftrace_map_keys_sum_per_tenant():
    ids = {"11": "abiding", "22": "disruptive"}
    by_key = {"11,100,0": 10, "11,100,1": 5, "11,101,1": 1, "33,7,1": 99, "22": 4}
    assert per_tenant(by_key, ids) == {"abiding": 16, "disruptive": 4}
    assert per_tenant({}, ids) == {"abiding": 0.0, "disruptive": 0.0}


# ---------------------------------------------------------------- real: the load agent in a runc container
@pytest.fixture
def tenant():
    rt = runtime_or_skip("runc")
    data = DATA / f"contend-test-{uuid.uuid4().hex[:6]}"
    data.mkdir(parents=True)
    made, agents = [], []

    def make(limits=Limits(), netns=None):
        c = rt.create(ContainerSpec(f"load-{uuid.uuid4().hex[:6]}", limits, data, netns=netns))
        made.append(c)
        return c

    def agent(c, gen, tenant="t"):
        a = start_in(rt, c, data, gen.agent_args(tenant))
        agents.append(a)
        return a
    yield rt, make, data, agent
    for a in agents:
        a.stop()
    for c in made:
        rt.delete(c)
    shutil.rmtree(data, ignore_errors=True)


def guest_over(a, gen, t0: float, t1: float) -> dict[str, float]:
    """The mean of each guest quantity over the agent's reports between host times t0 and t1."""
    got: dict[str, list[float]] = {}
    for t, seconds, work, extra in a.intervals(0.0):
        if t0 < t <= t1:
            for q, v in gen.guest(seconds, work, extra).items():
                got.setdefault(q, []).append(v)
    return {q: sum(v) / len(v) for q, v in got.items()}


def hold(a, gen, value: float, seconds: float) -> dict[str, float]:
    """Set a level, keep it `seconds`, return the guest view over its second half."""
    t = a.set(value)
    time.sleep(seconds)
    return guest_over(a, gen, t + seconds / 2, t + seconds)


@needs_root
def test_the_cpu_level_changes_in_place_and_the_host_sees_it(tenant):
    rt, make, data, agent = tenant
    c = make()
    gen = CpuLoad(2)
    sampler = CgroupSampler([Target("t", c.cgroup, c.tracking, partial(rt.track, c))], 0.1).start()
    a = agent(c, gen)
    pid = a.proc.pid
    low = hold(a, gen, gen.value(0.25), 2)  # 0.5 CPUs
    t_high = a.set(gen.value(0.75)) - sampler.clock0  # 1.5 CPUs
    time.sleep(2)
    samples = sampler.stop()
    assert a.running and a.proc.pid == pid  # one process, its level changed in place
    cpu = [(s.t, s.value) for s in samples if s.quantity == "cpu"]
    before = [v for t, v in cpu if t_high - 1 < t <= t_high - 0.1]
    after = [v for t, v in cpu if t_high + 0.5 < t <= t_high + 2]
    assert sum(before) / len(before) == pytest.approx(0.5, abs=0.1)
    assert sum(after) / len(after) == pytest.approx(1.5, abs=0.2)
    assert low["ops_s"] > 0


@needs_root
def test_the_memory_level_is_held_changed_in_place_and_seen_by_the_host(tenant):
    rt, make, data, agent = tenant
    c = make()
    gen = MemoryLoad(512 * MiB)
    sampler = CgroupSampler([Target("t", c.cgroup, c.tracking, partial(rt.track, c))], 0.1).start()
    a = agent(c, gen)
    up = hold(a, gen, gen.target(0.5), 1.0)
    down = hold(a, gen, gen.target(0.25), 1.0)
    samples = sampler.stop()
    assert up["rss_bytes"] == pytest.approx(gen.target(0.5), rel=0.03)
    assert down["rss_bytes"] == pytest.approx(gen.target(0.25), rel=0.03)  # released in place
    peak = max(s.value for s in samples if s.quantity == "mem_bytes")
    assert peak == pytest.approx(gen.target(0.5), rel=0.1)


@needs_root
@pytest.mark.parametrize("runtime", ["runc", "runsc"])
def test_a_tenant_held_at_its_memory_limit_survives_its_runtime(runtime):
    """100 % of a tenant's limit is held for the whole trial under every runtime: gVisor's sandbox keeps
    13 MiB of its own in the tenant's cgroup, and a 5 % headroom of a 256 MiB limit did not leave it that
    (the OOM killer ended the sandbox in the quick pass's runsc memory harmony and escape trials)."""
    from contend.load.ramp import RampController
    rt = runtime_or_skip(runtime)
    data = DATA / f"contend-test-{uuid.uuid4().hex[:6]}"
    data.mkdir(parents=True)
    c = rt.create(ContainerSpec(f"load-{uuid.uuid4().hex[:6]}", Limits(memory=256 * MiB), data))
    ctl = RampController(rt, {"abiding": c}, {"abiding": data},
                         MemoryLoad(512 * MiB, limits={"abiding": 0.5}), time.monotonic())
    try:
        ctl.prepare()
        ctl.apply("abiding", 0.5)
        time.sleep(2)
        a = ctl.agents["abiding"][-1]
        assert a.running, a.why_stopped()
        st = c.cgroup.stats()
        assert st.memory_events.get("oom_kill", 0) == 0
        assert 0.9 * 256 * MiB <= st.memory_current <= 256 * MiB
    finally:
        for a in ctl.agents["abiding"]:
            a.stop()
        rt.delete(c)
        shutil.rmtree(data, ignore_errors=True)


@needs_root
def test_memory_above_the_limit_is_oom_killed(tenant):
    from contend.load.agent import AgentError
    rt, make, data, agent = tenant
    c = make(Limits(memory=128 * MiB))
    a = agent(c, MemoryLoad(512 * MiB))
    with pytest.raises(AgentError, match="exited"):
        a.set(256 * MiB)  # the limit held: the OOM killer ended it
    assert c.cgroup.stats().memory_events.get("oom_kill", 0) >= 1


def test_an_agent_whose_output_ends_before_its_exec_exits_is_said_to_have_exited():
    """The OOM killer ends the agent in the container; runc exec, whose pipes these are, exits a moment after
    its output closed. The error is the exit, not "stopped answering" (a CI run failed on that race)."""
    from contend.load.agent import AgentError
    a = Agent.start(["sh", "-c", "exec 1>&-; sleep 0.5; exit 3"], subprocess.Popen)
    with pytest.raises(AgentError, match="exited 3"):
        a.set(1.0, timeout=10)


def unwritten_blocks(path: Path) -> int:
    """Blocks of a file that are allocated but never written (ext4's unwritten extents, from filefrag -v):
    a direct write there converts the extent, a journalled metadata change the disk's steady rate lacks."""
    out = subprocess.run(["filefrag", "-v", str(path)], capture_output=True, text=True, check=True).stdout
    total = 0
    for line in out.splitlines():
        cols = [c.strip() for c in line.split(":")]
        if len(cols) >= 4 and cols[0].isdigit() and "unwritten" in line:
            total += int(cols[3].split()[0])  # ext, logical, physical, length, … flags
    return total


@needs_root
def test_the_disk_file_is_written_once_before_the_trial(tenant):
    """fio's --create_only of a write job only fallocates: every random write of the first seconds then
    converted an unwritten extent and the baseline ran at half the disk's later rate (45k rising to 90k
    IOPS here). The layout writes every block once."""
    require("fio"), require("filefrag")
    rt, make, data, agent = tenant
    c = make()
    gen = DiskLoad(20_000, size="64M")
    assert rt.run(c, gen.prepare(), timeout=120).returncode == 0
    f = data / Path(DiskLoad.FILE).name
    assert f.stat().st_size == 64 * MiB and f.stat().st_blocks * 512 >= 64 * MiB
    assert unwritten_blocks(f) == 0


@needs_root
def test_the_calibration_file_is_written_before_it_is_measured(tmp_path):
    """The same for the calibration's file: a random write into an unwritten extent is slower than the
    overwrites a trial does, and a random read of one returns zeros without touching the disk."""
    require("fio"), require("filefrag")
    from contend.load.fio import layout
    f = tmp_path / "cal.fio"
    subprocess.run(layout(str(f), "32M"), capture_output=True, check=True, cwd=tmp_path)
    assert f.stat().st_size == 32 * MiB and unwritten_blocks(f) == 0


def disk_agent(rt, c, agent, gen):
    assert rt.run(c, gen.prepare(), timeout=120).returncode == 0
    return agent(c, gen)


@needs_root
def test_the_disk_load_applies_its_rate_and_reports_latency(tenant):
    require("fio")
    rt, make, data, agent = tenant
    c = make()
    gen = DiskLoad(20_000, size="64M")
    a = disk_agent(rt, c, agent, gen)
    guest = hold_iops(a, gen, gen.value(0.1), 2000)  # 2,000 IOPS asked
    assert guest["iops"] == pytest.approx(2000, rel=0.1)
    assert guest["lat_mean_us"] > 0
    assert hold_iops(a, gen, gen.value(0.05), 1000)["iops"] == pytest.approx(1000, rel=0.1)  # in place


def hold_iops(a, gen, value: float, asked: float) -> dict[str, float]:
    """hold() for a disk level, held once more if its 1 s window fell short: this VM's disk stops for 100-400 ms
    now and then, for every writer at once (docs/results/archive.md, 2026-11-26), and one such stop in the window takes
    a fifth of it (a fresh-clone CI met it: 1,662 of 2,000 IOPS). Two short windows in a row are a finding."""
    guest = hold(a, gen, value, 2)
    if guest["iops"] < 0.9 * asked:
        guest = hold(a, gen, value, 2)
    return guest


@needs_root
def test_an_iops_limit_caps_the_disk_load(tenant):
    require("fio")
    rt, make, data, agent = tenant
    from contend.cgroups import IoLimit
    from contend.doctor.calibrate import device_of
    c = make(Limits(io=(IoLimit(device_of(data), wiops=500),)))
    gen = DiskLoad(20_000, size="64M")
    guest = hold(disk_agent(rt, c, agent, gen), gen, gen.value(0.1), 2)  # asks 2,000, allowed 500
    assert guest["iops"] == pytest.approx(500, rel=0.15)


def test_a_disk_limit_is_iops_at_4k_and_bytes_at_larger_blocks():
    from contend.kinds.isolation.trial import limits_for
    cap = {"disk_device": "254:0", "disk_write_iops": 1000.0}
    assert limits_for("disk", 0.5, {**cap, "disk_block": "4K"}).io[0].wiops == 500
    (lim,) = limits_for("disk", 0.5, {**cap, "disk_block": "1M"}).io
    assert lim.wiops is None and lim.wbps == 500 * 2**20


def test_the_disk_unit_is_the_calibration_at_the_spec_block_size():
    from contend.doctor.calibrate import write_iops_key
    from contend.kinds import parse
    from contend.kinds.isolation.trial import generator_for, trial_capacity
    spec = parse("name: d\nruntimes: [runc]\nscenarios: [harmony]\nresources: [disk]\n"
                 "capacity: {disk_block: 1M}\n", "s.yaml")
    assert write_iops_key("4K") == "disk_write_iops" and write_iops_key("1m") == "disk_write_iops_1M"
    cap = trial_capacity({"cpus": 2, "disk_write_iops": 90_000.0, "disk_write_iops_1M": 5_000.0}, spec)
    assert cap["disk_write_iops"] == 5_000.0 and cap["disk_block"] == "1M"
    assert generator_for("disk", cap).block == "1M"
    # a block size never calibrated here: no disk unit at all, not the 4K figure under its name
    assert "disk_write_iops" not in trial_capacity({"cpus": 2, "disk_write_iops": 90_000.0}, spec)


@needs_root
def test_a_1m_disk_limit_caps_the_disk_load_by_its_bytes(tenant):
    """A large direct write may be split into several bios, which an IOPS throttle would count: the limit
    of a 1M load is bytes, and it holds in the load's own figures."""
    require("fio")
    from contend.doctor.calibrate import device_of
    from contend.kinds.isolation.trial import limits_for
    rt, make, data, agent = tenant
    cap = {"disk_device": device_of(data), "disk_write_iops": 400.0, "disk_block": "1M"}
    c = make(limits_for("disk", 0.25, cap))  # 100 × 1 MiB/s
    gen = DiskLoad(cap["disk_write_iops"], size="128M", block="1M")
    guest = hold(disk_agent(rt, c, agent, gen), gen, gen.value(0.5), 3)  # asks 200/s
    assert guest["iops"] == pytest.approx(100, rel=0.15)


# ---------------------------------------------------------------- the link
@pytest.fixture
def link():
    lk = Link(uuid.uuid4().hex[:8], 200e6, {"abiding": None, "disruptive": 50e6})
    lk.up()
    yield lk
    lk.down()


def send_from_netns(lk: Link, tenant: str, bps: float, seconds: float = 2) -> float:
    """The agent, paced at bps, from a tenant's namespace on the host: what arrived at the sink (bits/s
    over the second half, from the sink port's own counter)."""
    port = lk.ports[tenant]
    gen = NetworkLoad(lk.capacity_bps, SINK_IP, {tenant: port.server_port})
    a = Agent.start(["nsenter", f"--net={port.netns_path}", str(build_agent()), "-i", "100",
                     *gen.agent_args(tenant)], subprocess.Popen)
    try:
        a.set(gen.value(bps / lk.capacity_bps))
        time.sleep(seconds / 2)
        before, t0 = counter(lk.sink.host_dev, "tx_bytes"), time.monotonic()
        time.sleep(seconds / 2)
        return (counter(lk.sink.host_dev, "tx_bytes") - before) * 8 / (time.monotonic() - t0)
    finally:
        a.stop()


@needs_root
def test_link_bottleneck_and_tenant_limit_hold(link):
    assert send_from_netns(link, "abiding", 100e6) == pytest.approx(100e6, rel=0.08)  # paced, under capacity
    assert send_from_netns(link, "abiding", 1e9) == pytest.approx(200e6, rel=0.1)  # the bottleneck
    # its own limit: a tbf that holds gives at most the rate, and a loaded 2-CPU host a little less
    assert 0.75 * 50e6 <= send_from_netns(link, "disruptive", 1e9) <= 1.1 * 50e6


@needs_root
def test_link_down_leaves_nothing():
    lk = Link(uuid.uuid4().hex[:8], 1e9, {"abiding": None}).up()
    assert any(lk.short in str(x) for x in find())
    lk.down()
    assert not any(lk.short in str(x) for x in find())


@needs_root
@pytest.mark.parametrize("runtime", ["runc", "crun", "runsc", "lxc"])
def test_each_runtime_joins_the_tenant_namespace_and_reaches_the_sink(link, runtime):
    rt = runtime_or_skip(runtime)
    data = DATA / f"contend-test-{uuid.uuid4().hex[:6]}"
    data.mkdir(parents=True)
    c = rt.create(ContainerSpec(f"net-{uuid.uuid4().hex[:6]}", Limits(), data, netns=link.ports["abiding"].netns_path))
    a = None
    try:
        gen = NetworkLoad(link.capacity_bps, SINK_IP, {t: p.server_port for t, p in link.ports.items()})
        probes = BpftraceProbes([Target("abiding", c.cgroup, c.tracking, partial(rt.track, c),
                                        netdev=link.ports["abiding"].host_dev)], 0.1, wanted=("net",)).start()
        a = start_in(rt, c, data, gen.agent_args("abiding"))
        t = a.set(gen.value(0.25)) - probes.clock0  # 50 Mbit/s of the 200
        time.sleep(2.5)
        samples = probes.stop()
        guest = guest_over(a, gen, t + probes.clock0 + 0.5, t + probes.clock0 + 2.5)
        assert guest["bps"] == pytest.approx(50e6, rel=0.1)
        if probes.attached:
            sent = sum(s.value * 0.1 for s in samples if s.quantity == "net_bytes_s" and t + 0.5 < s.t <= t + 2.5) * 8
            assert sent == pytest.approx(100e6, rel=0.2), "eBPF saw the tenant's bytes at its veth"
    finally:
        if a is not None:
            a.stop()
        rt.delete(c)
        shutil.rmtree(data, ignore_errors=True)


@needs_root
def test_ebpf_attributes_resident_memory(tenant):
    require("bpftrace")
    rt, make, data, agent = tenant
    c = make()
    probes = BpftraceProbes([Target("t", c.cgroup, c.tracking, partial(rt.track, c))], 0.1,
                            wanted=("memory",)).start()
    assert probes.attached == ["memory"], probes.problems
    gen = MemoryLoad(512 * MiB)
    a = agent(c, gen)
    a.set(gen.target(0.5))
    time.sleep(1.0)  # held by now
    mid = time.monotonic() - probes.clock0
    a.stop()
    time.sleep(0.5)  # exited: its pages are gone
    samples = probes.stop()
    held = [s.value for s in samples if s.quantity == "rss_bytes" and mid - 0.3 < s.t < mid + 0.3]
    after = [s.value for s in samples if s.quantity == "rss_bytes"][-1]
    assert held and max(held) == pytest.approx(gen.target(0.5), rel=0.1)
    assert after < 0.1 * gen.target(0.5)
