"""What does contend's confinement cost a load? Its seccomp profile is a BPF filter run on every system call;
its user namespace maps every uid. Three runc containers, up at once and alike but for that, run the same loads
for `--seconds` each, interleaved `--rounds` times in a rotating order (side by side in one run, never against a
number from another day):

- `default`: contend's container (seccomp profile, user namespace);
- `no-seccomp`: the same with the profile taken out of its config;
- `no-userns`: the same as host root (`userns: false`).

Loads: stress-ng's `get` stressor (getpid, getuid, getrlimit, ...: nothing but system calls, the filter's worst
case), fio 4k random reads with direct I/O and psync at iodepth 1 (a system call per I/O), and stress-ng
matrixprod on one CPU (no system calls: a control that should read 1.0). Prints each setting's median and its
ratio to `default`'s (above 1: the confinement costs that much).

    sudo .venv/bin/python bench/confinement_cost.py [--seconds 5] [--rounds 5]
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
from unittest import mock

from benchkit import bogo_rate, fio_iops, interleaved, runc_container
from contend.runtimes import oci

SETTINGS = ("default", "no-seccomp", "no-userns")


def psync_iops(rt, c, seconds: float) -> float:
    return fio_iops(rt, c, seconds, "--size=256M", "--ioengine=psync")


LOADS = {
    "syscalls: stress-ng get (bogo ops/s)": lambda rt, c, s: bogo_rate(rt, c, ["--get", "1"], s),
    "fio 4k randread psync qd1 (IOPS)": psync_iops,
    "cpu: matrixprod, 1 CPU (bogo ops/s)":
        lambda rt, c, s: bogo_rate(rt, c, ["--cpu", "1", "--cpu-method", "matrixprod"], s),
}


def without_seccomp(*args, **kw) -> dict:
    config = real_oci_config(*args, **kw)
    del config["linux"]["seccomp"]
    return config


real_oci_config = oci.oci_config


@contextlib.contextmanager
def container(setting: str):
    made = runc_container(userns=setting != "no-userns")
    patch = mock.patch.object(oci, "oci_config", without_seccomp) if setting == "no-seccomp" \
        else contextlib.nullcontext()
    with patch:  # while it is created only: the next container is made with the profile
        rt, c = made.__enter__()
    try:
        yield rt, c
    finally:
        made.__exit__(None, None, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    with contextlib.ExitStack() as stack:
        up = {s: stack.enter_context(container(s)) for s in SETTINGS}
        for s, (rt, c) in up.items():  # check each is what it says
            status = rt.run(c, ["sh", "-c", "grep Seccomp: /proc/self/status; cat /proc/self/uid_map"]).stdout.split()
            if (status[1] == "2") != (s != "no-seccomp") or (status[3] != "0") != (s != "no-userns"):
                sys.exit(f"{s}: not what it says: {' '.join(status)}")
        for rt, c in up.values():  # lay fio's file out before any clock
            psync_iops(rt, c, 1)
        results = interleaved(up, LOADS, args.rounds, args.seconds)
    print(f"\nmedian of {args.rounds} interleaved rounds, {args.seconds:g} s each, three runc containers:")
    for w in LOADS:
        med = {s: statistics.median(results[(w, s)]) for s in SETTINGS}
        cols = "   ".join(f"{s} {med[s]:10.1f} ({med[s] / med['default']:.3f})" for s in SETTINGS)
        print(f"  {w:38s} {cols}")


if __name__ == "__main__":
    main()
