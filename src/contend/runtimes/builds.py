"""Runtimes built from an upstream release, next to the distribution's (issue 24): `runc@1.5.2` beside
Debian's runc 1.1.5. Each is pinned by its module version (the Go checksum database verifies the source
`go install` fetches), built into contend's own cache, never over a distribution binary, and recorded with
the sha256 of what was built: a cached binary whose checksum no longer matches is not used.

    .venv/bin/python -m contend.runtimes      # build every one missing (make setup runs it)
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..paths import HOME
from ..tools import ToolFailed, run_tool

CACHE = HOME / "runtimes"


@dataclass(frozen=True)
class Build:
    name: str  # the runtime's name in a spec
    base: str  # the adapter that drives it (its CLI is the base runtime's)
    module: str  # the Go module whose main package is the runtime
    version: str
    tags: str = ""
    ldflags: str = ""
    needs: tuple[str, ...] = ()  # headers the build links against (Debian packages make setup installs)

    @property
    def directory(self) -> Path:
        return CACHE / self.name

    @property
    def binary(self) -> Path:
        return self.directory / self.base

    @property
    def manifest(self) -> Path:
        return self.directory / "build.json"


BUILDS = {b.name: b for b in (
    Build("runc@1.5.2", "runc", "github.com/opencontainers/runc", "v1.5.2", tags="seccomp",
          ldflags="-X main.version=1.5.2", needs=("libseccomp-dev",)),
)}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def recorded(b: Build) -> dict:
    try:
        return json.loads(b.manifest.read_text())
    except (OSError, ValueError):
        return {}


def built(b: Build) -> bool:
    """The binary is in the cache, of this version, and what was built (its sha256 matches the record)."""
    m = recorded(b)
    return b.binary.is_file() and m.get("version") == b.version and m.get("sha256") == sha256(b.binary)


def why_not_built(b: Build) -> str:
    if not b.binary.is_file():
        failed = recorded(b).get("failed")
        return (f"not built: {failed}" if failed else
                "not built (make setup builds it: python -m contend.runtimes)")
    return "its cached binary does not match the checksum recorded when it was built: build it again"


def go_version() -> str:
    try:
        return run_tool(["go", "env", "GOVERSION"], "reading go's version", timeout=30).stdout.strip()
    except ToolFailed:
        return ""


def build(b: Build, timeout: float = 1800) -> Path:
    """`go install module@version` into a fresh directory, then into the cache with its record. Raises
    ToolFailed (go missing, the module not reachable, the build failing) after recording why."""
    if built(b):
        return b.binary
    b.directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=b.directory) as tmp:
        env = {**os.environ, "GOBIN": tmp, "CGO_ENABLED": "1", "GOFLAGS": "-trimpath"}
        argv = ["go", "install"]
        if b.tags:
            argv += ["-tags", b.tags]
        if b.ldflags:
            argv += ["-ldflags", b.ldflags]
        try:
            run_tool([*argv, f"{b.module}@{b.version}"], f"building {b.name}", timeout=timeout, env=env)
        except ToolFailed as e:
            b.manifest.write_text(json.dumps({"version": b.version, "failed": str(e)}))
            raise
        out = Path(tmp) / Path(b.module).name
        os.replace(out, b.binary)
    b.manifest.write_text(json.dumps({"version": b.version, "module": b.module, "sha256": sha256(b.binary),
                                      "go": go_version(), "built_at": time.strftime(
                                          "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    return b.binary


def main() -> int:
    """Build every runtime not yet built; one that cannot be built is said, and skipped (exit 0)."""
    for b in BUILDS.values():
        if built(b):
            print(f"{b.name}: built ({b.binary})")
            continue
        t0 = time.monotonic()
        try:
            build(b)
            print(f"{b.name}: built in {time.monotonic() - t0:.0f} s ({b.binary})")
        except ToolFailed as e:
            print(f"{b.name}: skipped: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
