#!/usr/bin/env bash
# The README's figures, made anew (root; about 60 minutes): six studies, then one figure of each kind
# copied to docs/figures/. A study already in RESULTS_DIR is not run again, only its report rebuilt.
# Usage: scripts/readme-figures.sh [RESULTS_DIR]   (default results/readme)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-results/readme}
C=.venv/bin/contend
study() {  # study NAME ARGS...: run it, or (already there) rebuild its report with this code
  local dir="$OUT/$1"; shift
  if [ -e "$dir/contend.duckdb" ]; then $C report "$dir" >/dev/null; else $C run "$@" --out "$dir"; fi
}
study quick presets/quick.yaml --repetitions 3
study volpert presets/volpert-icpe24.yaml --quick
study guard presets/aridac-workloads.yaml --quick
study copts presets/copts-middleware23.yaml --quick
study diskfill presets/wisa25-diskfill.yaml   # the full preset (10 min): its 3 repetitions
study oltp presets/xavier-pdp15-oltp.yaml --quick
F=docs/figures
cp "$OUT/volpert/figures/heatmap-host.png" $F/heatmap.png
cp "$OUT/quick/figures/isolation-runc-escape-cpu-host.png" $F/isolation-graph.png
cp "$OUT/quick/figures/timeline-runc.escape.cpu.r1.png" $F/timeline.png
cp "$OUT/guard/figures/victim-workload1.png" $F/guard-victim.png
cp "$OUT/guard/figures/timeline-workload1.contend.r1.png" $F/guard-timeline.png
cp "$OUT/copts/figures/scaling-stream.png" $F/scaling.png
cp "$OUT/diskfill/figures/diskfill-bars.png" $F/diskfill.png
cp "$OUT/oltp/figures/timeline-runc.postgresql.r1.png" $F/oltp-timeline.png
echo "figures from $OUT written to $F"
