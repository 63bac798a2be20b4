#!/usr/bin/env bash
# Interleaved A/B of `weft bench coll` without and with a tuning file: allreduce and
# alltoall at 8 B, 64 KiB and 1 MiB, 2 and 4 ranks, ROUNDS rounds (each round runs every
# cell both ways, one after the other), SPINNERS busy loops beside it (bench/spinners.sh).
# Prints the median over rounds of the OSU p50 per cell and way, the algorithm each chose,
# and the ratio with the file / without it (below 1: the file is faster).
#
#   docs/tune/compare.sh FILE [ROUNDS] [SPINNERS]      (WEFT=path of weft; default
#                                                       target/release/weft)
set -euo pipefail
cd "$(dirname "$0")/../.."
file=${1:?usage: docs/tune/compare.sh FILE [ROUNDS] [SPINNERS]}
rounds=${2:-3}
spin=${3:-0}
weft=${WEFT:-target/release/weft}
. bench/spinners.sh
raw=$(mktemp)
trap 'stop_spinners; rm -f "$raw"' EXIT
start_spinners "$spin"
for r in $(seq 1 "$rounds"); do
  for op in allreduce alltoall; do
    for np in 2 4; do
      for way in without with; do
        if [ "$way" = with ]; then
          out=$(env WEFT_TUNING_FILE="$file" "$weft" bench coll --op "$op" -n "$np" --sizes 8,64K,1M --json)
        else
          out=$(env -u WEFT_TUNING_FILE "$weft" bench coll --op "$op" -n "$np" --sizes 8,64K,1M --json)
        fi
        printf '%s\n' "$out" | sed "s/^/$way $np /" >>"$raw"
      done
    done
  done
done
stop_spinners
python3 - "$raw" "$spin" <<'PY'
import json, statistics, sys
cells = {}
for line in open(sys.argv[1]):
    way, np, js = line.split(" ", 2)
    p = json.loads(js)
    c = cells.setdefault((p["op"], int(np), p["bytes"]), {"without": [], "with": [], "algo": {}})
    c[way].append(p["p50_us"])
    c["algo"][way] = p["algo"]
print(f"# {sys.argv[2]} spinners; median over rounds of the OSU p50 (us)")
print(f"{'op':<10} {'np':>3} {'bytes':>8} {'without':>10} {'algo':<20} {'with':>10} {'algo':<20} {'with/without':>12}")
for (op, np, b), c in sorted(cells.items()):
    a, w = statistics.median(c["without"]), statistics.median(c["with"])
    print(f"{op:<10} {np:>3} {b:>8} {a:>10.2f} {c['algo']['without']:<20} {w:>10.2f} {c['algo']['with']:<20} {w / a:>12.2f}")
PY
