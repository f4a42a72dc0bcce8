#!/usr/bin/env bash
# The same presets under two versions of contend, one run after another on this host (A/B/A), to show a change
# moved no figure (docs/results/archive.md, issue 20). BEFORE is the src/ directory of the other version, e.g. of
# `git worktree add ../before <commit>`; each STEP is tag:before|after:preset[:extra contend run options].
#   scripts/ab-versions.sh ../before/src ab q1:before:quick.yaml q2:after:quick.yaml q3:before:quick.yaml
# Then: .venv/bin/contend compare ab/q1 ab/q2
# Root runs BEFORE's code: it and OUT must be yours and writable by nobody else (a directory another user made
# first in /tmp would have root run their code), or the script refuses.
set -u
[ $# -ge 3 ] || { echo "usage: $0 BEFORE_SRC OUT_DIR tag:before|after:preset[:options] ..." >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
before=$1 out=$2; shift 2
[ -d "$before/contend" ] || { echo "$before: not a src/ directory of contend" >&2; exit 2; }
mkdir -p "$out"
for d in "$before" "$before/contend" "$out"; do
  if [ "$(stat -c %u "$d")" != "$(id -u)" ] || [ -n "$(find "$d" -maxdepth 0 -perm /022)" ]; then
    echo "$d: not yours alone (owner $(stat -c %U "$d"), mode $(stat -c %a "$d")): refused" >&2; exit 2
  fi
done
for step in "$@"; do
  IFS=: read -r tag code preset extra <<< "$step"
  case $code in before) src=$before ;; after) src=$here/src ;; *) echo "$step: before or after" >&2; exit 2 ;; esac
  t0=$(date +%s)
  # shellcheck disable=SC2086  # extra is a list of options
  PYTHONPATH=$src "$here/.venv/bin/contend" run "$here/presets/$preset" --out "$out/$tag" $extra > "$out/$tag.log" 2>&1
  echo "$tag $code $preset rc=$? $(( $(date +%s) - t0 ))s $(date -u +%H:%M)"
done
