"""The host tools contend starts (stress-ng, fio, the C compiler, bpftrace): never in the caller's working
directory, and a failure is one line naming the tool, its exit code and its last line, never a traceback,
with no empty table written. Each tool is made to fail by a stand-in of the same name put first on PATH
(an injected fault: the stand-in prints a line to stderr and exits 3); the read-only working directory is
a real read-only mount."""
from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contend.tools import ToolFailed, last_line, run_tool, workdir

from .conftest import CONTEND, contend, needs_root, require, tiny_spec

PRESETS = Path(__file__).resolve().parents[1] / "presets"


def failing(tmp_path: Path, *tools: str) -> dict[str, str]:
    """An environment whose PATH starts with stand-ins for `tools` that fail (exit 3, one line on stderr)."""
    shims = tmp_path / "failing-tools"
    shims.mkdir(exist_ok=True)
    for t in tools:
        f = shims / t
        f.write_text(f"#!/bin/sh\necho '{t}: injected failure' >&2\nexit 3\n")
        f.chmod(0o755)
    return {"PATH": f"{shims}:{os.environ['PATH']}"}


@pytest.fixture
def read_only_dir(tmp_path):
    """A directory on a read-only file system (root is not stopped by a directory's mode bits)."""
    d = tmp_path / "ro"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "contend-test-ro", str(d)], check=True)
    yield d
    subprocess.run(["umount", str(d)], check=True)


def test_a_failing_tool_is_one_line_with_its_exit_code_and_last_line():
    with pytest.raises(ToolFailed) as e:
        run_tool(["sh", "-c", "echo starting; echo 'first' >&2; echo 'disk full' >&2; exit 3"], "calibrating X")
    assert str(e.value) == "calibrating X: sh exited 3: disk full"
    with pytest.raises(ToolFailed, match=r"^doing Y: no-such-tool-here is not installed"):
        run_tool(["no-such-tool-here"], "doing Y")
    with pytest.raises(ToolFailed, match=r"^Z: sh was killed by SIGKILL$"):
        run_tool(["sh", "-c", "kill -9 $$"], "Z")
    with pytest.raises(ToolFailed, match=r"^W: sleep did not finish within 0.2 s$"):
        run_tool(["sleep", "5"], "W", timeout=0.2)


def test_tools_run_in_contends_own_directory_not_the_callers():
    assert run_tool(["pwd"], "where").stdout.strip() == str(workdir())


@needs_root
def test_cpu_calibration_from_a_read_only_working_directory(read_only_dir):
    """stress-ng writes temporary files to its cwd unless told: from a read-only checkout it exited 1 and a
    CalledProcessError escaped (issue 25). Now it runs in contend's own directory."""
    require("stress-ng")
    code = ("from contend.doctor.calibrate import cpu_capacity; c = cpu_capacity(1.0); "
            "print(c['cpu_bogo_ops_s_per_cpu'])")
    p = subprocess.run([sys.executable, "-c", code], cwd=read_only_dir, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert float(p.stdout.split()[-1]) > 0


@needs_root
@pytest.mark.parametrize("tool, doing", [  # one in make test, the others in make test-all
    ("cc", "building the load agent"), pytest.param("stress-ng", "CPU calibration", marks=pytest.mark.slow),
    pytest.param("fio", "disk calibration", marks=pytest.mark.slow)])
def test_doctor_calibrate_with_a_failing_tool_is_one_line(tmp_path, tool, doing):
    require("stress-ng")
    require("fio")
    env = {**failing(tmp_path, tool), "CONTEND_HOME": str(tmp_path / "home")}  # nothing calibrated or built yet
    p = contend("doctor", "--calibrate", "--disk-dir", str(tmp_path / "disk"), env=env, timeout=300)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stderr.strip() == f"contend: {doing}: {tool} exited 3: {tool}: injected failure"
    assert not (tmp_path / "home" / "capacity.json").exists()


@needs_root
@pytest.mark.slow  # a failure path through a whole run: make test-all
def test_a_study_whose_calibration_fails_says_so_in_one_line_and_writes_no_tables(tmp_path, read_only_dir):
    """The first run on a host calibrates the CPU: with stress-ng failing, exit 1, the reason as the last line,
    no traceback and no empty table4-*.md or report; started from a read-only working directory."""
    require("stress-ng")
    spec = tiny_spec(tmp_path / "tiny.yaml")
    out = tmp_path / "out"
    env = {**failing(tmp_path, "stress-ng"), "CONTEND_HOME": str(tmp_path / "home")}
    p = contend("run", str(spec), "--out", str(out), env=env, cwd=read_only_dir, timeout=300)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    assert "Traceback" not in p.stderr + p.stdout
    last = p.stderr.strip().splitlines()[-1]
    assert last == "contend: CPU calibration: stress-ng exited 3: stress-ng: injected failure"
    assert "no trial finished" in p.stdout
    assert (out / "spec.yaml").exists() and (out / "host.json").exists()
    assert not list(out.glob("table4-*")) and not (out / "report.html").exists() and not (out / "metrics.csv").exists()
    p = contend("report", str(out))
    assert p.returncode == 1
    assert p.stderr.strip() == f"contend: {out}: no trial finished in this study: nothing to report"


@needs_root
def test_the_default_results_directory_under_a_read_only_cwd_is_a_clear_error(read_only_dir):
    p = contend("run", str(PRESETS / "quick.yaml"), cwd=read_only_dir, timeout=120)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "cannot make the results directory" in p.stderr and "--out" in p.stderr


@needs_root
@pytest.mark.slow  # a failure path through a whole run: make test-all
def test_a_failing_bpftrace_is_a_probe_problem_with_its_last_line(tmp_path, monkeypatch):
    """bpftrace exiting at start: the trial runs on with the cgroup view, the reason recorded."""
    from contend.probes import BpftraceProbes, Target
    monkeypatch.setenv("PATH", failing(tmp_path, "bpftrace")["PATH"])
    probes = BpftraceProbes([Target("t", None, None)], wanted=("cpu",)).start(timeout=10)
    probes.stop()
    assert probes.attached == []
    assert "bpftrace did not attach: bpftrace: injected failure" in probes.problems, probes.problems


@needs_root
@pytest.mark.slow  # a whole study around one failing tool: make test-all
def test_a_parallel_study_whose_benchmarks_cannot_be_built_fails_its_trials_with_the_reason(tmp_path):
    spec = tmp_path / "p.yaml"
    spec.write_text("kind: parallel\nname: p\nruntimes: [runc]\nbenchmarks: [noploop]\ncounts: [1]\n"
                    "runs_per_container: 1\nlimits: {cpus: 1, memory: 96M}\n")
    env = {**failing(tmp_path, "cc"), "CONTEND_HOME": str(tmp_path / "home")}  # nothing built yet
    p = contend("run", str(spec), "--out", str(tmp_path / "out"), env=env)
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr, p.stdout[-2000:] + p.stderr[-2000:]
    assert "cc exited 3: cc: injected failure" in p.stdout


def test_the_last_line_of_a_rust_tools_error_is_its_error_not_its_backtrace():
    out = ("DEBUG mounting\nError: failed to create container: failed to prepare rootfs\n\n"
           "Stack backtrace:\n   0: <unknown>\n   9: <unknown>\n")
    assert last_line(out) == "Error: failed to create container: failed to prepare rootfs"
    assert last_line("a\nb\n") == "b" and last_line(b"") == ""


def test_a_runtimes_log_gives_its_message_and_the_fatal_cause_before_it():
    """runc logs logfmt lines; its last one is a wrapper (`runc create failed: … read init-p: connection reset by
    peer`), the cause is the fatal line its init logged before dying. Debian 12's runc 1.1.5 on a 5.10 kernel
    (the v2 guest, GUEST_KERNEL=5.10), as its log file said it."""
    log = ('time="2026-11-26T06:33:02Z" level=fatal msg="nsexec[151]: could not ensure we are a cloned binary: '
           'No such file or directory"\n'
           'time="2026-11-26T06:33:02Z" level=error msg="runc run failed: unable to start container process: '
           'waiting for init preliminary setup: read init-p: connection reset by peer" func="main.fatalWithCode()" '
           'file="utils.go:61"\n')
    assert last_line(log) == ("nsexec[151]: could not ensure we are a cloned binary: No such file or directory "
                              "(runc run failed: unable to start container process: waiting for init preliminary "
                              "setup: read init-p: connection reset by peer)")
    # one logfmt line: its message; an escaped quote stays in it
    assert last_line('time="x" level=error msg="exec failed: \\"sh\\": not found"\n') == 'exec failed: "sh": not found'
    # a line that only mentions msg= is not a log line
    assert last_line("fio: bad option msg=x\n") == "fio: bad option msg=x"


@needs_root
@pytest.mark.slow  # a failure path through a whole run: make test-all
def test_a_runtime_failing_in_the_preflight_is_n_a_with_its_last_line(tmp_path):
    """runc itself failing from the start (a stand-in first on PATH): the preflight says so in the cell's n/a
    reason, naming the runtime and its last line, as for any runtime this host cannot run."""
    from .conftest import runtime_or_skip
    runtime_or_skip("runc")
    out = tmp_path / "out"
    p = contend("run", str(tiny_spec(tmp_path / "tiny.yaml")), "--out", str(out), env=failing(tmp_path, "runc"))
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout[-2000:] + p.stderr[-2000:]
    assert "runc not available: runc create contend-doctor-runc-" in p.stdout
    assert "runc exited 3: runc: injected failure" in p.stdout


@needs_root
@pytest.mark.slow  # a failure path through a whole run: make test-all
def test_a_runtime_failing_in_a_trial_fails_it_with_its_exit_code_and_last_line(tmp_path):
    """runc passing the preflight, then failing to create the trial's containers (a stand-in that runs the real
    runc for its first container only): the trial fails with a reason naming runc and its last line, the
    study exits 1 with no traceback; the table's cell is n/a with that reason."""
    from .conftest import runtime_or_skip
    real = runtime_or_skip("runc")
    import shutil
    shims = tmp_path / "shims"
    shims.mkdir()
    shim = shims / "runc"
    shim.write_text(f"""#!/bin/sh
case " $* " in *" create "*|*" run "*)
  n=$(( $(cat {shims}/n 2>/dev/null || echo 0) + 1 )); echo $n > {shims}/n
  [ $n -gt 1 ] && {{ echo 'runc: injected failure' >&2; exit 3; }} ;;
esac
exec {shutil.which(real.binary)} "$@"
""")
    shim.chmod(0o755)
    out = tmp_path / "out"
    p = contend("run", str(tiny_spec(tmp_path / "tiny.yaml", retries=0)), "--out", str(out),
                env={"PATH": f"{shims}:{os.environ['PATH']}"}, timeout=300)
    assert p.returncode == 1, p.stdout[-2000:] + p.stderr[-2000:]
    text = " ".join((p.stdout + p.stderr).split())
    assert "Traceback" not in text and "runc: injected failure" in text, text[-2000:]
    assert "1 of 1 trials failed" in p.stdout
    import duckdb
    with duckdb.connect(str(out / "contend.duckdb"), read_only=True) as db:
        (status, reason), = db.execute("SELECT status, reason FROM trials").fetchall()
    said = r"runc create contend-\w+-abiding: runc exited 3: runc: injected failure"
    assert status == "failed" and re.fullmatch(said, reason), reason
    # the table says why in the cell's footnote; nothing measured is presented as a figure
    assert f"(1) {reason}" in (out / "table4-host.md").read_text()
    assert [r["value"] for r in csv.DictReader(open(out / "metrics.csv"))] == [""]


# ---------------------------------------------------------------- a load tool failing inside a container
def broken_in_containers(tmp_path: Path, tool: str) -> list[str]:
    """A prefix that runs contend in a mount namespace of its own where the host's `tool` is a stand-in that
    fails (exit 3, one line on stderr) inside every container, and runs a copy of the real tool on the host
    (the copy's path is under the test's /tmp, which no container sees). A container's /usr is a recursive bind
    of contend's, so the stand-in is what the tenants run; the host's own /usr/bin is never touched."""
    require("unshare")
    real = Path(shutil.which(tool) or pytest.skip(f"{tool} not installed"))
    copy = tmp_path / "real" / tool
    copy.parent.mkdir()
    shutil.copy2(real, copy)
    shim = tmp_path / f"{tool}-in-containers"
    shim.write_text(f"#!/bin/sh\n[ -x {copy} ] && exec {copy} \"$@\"\necho '{tool}: injected failure' >&2\nexit 3\n")
    shim.chmod(0o755)
    return ["unshare", "--mount", "--propagation", "private",
            "sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"', str(shim), str(real)]


def run_broken(tmp_path: Path, tool: str, spec: Path) -> tuple[subprocess.CompletedProcess, list[tuple[str, str]]]:
    """The study run with `tool` failing in its containers: its output and its trials' (status, reason)."""
    out = tmp_path / "out"
    p = subprocess.run([*broken_in_containers(tmp_path, tool), *CONTEND, "run", str(spec), "--out", str(out)],
                       capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})
    assert "Traceback" not in p.stdout + p.stderr, p.stdout[-3000:] + p.stderr[-3000:]
    import duckdb
    with duckdb.connect(str(out / "contend.duckdb"), read_only=True) as db:
        return p, db.execute("SELECT status, reason FROM trials").fetchall()


@needs_root
@pytest.mark.slow  # a whole study around one failing tool: make test-all
def test_fio_failing_in_a_container_fails_the_trial_with_its_exit_code_and_last_line(tmp_path):
    """The disk load's file laid out by fio in each tenant (an isolation study's disk trial)."""
    from .conftest import runtime_or_skip
    runtime_or_skip("runc")
    p, trials = run_broken(tmp_path, "fio", tiny_spec(tmp_path / "tiny.yaml", resources=("disk",), retries=0))
    assert p.returncode == 1 and "1 of 1 trials failed" in p.stdout, p.stdout[-3000:] + p.stderr[-3000:]
    (status, reason), = trials
    assert status == "failed" and re.fullmatch(
        r"the disk load's setup in \w+: fio exited 3: fio: injected failure", reason), reason


@needs_root
@pytest.mark.slow  # a whole study around one failing tool: make test-all
def test_stress_ng_failing_in_a_container_fails_the_detect_trial_with_its_exit_code_and_last_line(tmp_path):
    """The CPU antagonist of a detect study (stress-ng in the noisy tenant)."""
    from .conftest import runtime_or_skip
    runtime_or_skip("runc")
    spec = tmp_path / "detect.yaml"
    spec.write_text("kind: detect\nname: broken\nruntimes: [runc]\ncases: [cpu]\nrepetitions: 1\nretries: 0\n"
                    "trial: {baseline_s: 2, jitter_s: 0, attack_s: 3, tail_s: 1, period_s: 0.5}\n")
    p, trials = run_broken(tmp_path, "stress-ng", spec)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    (status, reason), = trials
    assert status == "failed" and re.fullmatch(
        r"cpu case, \w+: stress-ng exited 3: stress-ng: injected failure", reason), reason


@needs_root
@pytest.mark.slow  # a whole study around one failing tool: make test-all
def test_sysbench_failing_in_a_container_fails_its_runs_with_its_exit_code_and_last_line(tmp_path):
    """A parallel study's benchmark (sysbench cpu): every run's reason names it, the study exits 1."""
    from .conftest import runtime_or_skip
    runtime_or_skip("runc")
    spec = tmp_path / "parallel.yaml"
    spec.write_text("kind: parallel\nname: broken\nruntimes: [runc]\nbenchmarks: [sysbench-cpu]\ncounts: [1]\n"
                    "runs_per_container: 1\nretries: 0\nlimits: {cpus: 1, memory: 256M}\n")
    p, trials = run_broken(tmp_path, "sysbench", spec)
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]
    said = r"sysbench-cpu in \S+: sysbench exited 3: sysbench: injected failure"
    assert trials and all(status == "failed" and re.fullmatch(said, why) for status, why in trials), trials
