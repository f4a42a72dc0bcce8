"""The resources an isolation trial contends for, one record each (pure data): how each view measures it, what
100 % of it is in each view's unit, and which eBPF probes watch it.

What a study does to a resource, its limit and its load, is machinery (cgroups, load generators):
kinds/isolation/trial.py's LIMITS and LOADS, keyed by the same names (tests/test_layout.py checks that every
resource has both). Kept apart so that the pure metrics and the shared report can read a resource without
importing the machinery.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, NamedTuple

from .units import size_bytes


class View(NamedTuple):
    name: str  # host (the kernel's cgroup counters), ebpf (bpftrace on the host), guest (the load's own report)
    source: str  # the samples' source
    quantity: str  # the samples' quantity
    capacity_key: str  # the entry of the resource's capacity that makes it a fraction of capacity


@dataclass(frozen=True)
class Resource:
    name: str
    views: tuple[View, ...]  # the host view first (the timelines draw it)
    ebpf_probes: tuple[str, ...]  # the resource's own, and CPU time (cheap, and every resource costs some CPU)
    # what 100 % of the resource is in each view's unit, from a trial's capacity record
    capacity: Callable[[dict], dict[str, float]]
    # the eBPF view counts the host view's quantity again, by other means (metrics' ebpf_coverage compares them);
    # memory's does not: resident anonymous memory, where the cgroup counts its page cache too
    ebpf_counts_host: bool = True


def _cpu(c: dict) -> dict[str, float]:
    cpus = float(c["cpus"])
    return {"cpus": cpus, "cpu_agent_ops_s": float(c.get("cpu_agent_ops_s_per_cpu", 0.0)) * cpus}


def _disk(c: dict) -> dict[str, float]:
    iops = float(c.get("disk_write_iops", 0.0))
    return {"disk_write_iops": iops, "disk_write_bytes_s": iops * size_bytes(c.get("disk_block", "4K"))}


def _network(c: dict) -> dict[str, float]:
    bps = float(c.get("network_bps", 0.0))
    return {"network_bps": bps, "network_bytes_s": bps / 8}


RESOURCES: dict[str, Resource] = {r.name: r for r in (
    Resource("cpu", (View("host", "cgroup", "cpu", "cpus"),
                     View("ebpf", "ebpf", "cpu", "cpus"),
                     View("guest", "load", "ops_s", "cpu_agent_ops_s")),
             ("cpu",), _cpu),
    Resource("memory", (View("host", "cgroup", "mem_bytes", "memory_pool_bytes"),
                        View("ebpf", "ebpf", "rss_bytes", "memory_pool_bytes"),
                        View("guest", "load", "rss_bytes", "memory_pool_bytes")),
             ("cpu", "memory"), lambda c: {"memory_pool_bytes": float(c.get("memory_pool_bytes", 0.0))},
             ebpf_counts_host=False),
    # the host sees bytes, not the load's I/Os: a large direct write can reach the disk as several bios
    # (a virtio disk's segment limit splits it) or be merged with another into one request
    Resource("disk", (View("host", "cgroup", "io_wbytes_s", "disk_write_bytes_s"),
                      View("ebpf", "ebpf", "blk_bytes_s", "disk_write_bytes_s"),
                      View("guest", "load", "iops", "disk_write_iops")),
             ("cpu", "block"), _disk),
    Resource("network", (View("host", "cgroup", "net_bytes_s", "network_bytes_s"),
                         View("ebpf", "ebpf", "net_bytes_s", "network_bytes_s"),
                         View("guest", "load", "bps", "network_bps")),
             ("cpu", "net"), _network),
)}
NAMES = tuple(RESOURCES)  # in the order the tables show them
