"""Runtimes built from their releases (contend.runtimes.builds): pinned, cached, checked, never silently
missing. The build itself is `make setup`'s; the built runtime's container tests are test_runtimes.py's
(runc@1.5.2 is one of ALL_RUNTIMES)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from contend.runtimes import ContainerSpec, builds, get, signals_deferred
from contend.spec import known_runtime
from contend.tools import ToolFailed

from .conftest import runtime_or_skip


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(builds, "CACHE", tmp_path)
    return tmp_path


def test_a_built_runtime_is_a_name_a_spec_takes_and_its_own_binary_and_state():
    assert known_runtime("runc@1.5.2") == "runc@1.5.2"
    rt = get("runc@1.5.2")
    assert rt.name == "runc@1.5.2" and rt.binary == str(builds.BUILDS["runc@1.5.2"].binary)
    assert rt.root.name == "runc@1.5.2" and get("runc").root.name == "runc"  # never the distribution's state
    with pytest.raises(ValueError, match="unknown runtime 'runc@9'"):
        known_runtime("runc@9")


def test_a_cached_binary_is_used_only_while_its_checksum_matches(cache):
    b = builds.BUILDS["runc@1.5.2"]
    b.directory.mkdir(parents=True)
    b.binary.write_bytes(b"#!/bin/sh\necho runc version 1.5.2\n")
    b.manifest.write_text(json.dumps({"version": b.version, "sha256": builds.sha256(b.binary)}))
    assert builds.built(b)
    b.binary.write_bytes(b"#!/bin/sh\necho something else\n")  # replaced behind contend's back
    assert not builds.built(b) and "checksum" in builds.why_not_built(b)
    b.manifest.write_text(json.dumps({"version": "v1.4.0", "sha256": builds.sha256(b.binary)}))
    assert not builds.built(b)  # another version's record


def test_a_build_that_cannot_run_is_recorded_and_said(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no go
    b = builds.BUILDS["runc@1.5.2"]
    with pytest.raises(ToolFailed, match="building runc@1.5.2: go is not installed"):
        builds.build(b)
    assert builds.why_not_built(b).startswith("not built: building runc@1.5.2: go is not installed")
    assert not b.binary.exists()


def test_a_source_that_is_not_the_one_contend_pins_is_not_built(cache):
    """Issue 52 L5: the sha256 beside a built binary detects corruption, not a tampered source. A Go build's
    source is checked against the digest kept in contend first (here a pin changed: the real source no longer
    matches it)."""
    import dataclasses
    if not shutil.which("go"):
        pytest.skip("go not installed (make setup installs it)")
    b = builds.BUILDS["runc@1.5.2"]
    builds.check_source(b)  # the real release matches its pin
    forged = dataclasses.replace(b, sum="h1:" + "A" * 43 + "=")
    with pytest.raises(ToolFailed, match="contend pins h1:AAAA"):
        builds.build(forged)
    assert not forged.binary.exists()


def test_a_study_builds_only_the_releases_it_names_and_says_so_first(cache, monkeypatch, tmp_path):
    """make demo builds nothing; `contend run` builds a named release that is missing, one line before (with
    how long it took here), and a build that fails is said, not raised: its cells are n/a."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no go, no cargo: every build fails at once
    said: list[str] = []
    builds.build_named(["runc", "runsc", "runsc@20260905", "runsc@20260905-ptrace"], say=said.append)
    assert said[0] == ("building runsc@20260905 from its release, once (about 2 min here; make setup-runtimes "
                       "builds every one)")
    assert said[1].startswith("runsc@20260905: not built, its cells will be n/a: building runsc@20260905: go is")
    assert len(said) == 2  # gVisor's two names are one build; Debian's runc and runsc are nobody's to build
    assert not builds.BUILDS["runc@1.5.2"].manifest.exists()  # not named: not tried


def test_gvisor_is_one_build_under_two_platforms():
    systrap, ptrace = builds.BUILDS["runsc@20260905"], builds.BUILDS["runsc@20260905-ptrace"]
    assert systrap.binary == ptrace.binary  # built once
    assert get("runsc@20260905").cli("list")[3:4] == ["--platform=systrap"]
    assert get("runsc@20260905-ptrace").cli("list")[3:4] == ["--platform=ptrace"]
    assert get("runsc").cli("list")[3:4] == ["--platform=ptrace"]  # Debian's 2022 release has no systrap


def cmdlines_naming(word: str) -> list[list[str]]:
    out = []
    for f in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = f.read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        if any(word in a for a in argv):
            out.append(argv)
    return out


@pytest.mark.root
@pytest.mark.parametrize("name,platform", [("runsc@20260905", "systrap"), ("runsc@20260905-ptrace", "ptrace")])
def test_gvisor_runs_on_the_platform_its_name_says(name, platform):
    """The sandbox of each name really runs on its platform: its command line as the host sees it."""
    rt = runtime_or_skip(name)
    spec = ContainerSpec(f"contend-test-platform-{platform}")
    try:
        c = rt.create(spec)
        assert rt.run(c, ["/usr/bin/true"], timeout=60).returncode == 0
        sandbox = [a for a in cmdlines_naming(spec.name) if "boot" in a]
        assert sandbox and all(f"--platform={platform}" in a for a in sandbox), sandbox
    finally:
        with signals_deferred():
            rt.remove_leftover(spec.name)
