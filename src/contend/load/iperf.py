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
        """What the sink received; when the client could not fetch the sink's figures (under runsc iperf3
        ends with "unable to receive results: Resource temporarily unavailable" on its control socket),
        what the client sent, from its own per-second intervals: for a paced TCP flow over seconds the
        two differ by at most what sits in the socket buffer."""
        doc = read_json(report)
        got = (doc.get("end") or {}).get("sum_received") or {}
        if "bits_per_second" in got:
            return {"bps": float(got["bits_per_second"])}
        sums = [iv.get("sum") or {} for iv in doc.get("intervals") or [] if isinstance(iv, dict)]
        sums = [x for x in sums if not x.get("omitted") and x.get("seconds", 0) > 0 and "bytes" in x]
        seconds = sum(float(x["seconds"]) for x in sums)
        return {"bps": 8 * sum(float(x["bytes"]) for x in sums) / seconds} if seconds > 0 else {}
