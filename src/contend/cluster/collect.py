"""Trial artifacts in, one results directory out: what `contend trial run` leaves per trial (on a cluster's
pods, uploaded by Argo to its artifact store) merged into the results a local `contend run` gives.

A trial artifact is a results directory of one trial plus trial.json (which trial, from which spec, on which
node, how it ended); Argo archives it as a .tgz, which is unpacked here.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..kinds import load, study_for
from ..paths import open_dir, open_existing, open_under, write_text
from ..spec import SpecError, digest, dump
from ..store import DB, Store

TRIAL_JSON = "trial.json"
# what a results directory's report writes: rebuilt from the merged store, never copied from a trial
REBUILT = {DB, f"{DB}.wal", "spec.yaml", "host.json", TRIAL_JSON, "metrics.csv", "report.html", "figures", "copts"}


class CollectError(Exception):
    """Sources that cannot be merged (str(e) is the one line to print; exit 2)."""


def write_trial_json(directory: Path, spec, trial_id: str, runtime: str, exit_code: int) -> dict:
    """The artifact's label: which trial of which study ran where, and how it ended."""
    with Store(directory, read_only=True) as store:
        rec = next((t for t in store.trials() if t["trial_id"] == trial_id), None)
    doc = {"trial_id": trial_id, "runtime": runtime, "spec": spec.name, "spec_digest": digest(spec),
           # a pod's hostname is the pod's name: the Workflow hands the node's name in as CONTEND_NODE
           "node": os.environ.get("CONTEND_NODE") or socket.gethostname(),
           "status": rec["status"] if rec else "not run",
           "reason": rec["reason"] if rec else "interrupted before it was recorded", "exit_code": exit_code,
           "contend": __version__}
    write_text(directory / TRIAL_JSON, json.dumps(doc, indent=2))
    return doc


@dataclass
class Artifact:
    path: Path  # the trial's results directory
    meta: dict  # its trial.json


@dataclass
class Collected:
    planned: list[str]
    taken: list[Artifact]
    missing: list[str]
    title: str  # of the results table, as contend run gives it
    duplicates: list[str] = field(default_factory=list)  # trial ids found more than once (one was kept)

    @property
    def failed(self) -> list[Artifact]:
        return [a for a in self.taken if a.meta["status"] == "failed"]


def find_artifacts(sources: list[Path], scratch: Path) -> list[Artifact]:
    """Every trial artifact under the sources: directories holding trial.json, and .tgz / .tar.gz archives of
    them (unpacked into scratch)."""
    found: list[Artifact] = []
    for src in sources:
        if not src.exists():
            raise CollectError(f"{src}: no such file or directory")
        archives = [src] if src.is_file() else sorted(
            p for p in src.rglob("*") if p.is_file() and p.name.endswith((".tgz", ".tar.gz")))
        for i, archive in enumerate(archives):
            dest = scratch / f"{len(found)}-{i}"
            try:
                with tarfile.open(archive) as tar:
                    _extract(tar, dest)
            except (tarfile.TarError, OSError) as e:
                raise CollectError(f"{archive}: not a trial archive ({e})") from None
            found += _dirs(dest, shown=archive)
        if src.is_dir():
            found += _dirs(src, shown=None)
    return found


# an artifact is one trial's store and logs: far below these; an archive past them is refused unread
MAX_MEMBERS = 10_000
MAX_BYTES = 8 << 30


def _extract(tar: tarfile.TarFile, dest: Path) -> None:
    """Unpack regular files and directories only, on any Python (Debian 12's 3.11.2 has no extraction
    filters): no links, devices or fifos, no path outside dest, no owner or mode bits from the archive
    (files 0644, directories 0755: a setuid root file stays a plain file of ours), at most MAX_MEMBERS
    members and MAX_BYTES bytes. Raises tarfile.TarError naming the member refused."""
    root = dest.resolve()
    root.mkdir(parents=True, exist_ok=True)
    count = size = 0
    for m in tar:  # streamed: a huge member list is refused before it is all read
        count += 1
        size += max(0, m.size)
        if count > MAX_MEMBERS:
            raise tarfile.TarError(f"more than {MAX_MEMBERS} members")
        if size > MAX_BYTES:
            raise tarfile.TarError(f"more than {MAX_BYTES >> 30} GiB")
        parts = [p for p in m.name.split("/") if p not in ("", ".")]
        if not (m.isfile() or m.isdir()) or m.name.startswith("/") or ".." in parts or (m.isfile() and not parts):
            raise tarfile.TarError(f"refusing member {m.name!r}")
        try:  # every directory entered by descriptor, never through a link (paths.open_dir)
            if m.isdir():
                os.close(open_dir(root, *parts))
                continue
            src = tar.extractfile(m)
            if src is None:
                raise tarfile.TarError(f"refusing member {m.name!r}")
            with src, open_under(root, *parts, mode="wb") as out:
                shutil.copyfileobj(src, out)
        except (OSError, ValueError) as e:
            raise tarfile.TarError(f"refusing member {m.name!r}: {e}") from None


def _dirs(root: Path, shown: Path | None) -> list[Artifact]:
    out = []
    for tj in sorted(root.rglob(TRIAL_JSON)):
        try:
            with open_existing(tj) as f:  # a label that is a link to a root-only file is no label
                meta = json.loads(f.read())
            meta["trial_id"], meta["spec_digest"], meta["status"]  # noqa: B018 (the keys it must have)
        except (OSError, json.JSONDecodeError, KeyError, TypeError):
            raise CollectError(f"{shown or tj}: {TRIAL_JSON} is not a contend trial label") from None
        if (tj.parent / DB).is_symlink() or not (tj.parent / DB).is_file():
            raise CollectError(f"{shown or tj.parent}: a trial label without its store ({DB})")
        links = [n for n in ("spec.yaml", "host.json") if (tj.parent / n).is_symlink()]
        if links:  # what root reads from a directory it did not write is a file of its own, never a link
            raise CollectError(f"{shown or tj.parent}: its {links[0]} is a link: refused")
        meta["source"] = str(shown or tj.parent)
        out.append(Artifact(tj.parent, meta))
    return out


def collect(sources: list[Path], out: Path) -> Collected:
    """Merge the trial artifacts under `sources` into the results directory `out` (which must not hold
    anything yet): spec.yaml, host.json, nodes.json, the store with every trial, and every other file the
    trials wrote (e.g. guard logs). The report is rebuilt by the caller (report.refresh)."""
    if out.exists() and any(out.iterdir()):
        raise CollectError(f"{out}: results directory exists and is not empty (choose another --out)")
    with tempfile.TemporaryDirectory(prefix="contend-collect-") as scratch:
        arts = find_artifacts(sources, Path(scratch))
        if not arts:
            raise CollectError(f"{', '.join(map(str, sources))}: no trial artifacts ({TRIAL_JSON}) found")
        first = arts[0]
        for a in arts[1:]:
            if a.meta["spec_digest"] != first.meta["spec_digest"]:
                raise CollectError(f"{a.meta['source']}: from another study (spec {a.meta['spec']!r} digest "
                                   f"{a.meta['spec_digest']}) than {first.meta['source']} (digest "
                                   f"{first.meta['spec_digest']})")
        try:
            spec = load(first.path / "spec.yaml")
        except SpecError as e:
            raise CollectError(str(e)) from None
        if digest(spec) != first.meta["spec_digest"]:
            raise CollectError(f"{first.meta['source']}: its spec.yaml is not the spec its {TRIAL_JSON} names")
        study = study_for(spec, out, None)
        if not study.fans_out:
            raise CollectError(f"{first.meta['source']}: kind {spec.kind} does not run trial by trial")
        planned = [tid for tid, _ in study.trials()]
        chosen, duplicates = _one_per_trial(arts)
        stray = [a.meta["trial_id"] for a in chosen if a.meta["trial_id"] not in planned]
        if stray:
            raise CollectError(f"{next(a.meta['source'] for a in chosen if a.meta['trial_id'] == stray[0])}: "
                               f"trial {stray[0]!r} is not in the study's plan")
        out.mkdir(parents=True, exist_ok=True)
        write_text(out / "spec.yaml", dump(spec))
        _write_hosts(out, chosen)
        with Store(out, cell=study.cell) as store:
            for a in chosen:
                try:
                    store.merge(a.path, only={a.meta["trial_id"]})
                except ValueError as e:  # a store of another kind, an older contend's, or not contend's at all
                    raise CollectError(str(e)) from None
                _copy_extras(a.path, out)
    taken = {a.meta["trial_id"] for a in chosen}
    return Collected(planned, sorted(chosen, key=lambda a: planned.index(a.meta["trial_id"])),
                     [t for t in planned if t not in taken], f"{spec.name}: {study.title}", duplicates)


def _one_per_trial(arts: list[Artifact]) -> tuple[list[Artifact], list[str]]:
    """A trial found twice (a retried pod, an artifact copied twice) is taken once: a finished one over one
    that did not finish, then the later one."""
    best: dict[str, Artifact] = {}
    dups = []
    for a in arts:
        tid = a.meta["trial_id"]
        if tid in best:
            dups.append(tid)
            old = best[tid]
            rank = (a.meta["status"] == "ok", a.path.stat().st_mtime)
            if rank < (old.meta["status"] == "ok", old.path.stat().st_mtime):
                continue
        best[tid] = a
    return list(best.values()), sorted(set(dups))


def _write_hosts(out: Path, arts: list[Artifact]) -> None:
    """host.json: the first node's facts, named after every node; nodes.json: which trial ran where."""
    facts: dict = {}
    for a in arts:
        try:
            with open_existing(a.path / "host.json") as f:
                facts = json.loads(f.read())
            break
        except (OSError, json.JSONDecodeError):
            continue
    nodes = sorted({a.meta.get("node", "?") for a in arts})
    if facts.get("host"):
        facts["host"]["hostname"] = ", ".join(nodes) if len(nodes) > 1 else nodes[0]
    write_text(out / "host.json", json.dumps(facts, indent=2))
    write_text(out / "nodes.json", json.dumps({a.meta["trial_id"]: a.meta.get("node", "?") for a in arts}, indent=2))


def _copy_extras(src: Path, out: Path) -> None:
    """The other files a trial wrote (guard logs, ...): regular files and directories only, links not
    followed on either side (what was there in `out` as a link is refused: paths.open_dir), contents only (no
    owner or mode bits kept)."""
    for p in src.iterdir():
        if p.name in REBUILT or p.name.endswith(".md"):  # the tables (table4-*.md, ...) are rebuilt too
            continue
        _copy_plain(p, out, (p.name,))


def _copy_plain(src: Path, out: Path, parts: tuple[str, ...]) -> None:
    if src.is_symlink():
        return
    if src.is_dir():
        os.close(open_dir(out, *parts))
        for p in src.iterdir():
            _copy_plain(p, out, (*parts, p.name))
    elif src.is_file():
        try:  # what was checked above may have become a link since: the copy itself follows none
            with open_existing(src, "rb") as a, open_under(out, *parts, mode="wb") as b:
                shutil.copyfileobj(a, b)
        except OSError:
            return
