"""contend's allocator (issue 99): the capacity estimate divided over the targets' claims. Pure.

Lifelines first (each target keeps its lifeline from the last calm period, then the headroom of those not wanting
more), then weighted max-min fair shares (water-filling) of what is left; two guards on the result: a decrease and its
hold raise no taker's cap, and before the disk showed its limit a cap rises at most `ramp` a period (`no_leap`); a
writer of large I/Os under a low cap keeps it between completions (`keep_filled`). Why: docs/guard-policy.md.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ..diskuse import PRESSES
from .estimator import IDLE, lifeline

if TYPE_CHECKING:
    from .inputs import TargetView


def waterfill(claims: dict[str, float], weights: dict[str, float], capacity: float) -> dict[str, float]:
    """Weighted max-min fair shares of capacity: nobody gets more than it claims; what a modest claim
    leaves is shared by the others in proportion to their weights (claims may be inf)."""
    shares = {k: 0.0 for k in claims}
    left = dict(claims)
    room = max(0.0, capacity)
    while left and room > 1e-9:
        wsum = sum(weights[k] for k in left)
        level = room / wsum  # per unit of weight
        capped = {k: c for k, c in left.items() if c <= level * weights[k]}
        if not capped:
            for k in left:
                shares[k] += level * weights[k]
            return shares
        for k, c in capped.items():
            shares[k] += c
            room -= c
            del left[k]
    return shares


def lifelines_first(claims: dict[str, float], kept: dict[str, float], weights: dict[str, float],
                    capacity: float, headroom: float = 0.0) -> dict[str, float]:
    """Each target first gets what it is kept (at most its claim); then each target with a bounded claim its
    headroom over that, up to `headroom` × what it is kept; what is left of the capacity is water-filled over what
    each claims beyond that. Where the kept amounts do not fit, they are water-filled themselves."""
    base = {k: min(claims[k], kept.get(k, 0.0)) for k in claims}
    if sum(base.values()) >= capacity:
        return waterfill(base, weights, capacity)
    # the headroom before a burst's more: shared equally with a target wanting more, a latency-bound victim's own
    # jitter reached its cap and held it there
    head = {k: min(claims[k], (1 + headroom) * base[k]) - base[k] if math.isfinite(claims[k]) else 0.0
            for k in claims}
    first = waterfill(head, weights, capacity - sum(base.values()))
    base = {k: base[k] + first[k] for k in claims}
    extra = waterfill({k: claims[k] - base[k] for k in claims}, weights, capacity - sum(base.values()))
    return {k: base[k] + extra[k] for k in claims}


def no_leap(targets: list[TargetView], shares: dict[str, float], floor: float, gripped: bool, learnt: bool,
            p: float, window: int, ramp: float) -> dict[str, float]:
    """A decrease and its hold (`gripped`) raise no cap of a target that takes (using more than its lifeline with its
    headroom); before the disk showed its limit, such a cap, and the cap of one at it, rises at most `ramp` a
    period, so a number told too high shows as a squeeze and is not handed out at once."""
    if learnt and not gripped:
        return shares
    rise = 0.0 if gripped else ramp
    out = dict(shares)
    for t in targets:
        u = t.usage
        if t.cap is None or t.name not in out or not len(u):
            continue
        taking = float(u[-1]) > (1 + p) * max(lifeline(u, window), floor)
        if taking or (not gripped and float(u[-1]) >= PRESSES * t.cap):
            out[t.name] = min(out[t.name], (1 + rise) * t.cap)
    return out


def keep_filled(targets: list[TargetView], wanting: tuple[str, ...], claims: dict[str, float],
                filled: dict[str, int], gripped: bool, keep: int) -> dict[str, int]:
    """Periods since each target last filled its cap (0: this one). One that filled it in one of the last `keep`
    periods and did nothing since claims that cap at least (`claims` raised in place): a writer of large I/Os under a
    low cap completes one every few periods. Not in a decrease or its hold: that takes from those who take."""
    out = {t.name: 0 if t.name in wanting else filled.get(t.name, keep) + 1 for t in targets}
    for t in targets:
        n = out[t.name]
        if not gripped and t.cap is not None and 0 < n < keep and all(u < IDLE * t.cap for u in t.usage[-n:]):
            claims[t.name] = max(claims[t.name], t.cap)
    return out
