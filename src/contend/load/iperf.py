"""iperf3 as a paced network load: TCP to the sink at `-b` = level × link capacity.

The application paces itself (`-b`, timer every 1 ms) so a step offers what its level says; what
arrives is set by the tenant's own token bucket and the shared bottleneck (network/). The guest view
is what the sink received.
"""
from __future__ import annotations

from pathlib import Path

from .stress import LoadGenerator, read_json


class IperfLoad(LoadGenerator):
    resource = "network"

    def __init__(self, capacity_bps: float, server: str, ports: dict[str, int]):
        self.capacity_bps = capacity_bps
        self.server = server
        self.ports = ports  # tenant -> its iperf3 server's port

    def argv(self, level: float, seconds: float, out: str, tenant: str = "") -> list[str]:
        # iperf3 counts whole seconds; a step is as long as its spec says, rounded
        return ["iperf3", "-c", self.server, "-p", str(self.ports[tenant]), "-t", str(max(1, round(seconds))),
                "-b", str(max(1, int(level * self.capacity_bps))), "--pacing-timer", "1000", "-J",
                "--logfile", out]

    def guest(self, report: Path) -> dict[str, float]:
        end = read_json(report).get("end") or {}
        got = end.get("sum_received") or {}
        return {"bps": float(got["bits_per_second"])} if "bits_per_second" in got else {}
