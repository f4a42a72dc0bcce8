"""Probes: host-side, time-bucketed samples per container (cgroup counters and eBPF through bpftrace)."""
from .base import Sample, Target
from .ebpf import BpftraceProbes, probe_catalogue
from .sampler import CgroupSampler

__all__ = ["Sample", "Target", "CgroupSampler", "BpftraceProbes", "probe_catalogue"]
