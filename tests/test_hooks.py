"""The operator's hook (the guard's alert command, the watch's --hook), run for real: data reaches it only as
data, a slow one is killed with its children, and the loop that fires it never waits."""
from __future__ import annotations

import json
import os
import time

from contend.hooks import Hooks


def wait_all(h: Hooks, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while h.running and time.monotonic() < deadline:
        h.reap()
        time.sleep(0.05)


def test_an_event_reaches_the_hook_as_env_and_stdin_and_is_never_run_as_a_command(tmp_path):
    out, pwned = tmp_path / "out", tmp_path / "pwned"
    h = Hooks(f'printf "%s|" "$CONTEND_WATCH_VICTIM" >> {out}; cat >> {out}')
    evil = f"$(touch {pwned}); `touch {pwned}`"  # a container named by its owner: data, never code
    started = time.monotonic()
    assert h.run({"CONTEND_WATCH_VICTIM": evil}, json.dumps({"victim": evil}) + "\n")
    assert time.monotonic() - started < 1.0  # not waited for
    wait_all(h)
    assert out.read_text() == f"{evil}|" + json.dumps({"victim": evil}) + "\n"
    assert not pwned.exists()


def test_a_hook_past_its_timeout_is_killed_with_its_children_and_a_full_house_refuses_more(tmp_path):
    pids = tmp_path / "pids"
    h = Hooks(f"sleep 60 & echo $! >> {pids}; wait", timeout_s=0.5, max_running=2)
    assert h.run({}) and h.run({})
    assert not h.run({})  # two still running: the third is not started
    time.sleep(1.0)
    killed = h.reap()
    assert len(killed) == 2 and all(after >= 0.5 for _, after in killed) and h.running == []
    time.sleep(0.2)
    for pid in pids.read_text().split():  # the shells' children went with them (their process group)
        assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"
