#!/bin/sh
# Can each runc on this host run a container, without and with a user namespace? Runs the distribution's runc
# and every runc contend built (/var/lib/contend/runtimes/runc@*/runc) on a minimal bundle (the host's /usr,
# read-only), with --debug, and prints each one's exit code and its error lines. Needs root. For a guest kernel:
#   GUEST_BUILT=1 GUEST_KERNEL=5.10 scripts/cgroup2-guest.sh run scripts/runc-probe.sh
# Everything it makes is in a private directory, removed at the end.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
work=$(mktemp -d /run/contend-runc-probe.XXXXXX) || exit 1  # /run: writable in the v2 guest too
trap 'rm -rf "$work"' EXIT
echo "kernel $(uname -r)"
bundle() {  # $1: the bundle's directory, $2: "userns" for a user namespace (contend's default for runc)
  mkdir -p "$1/rootfs/usr" "$1/rootfs/etc" "$1/rootfs/proc" "$1/rootfs/dev"  # mount points: a user namespace's root cannot make them
  for l in bin sbin lib lib64; do ln -s "usr/$l" "$1/rootfs/$l"; done
  python3 - "$1/config.json" "$2" <<'PY'
import json, sys
path, userns = sys.argv[1], sys.argv[2] == "userns"
namespaces = [{"type": t} for t in ("pid", "network", "ipc", "uts", "mount", "cgroup")]
c = {"ociVersion": "1.0.2", "root": {"path": "rootfs"}, "hostname": "probe",
     "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/",
                 "args": ["/usr/bin/echo", "a container ran"], "env": ["PATH=/usr/bin:/bin"]},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
                {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]}],
     "linux": {"namespaces": namespaces}}
if userns:
    namespaces.append({"type": "user"})
    c["linux"]["uidMappings"] = c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 100000, "size": 65536}]
json.dump(c, open(path, "w"))
PY
}
bundle "$work/plain" plain
bundle "$work/userns" userns
chmod 755 "$work"
for rt in $(command -v runc) /var/lib/contend/runtimes/runc@*/runc; do
  [ -x "$rt" ] || continue
  for kind in plain userns; do
    name="contend-probe-$kind-$$"
    timeout 60 "$rt" --debug --root "$work/state" run -b "$work/$kind" "$name" </dev/null >"$work/out" 2>&1
    rc=$?
    echo "$rt ($("$rt" --version | head -1)), $kind: exit $rc"
    grep -E 'level=(fatal|error)|a container ran' "$work/out" | sed 's/^/  /'
    timeout 20 "$rt" --root "$work/state" delete -f "$name" >/dev/null 2>&1
  done
done
