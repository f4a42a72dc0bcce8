"""A contended link for network trials: tenants' namespaces and a sink on one bridge, a tc bottleneck.

veth to veth alone is not a contended NIC (18 Gbit/s here, CPU-bound), so the sink's port on the bridge
gets a token bucket at the link's capacity (Volpert et al. ran their network trials on a 1 Gbit/s NIC):
every tenant's traffic queues in that one FIFO. A tenant's own limit is a token bucket on its interface,
since no runtime sets a network rate itself.

    tenant netns contend-<uid>-<tenant>  eth0 ── contend<i><uid6> ─┐
                                                                   bridge contendb<uid6> ── contends<uid6> ──[tbf: capacity]── eth0  netns contend-<uid>-sink (load agent sinks)

A tenant's port is named by its index <i> (a digit: never the bridge's b, the sink's s or a peer's p, whatever
the tenant's name). Everything is named with contend's prefix and recorded (owned.py) before it is made, so `contend clean`
finds what a crash left (netns contend-*, links contend*) and knows it for contend's.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import owned
from ..failures import Failure

NETNS_DIR = Path("/run/netns")
SUBNET = "10.199.0"
SINK_IP = f"{SUBNET}.1"
FIRST_PORT = 5201


class NetworkError(Failure):
    """A command that builds the link failed; the message says which."""

    prefix = "network: "


def _ip(*args: str) -> None:
    p = subprocess.run(["ip", *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise NetworkError(f"`ip {' '.join(args)}` failed: {p.stderr.strip()}")


def _tc(netns: str | None, *args: str) -> None:
    cmd = ["tc", *(["-n", netns] if netns else []), *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise NetworkError(f"`{' '.join(cmd)}` failed: {p.stderr.strip()}")


def tbf(netns: str | None, dev: str, bps: float) -> None:
    """A token bucket of `bps` bits/s on dev's egress: a burst of ~4 ms at the rate (at least 64 KiB), so
    TCP reaches the rate, and a queue of at most 20 ms, so a flooding tenant is dropped rather than buffered."""
    burst = max(64 * 1024, int(bps / 8 * 0.004))
    _tc(netns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{int(bps)}bit", "burst", str(burst),
        "latency", "20ms")


@dataclass
class Port:
    tenant: str
    netns: str  # name under /run/netns
    host_dev: str  # the host side of its veth, on the bridge: what it sends arrives here
    ip: str
    server_port: int

    @property
    def netns_path(self) -> Path:
        return NETNS_DIR / self.netns


@dataclass
class Link:
    """The bridge, the sink and one port per tenant; `up()` builds them, `down()` removes them all."""

    uid: str
    capacity_bps: float
    limits_bps: dict[str, float | None]  # tenant -> its rate limit (None: unlimited)
    ports: dict[str, Port] = field(default_factory=dict)
    servers: list[subprocess.Popen] = field(default_factory=list)
    made: list[tuple[str, str]] = field(default_factory=list)  # (kind, name) recorded, in the order made

    def _record(self, kind: str, name: str) -> str:
        owned.record(kind, name)
        self.made.append((kind, name))
        return name

    @property
    def short(self) -> str:
        return self.uid[:6]  # interface names have at most 15 characters

    @property
    def bridge(self) -> str:
        return f"contendb{self.short}"

    @property
    def sink(self) -> Port:
        return Port("sink", f"contend-{self.uid}-sink", f"contends{self.short}", SINK_IP, 0)

    def up(self) -> "Link":
        from ..load.agent import build_agent  # here, not at the top: `contend clean` and the guard import this
        try:
            _ip("link", "add", self._record("link", self.bridge), "type", "bridge")
            _ip("link", "set", self.bridge, "up")
            self._port(self.sink)
            tbf(None, self.sink.host_dev, self.capacity_bps)  # the shared bottleneck: bridge -> sink
            for i, (tenant, limit) in enumerate(self.limits_bps.items()):
                port = Port(tenant, f"contend-{self.uid}-{tenant}", f"contend{i}{self.short}",
                            f"{SUBNET}.{i + 2}", FIRST_PORT + i)
                self._port(port)
                self.ports[tenant] = port
                if limit:
                    tbf(port.netns, "eth0", limit)
                self.servers.append(subprocess.Popen(
                    ["nsenter", f"--net={self.sink.netns_path}", str(build_agent()), "sink", str(port.server_port)],
                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True))
            self._wait_servers()
        except BaseException:
            self.down()
            raise
        return self

    def _port(self, p: Port) -> None:
        peer = self._record("link", f"contendp{p.host_dev[7]}{self.short}")
        _ip("netns", "add", self._record("netns", p.netns))
        _ip("link", "add", self._record("link", p.host_dev), "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", p.netns)
        _ip("-n", p.netns, "link", "set", peer, "name", "eth0")
        _ip("-n", p.netns, "addr", "add", f"{p.ip}/24", "dev", "eth0")
        _ip("-n", p.netns, "link", "set", "lo", "up")
        _ip("-n", p.netns, "link", "set", "eth0", "up")
        _ip("link", "set", p.host_dev, "master", self.bridge, "up")

    def _wait_servers(self, timeout: float = 10) -> None:
        """Until every sink listens (ss in the sink's namespace)."""
        want = {str(p.server_port) for p in self.ports.values()}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = subprocess.run(["ip", "netns", "exec", self.sink.netns, "ss", "-Hltn"], capture_output=True,
                                 text=True).stdout
            if all(f":{port} " in out for port in want):
                return
            if any(s.poll() is not None for s in self.servers):
                raise NetworkError("a sink exited at start")
            time.sleep(0.05)
        raise NetworkError(f"sinks not listening after {timeout:g}s")

    def down(self) -> None:
        """Remove everything up() made; idempotent, and quiet about what is already gone."""
        for s in self.servers:
            if s.poll() is None:
                s.kill()
            s.wait()
        self.servers.clear()
        for kind, name in reversed(self.made):  # a port's host side takes its peer along
            if kind == "netns":
                remove_netns(name)
                gone = not (NETNS_DIR / name).exists()
            else:
                subprocess.run(["ip", "link", "del", name], capture_output=True)
                gone = not (Path("/sys/class/net") / name).exists()
            if gone:
                owned.forget(kind, name)
        self.made.clear()


def remove_netns(name: str) -> None:
    """Kill what still runs in a namespace (a sink a SIGKILLed contend left), then delete it."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def counter(dev: str, name: str = "rx_bytes") -> int:
    """A network device's own counter (the kernel's, like a cgroup's: the host view)."""
    return int((Path("/sys/class/net") / dev / "statistics" / name).read_text())
