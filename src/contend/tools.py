"""The host's own tools that contend starts outside any container (stress-ng and fio to calibrate, the C
compiler for the load agent): each in a directory contend owns, never the caller's working directory (a
read-only checkout made stress-ng exit 1), and a failure is one line naming the tool, its exit code and the
last line it wrote (a ToolFailed; contend prints it and exits 1, never a traceback)."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from .failures import Failure
from .paths import STATE


class ToolFailed(Failure, subprocess.SubprocessError):
    """An external tool did not do what contend needed; str() is the one line to show."""

    def __init__(self, doing: str, tool: str, why: str):
        super().__init__(f"{doing}: {tool} {why}")
        self.tool = tool


# a Go runtime's log line (runc, crun's --log-format text is the same): time="…" level=error msg="…" …
LOGFMT = re.compile(r'\blevel=(\w+) msg="((?:[^"\\]|\\.)*)"')


def last_line(text: str | bytes | None) -> str:
    """The last line a failing command wrote: usually its reason. A runtime's logfmt log gives its last message,
    after the fatal message logged before it if there is one: runc's init logs why it died (`nsexec: could not
    ensure we are a cloned binary`), then runc a wrapper that says only that its init went away."""
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    text = (text or "").split("\nStack backtrace:")[0]  # a Rust tool's (youki's) error, then its backtrace
    lines = text.strip().splitlines()
    if not lines:
        return ""
    logged = [(m[1], m[2].replace('\\"', '"')) for m in map(LOGFMT.search, lines) if m]
    if not logged or not LOGFMT.search(lines[-1]):
        return lines[-1].strip()
    last = logged[-1][1]
    fatal = [msg for level, msg in logged[:-1] if level in ("fatal", "panic") and msg != last]
    return f"{fatal[-1]} ({last})" if fatal else last


def workdir() -> Path:
    """The working directory of the tools contend starts: its own, private (the system's temporary
    directory when contend's state directory cannot be made or entered, e.g. without root: a user who runs
    `contend report` where root ran a study finds root's 0700 directory there)."""
    d = STATE / "tmp"
    try:
        d.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return Path(tempfile.gettempdir())
    return d if os.access(d, os.W_OK | os.X_OK) else Path(tempfile.gettempdir())


def exit_reason(code: int) -> str:
    """'exited 3' or 'was killed by SIGKILL' (subprocess's negative codes are signals)."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited {code}"


def run_tool(argv: list[str], doing: str, timeout: float | None = None,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """argv run to its end in contend's working directory, its output captured as text; a tool that is
    missing, cannot start, times out or exits non-zero raises ToolFailed saying `doing`: what it was for."""
    tool = os.path.basename(argv[0])
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=workdir(), env=env)
    except FileNotFoundError:
        raise ToolFailed(doing, tool, "is not installed (make setup installs it)") from None
    except subprocess.TimeoutExpired:
        raise ToolFailed(doing, tool, f"did not finish within {timeout:g} s") from None
    except OSError as e:
        # a name searched on a PATH with a directory this user may not enter is EACCES, not ENOENT
        if isinstance(e, PermissionError) and os.sep not in argv[0] and \
                shutil.which(argv[0], path=(env or os.environ).get("PATH")) is None:
            raise ToolFailed(doing, tool, "is not installed (make setup installs it)") from None
        raise ToolFailed(doing, tool, f"could not start: {e.strerror or e}") from None
    if p.returncode != 0:
        raise ToolFailed(doing, tool, ended(p.returncode, p.stderr or p.stdout))
    return p


def ended(code: int, output: str | bytes | None) -> str:
    """'exited 3: <its last line>': how a command ended and what it said last (at most 300 characters of it)."""
    said = last_line(output)[:300]
    return exit_reason(code) + (f": {said}" if said else "")


def failure(what: str, tool: str, code: int, output: str | bytes | None) -> str:
    """One line for a command that failed, on the host or in a container: what it was for, the tool, its exit
    code or signal and its last line ("fio layout in victim: fio exited 1: fio: No space left on device")."""
    return f"{what}: {tool} {ended(code, output)}"
