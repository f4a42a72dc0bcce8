#!/usr/bin/env bash
# A real cgroup v2 host for the test suite (issue 10): Debian's 6.1 kernel under qemu TCG, the host's root
# shared read-only over 9p, tmpfs on /run (scratch: /run/tmp) and /var/lib/contend, cgroup2 at
# /sys/fs/cgroup, a raw virtio disk as /dev/vda. SCRIPT must not live on a tmpfs of the host.
#
#   scripts/cgroup2-guest.sh build            # cache the kernel, modules and initramfs in $GUEST_DIR
#   scripts/cgroup2-guest.sh run SCRIPT       # boot, run SCRIPT (a host path) in the guest's chroot, power off
#
# The guest's console goes to stdout; SCRIPT's exit code becomes this script's. A guest that does not finish
# within $GUEST_TIMEOUT seconds is killed (exit 124) with its console log already printed. A soft lockup of the
# guest's kernel (seen now and then under TCG as Debian's runc 1.1.5 starts a container: docs/runtimes.md), an RCU
# stall (a vCPU starved: qemu's TCG runs the guest's CPUs as host threads) or a task hung in the kernel for
# $GUEST_HUNG s panics it at once with the backtraces on the console, and this script exits 1, not at the
# timeout. The guest prints a heartbeat every $GUEST_BEAT s; a console silent for $GUEST_SILENCE s (a guest
# that stopped without a panic) ends the boot too, with a line saying so (exit 3).
set -euo pipefail
# GUEST_KERNEL: which of Debian's kernels the guest boots: 6.1 (bookworm's, the default), 6.12 (bookworm's
# updates) or 5.10 (bullseye's, Debian 11: older than Ubuntu 22.04's 5.15, whose packages are not reachable
# here); each is cached in a directory of its own. KPKG names an exact linux-image package instead.
GUEST_KERNEL=${GUEST_KERNEL:-6.1}
SUITE=  # a suite other than the host's: its lists are fetched into the guest's cache, never the host's apt
case "$GUEST_KERNEL" in
  6.1) KPATTERN='^linux-image-6\.1\.0-[0-9]+-amd64$'; default_dir=/var/cache/contend/cgroup2-guest ;;
  6.12) KPATTERN='^linux-image-6\.12\.[0-9]+\+deb12-amd64$'; default_dir=/var/cache/contend/cgroup2-guest-6.12 ;;
  5.10) KPATTERN='^linux-image-5\.10\.0-[0-9]+-amd64$'; default_dir=/var/cache/contend/cgroup2-guest-5.10
        SUITE=bullseye ;;
  *) echo "cgroup2-guest: GUEST_KERNEL=$GUEST_KERNEL: must be 6.1, 6.12 or 5.10 (the kernels Debian's lists offer here)" >&2
     exit 2 ;;
esac
GUEST_DIR=${GUEST_DIR:-$default_dir}
GUEST_TIMEOUT=${GUEST_TIMEOUT:-600}
GUEST_BEAT=${GUEST_BEAT:-15}
GUEST_SILENCE=${GUEST_SILENCE:-90}
GUEST_SMP=${GUEST_SMP:-2}  # the guest's vCPUs: each is a host thread beside qemu's I/O thread (docs/results/archive.md: stalls per 20 boots)
GUEST_HUNG=${GUEST_HUNG:-240}
[[ "$GUEST_SMP" =~ ^[1-9][0-9]?$ ]] || { echo "cgroup2-guest: GUEST_SMP=$GUEST_SMP: must be a whole number of vCPUs, 1-99" >&2; exit 2; }  # a writer held by a low io.max can wait long in D state: not a stall
KPKG=${KPKG:-}
MODULES=(virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_blk netfs fscache
         crc16 mbcache jbd2 crc32c_generic ext4
         9pnet 9pnet_virtio 9p
         llc stp bridge veth sch_tbf  # network trials: a bridge, veth pairs, a tbf bottleneck
         bfq)  # the guard's BFQ weights
BUILD=7  # bump when the initramfs or the disk changes: cached guests are rebuilt

die() { echo "cgroup2-guest: $*" >&2; exit 2; }

build() {
  [ "$(cat "$GUEST_DIR/ready" 2>/dev/null)" = "$BUILD" ] && return 0
  command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing (apt-get install qemu-system-x86)"
  [ -x /bin/busybox ] || die "busybox-static missing (apt-get install busybox-static)"
  # (the guest also runs the host's /bin/busybox after switch_root, for poweroff)
  mkdir -p "$GUEST_DIR" && cd "$GUEST_DIR"
  local apt=()
  if [ -n "$SUITE" ]; then  # apt's own signature checks, against the host's Debian keyring, in a private state
    mkdir -p apt/lists/partial apt/cache/archives/partial
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $SUITE main" \
      > apt/sources.list
    apt=(-o Dir::Etc::SourceList="$GUEST_DIR/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
         -o Dir::State::Lists="$GUEST_DIR/apt/lists" -o Dir::Cache="$GUEST_DIR/apt/cache"
         -o Dir::State::Status=/dev/null)
    apt-get "${apt[@]}" -q update >/dev/null || die "apt-get update of Debian $SUITE's lists failed"
  fi
  if [ -z "$KPKG" ]; then
    KPKG=$(apt-cache "${apt[@]}" search --names-only "$KPATTERN" | awk '{print $1}' | sort -V | tail -1)
  fi
  [ -n "$KPKG" ] || die "no package matching $KPATTERN in the apt lists (run apt-get update)"
  rm -rf pkg x && mkdir pkg && (cd pkg && apt-get "${apt[@]}" download -q "$KPKG" >/dev/null 2>&1) \
    || die "apt-get download $KPKG failed"
  dpkg -x pkg/*.deb x
  kver=$(ls x/lib/modules)
  cp x/boot/vmlinuz-"$kver" vmlinuz
  rm -rf initrd && mkdir -p initrd/{bin,proc,sys,dev,root,lib/modules}
  cp /bin/busybox initrd/bin/busybox
  for m in "${MODULES[@]}"; do
    f=$(find "x/lib/modules/$kver" -name "$m.ko" -o -name "$m.ko.xz" | head -1)
    if [ -z "$f" ]; then  # built in, or merged into another (fscache into netfs since 6.8)
      grep -q "/$m.ko" "x/lib/modules/$kver/modules.builtin" 2>/dev/null || echo "cgroup2-guest: no module $m in $KPKG"
      continue
    fi
    case "$f" in *.xz) xz -dc "$f" > "initrd/lib/modules/$m.ko" ;; *) cp "$f" initrd/lib/modules/ ;; esac
  done
  cat > initrd/init <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
# load until nothing is left (dependencies differ between kernel builds), at most 5 passes
left=$(cd /lib/modules && ls *.ko | sed 's/\.ko$//')
for pass in 1 2 3 4 5; do
  next=""
  for m in $left; do insmod /lib/modules/$m.ko 2>/dev/null || next="$next $m"; done
  left=$next
  [ -z "$left" ] && break
done
[ -n "$left" ] && echo "guest: could not load:$left"
# from here on, warnings reach the console too: a soft lockup's backtraces (the kernel panics on one, below)
echo 5 > /proc/sys/kernel/printk
script=$(sed -n 's/.*contend_script=\([^ ]*\).*/\1/p' /proc/cmdline)
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose,ro hostroot /root || { echo "guest: 9p mount failed"; poweroff -f; }
mount -t proc proc /root/proc; mount -t sysfs sys /root/sys; mount -t devtmpfs dev /root/dev
# /tmp stays the host's (read-only: a checkout may live there); scratch space is $TMPDIR=/run/tmp
# contend's state is the guest's own (tmpfs); with GUEST_BUILT=1 the runtimes `make setup` built on the host
# (runc@1.5.2, …) stay visible in it, read-only (off by default: doctor would try each under TCG)
grep -q 'contend_built=1' /proc/cmdline && [ -d /root/var/lib/contend/runtimes ] && mkdir -p /built \
  && mount -o bind /root/var/lib/contend/runtimes /built
mount -t tmpfs run /root/run; mkdir -p /root/run/tmp; mount -t tmpfs state /root/var/lib/contend
[ -d /built ] && mkdir -p /root/var/lib/contend/runtimes && mount -o move /built /root/var/lib/contend/runtimes
mount -t cgroup2 cgroup2 /root/sys/fs/cgroup
mount -t tracefs tracefs /root/sys/kernel/tracing 2>/dev/null
echo "guest: cgroup2 controllers: $(cat /root/sys/fs/cgroup/cgroup.controllers)"
# switch_root, not chroot: runtimes pivot_root into their containers, which cannot start from an initramfs
# a heartbeat on the console: the host ends a boot whose console stays silent (cgroup2-guest.sh run)
beat=$(sed -n 's/.*contend_beat=\([0-9]*\).*/\1/p' /proc/cmdline)
exec switch_root /root /bin/busybox sh -c '
  ( while /bin/busybox sleep "$1"; do read up _ < /proc/uptime; echo "guest: alive ${up%.*} s"; done ) &
  /bin/sh "$0"; echo "guest: exit=$?"; /bin/busybox poweroff -f' "$script" "${beat:-15}"
INIT
  chmod +x initrd/init
  (cd initrd && find . | cpio -o -H newc 2>/dev/null | gzip -1) > initrd.gz
  rm -f disk.img && truncate -s 8G disk.img  # sparse: the guard's and the disk studies' files fit
  rm -rf pkg x initrd apt
  echo "$BUILD" > ready
}

run() {
  local script; script=$(readlink -f "$1")  # before build, which works in $GUEST_DIR
  [ -f "$script" ] || die "no script $1"
  build
  mkdir -p /var/lib/contend  # a mount point the guest needs on the shared root
  local log; log=$(mktemp)
  echo "cgroup2-guest: a stall, lockup or hung task panics the guest; a console silent for ${GUEST_SILENCE} s" \
       "ends the boot (heartbeat every ${GUEST_BEAT} s); ${GUEST_TIMEOUT} s in all"
  # the kernel's own stall handling, made a panic (panic=-1 with -no-reboot: qemu exits at once)
  local stalls="panic=-1 softlockup_panic=1 softlockup_all_cpu_backtrace=1 sysctl.kernel.panic_on_rcu_stall=1"
  stalls+=" rcupdate.rcu_cpu_stall_timeout=20 hung_task_panic=1 sysctl.kernel.hung_task_timeout_secs=$GUEST_HUNG"
  set +e
  timeout -k 5 "$GUEST_TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -smp "$GUEST_SMP" -m 2048 \
    -kernel "$GUEST_DIR/vmlinuz" -initrd "$GUEST_DIR/initrd.gz" \
    -append "console=ttyS0 quiet $stalls rdinit=/init contend_script=$script contend_built=${GUEST_BUILT:-0} contend_beat=$GUEST_BEAT" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -drive file="$GUEST_DIR/disk.img",format=raw,if=virtio \
    -display none -serial stdio -no-reboot -nic none </dev/null >"$log" 2>&1 &
  local qpid=$!
  tail -n +1 -s 1 -f --pid=$qpid "$log" &  # the console as it comes
  local tpid=$! silent=0 age
  while kill -0 "$qpid" 2>/dev/null; do
    sleep 2
    age=$(( $(date +%s) - $(stat -c %Y "$log") ))
    if [ "$age" -ge "$GUEST_SILENCE" ]; then
      silent=$age
      kill -TERM "$qpid" 2>/dev/null
      break
    fi
  done
  wait "$qpid"
  local rc=$?
  wait "$tpid" 2>/dev/null
  set -e
  if [ "$silent" != 0 ]; then
    echo "cgroup2-guest: stalled: the guest's console was silent for ${silent} s (bound ${GUEST_SILENCE} s): boot ended"
    rm -f "$log"; exit 3
  fi
  [ "$rc" = 124 ] && { echo "cgroup2-guest: timed out after ${GUEST_TIMEOUT}s" >&2; rm -f "$log"; exit 124; }
  local code; code=$(sed -n 's/^guest: exit=\([0-9]*\).*/\1/p' "$log" | tail -1 | tr -d '\r')
  rm -f "$log"
  [ -n "$code" ] || { echo "cgroup2-guest: the guest did not report an exit code (see its console above)" >&2; exit 1; }
  exit "$code"
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) die "usage: $0 build | run SCRIPT" ;;
esac
