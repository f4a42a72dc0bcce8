#!/usr/bin/env bash
# System packages contend drives (idempotent): runtimes, eBPF, load generators.
#   scripts/install-system.sh demo   what `make demo` runs (presets/quick.yaml: CPU on runc and runsc)
#   scripts/install-system.sh        everything the test suite and every preset use
set -euo pipefail
DEMO=(runc runsc bpftrace stress-ng iproute2 util-linux procps
      gcc libc6-dev                         # the load agent is built static from its C source
      golang-github-containers-common)      # /usr/share/containers/seccomp.json: the containers' seccomp profile
PKGS=("${DEMO[@]}")
if [ "${1:-all}" != demo ]; then
  PKGS+=(crun lxc fio iperf3 sysbench e2fsprogs
      qemu-system-x86 busybox-static cpio   # the cgroup v2 guest of the test suite
      bc                                    # the parallel suite checks pi's digits
      postgresql mariadb-server mariadb-client   # the database victim (started by contend inside a tenant)
      chromium                              # the report's browser test (headless)
      mmdebstrap                            # make check-image: the base image, from Debian's mirror
      prometheus                            # promtool: the watch's alert rules checked and unit-tested
      libseccomp-dev pkg-config)            # runc@1.5.2 and youki, built from their releases (contend.runtimes.builds)
  # a docker engine for the engine adapter's tests, unless one (docker-ce, …) is installed already;
  # the tests start it for their session only when it is not running
  command -v dockerd >/dev/null 2>&1 || PKGS+=(docker.io)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "contend: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # the database packages and prometheus would start their services on the host: contend starts its own
  guard=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && guard=1
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ -n "$guard" ]; then rm -f /usr/sbin/policy-rc.d; fi
  # nor at boot: a host that runs contend need not serve a database or a docker socket because of it
  # (only the services of packages installed here: a host's own docker stays as its owner set it)
  declare -A SERVICES=([postgresql]="postgresql" [mariadb-server]="mariadb" [docker.io]="docker containerd"
                     [prometheus]="prometheus")
  for p in "${missing[@]}"; do
    for svc in ${SERVICES[$p]:-}; do systemctl disable --quiet "$svc" 2>/dev/null || true; done
  done
fi
# bpftrace needs tracefs
if [ "$(id -u)" = 0 ] && [ ! -d /sys/kernel/tracing/events ]; then
  mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
fi
