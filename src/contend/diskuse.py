"""How much of a disk each cgroup used, and what it cost (DESIGN §6): the floor the guard and the watch both stand
on, pure but for reading a disk's own counters. The cost model (an I/O costs its bytes and `io_bytes` more), each
target's rates from its cgroup counters (`rates`), the disk's latency and bytes written from its stat file, and the
charges matched against what the disk wrote (`settle`, `escaping`). No numpy, no pydantic: contend watch imports this
at start, and the guard's policies only when it guards."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .cgroups import IoCounters
from .cgroups.base import read_text

MIN_CAP = 1 << 20
PRESSES = 0.9  # a target using this share of its cap presses against it: it wants more than its cap gives


# bytes a 4 KiB I/O costs beside its own where the disk was never calibrated: this VM's virtio disk's
# (1.31 GB/s of 1 MiB writes, 79,100 4 KiB random writes/s: 16.5 KB an I/O, 4 KiB of it its bytes)
DEFAULT_IO_BYTES = 12 << 10
SMALLEST_IO = 4096  # the I/O an IOPS bound is reckoned for: a cap's IOs/s = cap / (io_bytes + SMALLEST_IO)


def cap_ios(cap: float, io_bytes: float) -> int | None:
    """The IOs/s a cap (cost bytes/s) allows: as many of the smallest I/O as it pays for (None: no IOPS bound)."""
    return max(1, int(max(MIN_CAP, int(cap)) / (io_bytes + SMALLEST_IO))) if io_bytes > 0 else None


def bytes_through(cap: float, io_bytes: float, io_size: float) -> float:
    """The bytes/s the throttle a cap becomes (limiter.cap_limit) lets through for I/Os of `io_size` bytes: the cap
    in bytes, or its IOs/s of them, whichever holds first (a 4 KiB writer gets a third of the cap here)."""
    n, c = cap_ios(cap, io_bytes), float(max(MIN_CAP, int(cap)))
    return c if n is None or not io_size > 0 else min(c, n * io_size)


def io_bytes(device: str, told: float | None, calibrated: dict) -> float:
    """What one I/O costs beside its bytes on a disk, in bytes: the one told, else its calibration's (1 MiB write
    bandwidth / 4 KiB random write IOPS, less the 4 KiB), else DEFAULT_IO_BYTES."""
    if told is not None:
        return told
    bw, iops = calibrated.get("disk_write_bw_bytes_s"), calibrated.get("disk_write_iops")
    if calibrated.get("disk_device") == device and bw and iops and bw / iops > SMALLEST_IO:
        return float(bw) / float(iops) - SMALLEST_IO
    return float(DEFAULT_IO_BYTES)


@dataclass(frozen=True)
class Usage:
    """What one target did on one disk in the last period, per second."""

    bytes_s: float  # reads + writes
    rbytes_s: float
    wbytes_s: float
    ios_s: float
    dirty: int = 0  # bytes of its page cache dirty or under writeback now (its buffered writes not on disk yet)
    writeback: int = 0  # of which under writeback: submitted, waiting behind its cap or on the disk
    seconds: float = math.nan  # the period these rates are over (its own: the disk's is read a moment apart)


# an escape is said when the disk wrote at least this much more per second than the guarded cgroups were
# charged for, in the period and over the last ESCAPE_WINDOW_S, while a target held at least ESCAPE_DIRTY of
# buffered writes not on the disk yet. The window keeps short periods from naming a journal's commit (3 MiB in
# one 0.1 s period, seen in the v2 guest's ext4) while a flusher's writeback is named in its first period
ESCAPE_BYTES_S = 8 << 20
ESCAPE_WINDOW_S = 1.0
ESCAPE_DIRTY = 8 << 20
# charges the disk has not written yet are carried at most this far beyond the targets' dirty and writeback
# pages: a direct writer's queue held in the throttle is not page cache
CREDIT_SLACK = 64 << 20


@dataclass(frozen=True)
class Settled:
    """One disk in one period, in bytes: what it wrote that no target was charged for, each target's writes it
    wrote (`delivered`), each target's charges carried on to later periods, and the direct writers the throttle did
    not hold (their carry is the disk's lag, not a queue behind a cap)."""

    unattributed: float
    delivered: dict[str, float]
    credit: dict[str, float]
    direct: tuple[str, ...] = ()


def settle(credit: dict[str, float], charged: dict[str, float], written: float, held: dict[str, float],
           bounds: dict[str, float] | None = None, direct_view: bool = False) -> Settled:
    """Charges matched against what the disk wrote, per target (pure; all in bytes).

    The kernel charges a cgroup's bio when it is submitted, not when the disk writes it. Under v1's throttle an
    fsync submits its whole writeback at once: the cgroup is charged all of it in that period, and the throttle
    then lets it reach the disk at the cap over the next seconds (measured on this host's 6.18: 63 MB charged in
    0.1 s, then 8.4 MB written every 1.7 s at a 5 MB/s cap). So the charges are carried (`credit`) until the disk
    writes them: its writes count as unattributed only beyond every target's carried charges, and what it wrote
    is delivered to the targets in proportion to their carry (the order in which the disk takes their queued
    writes is not visible), except that a throttled target's writes reach the disk at its cap: `bounds`, per target
    the bytes its cap lets through in the period (missing: none), is paid first, in proportion where the disk wrote
    less, and only what the disk wrote beyond it goes by the carry left. A burst's onset charged 53 MB in 0.1 s
    under a cap of 21 MB a period; paid in proportion, a direct writer beside it beneath its own cap was delivered
    95 of its 168 MB/s and read as pre-empted, while its cgroup's counters showed 168 throughout (guard-caps told
    0.5 x: the estimate fell below the number told at every burst; docs/results/archive.md 2026-12-03). A target's
    carry is
    bounded by what it still holds (`held`: its dirty and writeback pages) plus CREDIT_SLACK, so a charge that never
    reached this disk does not hide a later escape for long.
    With `direct_view`, a target charged within its bound (uncapped: any) and holding less than ESCAPE_DIRTY of pages
    (too few to be named escaping) is a direct writer the throttle did not hold: its bios went to the disk as they
    were charged, and it is delivered what it was charged. Holding none at all was the test before 2026-12-03, and a
    direct writer's own log kept a few pages dirty: the victim's fio log held 4-40 KiB in most periods, and it was
    paid its share as before.
    Its carry stays, for the unattributed bytes only (the disk writes a queue some milliseconds after it was charged).
    Paid its share instead (the default), a victim writing at its rate beside a neighbour's deep queue carries a part
    of that queue, and is paid it back whenever its own writes dip: the guard saw it at its rate in 9-16 % of the
    periods of a burst in which its cgroup's counters had it below 0.9 of it (guard-caps told 1.5 and 2 x,
    `bench/guard_timeline.py DIR --views`; docs/results/archive.md 2026-12-03, fifth section)."""
    carry = {n: credit.get(n, 0.0) + max(0.0, c) for n, c in charged.items()}
    total, written = sum(carry.values()), max(0.0, written)
    first = {n: min(c, max(0.0, (bounds or {}).get(n, math.inf))) for n, c in carry.items()}
    paid = sum(first.values())
    if paid >= written:
        delivered = {n: written * f / paid if paid > 0 else 0.0 for n, f in first.items()}
    else:
        rest, more = total - paid, written - paid
        delivered = {n: first[n] + min(more, rest) * (carry[n] - first[n]) / rest if rest > 0 else first[n]
                     for n in carry}
    covered = min(total, written)
    direct = {n: max(0.0, c) for n, c in charged.items()
              if direct_view and held.get(n, 0.0) < ESCAPE_DIRTY and c <= (bounds or {}).get(n, math.inf)}
    return Settled(written - covered, {**delivered, **direct},
                   {n: min(carry[n] - delivered[n], max(0.0, held.get(n, 0.0)) + CREDIT_SLACK) for n in carry},
                   tuple(sorted(direct)))


# a target's carried charges, while it is charged nothing, writes nothing and holds no dirty pages, are its queue
# behind its cap only for as long as they would take to reach the disk at the cap, and this much more (on this
# host's v1 a throttle at 5 MB/s wrote a queue in one 8.4 MB bio every 1.7 s)
QUEUE_GAP_S = 2.0


def stale_carry(carry: float, cap: float | None, quiet_s: float) -> bool:
    """Whether a target's carried charges (bytes, `settle`) are no queue any more (pure): it has been quiet (no
    charge, no write, no dirty page) for `quiet_s`, longer than they would take at its cap (bytes/s; None:
    uncapped, nothing held them) plus QUEUE_GAP_S. Charges the disk never wrote for it would otherwise stay
    carried: in the v2 guest 1.05 MB stayed after a direct writer's last write, read as writes queued behind
    every cap under 10.5 MB/s, and its cap flapped between 1.26 and 20 MB/s for as long as it was watched."""
    if carry <= 0:
        return False
    return quiet_s > (carry / cap if cap else 0.0) + QUEUE_GAP_S


def queued_use(delivered: float, carry: float, cap: float | None, seconds: float, writeback: float = 0.0) -> float:
    """A target's write rate as the policy should see it, bytes/s (pure). While its carried charges (`settle`) or
    its pages under writeback exceed what its cap lets through in a period, its writes are queued behind the cap,
    and the throttle delivers them at the cap on average but in bursts of one bio at a time (on this host's v1,
    8.4 MB every 1.7 s at a 5 MB/s cap): period by period such a target looks idle between bursts, so its use is
    its cap. The pages under writeback say it where the charges do not lead (in the v2 guest, kernel 6.1, the
    writeback of a file was charged as the disk wrote it). Otherwise its use is what the disk wrote for it."""
    if cap is None or max(carry, writeback) < cap * seconds:
        return delivered
    return max(delivered, cap)


@dataclass(frozen=True)
class Escape:
    """One disk in one period: written bytes/s no guarded cgroup was charged for, the targets whose buffered
    writes are the likely cause (empty: nothing escaping, or no target to blame), each target's writes the disk
    wrote (bytes/s, `settle`), the charges carried on (bytes) and the direct writers no throttle held (`settle`)."""

    unattributed_bytes_s: float
    targets: tuple[str, ...]
    delivered: dict[str, float] = field(default_factory=dict)
    credit: dict[str, float] = field(default_factory=dict)
    direct: tuple[str, ...] = ()


def escaping(device_wbytes_s: float, usage: dict[str, Usage], dirty_before: dict[str, int],
             seconds: float = 1.0, credit: dict[str, float] | None = None,
             earlier: list[tuple[float, float]] | tuple = (), caps: dict[str, float | None] | None = None,
             direct_view: bool = False, io_bytes: float = 0.0) -> Escape:
    """What escaped the guard on one disk in a period of `seconds` (pure). On cgroup v1 a container's buffered
    writes are written back by the kernel's flusher threads and charged to no container, so no throttle holds
    them: the disk then writes more than the guarded cgroups were charged for (now or, `settle`, in earlier
    periods), while the writer holds dirty page cache. A target is named when the disk wrote ESCAPE_BYTES_S more
    than all targets were charged and the target held ESCAPE_DIRTY of dirty or writeback pages at the start or
    the end of the period (`dirty_before`: at the start). Other unguarded writers on the host (a journal, a
    build) raise the unattributed rate too; without a target holding dirty pages nobody is named. v2 charges
    writeback to the cgroup that dirtied the pages where the filesystem supports cgroup writeback; the same check
    applies there. `earlier`: the previous periods' (seconds, unattributed bytes), newest last; the escape must
    also hold over the last ESCAPE_WINDOW_S. `caps`: the cap in force on each target in the period (bytes/s; None:
    uncapped), what the throttle lets through of its carry: in bytes, for the target's mean I/O in the period, with
    the disk's `io_bytes` (config.bytes_through); `direct_view`: as `settle`. With no reading of the disk
    (its first period) each target's charges count as delivered."""
    held = {n: float(max(u.dirty, dirty_before.get(n, 0))) for n, u in usage.items()}
    if not math.isfinite(device_wbytes_s):
        return Escape(math.nan, (), {n: u.wbytes_s for n, u in usage.items()}, dict(credit or {}))
    dt = max(seconds, 1e-6)
    # each target's charges in bytes over its own period: its rate × the disk's period is off by their jitter,
    # and carried on, that error only grows (a carry cannot go below 0): a writer that stopped kept a carry
    st = settle(credit or {}, {n: u.wbytes_s * (u.seconds if math.isfinite(u.seconds) else dt)
                               for n, u in usage.items()}, device_wbytes_s * dt, held,
               {n: bytes_through(c, io_bytes, usage[n].bytes_s / usage[n].ios_s if usage[n].ios_s > 0 else 0.0) * dt
                for n, c in (caps or {}).items() if c is not None and math.isfinite(c) and n in usage}, direct_view)
    extra, delivered = st.unattributed / dt, {n: b / dt for n, b in st.delivered.items()}
    span, window = dt, st.unattributed
    for s, b in reversed(earlier):
        if span >= ESCAPE_WINDOW_S:
            break
        span, window = span + s, window + (b if math.isfinite(b) else 0.0)
    if not (extra >= ESCAPE_BYTES_S and window >= ESCAPE_BYTES_S * max(span, ESCAPE_WINDOW_S)):
        return Escape(extra, (), delivered, st.credit, st.direct)
    return Escape(extra, tuple(sorted(n for n in usage if held[n] >= ESCAPE_DIRTY)), delivered, st.credit, st.direct)


def device_counters(device: str) -> tuple[int, int, int]:
    """(I/Os completed, ms spent on them, bytes written) of a whole disk since boot; zeros if it has no stat
    file."""
    try:
        f = read_text(f"/sys/dev/block/{device}/stat").split()  # bare system calls (kept open in a watch's period)
    except OSError:
        return 0, 0, 0
    # read + write I/Os, read + write ticks, sectors written (of 512 bytes, whatever the disk's own)
    return int(f[0]) + int(f[4]), int(f[3]) + int(f[7]), int(f[6]) * 512


def latency_ms(prev: tuple[int, ...], cur: tuple[int, ...]) -> float:
    """Mean ms per I/O completed between two readings of device_counters (nan: no I/O)."""
    ios = cur[0] - prev[0]
    return (cur[1] - prev[1]) / ios if ios > 0 else math.nan


def rates(prev: IoCounters, cur: IoCounters, dt: float, dirty: int = 0, writeback: int = 0) -> Usage:
    dt = max(dt, 1e-6)
    r = max(0, cur.rbytes - prev.rbytes) / dt  # a recreated cgroup starts again from 0
    w = max(0, cur.wbytes - prev.wbytes) / dt
    ios = max(0, cur.rios + cur.wios - prev.rios - prev.wios) / dt
    return Usage(r + w, r, w, ios, dirty, writeback, dt)
