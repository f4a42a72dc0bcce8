"""A container's sending shaped from the host: contend protect's network actuator.

What a container sends arrives at the host side of its veth (that side's ingress). There a u32 filter that
matches everything redirects it (mirred) to an IFB device of contend's, and the IFB sends it on through a token
bucket at the rate asked: the way Kubernetes' bandwidth plugin limits a pod's egress. Every piece is the host's:
nothing is set inside the container, and deleting the ingress qdisc and the IFB puts everything back.

This kernel has neither tc's police action nor its matchall classifier (CONFIG_NET_ACT_POLICE and
CONFIG_NET_CLS_MATCHALL unset; docs/protect.md): u32, mirred, IFB and TBF are what it has, and what this uses.

Netlink through pyroute2, never a command line made from data. A veth's other end is found by network
namespace id (IFLA_LINK_NETNSID against the id the host gives the container's namespace): its namespace is
never entered.
"""
from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from .. import owned
from ..failures import Failure

IFB_NAME = re.compile(r"^contendq[0-9a-f]{6}$")  # contend's (clean's LINK_NAME shape: contend, a letter, 6 hex)
IFNAME = re.compile(r"^[A-Za-z0-9_.@-]{1,15}$")
INGRESS = 0xFFFF0000  # the ingress qdisc's handle, ffff:
TBF = 0x10000  # the IFB's root token bucket, 1:
LATENCY = "20ms"  # what the bucket queues at most: a flood is dropped there, not buffered


class ShapeError(Failure):
    prefix = "network: "


def new_ifb() -> str:
    return f"contendq{uuid.uuid4().hex[:6]}"


def burst(bps: float) -> int:
    """4 ms at the rate, at least 64 KiB: TCP reaches the rate (as link.tbf's)."""
    return max(64 * 1024, int(bps / 8 * 0.004))


@contextmanager
def _netlink() -> Iterator:
    from pyroute2 import IPRoute  # here: `contend clean` and the watch import this module without using it
    from pyroute2.netlink.exceptions import NetlinkError
    try:
        with IPRoute() as ipr:
            yield ipr
    except NetlinkError as e:
        raise ShapeError(f"netlink: {e}") from e


def _index(ipr, name: str) -> int | None:
    found = ipr.link_lookup(ifname=name)
    return found[0] if found else None


def peers(pid: int) -> list[str]:
    """The host-side names of the veths whose other end is in pid's network namespace: [] where it shares the
    host's (or this process's) namespace, or has no veth whose host end is here."""
    ns = f"/proc/{pid}/ns/net"
    if os.stat(ns).st_ino == os.stat("/proc/self/ns/net").st_ino:
        return []
    with _netlink() as ipr:
        ipr.get_links()  # a dump gives every peer namespace of a veth an id (the kernel's peernet2id_alloc)
        fd = os.open(ns, os.O_RDONLY)
        try:
            nsid = (ipr.get_netnsid(fd=fd) or {}).get("nsid")
        finally:
            os.close(fd)
        if nsid is None or nsid < 0:
            return []
        out = []
        for link in ipr.get_links():
            info = link.get_attr("IFLA_LINKINFO")
            if info is not None and info.get_attr("IFLA_INFO_KIND") == "veth" and \
                    link.get_attr("IFLA_LINK_NETNSID") == nsid:
                out.append(link.get_attr("IFLA_IFNAME"))
        return out


def _redirects(ipr, index: int, ifb: int | None) -> bool | None:
    """Whether the device's ingress holds only redirects to the IFB (or to a device gone: ifindex 0); None where
    it has no ingress qdisc."""
    if not any(q.get_attr("TCA_KIND") == "ingress" for q in ipr.get_qdiscs(index)):
        return None
    targets = set()
    for f in ipr.get_filters(index, parent=INGRESS):
        opts = f.get_attr("TCA_OPTIONS")
        acts = opts.get_attr("TCA_U32_ACT") if opts is not None and f.get_attr("TCA_KIND") == "u32" else None
        if opts is None or (acts is None and opts.get_attr("TCA_U32_DIVISOR") is not None):
            continue  # the chain's head, u32's hash table
        if acts is None:
            return False
        for _, act in acts["attrs"]:
            o = act.get_attr("TCA_ACT_OPTIONS") if act.get_attr("TCA_ACT_KIND") == "mirred" else None
            parms = o.get_attr("TCA_MIRRED_PARMS") if o is not None else None
            if parms is None:
                return False
            targets.add(parms["ifindex"])
    return bool(targets) and targets <= {0, ifb}


def shape(dev: str, ifb: str, bps: float) -> None:
    """What arrives at dev (a veth's host side: what its container sends) sent on at `bps` bits/s at most, through
    the IFB (made, and recorded as contend's, if missing). A dev whose ingress is somebody else's is not touched."""
    if not IFNAME.fullmatch(dev) or not IFB_NAME.fullmatch(ifb):
        raise ShapeError(f"not a device contend shapes: {dev!r} through {ifb!r}")
    from pyroute2 import protocols
    with _netlink() as ipr:
        index = _index(ipr, dev)
        if index is None:
            raise ShapeError(f"{dev}: no such device")
        q = _index(ipr, ifb)
        ours = _redirects(ipr, index, q)
        if ours is False:
            raise ShapeError(f"{dev} has an ingress qdisc contend did not make: not touched")
        if q is None:
            owned.record("link", ifb)
            ipr.link("add", ifname=ifb, kind="ifb")
            q = _index(ipr, ifb)
            ipr.link("set", index=q, state="up")
        ipr.tc("replace", "tbf", q, TBF, rate=f"{int(bps)}bit", burst=burst(bps), latency=LATENCY)
        if ours is None:
            ipr.tc("add", "ingress", index, "ffff:")
            ipr.tc("add-filter", "u32", index, parent=INGRESS, prio=1, protocol=protocols.ETH_P_ALL,
                   keys=["0x0/0x0+0"], target=TBF,
                   action={"kind": "mirred", "direction": "egress", "action": "redirect", "ifindex": q})


def unshape(dev: str, ifb: str) -> None:
    """dev's ingress qdisc deleted where it holds only redirects to the IFB (or to a device gone), then the IFB:
    what shape() made, and nothing else; quiet about what is gone already."""
    if not IFB_NAME.fullmatch(ifb):
        return
    with _netlink() as ipr:
        q = _index(ipr, ifb)
        index = _index(ipr, dev) if IFNAME.fullmatch(dev) else None
        if index is not None and _redirects(ipr, index, q):
            ipr.tc("del", "ingress", index, "ffff:")
        if q is not None:
            ipr.link("del", index=q)
    owned.forget("link", ifb)


def shaped(dev: str) -> bool:
    """Whether dev's ingress redirects anywhere (a test's and the doctor's view)."""
    with _netlink() as ipr:
        index = _index(ipr, dev)
        return index is not None and _redirects(ipr, index, -1) is not None
