#!/usr/bin/env bash
# Two-rail speed-up (issue 5): two namespace hosts joined by two veth links, each shaped to
# the same rate; one rank per host; the one-way time of a 16 MiB message (ping-pong P50 of
# `weft bench p2p`) with WEFT_MAX_RAILS=1 and =2, interleaved, REPS times. Prints each run,
# the median bandwidth of each and the ratio (target: rails 2 / rails 1 >= 1.8).
#
#   scripts/rails-bench.sh [--rate 200mbit] [--reps 3] [--iters 3] [--weft PATH]
#
# PATH defaults to $CARGO_TARGET_DIR/release/weft (or target/release/weft). Needs root
# (scripts/testhosts.sh exits 77 otherwise, and so does this script). The hosts are removed
# at the end. The rate must stay well below what the machine's CPUs can push through two
# veth links at once, or the CPU, not the links, is measured (on a loaded 2-core machine
# 1gbit per link is already CPU-bound).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rate=200mbit
reps=3
iters=3
weft=${CARGO_TARGET_DIR:-$root/target}/release/weft
while (($#)); do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --weft) weft=$2; shift 2 ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[ -x "$weft" ] || { echo "rails-bench.sh: $weft not built (cargo build --release -p weft-cli)" >&2; exit 2; }
hosts=(wrb0 wrb1)
set +e
"$root/scripts/testhosts.sh" up --net 10.213.11 --rails 2 --shape "tbf rate $rate burst 64kb latency 20ms" "${hosts[@]}" >/dev/null
rc=$?
set -e
[ $rc = 0 ] || exit $rc
trap '"$root/scripts/testhosts.sh" down "${hosts[@]}"' EXIT

# One run: prints MB/s of a 16 MiB one-way transfer.
run() {
  WEFT_MAX_RAILS=$1 timeout 300 "$weft" bench p2p --hosts "${hosts[0]}:1,${hosts[1]}:1" \
    --launcher "ip netns exec {host}" --sizes 16M --test latency --iters "$iters" |
    awk '$1 == 16777216 { printf "%.1f\n", 16777216 / $2 }'
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

one=() two=()
for ((i = 1; i <= reps; i++)); do
  a=$(run 1); b=$(run 2)
  [ -n "$a" ] && [ -n "$b" ] || { echo "rails-bench.sh: a run failed" >&2; exit 1; }
  echo "run $i: 1 rail $a MB/s, 2 rails $b MB/s (links shaped to $rate each)"
  one+=("$a"); two+=("$b")
done
m1=$(printf '%s\n' "${one[@]}" | median)
m2=$(printf '%s\n' "${two[@]}" | median)
awk -v a="$m1" -v b="$m2" -v r="$rate" 'BEGIN { printf "median: 1 rail %.1f MB/s, 2 rails %.1f MB/s, speed-up %.2fx (links %s each)\n", a, b, b / a, r }'
