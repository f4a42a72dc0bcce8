"""Boots the cgroup v2 guest (Debian's kernel under qemu, the host's root over 9p) and runs the real-v2
tests inside it; their summary comes back here. Skips where qemu or busybox-static are missing. GUEST_KERNEL=6.12
picks the guest's other kernel (scripts/cgroup2-guest.sh)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from .conftest import needs_root

ROOT = Path(__file__).resolve().parents[1]
GUEST_DIR = Path("/var/cache/contend/cgroup2-guest")


def boot(name: str, script_body: str, timeout: int) -> str:
    """Boot the guest, run `script_body` (shell, in the checkout) there, and return its console; the summary
    line of a pytest run inside must say every test passed."""
    if shutil.which("qemu-system-x86_64") is None or not Path("/bin/busybox").exists():
        pytest.skip("qemu-system-x86 or busybox-static not installed")
    GUEST_DIR.mkdir(parents=True, exist_ok=True)
    script = GUEST_DIR / name  # on the host's disk: the guest cannot see the host's tmpfs
    script.write_text("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/tmp "
                      f"TMPDIR=/run/tmp\ncd {ROOT}\n" + textwrap.dedent(script_body))
    log = script.with_suffix(".log")  # the console as it comes: `tail -f` it to follow a long run
    with open(log, "w") as f:
        p = subprocess.run([str(ROOT / "scripts/cgroup2-guest.sh"), "run", str(script)], stdout=f,
                           stderr=subprocess.STDOUT, timeout=timeout + 300,
                           env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GUEST_TIMEOUT": str(timeout),
                                "GUEST_KERNEL": os.environ.get("GUEST_KERNEL", "6.1")})
    console = log.read_text(errors="replace")
    print(console)  # the guest's console and its pytest summary, shown with -s or on failure
    assert "guest: cgroup2 controllers:" in console, "the guest did not boot"
    assert p.returncode == 0, console[-6000:]
    summary = [ln for ln in console.splitlines() if re.search(r"\d+ passed", ln)]
    assert summary, "no pytest summary came back from the guest"
    assert not re.search(r"failed|error|skipped", summary[-1]), f"every test must run and pass: {summary[-1]}"
    return console


PYTEST = f"exec {ROOT}/.venv/bin/python -m pytest -q -p no:cacheprovider --color=no --basetemp=/run/tmp/pytest"


@needs_root
def test_real_v2_tests_pass_in_the_cgroup2_guest():
    boot("run-tests.sh", f"{PYTEST} -m cgroup2 tests/test_cgroup2.py\n", timeout=600)


@needs_root
def test_every_kind_of_study_runs_on_pure_v2_in_the_guest():
    """tests/test_cgroup2_studies.py: each preset's quick pass, narrowed, with contend's DATA on an ext4 file
    system of the guest's own disk (the studies' disk figures are the virtio disk's, through v2's io
    controller)."""
    boot("run-studies.sh", f"""\
        mkfs.ext4 -q -F /dev/vda && mkdir -p /var/lib/contend/data && mount /dev/vda /var/lib/contend/data || exit 1
        {PYTEST} --durations=0 tests/test_cgroup2_studies.py
        """, timeout=2400)
