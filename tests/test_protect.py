"""contend protect against real cgroups and real antagonists on this host (stress-ng): it holds the blamed
culprit back, the victim gets its CPU back, every setting is put back on exit, and a SIGKILLed protect's
settings are what `contend clean` finds and restores. The model itself: test_protect_model.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from contend.cgroups import Limits

from .conftest import CONTEND, contend, needs_root, one_line_exit_2, require
from .test_watch import boxes  # noqa: F401  (the fixture)

WEIGHT = ("cpu.weight", "cpu.shares")


def weight_file(box) -> str:
    return next(f for f in WEIGHT if box.cg.control(f).exists())


def cpu_s(box) -> float:
    return box.cg.stats(detail=False).cpu_usage_ns * 1e-9


def actions(stderr: str) -> list[dict]:
    return [e for e in (json.loads(ln) for ln in stderr.splitlines() if ln.startswith("{")) if e["event"] == "protect"]


@needs_root
def test_protect_holds_a_cpu_culprit_back_until_the_victim_is_whole_and_puts_every_setting_back(boxes):  # noqa: F811
    require("stress-ng")
    victim, noisy = boxes("victim"), boxes("noisy")
    wf = weight_file(noisy)
    before = noisy.cg.control(wf).read_text()
    victim.run("stress-ng", "--cpu", "2", "--timeout", "24")
    got: dict[str, float] = {}

    def share_in(name: str, start: float, seconds: float):
        def measure():
            a = cpu_s(victim)
            time.sleep(seconds)
            got[name] = (cpu_s(victim) - a) / seconds
        threading.Timer(start, measure).start()
    later = threading.Timer(7, lambda: noisy.run("stress-ng", "--cpu", "2", "--timeout", "16"))
    later.start()
    share_in("held", 15, 6)  # noisy hurting and held (found ~1 s after 7 s, acted on a second later)
    p = contend("protect", "-t", f"cgroup:contend/{boxes.run}-*", "--duration", "24", "--json", "--metrics", "off",
                "--resource", "cpu", "--release", "2", "--period", "0.5")
    later.join()
    assert p.returncode == 0, p.stderr[-3000:]
    acts = actions(p.stderr)
    tight = [a for a in acts if a["action"] == "tighten"]
    assert tight and all(a["culprit"].endswith("-noisy") and a["resource"] == "cpu" for a in acts), acts
    assert tight[0]["victims"] == [f"contend/{boxes.run}-victim"] and tight[0]["share"] >= 0.5
    assert any(s[0] == wf and s[2] is not None and int(s[2].split()[0]) < int(before) for a in tight
               for s in a["settings"]), tight
    # the victim asks for both CPUs: held back, noisy leaves it most of them (unheld, it had one: 0.5)
    assert got["held"] >= 0.9 * 2, got
    assert noisy.cg.control(wf).read_text() == before  # put back as it stopped
    assert not any(a["culprit"].endswith("-victim") for a in acts)


@needs_root
def test_protect_never_acts_on_a_victim_at_its_own_quota(boxes):  # noqa: F811
    require("stress-ng")
    victim, bystander = boxes("victim", Limits(cpu=0.5)), boxes("bystander")
    bystander.run("stress-ng", "--cpu", "1", "--cpu-load", "10", "--timeout", "14")
    later = threading.Timer(5, lambda: victim.run("stress-ng", "--cpu", "1", "--timeout", "8"))
    later.start()
    p = contend("protect", "-t", f"cgroup:contend/{boxes.run}-*", "--duration", "14", "--json", "--metrics", "off",
                "--period", "0.5", "--confirm", "0.5")
    later.join()
    assert p.returncode == 0, p.stderr[-3000:]
    events = [json.loads(ln) for ln in p.stdout.splitlines()]
    assert any(e["kind"] == "self" for e in events), events  # the watch saw it: its own doing
    assert actions(p.stderr) == []


@needs_root
def test_a_killed_protects_settings_are_what_clean_finds_and_puts_back(boxes, tmp_path):  # noqa: F811
    require("stress-ng")
    victim, noisy = boxes("victim"), boxes("noisy")
    wf = weight_file(noisy)
    before = noisy.cg.control(wf).read_text()
    victim.run("stress-ng", "--cpu", "2", "--timeout", "30")
    later = threading.Timer(6, lambda: noisy.run("stress-ng", "--cpu", "2", "--timeout", "24"))
    later.start()
    log = open(tmp_path / "log", "w+")
    p = subprocess.Popen([*CONTEND, "protect", "-t", f"cgroup:contend/{boxes.run}-*", "--json", "--metrics", "off",
                          "--resource", "cpu", "--period", "0.5"], stdout=subprocess.DEVNULL, stderr=log,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 25
        while time.monotonic() < deadline and noisy.cg.control(wf).read_text() == before:
            time.sleep(0.2)
        assert noisy.cg.control(wf).read_text() != before, (log.seek(0), log.read()[-3000:])
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        later.join()
    assert noisy.cg.control(wf).read_text() != before  # a SIGKILL puts nothing back
    dry = contend("clean", "--dry-run")
    assert f"setting contend/{boxes.run}-noisy {wf}" in dry.stdout + dry.stderr, dry.stdout + dry.stderr
    c = contend("clean")
    assert c.returncode == 0, c.stderr
    assert noisy.cg.control(wf).read_text() == before


def test_protect_refuses_bad_options_with_one_line():
    one_line_exit_2(contend("protect", "--resource", "gpu"), "--resource", "gpu")
    one_line_exit_2(contend("watch", "--dry-run"), "--dry-run", "--protect")
    one_line_exit_2(contend("watch", "--protect", "--guard"), "--guard", "--protect")
    one_line_exit_2(contend("protect", "--memory-floor", "lots"), "--memory-floor")
    one_line_exit_2(contend("protect", "--victims", "qos:Gold"), "--victims", "qos:Gold")
    one_line_exit_2(contend("protect", "--victims", "web"), "--victims", "web")
    one_line_exit_2(contend("watch", "--victims", "qos:Guaranteed"), "--victims", "--protect")


@needs_root
def test_each_actuator_sets_its_files_on_a_real_cgroup_and_puts_them_back(boxes, tmp_path):  # noqa: F811
    """CPU: the weight first, a quota above half-way, never below the floor; memory: memory.high (v2) or the hard
    limit (v1: never within ANON_HEADROOM of what it cannot give back), from its use down toward the floor; a dry
    run computes the same and writes nothing."""
    from contend.cgroups import detect
    from contend.guard.limiter import Limiter
    from contend.guard.targets import Resolved
    from contend.protect.actuators import ANON_HEADROOM, CpuActuator, MemoryActuator
    box = boxes("culprit")
    host = detect()
    target = Resolved(box.name, box.name)
    wf = weight_file(box)
    qf = "cpu.max" if wf == "cpu.weight" else "cpu.cfs_quota_us"
    mf = "memory.high" if box.cg.control("memory.high").exists() else "memory.limit_in_bytes"
    before = {f: box.cg.control(f).read_text() for f in (wf, qf, mf)}
    dry = CpuActuator(Limiter(host, dry_run=True, state_dir=tmp_path), host, floor_cpus=0.2)
    planned = dry.apply(target, 1.0, {})
    assert {f: box.cg.control(f).read_text() for f in (wf, qf, mf)} == before  # a dry run writes nothing
    lim = Limiter(host, state_dir=tmp_path)
    cpu, mem = CpuActuator(lim, host, floor_cpus=0.2), MemoryActuator(lim, host, floor_bytes=32 << 20)
    half = cpu.apply(target, 0.5, {})
    assert int(box.cg.control(wf).read_text()) == (1 if wf == "cpu.weight" else 2)
    assert box.cg.control(qf).read_text() == before[qf]  # the weight alone up to half-way
    full = cpu.apply(target, 1.0, {})
    assert [s.after for s in full] == [s.after for s in planned]
    quota = int(box.cg.control(qf).read_text().split()[0])
    assert quota == 20_000  # the floor: 0.2 CPU of a 100 ms period
    assert half[0].before == before[wf].strip()
    least = mem.anon(box.name) + ANON_HEADROOM if mf == "memory.limit_in_bytes" else 0
    mem.apply(target, 0.5, {"mem": float(256 << 20)})
    expected = max(least, int((256 << 20) * (32 / 256) ** 0.5))  # geometric; v1 rounds it down to a page
    assert int(box.cg.control(mf).read_text()) == pytest.approx(expected, abs=4096)
    mem.apply(target, 1.0, {"mem": float(256 << 20)})
    assert int(box.cg.control(mf).read_text()) == max(least, 32 << 20)  # never below the floor
    assert lim.state_file.exists()  # what was there, recorded before the first write
    cpu.apply(target, 0.0, {})
    mem.apply(target, 0.0, {})
    assert {f: box.cg.control(f).read_text() for f in (wf, qf, mf)} == before
    lim.release_all()
    assert not lim.state_file.exists()


@needs_root
def test_the_memory_actuator_takes_a_culprits_page_cache_back_and_follows_its_anonymous_memory_up(
        boxes, tmp_path):  # noqa: F811
    """A culprit holding 256 MiB of page cache, held at level 1: the kernel reclaims its cache to the setting
    (v1's hard limit, v2's memory.high); on v1 its anonymous memory then grows by 160 MiB in steps while the
    hold is kept each period: the limit rises ahead of it, nothing is OOM-killed, and all is put back."""
    from contend.cgroups import detect
    from contend.guard.limiter import Limiter
    from contend.guard.targets import Resolved
    from contend.protect.actuators import ANON_HEADROOM, MemoryActuator
    data = tmp_path / "cache.dat"
    subprocess.run(["dd", "if=/dev/urandom", f"of={data}", "bs=1M", "count=256", "conv=fsync",
                    "status=none"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("1")  # its pages, clean now, then read by the reader: charged to it
    box = boxes("reader")
    reader = box.run("sh", "-c", f"cat {data} > /dev/null; sleep 60")
    deadline = time.monotonic() + 30
    while box.cg.stats().memory_current < 200 << 20 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert box.cg.stats().memory_current >= 200 << 20
    host = detect()
    mem = MemoryActuator(Limiter(host, state_dir=tmp_path), host, floor_bytes=32 << 20)
    target = Resolved(box.name, box.name)
    mf = mem._file(box.name)
    before = box.cg.control(mf).read_text()
    mem.apply(target, 1.0, {"mem": float(box.cg.stats().memory_current)})
    time.sleep(0.5)
    assert box.cg.stats().memory_current <= int(box.cg.control(mf).read_text()) + (4 << 20)
    assert box.cg.stats().memory_current < 150 << 20  # its cache taken back
    grower = box.run(sys.executable, "-c", "import time\nb = []\nfor _ in range(10):\n"
                     "    b.append(b'x' * (16 << 20))\n    time.sleep(0.4)\ntime.sleep(60)")
    for _ in range(60):  # 6 s: every 0.1 s, as a watch period would
        mem.keep(target)
        time.sleep(0.1)
    assert grower.poll() is None and reader.poll() is None  # nobody killed
    assert box.cg.stats().memory_events.get("oom_kill", 0) == 0
    if mf == "memory.limit_in_bytes":
        assert int(box.cg.control(mf).read_text()) >= mem.anon(box.name) + ANON_HEADROOM - (1 << 20)
        assert mem.anon(box.name) >= 160 << 20
    mem.apply(target, 0.0, {})
    assert box.cg.control(mf).read_text() == before


@needs_root
def test_a_protect_study_end_to_end_pairs_the_modes_and_protect_lifts_the_cpu_victim(tmp_path):
    """kind: protect from the CLI: the cpu and network cases under none, protect and fixed, and a control under
    protect; the victim halved under none is whole under protect, protect acts only in the antagonist cases (on
    the network through its veth's shaping, the victim's rate known from what its agent sent), nothing is left."""
    import csv
    spec = tmp_path / "protect.yaml"
    spec.write_text("kind: protect\nname: tiny-protect\nruntimes: [runc]\ncases: [cpu, network, own-quota]\n"
                    "repetitions: 1\ntrial: {baseline_s: 5, jitter_s: 1, attack_s: 8, tail_s: 1, period_s: 0.5}\n"
                    "protect: {resources: [cpu, network]}\n")
    out = tmp_path / "out"
    p = contend("run", str(spec), "--out", str(out), timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    rows = {(r["scenario"], r["resource"], r["metric"]): float(r["value"] or "nan")
            for r in csv.DictReader(open(out / "metrics.csv"))}
    assert rows[("cpu", "none", "isolation")] < 0.7, rows  # noisy takes half of the victim's two CPUs
    assert rows[("cpu", "protect", "isolation")] > rows[("cpu", "none", "isolation")] + 0.2, rows
    assert rows[("cpu", "protect", "actions")] >= 1 and rows[("own-quota", "protect", "control_actions")] == 0
    assert rows[("network", "protect", "actions")] >= 1, rows
    assert all(0 <= rows[("network", m, "isolation")] <= 1 for m in ("none", "protect", "fixed")), rows
    assert all(v == 0 for (c, m, k), v in rows.items() if k == "settings_left")
    assert ("own-quota", "none", "isolation") not in rows  # a control runs under protect alone
    assert (out / "protect-tables.md").exists() and (out / "report.html").exists()
    assert list((out / "figures").glob("protect-runc.cpu.protect.r1.png"))


def _sink_rate(link, seconds: float) -> float:
    """Bits/s the link's sink port sent on to the sink (what got through a tenant's shaping) over `seconds`."""
    from contend.network import counter
    a = counter(link.sink.host_dev, "tx_bytes")
    time.sleep(seconds)
    return (counter(link.sink.host_dev, "tx_bytes") - a) * 8 / seconds


@needs_root
def test_the_network_actuator_shapes_what_a_culprit_sends_at_its_veth_and_a_dead_ones_shape_is_put_back(
        boxes, tmp_path):  # noqa: F811
    """A culprit in a namespace of contend's link sends as fast as TCP goes: held at level 0.5 (10 Mbit/s, from
    the 100 it was sending down to a floor of 1) the sink gets about 10; a dry run computes it and shapes
    nothing; given back, its veth has no ingress qdisc and the IFB is gone; a protect that dies holding one
    leaves a state entry that clean's path puts back."""
    import uuid

    from contend.cgroups import detect
    from contend.guard import limiter as guard_limiter
    from contend.guard.limiter import Limiter
    from contend.guard.targets import Resolved
    from contend.network import SINK_IP, Link, shaped
    from contend.protect.actuators import NetworkActuator
    host = detect()
    link = Link(uuid.uuid4().hex[:8], 1e9, {"culprit": None}).up()
    try:
        port = link.ports["culprit"]
        box = boxes("culprit")
        send = ("import socket, time\ns = socket.create_connection(('%s', %d))\nb = bytes(1 << 16)\n"
                "end = time.time() + 40\nwhile time.time() < end: s.sendall(b)\n") % (SINK_IP, port.server_port)
        box.run("ip", "netns", "exec", port.netns, "python3", "-c", send)
        time.sleep(1)
        free = _sink_rate(link, 1.5)
        assert free > 100e6, free  # unshaped, well above the rate it will be held to
        target = Resolved(box.name, box.name)
        sig = {"net_bytes": 100e6 / 8}
        dry = NetworkActuator(Limiter(host, dry_run=True, state_dir=tmp_path), host, floor_bps=1e6)
        planned = dry.apply(target, 0.5, sig)
        assert [s.file for s in planned] == [f"tc {port.host_dev}"] and planned[0].after == "10.0 Mbit/s"
        assert not shaped(port.host_dev)  # a dry run shapes nothing
        lim = Limiter(host, state_dir=tmp_path)
        net = NetworkActuator(lim, host, floor_bps=1e6)
        assert net.apply(target, 0.5, sig) == planned
        assert shaped(port.host_dev) and lim.state_file.exists()
        time.sleep(1)
        held = _sink_rate(link, 3)
        assert 3e6 < held < 13e6, held
        assert net.presses(target, {"net_bytes": held / 8})
        net.apply(target, 0.0, sig)
        assert not shaped(port.host_dev) and not list(Path("/sys/class/net").glob("contendq*"))
        # a protect killed holding it: its lock gone, its state is a leftover, and clean's path puts it back
        dead = Limiter(host, state_dir=tmp_path)
        NetworkActuator(dead, host, floor_bps=1e6).apply(target, 1.0, sig)
        assert shaped(port.host_dev)
        os.close(dead._lock)  # what the kernel does to a SIGKILLed one's flock
        found = [(f, e) for f, e in guard_limiter.leftovers(tmp_path) if e and e["kind"] == "shape"]
        assert [(e["cgroup"], e["device"]) for _, e in found] == [(box.name, port.host_dev)]
        guard_limiter.remove_leftover(host, *found[0])
        assert not shaped(port.host_dev) and not list(Path("/sys/class/net").glob("contendq*"))
        assert _sink_rate(link, 1.5) > 50e6  # it sends freely again
    finally:
        link.down()
