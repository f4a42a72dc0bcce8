# The two commands: `make demo` and `make test`. Both install what is missing first.
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION := 0.13.8
export UV_PYTHON_DOWNLOADS := never
export UV_LINK_MODE := copy
VENV := .venv
UV := $(VENV)-uv/bin/uv

.PHONY: demo test test-unit test-all test-faults test-cgroup2 lint check-image setup setup-runtimes system venv runtimes \
        clean-host

# only what presets/quick.yaml runs: no runtime built from its release (contend run builds one a spec names)
demo: venv
	@scripts/install-system.sh demo
	$(VENV)/bin/contend run presets/quick.yaml

# The three tiers (tests/conftest.py puts each test in exactly one, from what it asks for):
#   make test-unit   the pure tests: no root, no apt, no runtimes, only .venv
#   make test        the unit tier and the real host's: containers, cgroups, probes, the guard, the watch,
#                    a short study of each kind
#   make test-all    the rest: the cgroup v2 guest's boots, every kind's whole study, the fault matrix
# One file or one test: make test-unit PYTEST_ARGS=tests/test_metrics.py, or PYTEST_ARGS="-k name"
test-unit: venv
	$(VENV)/bin/pytest -q -m unit $(PYTEST_ARGS)

test: setup
	$(VENV)/bin/pytest -q -m "unit or host" $(PYTEST_ARGS)

# TIER_ALL narrows it: CI runs "all and not exhaustive" (the representatives of each long tail, README "Tests")
TIER_ALL ?= all
test-all: setup
	$(VENV)/bin/pytest -q -m "$(TIER_ALL)" $(PYTEST_ARGS)

# ruff (pyproject.toml's rule set: pyflakes, pycodestyle, import order, complexity, bugbear); the import graph's
# own checks (no circles, no upward imports) are tests/test_layout.py, part of make test
lint: venv
	$(VENV)/bin/ruff check src tests bench deploy scripts
	$(VENV)/bin/mypy

# a study interrupted at 23 points by SIGINT, SIGTERM and SIGKILL, then resumed (tests/test_faults.py);
# FAULTS="faults and not exhaustive" runs the 9 points that stand for them (one per phase, each signal), as CI does
FAULTS ?= faults
test-faults: setup
	$(VENV)/bin/pytest -q -m "$(FAULTS)" $(PYTEST_ARGS)

# only the v2 guest: the real cgroup v2 tests, then every kind of study on pure v2, one boot each (make test
# boots the first two: the real v2 tests and the isolation study)
test-cgroup2: setup
	$(VENV)/bin/pytest -q -s tests/test_cgroup2_guest.py

# the cluster's pods for real without a cluster: builds deploy/Dockerfile's image and runs the rendered
# Workflow's and DaemonSet's containers under docker (docs/cluster.md); not part of make test
check-image: setup
	$(VENV)/bin/python deploy/check_image.py

setup: system venv runtimes

# runtimes built from their releases next to the distribution's (runc@1.5.2, gVisor 2026-09, youki 0.7.0),
# cached; one that cannot be built here is said and skipped
runtimes: venv
	@$(VENV)/bin/python -m contend.runtimes

setup-runtimes: runtimes

system:
	@scripts/install-system.sh

# uv (pinned) installs the locked dependencies from uv.lock
$(UV):
	$(PYTHON) -m venv $(VENV)-uv
	$(VENV)-uv/bin/pip install -q uv==$(UV_VERSION)

# bytecode compiled once here: where PYTHONDONTWRITEBYTECODE is set (this VM sets it) every contend process would
# compile scipy and matplotlib anew, 9 s for `contend run bad.yaml` against 0.8 s
venv: $(UV)
	@$(UV) sync --locked --quiet --python $(PYTHON) --compile-bytecode
	@$(VENV)/bin/python -m compileall -q src tests fuzz >/dev/null

clean-host: venv
	$(VENV)/bin/contend clean
