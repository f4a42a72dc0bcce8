"""Many cgroups' running totals read from the top of their tree down (contend watch, every period).

A cgroup's CPU time and its PSI stall times count its descendants': the kernel charges a task's CPU time to its
cgroup and every ancestor, and a task's stall makes each ancestor's `some` stall too. So where an ancestor's total
did not move since it was last read, no total below it moved, and their files need not be read: their totals are
still those last read. On a calm node of 110 pods most of a period's 330 PSI files are then not read at all; where
everything moves (every pod busy), a handful of ancestors are read on top of the containers' own files.

Exact up to the file's unit: the kernel keeps nanoseconds and shows microseconds of each cgroup's own sum, so a
child's shown total can step by 1 µs in a period whose parent's does not (1e-6 of a second a second)."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable

_UNSET = object()


class TopDown:
    """Running totals of files that count a cgroup and its descendants (`read(path)`: the total, None if
    unreadable), each leaf file's total every period from as few reads as its tree allows.

    The tree is the leaves' ancestors holding the same file, below `roots` (the hierarchies' mount points: their
    own files are not read); an ancestor with a single child and no leaf of its own is left out (reading it
    would save nothing). A top is read every period; a node's children are read when its total moved or is
    unknown (unread, unreadable); a leaf never read before is read at once."""

    def __init__(self, read: Callable[[str], float | None], roots: Iterable[str]):
        self.read = read
        self.roots = frozenset(os.path.normpath(r) for r in roots)
        self.last: dict[str, float | None] = {}
        self.reads = 0  # files read in the last period (the cost: bench/watch_node.py's reads per period)
        self._leaves: frozenset[str] = frozenset()
        self._tops: list[str] = []
        self._children: dict[str, list[str]] = {}

    def _plan(self, leaves: frozenset[str]) -> None:
        """The tree of these leaves: each node's children and the tops (made again when the leaves change)."""
        parent: dict[str, str | None] = {}
        for leaf in leaves:
            node, name = leaf, os.path.basename(leaf)
            while node not in parent:
                up = os.path.dirname(os.path.dirname(node))
                if up in self.roots or up == os.path.dirname(up):  # at a mount point (or /): a top
                    parent[node] = None
                    break
                nxt = parent[node] = os.path.join(up, name)
                node = nxt
        kids: dict[str, list[str]] = {}
        for node, above in parent.items():
            if above is not None:
                kids.setdefault(above, []).append(node)
        # an ancestor with one child and no leaf of its own: its child hangs from its parent instead
        for node in [n for n, k in kids.items() if len(k) == 1 and n not in leaves]:
            (child,) = kids.pop(node)
            above = parent.pop(node)
            parent[child] = above
            if above is not None:
                kids[above] = [child if k == node else k for k in kids[above]]
        self._children = kids
        self._tops = sorted(n for n, above in parent.items() if above is None)
        self._leaves = leaves
        for gone in set(self.last) - set(parent):
            del self.last[gone]

    def totals(self, leaves: Iterable[str]) -> dict[str, float | None]:
        """Each leaf file's total now (None: unreadable)."""
        leaves = frozenset(leaves)  # the same object, given a frozenset: compared only when it is another
        if leaves is not self._leaves and leaves != self._leaves:
            self._plan(leaves)
        self.reads = 0
        todo = list(self._tops)
        while todo:
            node = todo.pop()
            old = self.last.get(node, _UNSET)
            self.last[node] = now = self.read(node)
            self.reads += 1
            if now is None or old is None or old is _UNSET or now != old:
                todo.extend(self._children.get(node, ()))
        for leaf in leaves:
            if leaf not in self.last:  # below an ancestor that did not move, but never read: no total to keep
                self.last[leaf] = self.read(leaf)
                self.reads += 1
        return {leaf: self.last[leaf] for leaf in leaves}
