"""Runtimes built from an upstream release, next to the distribution's (issue 24): `runc@1.5.2` beside
Debian's runc 1.1.5, and gVisor of 2026-09-05 beside Debian's runsc of 2022, on its two platforms:
`runsc@20260905` (systrap, gVisor's default since 2023) and `runsc@20260905-ptrace` (one binary, two names).
Each is pinned by its module version and, for Go, by the module's digest kept here (`sum`, go.sum's h1:
hash of the source, checked with `go mod download` before the build: the Go checksum database vouches only for
what the module proxy serves, this for what contend's authors reviewed; issue 52 L5); a crate by its version
with `cargo install --locked` (the registry's checksums and the crate's own lock file: no digest of contend's).
Built into contend's own cache, never over a distribution binary, and recorded with the sha256 of what was
built: that detects a cached binary changed since (corruption), not a tampered source; a binary whose checksum
no longer matches is not used.

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
GVISOR, GVISOR_DATE = "v0.0.0-20260905035102-160fafc42237", "20260905"


@dataclass(frozen=True)
class Build:
    name: str  # the runtime's name in a spec
    base: str  # the adapter that drives it (its CLI is the base runtime's)
    module: str  # the Go module whose main package is the runtime, or the Rust crate
    version: str
    tags: str = ""  # Go build tags, or the crate's features
    ldflags: str = ""
    needs: tuple[str, ...] = ()  # headers the build links against (Debian packages make setup installs)
    args: tuple[str, ...] = ()  # global flags in place of the adapter's own (runsc's platform)
    cache: str = ""  # the cache directory, when builds share one binary (gVisor's platforms); else its name
    toolchain: str = "go"  # or "cargo"
    minutes: int = 1  # how long its build took on the 2-CPU development VM (said before a study builds it)
    sum: str = ""  # Go: the module's h1: digest (go.sum's), checked before the build
    root: str = ""  # Go: the module the package is in, when not `module` itself (gVisor's runsc)
    cgo: bool = True  # runc links libseccomp; gVisor's sandbox re-executes itself in an empty chroot, where a
    # dynamically linked binary finds no loader ("fork/exec /proc/self/exe: no such file or directory")

    @property
    def directory(self) -> Path:
        return CACHE / (self.cache or self.name)

    @property
    def binary(self) -> Path:
        return self.directory / self.base

    @property
    def manifest(self) -> Path:
        return self.directory / "build.json"


BUILDS = {b.name: b for b in (
    Build("runc@1.5.2", "runc", "github.com/opencontainers/runc", "v1.5.2", tags="seccomp",
          ldflags="-X main.version=1.5.2", needs=("libseccomp-dev",), minutes=1,
          sum="h1:eUUowc2WJCnFYzI87C1WqRcu356Dk/wsoi90y+2wEfE="),
    # gVisor's `go` branch (its Go-buildable tree, generated files included): the module proxy's latest
    *(Build(f"runsc@{GVISOR_DATE}{suffix}", "runsc", "gvisor.dev/gvisor/runsc", GVISOR,
            ldflags=f"-X gvisor.dev/gvisor/runsc/version.version=go-{GVISOR_DATE}",
            args=(f"--platform={platform}",), cache=f"runsc@{GVISOR_DATE}", cgo=False, minutes=2,
            sum="h1:AU5+CtCvnBnxdZRNcZt1NfSLqgkXZVT3N/u6u1aXg44=", root="gvisor.dev/gvisor")
      for suffix, platform in (("", "systrap"), ("-ptrace", "ptrace"))),
    # youki with both cgroup versions and seccomp; not systemd's cgroup driver (contend drives cgroupfs) nor
    # the eBPF device filter of v2 (a v2 host's device rules are then not enforced by youki: docs/runtimes.md)
    Build("youki@0.7.0", "youki", "youki", "0.7.0", tags="v1,v2,seccomp", needs=("libseccomp-dev", "pkg-config"),
          toolchain="cargo", minutes=4),
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


def toolchain_version(b: Build) -> str:
    argv = ["go", "env", "GOVERSION"] if b.toolchain == "go" else ["cargo", "--version"]
    try:
        return run_tool(argv, f"reading {b.toolchain}'s version", timeout=30).stdout.strip()
    except ToolFailed:
        return ""


def install(b: Build, into: str) -> tuple[list[str], dict[str, str], Path]:
    """The toolchain's own install of the pinned release into a directory: its command, environment and
    where the binary lands. Go: `go install module@version` (the checksum database verifies the source);
    Rust: `cargo install --locked` of the crate's version (the registry's checksums, the crate's lock file)."""
    if b.toolchain == "cargo":
        argv = ["cargo", "install", "--locked", "--quiet", "--root", into, "--version", b.version.lstrip("v"),
                "--no-default-features", "--features", b.tags, b.module]
        return argv, dict(os.environ), Path(into) / "bin" / b.base
    argv = ["go", "install", *(["-tags", b.tags] if b.tags else []), *(["-ldflags", b.ldflags] if b.ldflags else []),
            f"{b.module}@{b.version}"]
    env = {**os.environ, "GOBIN": into, "CGO_ENABLED": "1" if b.cgo else "0", "GOFLAGS": "-trimpath"}
    return argv, env, Path(into) / Path(b.module).name


def check_source(b: Build, timeout: float = 600) -> None:
    """A Go build's source, fetched into the module cache, matches the digest kept in contend (ToolFailed if
    not, or if it cannot be fetched)."""
    if b.toolchain != "go" or not b.sum:
        return
    mod = f"{b.root or b.module}@{b.version}"
    out = run_tool(["go", "mod", "download", "-json", mod], f"building {b.name}", timeout=timeout).stdout
    got = json.loads(out).get("Sum", "")
    if got != b.sum:
        raise ToolFailed(f"checking {b.name}'s source", "go", f"says {mod} is {got or 'unknown'}; contend pins "
                                                               f"{b.sum}: not built")


def build(b: Build, timeout: float = 2400) -> Path:
    """Build the release into a fresh directory, then move it into the cache with its record. Raises
    ToolFailed (the toolchain missing, the source not reachable, the build failing) after recording why."""
    if built(b):
        return b.binary
    b.directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=b.directory) as tmp:
        argv, env, out = install(b, tmp)
        try:
            check_source(b)
            run_tool(argv, f"building {b.name}", timeout=timeout, env=env)
        except ToolFailed as e:
            b.manifest.write_text(json.dumps({"version": b.version, "failed": str(e)}))
            raise
        os.replace(out, b.binary)
    b.manifest.write_text(json.dumps({"version": b.version, "module": b.module, "sha256": sha256(b.binary),
                                      b.toolchain: toolchain_version(b), "built_at": time.strftime(
                                          "%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
    return b.binary


def build_named(names, say=print) -> None:
    """Build the releases a study names that are not built yet (`make demo` builds none, `make setup-runtimes`
    all): one line each before it starts, saying what and how long; one that fails is said, and its cells are
    n/a as the runtime's availability says."""
    first: dict[Path, Build] = {}  # gVisor's two platforms are one build: said by the name the spec gave first
    for n in names:
        if n in BUILDS:
            first.setdefault(BUILDS[n].directory, BUILDS[n])
    for b in first.values():
        if built(b):
            continue
        say(f"building {b.name} from its release, once (about {b.minutes} min here; "
            f"make setup-runtimes builds every one)")
        t0 = time.monotonic()
        try:
            build(b)
            say(f"{b.name}: built in {time.monotonic() - t0:.0f} s")
        except ToolFailed as e:
            say(f"{b.name}: not built, its cells will be n/a: {e}")


def main() -> int:
    """Build every runtime not yet built; one that cannot be built is said, and skipped (exit 0)."""
    done: set[Path] = set()
    for b in BUILDS.values():
        if b.directory in done:  # another name of a binary already built (or tried) in this run
            continue
        done.add(b.directory)
        names = ", ".join(x.name for x in BUILDS.values() if x.directory == b.directory)
        if built(b):
            print(f"{names}: built ({b.binary})")
            continue
        t0 = time.monotonic()
        try:
            build(b)
            print(f"{names}: built in {time.monotonic() - t0:.0f} s ({b.binary})")
        except ToolFailed as e:
            print(f"{names}: skipped: {e}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
