#!/bin/sh
# Every collective of `weft bench coll` at the sizes issue 3 names, against the peers' OSU
# 7.4 figures in bench/peers-osu.md (or --peers FILE), with the statistic both use
# (P50 over calls of the mean over ranks): ROUNDS rounds of each point, their median, the
# better peer and the ratio; a point slower than the better peer is marked MISS.
#
#   bench/coll_sweep.sh [--weft BIN] [--rounds 3] [--np "2 4"] [--ops a,b,...]
#                       [--sizes 8,64K,1M,4M] [--peers FILE.md] [--out FILE.jsonl]
#
# The raw points (one JSON object per line with np and round added) go to --out (default a
# temporary file, whose name is printed); bench/peers_table.py prints the table again from
# it. Run it on a quiet machine: other programs' load moves the small sizes by 2-10x.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
weft=${WEFT:-$root/target/release/weft}
rounds=3
nps="2 4"
ops="barrier,bcast,reduce,allreduce,gather,scatter,allgather,alltoall,reduce_scatter"
sizes="8,64K,1M,4M"
peers=$root/bench/peers-osu.md
out=
while [ $# -gt 0 ]; do
  case "$1" in
    --weft) weft="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --np) nps="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --peers) peers="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--weft BIN] [--rounds N] [--np \"2 4\"] [--ops a,b] [--sizes 8,64K] [--peers FILE] [--out FILE]" >&2; exit 2 ;;
  esac
done
case "$rounds" in ''|*[!0-9]*|0) echo "$0: --rounds $rounds: not a positive integer" >&2; exit 2 ;; esac
[ -x "$weft" ] || { echo "$0: $weft is not an executable weft binary (--weft)" >&2; exit 2; }
[ -r "$peers" ] || { echo "$0: cannot read the peers' figures $peers (--peers)" >&2; exit 2; }
[ -n "$out" ] || out=$(mktemp "${TMPDIR:-/tmp}/weft-coll-sweep-XXXXXX.jsonl")
: > "$out"
for r in $(seq 1 "$rounds"); do
  for np in $nps; do
    for op in $(echo "$ops" | tr , ' '); do
      s=$sizes; [ "$op" = barrier ] && s=0
      "$weft" bench coll --op "$op" -n "$np" --sizes "$s" --json |
        sed "s/^/{\"np\":$np,\"round\":$r,\"point\":/; s/\$/}/" >> "$out"
    done
  done
done
echo "# raw points: $out"
python3 "$root/bench/peers_table.py" "$out" "$peers"
