#!/usr/bin/env bash
# Multi-rail benchmarks between two namespace hosts joined by rate-shaped veth links (one
# per rail, each shaped to the same rate); one rank per host unless --ppn says otherwise.
#
#   scripts/rails-bench.sh [p2p|allreduce] [--rate 200mbit] [--reps 5] [--iters 5]
#                          [--size 8M] [--ppn 1] [--spinners N] [--weft PATH]
#
# p2p (issue 5, the default): the one-way time of a 16 MiB message (ping-pong P50 of
# `weft bench p2p`) with WEFT_MAX_RAILS=1 and =2, interleaved; prints each run, the median
# bandwidth of each and the ratio (target: rails 2 / rails 1 >= 1.8).
#
# allreduce (issue 36): three links; the P50 of `weft bench coll --op allreduce` of --size
# bytes, each run one job, interleaved REPS times: on 1 rail ring, rabenseifner and
# recursive_doubling; on 2 and 3 rails the same three (the messages striped over the rails)
# and multi_rail (a ring per rail, its messages pinned to its rail). Prints each run, then
# per configuration the median and its speed-up over the best 1-rail median, and multi_rail
# against the best striped; with the load average before and after.
#
# --spinners N runs N busy loops (bench/spinners.sh) beside the jobs, stopped at the end.
#
# PATH defaults to $CARGO_TARGET_DIR/release/weft (or target/release/weft). Needs root
# (scripts/testhosts.sh exits 77 otherwise, and so does this script). The hosts are removed
# at the end. The rate must stay well below what the machine's CPUs can push through the
# veth links at once, or the CPU, not the links, is measured (on a loaded 2-core machine
# 1gbit per link is already CPU-bound).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=p2p
case "${1:-}" in
  p2p|allreduce) mode=$1; shift ;;
esac
rate=200mbit
reps=""
iters=""
size=8M
ppn=1
spinners=0
weft=${CARGO_TARGET_DIR:-$root/target}/release/weft
while (($#)); do
  case "$1" in
    --rate) rate=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --ppn) ppn=$2; shift 2 ;;
    --spinners) spinners=$2; shift 2 ;;
    --weft) weft=$2; shift 2 ;;
    *) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[ -x "$weft" ] || { echo "rails-bench.sh: $weft not built (cargo build --release -p weft-cli)" >&2; exit 2; }
hosts=(wrb0 wrb1)
links=2
[ "$mode" = allreduce ] && links=3
set +e
"$root/scripts/testhosts.sh" up --net 10.213.11 --rails "$links" --shape "tbf rate $rate burst 64kb latency 20ms" "${hosts[@]}" >/dev/null
rc=$?
set -e
[ $rc = 0 ] || exit $rc
# shellcheck source=bench/spinners.sh
. "$root/bench/spinners.sh"
trap 'stop_spinners; "$root/scripts/testhosts.sh" down --rails "$links" "${hosts[@]}"' EXIT
start_spinners "$spinners"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [ "$mode" = p2p ]; then
  reps=${reps:-3}
  iters=${iters:-3}
  # One run: prints MB/s of a 16 MiB one-way transfer.
  run() {
    WEFT_MAX_RAILS=$1 timeout 300 "$weft" bench p2p --hosts "${hosts[0]}:1,${hosts[1]}:1" \
      --launcher "ip netns exec {host}" --sizes 16M --test latency --iters "$iters" |
      awk '$1 == 16777216 { printf "%.1f\n", 16777216 / $2 }'
  }
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
  exit 0
fi

reps=${reps:-5}
iters=${iters:-5}
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# One run: prints the P50 in ms of an allreduce of $size bytes on $1 rails with algorithm $2.
run() {
  WEFT_MAX_RAILS=$1 timeout 600 "$weft" bench coll --op allreduce \
    --hosts "${hosts[0]}:$ppn,${hosts[1]}:$ppn" --launcher "ip netns exec {host}" \
    --sizes "$size" --iters "$iters" --algo "$2" --json |
    sed -n 's/.*"p50_us":\([0-9.e+]*\).*/\1/p' | awk '{ printf "%.1f\n", $1 / 1000 }'
}
striped=(ring rabenseifner recursive_doubling)
configs=()
for r in 1 2 3; do
  for a in "${striped[@]}"; do configs+=("$r $a"); done
  [ "$r" = 1 ] || configs+=("$r multi_rail")
done
declare -A times
for ((i = 1; i <= reps; i++)); do
  line="run $i:"
  for c in "${configs[@]}"; do
    set -- $c
    t=$(run "$1" "$2")
    [ -n "$t" ] || { echo "rails-bench.sh: the run of $2 on $1 rail(s) failed" >&2; exit 1; }
    times[$c]="${times[$c]:-} $t"
    line="$line $2@$1 ${t}ms"
  done
  echo "$line"
done
echo "allreduce of $size, $((2 * ppn)) ranks on 2 hosts, links shaped to $rate each, $spinners spinners; medians of $reps runs ($iters calls each); load average (1, 5, 15 min) before $load_before, after $(cut -d' ' -f1-3 /proc/loadavg):"
declare -A med
for c in "${configs[@]}"; do
  med[$c]=$(printf '%s\n' ${times[$c]} | median)
done
best() { for a in "${striped[@]}"; do echo "${med[$1 $a]}"; done | sort -g | head -1; }
best1=$(best 1)
printf '| rails | algorithm | median ms | vs best 1 rail |\n|---|---|---|---|\n'
for c in "${configs[@]}"; do
  set -- $c
  awk -v r="$1" -v a="$2" -v m="${med[$c]}" -v b="$best1" 'BEGIN { printf "| %s | %s | %.1f | %.2fx |\n", r, a, m, b / m }'
done
for r in 2 3; do
  s=$(best "$r")
  awk -v r="$r" -v m="${med[$r multi_rail]}" -v s="$s" 'BEGIN { printf "%s rails: multi_rail %.1f ms against the best striped %.1f ms: %.2fx\n", r, m, s, s / m }'
done
