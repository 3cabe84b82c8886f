#!/usr/bin/env bash
# trace-overhead: what tracing costs on write-lat (packet mode) and tcp-lat, in alternating runs of three
# variants of the same tool:
#   base  a build of BASE_REV, a commit without the trace points (dev.nupa.device.Trace)
#   off   this build, tracing not compiled in (the default)
#   on    this build with --trace 0.01 (compiled in, 1% of the round trips traced)
#
#   bench/trace-overhead.sh BASE_REV [RUNS]     (RUNS defaults to 5)
#
# It prints each run's p50 (ours, ns) and the tool's ratio to its floor or peer measured in the same run,
# then per variant the median and range over the runs, and the medians of off/base and on/off.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base_rev=${1:?usage: bench/trace-overhead.sh BASE_REV [RUNS]}
runs=${2:-5}
work=$(mktemp -d)
base="$work/base"
cleanup() {
  git -C "$root" worktree remove --force "$base" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
git -C "$root" worktree add --detach "$base" "$base_rev" >/dev/null
"$base/nupa" build
"$root/nupa" build
out="$work/runs.tsv"
for r in $(seq 1 "$runs"); do
  for tool in write-lat tcp-lat; do
    case $tool in
      write-lat) args=(perf write-lat --mode packet -n 200000 --json) ;;
      tcp-lat) args=(perf tcp-lat -n 100000 --json) ;;
    esac
    for variant in base off on; do
      case $variant in
        base) cmd=("$base/nupa" "${args[@]}") ;;
        off) cmd=("$root/nupa" "${args[@]}") ;;
        on) cmd=("$root/nupa" "${args[@]}" --trace 0.01) ;;
      esac
      line=$("${cmd[@]}" 2>/dev/null | tail -n 1)
      printf '%s\t%s\t%s\t%s\n' "$r" "$tool" "$variant" "$line" | tee -a "$out" | cut -c1-160
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    r, tool, variant, js = line.rstrip("\n").split("\t", 3)
    o = json.loads(js)
    rows.setdefault((tool, variant), []).append((o["p50_ns"], o["ratio"]))
for tool in ("write-lat", "tcp-lat"):
    med = {}
    for variant in ("base", "off", "on"):
        v = rows.get((tool, variant), [])
        p50 = [a for a, _ in v]
        ratio = [b for _, b in v]
        med[variant] = (statistics.median(p50), statistics.median(ratio))
        print(f"{tool} {variant:4}: p50 {med[variant][0]:.1f} ns ({min(p50):.1f}-{max(p50):.1f}), "
              f"ratio {med[variant][1]:.3f} ({min(ratio):.3f}-{max(ratio):.3f}), {len(v)} runs")
    print(f"{tool}: off/base p50 {med['off'][0] / med['base'][0]:.3f}, ratio {med['off'][1] / med['base'][1]:.3f};"
          f" on/off p50 {med['on'][0] / med['off'][0]:.3f}, ratio {med['on'][1] / med['off'][1]:.3f}")
PY
