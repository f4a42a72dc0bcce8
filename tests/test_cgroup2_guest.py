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


@needs_root
def test_real_v2_tests_pass_in_the_cgroup2_guest():
    if shutil.which("qemu-system-x86_64") is None or not Path("/bin/busybox").exists():
        pytest.skip("qemu-system-x86 or busybox-static not installed")
    GUEST_DIR.mkdir(parents=True, exist_ok=True)
    script = GUEST_DIR / "run-tests.sh"
    script.write_text(textwrap.dedent(f"""\
        export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/tmp TMPDIR=/run/tmp
        cd {ROOT}
        exec {ROOT}/.venv/bin/python -m pytest -q -p no:cacheprovider --color=no \\
            --basetemp=/run/tmp/pytest -m cgroup2 tests/test_cgroup2.py
        """))
    p = subprocess.run([str(ROOT / "scripts/cgroup2-guest.sh"), "run", str(script)], capture_output=True,
                       text=True, timeout=900, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GUEST_TIMEOUT": "600",
                                                 "GUEST_KERNEL": os.environ.get("GUEST_KERNEL", "6.1")})
    console = p.stdout + p.stderr
    print(console)  # the guest's console and its pytest summary, shown with -s or on failure
    assert "guest: cgroup2 controllers:" in console, "the guest did not boot"
    assert p.returncode == 0, console[-4000:]
    summary = [ln for ln in console.splitlines() if re.search(r"\d+ passed", ln)]
    assert summary, "no pytest summary came back from the guest"
    assert not re.search(r"failed|error|skipped", summary[-1]), f"every real-v2 test must run and pass: {summary[-1]}"
