"""TopDown (contend watch's CPU time and PSI, read from the top of the tree down): pure, on trees with known
answers; and on real cgroups with a real load, against reading every file."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import time
import uuid

from contend.cgroups import detect
from contend.cgroups.base import read_some_total_s, read_usage_ns
from contend.watch.topdown import TopDown

from .conftest import needs_root

ROOT = "/cg"
# a node's layout: kubepods/<qos>/pod<n>/<container>, the file `cpu.stat` in each
LEAVES = {f"{ROOT}/kubepods/{q}/pod{i}/c{i}/cpu.stat": (q, i)
          for i, q in enumerate(["burstable"] * 4 + ["besteffort"] * 4)}


class Tree:
    """Totals that count their descendants', as the kernel's do; every read counted."""

    def __init__(self):
        self.own: dict[str, float] = {leaf: 0.0 for leaf in LEAVES}
        self.reads: list[str] = []

    def total(self, path: str) -> float:
        d = os.path.dirname(path)
        return sum(x for leaf, x in self.own.items() if os.path.dirname(leaf) == d
                   or os.path.dirname(leaf).startswith(d + "/"))

    def read(self, path: str) -> float | None:
        self.reads.append(path)
        return self.total(path)


def test_a_calm_tree_is_read_at_its_top_and_every_total_is_what_reading_each_file_gives():
    tree = Tree()
    td = TopDown(tree.read, [ROOT])
    first = td.totals(LEAVES)
    assert first == {leaf: 0.0 for leaf in LEAVES}
    tree.reads.clear()
    assert td.totals(LEAVES) == first
    # nothing moved: its top alone read
    assert tree.reads == [f"{ROOT}/kubepods/cpu.stat"]


def test_a_moving_leaf_is_read_through_its_ancestors_only_and_the_others_keep_their_totals():
    tree = Tree()
    td = TopDown(tree.read, [ROOT])
    td.totals(LEAVES)
    mover = f"{ROOT}/kubepods/besteffort/pod5/c5/cpu.stat"
    for step in range(1, 4):
        tree.own[mover] += 0.25
        tree.reads.clear()
        got = td.totals(LEAVES)
        assert got == {leaf: tree.total(leaf) for leaf in LEAVES}  # every total as read file by file
        assert got[mover] == 0.25 * step
        # kubepods, its two qos cgroups, besteffort's four containers (a pod of one container is left out)
        assert sorted(tree.reads) == sorted([f"{ROOT}/kubepods/cpu.stat", f"{ROOT}/kubepods/burstable/cpu.stat",
                                             f"{ROOT}/kubepods/besteffort/cpu.stat",
                                             *(leaf for leaf, (q, _) in LEAVES.items() if q == "besteffort")])


def test_a_leaf_below_an_ancestor_that_skipped_periods_counts_what_moved_since_its_last_read():
    """The totals skipped are still exact: a leaf read again after periods unread gives its whole total."""
    tree = Tree()
    td = TopDown(tree.read, [ROOT])
    td.totals(LEAVES)
    for _ in range(3):
        td.totals(LEAVES)  # calm: only the top read
    a = f"{ROOT}/kubepods/burstable/pod1/c1/cpu.stat"
    tree.own[a] = 7.0
    assert td.totals(LEAVES)[a] == 7.0
    assert td.totals(LEAVES)[a] == 7.0  # and unread again once calm


def test_below_an_unreadable_total_every_child_is_read():
    """Nothing says a cgroup whose file cannot be read was calm: its children are read (and a leaf's is None)."""
    tree = Tree()
    gone = f"{ROOT}/kubepods/cpu.stat"

    def read(path: str) -> float | None:
        return None if path == gone else tree.read(path)
    td = TopDown(read, [ROOT])
    td.totals(LEAVES)
    mover = f"{ROOT}/kubepods/burstable/pod2/c2/cpu.stat"
    tree.own[mover] = 3.0
    tree.reads.clear()
    assert td.totals(LEAVES)[mover] == 3.0
    assert f"{ROOT}/kubepods/besteffort/cpu.stat" in tree.reads
    unreadable = TopDown(lambda path: None, [ROOT])
    assert unreadable.totals(LEAVES) == dict.fromkeys(LEAVES)


def test_a_new_leaf_is_read_at_once_and_a_gone_one_forgotten():
    tree = Tree()
    td = TopDown(tree.read, [ROOT])
    some = dict(list(LEAVES.items())[:3])
    td.totals(some)
    tree.reads.clear()
    new = list(LEAVES)[3]
    tree.own[new] = 2.0  # it ran before it was watched: its total is read, not assumed
    assert td.totals([*some, new])[new] == 2.0
    assert new in tree.reads
    td.totals(list(some)[:1])
    assert new not in td.last


def test_a_chain_of_single_children_is_read_as_one():
    """contend's own containers under contend/, docker's under system.slice: whatever the depth, a lone
    branch costs its top's read alone."""
    tree = Tree()
    leaf = f"{ROOT}/a/b/c/d/cpu.stat"
    tree.own = {leaf: 1.0}
    td = TopDown(tree.read, [ROOT])
    assert td.totals([leaf]) == {leaf: 1.0}
    assert tree.reads == [leaf]


def stop(p: subprocess.Popen, cg) -> None:
    """stress-ng and its worker (which outlives a killed parent): every process in the cgroup, gone."""
    p.terminate()
    p.wait()
    for _ in range(50):
        left = cg.members()
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


@needs_root
def test_on_real_cgroups_each_total_is_what_reading_its_own_file_gives():
    """Real cgroups, a real CPU load in one of six: read from the top down, each container's CPU time and PSI
    totals are those its own files give (read right after), and once calm a period reads one file."""
    host = detect()
    run = f"contend/td-{uuid.uuid4().hex[:6]}"
    rels = [f"{run}/pod{i}/c{i}" for i in range(6)]
    cgs = [host.cgroup(r) for r in rels]
    unified = [host.tracking(r) for r in rels] if host.mode == "hybrid" else cgs
    top = {host.cgroup("contend"), *([host.tracking("contend")] if host.mode == "hybrid" else [])}
    had = {d for c in top for d in c.dirs() if d.is_dir()}  # contend/ where it was before: not this test's
    p = None
    try:
        for c in {*cgs, *unified}:
            c.create()
        procs = [d / "cgroup.procs" for d in {*cgs[0].dirs(), *unified[0].dirs()}]

        def join() -> None:  # in the child, before stress-ng forks its worker
            for f in procs:
                f.write_text(str(os.getpid()))
        p = subprocess.Popen(["stress-ng", "--cpu", "1", "--timeout", "30", "--quiet"], preexec_fn=join)
        mounts = [str(x) for x in (*host.v1.values(), *([host.unified] if host.unified else []))]
        usage, psi = TopDown(read_usage_ns, mounts), TopDown(read_some_total_s, mounts)
        files = [cg.usage_file() for cg in cgs]
        pfiles = [u.pressure_file(r) for u in unified for r in ("cpu", "memory", "io")]
        usage.totals(files)
        psi.totals(pfiles)
        time.sleep(0.5)
        got, gotp = usage.totals(files), psi.totals(pfiles)
        own, ownp = {f: read_usage_ns(f) for f in files}, {f: read_some_total_s(f) for f in pfiles}
        assert usage.reads == 7  # its top (a lone chain above the pods, read as one) moved: its six read
        assert own[files[0]] > 0 and 0 <= own[files[0]] - got[files[0]] < 0.1e9  # moved between the reads
        for f in files[1:]:
            assert got[f] == own[f] == 0  # an empty cgroup never ran
        for f in pfiles:
            assert gotp[f] is not None and 0 <= ownp[f] - gotp[f] < 0.1
        stop(p, cgs[0])
        p = None
        time.sleep(0.3)
        usage.totals(files)
        assert usage.totals(files) == {f: read_usage_ns(f) for f in files}
        assert usage.reads == 1
    finally:
        if p is not None:
            stop(p, cgs[0])
        for rel in [*rels, *(f"{run}/pod{i}" for i in range(6)), run, "contend"]:
            for c in {host.cgroup(rel), *([host.tracking(rel)] if host.mode == "hybrid" else [])}:
                for d in c.dirs():
                    if d not in had:
                        try:
                            d.rmdir()
                        except OSError:  # contend/ made meanwhile by another: theirs
                            pass


def test_on_random_trees_every_total_is_what_reading_each_file_gives():
    """Trees of every shape (a leaf above another, chains, siblings), totals moving at random: read from the
    top down, each leaf's total is always its own file's."""
    rnd = random.Random(1)
    for _ in range(2000):
        own = {"/r/" + "/".join(rnd.choice("abc") for _ in range(rnd.randint(1, 4))) + "/f": 0.0
               for _ in range(rnd.randint(1, 7))}

        def total(path: str, own: dict[str, float] = own) -> float:
            d = os.path.dirname(path)
            return sum(x for leaf, x in own.items() if os.path.dirname(leaf) == d or leaf.startswith(d + "/"))
        td = TopDown(total, ["/r"])
        for _ in range(6):
            for leaf in own:
                if rnd.random() < 0.3:
                    own[leaf] += 1.0
            assert td.totals(own) == {leaf: total(leaf) for leaf in own}, sorted(own)
