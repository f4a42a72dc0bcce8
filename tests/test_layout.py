"""The code's layout, checked from its source: the import graph has no circles and no upward edges, every kind
of study is found through the registry, and `make lint` passes. (No root, no host.)"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from contend.kinds import KINDS, MODELS
from contend.study import Study

SRC = Path(__file__).resolve().parent.parent / "src"
ROOT = SRC.parent


def modules() -> dict[str, tuple[Path, bool]]:
    """contend's modules: dotted name → (file, is a package's __init__)."""
    out = {}
    for f in (SRC / "contend").rglob("*.py"):
        parts = list(f.relative_to(SRC).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (f, is_pkg)
    return out


def import_graph() -> dict[str, set[str]]:
    """Every import of a contend module by another, at any depth of the file (a function's lazy import
    counts: it closes a circle all the same). `from pkg import name` is an edge to pkg.name when that is a
    module, else to pkg."""
    mods = modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for m, (f, is_pkg) in mods.items():
        pkg = m if is_pkg else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != m and t.startswith("contend"):
                    edges[m].add(t)
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def reachable(edges: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for w in edges[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def under(names: set[str], *packages: str) -> set[str]:
    return {n for n in names if any(n == p or n.startswith(p + ".") for p in packages)}


def test_the_check_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_around_a_circle():
    assert circles(import_graph()) == []


def test_no_upward_imports():
    g = import_graph()
    studies = ("contend.study", "contend.kinds", "contend.report", "contend.cli")
    # the guard daemon runs on hosts that matter, alone: no study code comes with it
    assert under(reachable(g, "contend.guard.daemon"), *studies) == set()
    # metrics are pure functions over measured data: they know neither specs nor the store (a kind's own too)
    for m in under(set(g), "contend.metrics") | {m for m in g if m.startswith("contend.kinds.") and
                                                 m.endswith(".metrics")}:
        assert under(g[m], "contend.spec", "contend.store", "contend.study") == set(), m
    assert under(reachable(g, "contend.store"), "contend.metrics", "contend.spec") == set()
    # the registry is the top: only the command lines, the run's preparation and what fans a study out reach for it
    assert {m for m, to in g.items() if under(to, "contend.kinds.registry") or "contend.kinds" in to} <= {
        "contend.cli", "contend.cluster.collect", "contend.cluster.cli", "contend.prepare", "contend.kinds"}
    # the lower floors know no study; what every kind's report shares (report/) knows no kind
    for low in ("contend.cgroups", "contend.runtimes", "contend.probes", "contend.load", "contend.network",
                "contend.store", "contend.spec", "contend.metrics", "contend.guard", "contend.doctor",
                "contend.tenants", "contend.measured", "contend.clean", "contend.watch"):
        for m in under(set(g), low):
            assert under(g[m], *studies) == set(), m
    for m in under(set(g), "contend.report"):
        assert under(g[m], "contend.kinds", "contend.study", "contend.cli") == set(), m


# a kind whose trials are another's, run with something beside them: the one other kind it may import
BUILT_ON = {"protect": "detect"}  # detect's cases and trials, under none / protect / a fixed policy


def test_a_kind_lives_in_its_folder_and_imports_no_other_kind():
    g = import_graph()
    folders = {m.split(".")[2] for m in g if m.startswith("contend.kinds.") and m.count(".") >= 3}
    assert folders == {"detect", "diskfill", "guard", "isolation", "oltp", "parallel", "protect"}
    for m in under(set(g), *(f"contend.kinds.{k}" for k in folders)):
        own = ".".join(m.split(".")[:3])
        base = BUILT_ON.get(own.split(".")[2])
        allowed = under(g[m], own) | (under(g[m], f"contend.kinds.{base}") if base else set())
        others = under(g[m], "contend.kinds") - allowed
        assert others == set(), f"{m} imports another kind: {sorted(others)}"


def test_every_kind_is_registered_once_and_found_through_the_registry():
    def subclasses(c: type) -> set[type]:
        return {s for d in c.__subclasses__() for s in (d, *subclasses(d))}
    assert set(KINDS.values()) == subclasses(Study)  # a Study subclass not registered is a kind no one can run
    for name, kind in KINDS.items():
        assert kind.kind == name and MODELS[name] is kind.model and kind.title and callable(kind.report)
        assert kind.model.model_fields["kind"].annotation.__args__ == (name,)  # the spec's Literal is its name
        assert kind.cell.kind == name  # its trials' own table in the store is named by it
    assert len({k.cell for k in KINDS.values()}) == len(KINDS)


def test_cli_py_dispatches_and_each_daemon_and_the_cluster_own_their_commands():
    """cli.py holds the study commands; `guard`, `watch` and `cluster` are their packages' own cli.py."""
    import typer.main

    from contend.cli import app
    cmd = typer.main.get_command(app)
    owner = {name: c.callback.__module__ for name, c in cmd.commands.items() if c.callback is not None}
    assert owner == {"doctor": "contend.cli", "run": "contend.cli", "report": "contend.cli",
                     "compare": "contend.cli", "clean": "contend.cli", "guard": "contend.guard.cli",
                     "watch": "contend.watch.cli", "protect": "contend.protect.cli"}
    assert {c.callback.__module__ for c in cmd.commands["cluster"].commands.values()} == {"contend.cluster.cli"}
    assert {c.callback.__module__ for c in cmd.commands["trial"].commands.values()} == {"contend.cli"}
    assert len((SRC / "contend" / "cli.py").read_text().splitlines()) < 400


def test_every_resource_is_one_record_with_its_limit_and_load():
    """A resource is its record in resources.py (views, capacity, probes) and, in the isolation study, its
    limit and load (machinery): nothing else names it."""
    from contend.kinds.isolation.trial import LIMITS, LOADS
    from contend.probes.ebpf import CATALOGUE
    from contend.resources import NAMES, RESOURCES
    from contend.spec import RESOURCES as SPEC_RESOURCES
    assert SPEC_RESOURCES == NAMES and set(LIMITS) == set(LOADS) == set(RESOURCES)
    for r in RESOURCES.values():
        assert [v.name for v in r.views] == ["host", "ebpf", "guest"], r.name
        assert set(r.ebpf_probes) <= {p.name for p in CATALOGUE}, r.name
        caps = r.capacity({"cpus": 2, "memory_pool_bytes": 1, "disk_write_iops": 1, "network_bps": 8})
        assert {v.capacity_key for v in r.views} <= set(caps), r.name


def test_no_logic_hides_in_a_package_init():
    """A package's __init__ re-exports; the logic lives in named modules, so a reader finds `find` in
    clean/leftovers.py, not behind the folder's name."""
    for f, is_pkg in modules().values():
        if is_pkg:
            assert not logic_in(f), f"{f}: {logic_in(f)} belong in a named module of the package"


def logic_in(f: Path) -> list[str]:
    return [n.name for n in ast.parse(f.read_text()).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]


def test_lint_passes():
    ruff = Path(sys.executable).parent / "ruff"
    if not ruff.exists():
        pytest.skip("ruff is not installed in this environment (make setup installs it)")
    p = subprocess.run([str(ruff), "check", "src", "tests", "bench", "deploy", "scripts"], cwd=ROOT,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:]


def test_the_code_type_checks():
    """mypy over all of src (pyproject.toml): every function's body checked; in the pure pieces (the metrics, the
    store, the resources, the spec, the guard's policies), where a wrong type is a wrong number, every function
    typed."""
    mypy = Path(sys.executable).parent / "mypy"
    if not mypy.exists():
        pytest.skip("mypy is not installed in this environment (make setup installs it)")
    p = subprocess.run([str(mypy)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-3000:]


def tiers_of(*paths: Path) -> dict[str, list[str]]:
    """Every test under `paths` → the tiers it is in, as pytest collects them (tests/tierlist.py)."""
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "tests.tierlist",
                        "-p", "no:cacheprovider", *map(str, paths)], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    rows = [ln.split("\t") for ln in p.stdout.splitlines() if ln.startswith("tier\t")]
    assert rows, p.stdout[-2000:] + p.stderr[-2000:]
    return {nodeid: tiers.split(",") if tiers else [] for _, nodeid, tiers in rows}


def test_every_test_is_in_exactly_one_tier(tmp_path):
    """make test-unit, make test and make test-all together run the whole suite, each test once: its tier comes
    from what it asks for (tests/conftest.py). A test outside that rule (here: one in a folder without the
    conftest) is found, as is one given a tier by hand beside the derived one."""
    tiers = tiers_of(ROOT / "tests")
    wrong = {t: v for t, v in tiers.items() if len(v) != 1 or v[0] not in ("unit", "host", "all")}
    assert not wrong, f"tests not in exactly one tier: {sorted(wrong.items())[:20]}"
    assert {v[0] for v in tiers.values()} == {"unit", "host", "all"}
    stray = tmp_path / "stray"
    stray.mkdir()
    (stray / "test_stray.py").write_text("def test_with_no_tier():\n    pass\n")
    assert list(tiers_of(stray).values()) == [[]]  # no tier: the check above would name it


def test_every_markdown_link_between_the_docs_names_a_file_the_repository_holds():
    """A page linked is a page committed: `results/` in .gitignore once matched docs/results/ too, and the
    per-kind result pages the README links were never committed (2026-12-07). Checked against git's index, so an
    ignored file on this machine does not pass."""
    import re
    held = set(subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split())
    pages = [ROOT / "README.md", ROOT / "bench/README.md", *sorted(ROOT.glob("docs/**/*.md"))]
    missing = [(str(p.relative_to(ROOT)), m.group(1)) for p in pages
               for m in re.finditer(r"\]\(([^)#\s:]+\.md)(?:#[^)]*)?\)", p.read_text())
               if str((p.parent / m.group(1)).resolve().relative_to(ROOT.resolve())) not in held]
    assert missing == [], missing
