"""An operator's command run on an event (the guard's alert, the watch's verdict).

The command is the operator's own line (a flag or a config key), run by the shell as they wrote it; what the
event says reaches it only as data: CONTEND_* environment variables and, when given, JSON on its stdin, never
as part of a command line. The loop that fires it never waits for it: each is reaped later, and one running
past its timeout is killed with its whole process group.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time


def kill_group(h: subprocess.Popen) -> None:
    try:
        os.killpg(h.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    h.wait()


class Hooks:
    def __init__(self, cmd: str, timeout_s: float = 30.0, max_running: int = 8):
        self.cmd = cmd
        self.timeout_s = timeout_s
        self.max_running = max_running  # beyond it an event's hook is not started (a hook slower than events)
        self.running: list[tuple[subprocess.Popen, float]] = []  # (hook, when it started)

    def run(self, env: dict[str, str], stdin: str | None = None) -> bool:
        """Start the command with env added to this process's environment (and stdin's text on its stdin);
        False: max_running are still running, and this one was not started."""
        self.reap()
        if len(self.running) >= self.max_running:
            return False
        h = subprocess.Popen(self.cmd, shell=True, env={**os.environ, **env}, start_new_session=True,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL)
        if stdin is not None and h.stdin is not None:
            try:
                h.stdin.write(stdin.encode())  # an event is a few hundred bytes: within a pipe's buffer
                h.stdin.close()
            except BrokenPipeError:
                pass  # the hook did not read it
        self.running.append((h, time.monotonic()))
        return True

    def reap(self) -> list[tuple[int, float]]:
        """Forget the finished ones; kill the ones past their timeout: [(pid, after how many seconds)]."""
        now = time.monotonic()
        killed = []
        for h, started in self.running:
            if h.poll() is None and now - started > self.timeout_s:
                kill_group(h)
                killed.append((h.pid, now - started))
        self.running = [(h, s) for h, s in self.running if h.poll() is None]
        return killed

    def close(self, wait_s: float = 5.0) -> None:
        """Give the running ones wait_s to finish, then kill them."""
        for h, _ in self.running:
            try:
                h.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                kill_group(h)
        self.running = []
