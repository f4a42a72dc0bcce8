"""Boots the cgroup v2 guest (Debian's kernel under qemu, the host's root over 9p) and runs the real-v2
tests inside it; their summary comes back here. Skips where qemu or busybox-static are missing. GUEST_KERNEL=6.12
picks the guest's other kernel (scripts/cgroup2-guest.sh)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import textwrap
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUEST_DIR = Path("/var/cache/contend/cgroup2-guest")


# what ends a boot early (scripts/cgroup2-guest.sh): the guest's kernel panics on a soft lockup, an RCU stall or a
# hung task, with the backtraces; a console silent for its bound is ended by the script
STALLS = ("soft lockup", "rcu_preempt self-detected stall", "rcu: INFO: rcu_preempt detected stalls",
          "blocked for more than", "cgroup2-guest: stalled")


def boot(name: str, script_body: str, timeout: int) -> str:
    """Boot the guest, run `script_body` (shell, in the checkout) there, and return its console; the summary
    line of a pytest run inside must say every test passed. A boot whose kernel locked up or stalled is booted
    once more, said on the console and as a warning: under TCG Debian's runc 1.1.5 has now and then locked up
    the guest's kernel as it started a container, outside contend's code (docs/runtimes.md), and a vCPU starved
    by the host stalls RCU; a second one fails, with the console's last lines."""
    if shutil.which("qemu-system-x86_64") is None or not Path("/bin/busybox").exists():
        pytest.skip("qemu-system-x86 or busybox-static not installed")
    GUEST_DIR.mkdir(parents=True, exist_ok=True)
    # matplotlib's font cache, built here (a second) and copied in: under TCG each boot spent ~35 s building it
    mpl = GUEST_DIR / "matplotlib"
    subprocess.run([str(ROOT / ".venv/bin/python"), "-c", "import matplotlib.font_manager"], check=True,
                   env={"MPLCONFIGDIR": str(mpl), "PATH": "/usr/bin:/bin"})
    script = GUEST_DIR / name  # on the host's disk: the guest cannot see the host's tmpfs
    script.write_text("export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/run/tmp "
                      f"TMPDIR=/run/tmp MPLCONFIGDIR=/run/tmp/matplotlib\ncp -r {mpl} /run/tmp/matplotlib\n"
                      f"cd {ROOT}\n" + textwrap.dedent(script_body))
    log = script.with_suffix(".log")  # the console as it comes: `tail -f` it to follow a long run
    for attempt in (1, 2):
        with open(log, "w") as f:
            p = subprocess.run([str(ROOT / "scripts/cgroup2-guest.sh"), "run", str(script)], stdout=f,
                               stderr=subprocess.STDOUT, timeout=timeout + 300,
                               env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "GUEST_TIMEOUT": str(timeout),
                                    "GUEST_KERNEL": os.environ.get("GUEST_KERNEL", "6.1")})
        console = log.read_text(errors="replace")
        print(console)  # the guest's console and its pytest summary, shown with -s or on failure
        stall = next((ln.strip() for ln in console.splitlines() if any(s in ln for s in STALLS)), "")
        if p.returncode == 0 or not stall or attempt == 2:
            break
        warnings.warn(f"{name}: the guest stalled ({stall}); booting it once more", stacklevel=2)
        log.with_suffix(".lockup.log").write_text(console)  # its backtraces, kept
    assert "guest: cgroup2 controllers:" in console, "the guest did not boot"
    assert p.returncode == 0, (f"the guest stalled twice ({stall})\n" if stall else "") + console[-6000:]
    summary = [ln for ln in console.splitlines() if re.search(r"\d+ passed", ln)]
    assert summary, "no pytest summary came back from the guest"
    assert not re.search(r"failed|error|skipped", summary[-1]), f"every test must run and pass: {summary[-1]}"
    return console


PYTEST = f"{ROOT}/.venv/bin/python -m pytest -q -p no:cacheprovider --color=no --basetemp=/run/tmp/pytest"
# tests/test_cgroup2_studies.py's tests, one guest boot each: a failure or a lockup costs one study, not all
CAPACITY = ".guest-capacity.json"  # contend's calibration of the guest, kept on its disk between boots
STUDIES = re.findall(r"^def (test_v2_\w+)\(", (ROOT / "tests/test_cgroup2_studies.py").read_text(), re.M)
# every study's boot is `exhaustive` (make test-all, make test-cgroup2; not CI's part): 4-14 minutes each under
# TCG, where CI's whole run must stay within 45 (the isolation study's took 12 min on 2026-11-27, 6.5 the day before)


@pytest.mark.usefixtures("guest")
def test_real_v2_tests_pass_in_the_cgroup2_guest():
    boot("run-tests.sh", f"exec {PYTEST} -m cgroup2 tests/test_cgroup2.py\n", timeout=600)


@pytest.mark.usefixtures("guest")
@pytest.mark.exhaustive
@pytest.mark.parametrize("study", [pytest.param(s, id=s.removeprefix("test_v2_").split("_")[0]) for s in STUDIES])
def test_every_kind_of_study_runs_on_pure_v2_in_the_guest(study):
    """tests/test_cgroup2_studies.py: each preset's quick pass, narrowed, with contend's DATA on an ext4 file
    system of the guest's own disk (the studies' disk figures are the virtio disk's, through v2's io
    controller). Each boot makes the file system anew; contend's calibration of the guest (its capacity.json,
    ~45 s under TCG) is handed from one boot to the next on that disk, as a host keeps it across reboots."""
    boot(f"run-{study}.sh", f"""\
        mkdir -p /run/disk && mount -o ro /dev/vda /run/disk 2>/dev/null \\
          && {{ cp /run/disk/{CAPACITY} /var/lib/contend/capacity.json 2>/dev/null; umount /run/disk; }}
        mkfs.ext4 -q -F /dev/vda && mkdir -p /var/lib/contend/data && mount /dev/vda /var/lib/contend/data || exit 1
        {PYTEST} --durations=0 tests/test_cgroup2_studies.py::{study}
        rc=$?
        cp /var/lib/contend/capacity.json /var/lib/contend/data/{CAPACITY} 2>/dev/null; sync
        umount /var/lib/contend/data
        exit $rc
        """, timeout=1200)
