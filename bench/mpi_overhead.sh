#!/bin/sh
# Cost of weft's MPI layer at small sizes: the one-way ping-pong latency of bench/c/pingpong.c
# on weft's libmpi against `weft bench p2p --test latency` (the same loop on the Rust API:
# blocking send then receive, the clock read once per round trip), run alternately REPS
# times in one go so both see the same machine. Prints each run's P50, the medians and the
# difference in ns (issue 4 asks for at most 30 ns at 8 B).
#
#   bench/mpi_overhead.sh [--reps 5] [--sizes "8"] [--iters 100000] [--out DIR] [--no-build]
#                         [--callgrind] [--base TARGET_DIR] [--multiple] [--spinners N]
#
# --multiple adds a side "mt": the same ping-pong initialised with
# MPI_Init_thread(MPI_THREAD_MULTIPLE) (pingpong -m) on the same build, interleaved with the
# others and compared with the "mpi" side (MPI_Init: MPI_THREAD_SINGLE): what thread safety
# costs a single-threaded program (the run stops if the level was not provided).
#
# --spinners N runs N busy processes (bench/spinners.sh: shell loops, not MPI) beside every
# run, so the ranks compete for the cores (default 0).
#
# --base TARGET_DIR adds a third side, "base": the same ping-pong on the libmpi and weft
# binary of another release build (for instance the session's starting commit, checked out
# with `git worktree add` and built there), interleaved with the other two, so a change to
# the MPI layer is measured against what it replaces in the same minutes (and under
# --callgrind, its instruction count too).
#
# --callgrind adds a measurement that does not depend on machine load: both sides run 22000
# round trips of 8 B under valgrind's callgrind, and the instructions each rank executes
# per round trip outside the engine's wait loop (whose spinning depends on timing) are
# compared: on the MPI side MPI_Send + MPI_Recv, on the Rust side Comm::send_ctx +
# Comm::recv_ctx, each minus Engine::wait. The difference is the MPI layer's work per round
# trip, split by function in OUT/callgrind-mpi.txt (callgrind_annotate of rank 0).
#
# weft is built with cargo build --release -p weft-mpi -p weft-cli into $CARGO_TARGET_DIR
# (or target/) unless --no-build. Both sides run 2 ranks through `weft run`, with the same
# iteration count (default 100000 round trips: at ~0.2 us each, 20 ms per run).
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
reps=5
sizes="8"
iters=100000
build=yes
callgrind=no
out=${TMPDIR:-/tmp}/weft-mpi-overhead-$$
base=
multiple=no
spinners=0
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-build) build=no; shift ;;
    --callgrind) callgrind=yes; shift ;;
    --base) base="$2"; shift 2 ;;
    --multiple) multiple=yes; shift ;;
    --spinners) spinners="$2"; shift 2 ;;
    *) echo "usage: $0 [--reps N] [--sizes \"8 1K\"] [--iters N] [--out DIR] [--no-build] [--callgrind] [--base TARGET_DIR] [--multiple] [--spinners N]" >&2; exit 2 ;;
  esac
done
for v in "$reps" "$iters"; do
  case "$v" in ''|*[!0-9]*|0) echo "$0: --reps/--iters: $v is not a positive integer" >&2; exit 2 ;; esac
done
case "$spinners" in ''|*[!0-9]*) echo "$0: --spinners $spinners: expected a count (0 or more)" >&2; exit 2 ;; esac
target=${CARGO_TARGET_DIR:-$root/target}
if [ "$build" = yes ]; then
  (cd "$root" && CARGO_TARGET_DIR="$target" cargo build --release -q -p weft-mpi -p weft-cli)
fi
mkdir -p "$out"
PROFILE=release sh "$root/crates/weft-mpi/install.sh" "$out/weft" "$target" >/dev/null
"$out/weft/bin/mpicc" -O2 -o "$out/pingpong" "$root/bench/c/pingpong.c"
weft="$out/weft/bin/weft"
sides="rust mpi"
if [ -n "$base" ]; then
  PROFILE=release sh "$root/crates/weft-mpi/install.sh" "$out/base" "$base" >/dev/null
  [ -x "$out/base/bin/weft" ] || { echo "$0: --base $base: no release weft binary there" >&2; exit 1; }
  "$out/base/bin/mpicc" -O2 -o "$out/pingpong-base" "$root/bench/c/pingpong.c"
  sides="rust mpi base"
fi
[ "$multiple" = yes ] && sides="$sides mt"
csv_sizes=$(echo "$sizes" | tr ' ' ',')
. "$root/bench/spinners.sh"
start_spinners "$spinners"
: > "$out/runs.tsv"
i=1
while [ "$i" -le "$reps" ]; do
  # Rotate which side goes first, so a drift in machine load does not favour one.
  set -- $sides
  k=$(( (i - 1) % $# ))
  while [ "$k" -gt 0 ]; do first=$1; shift; set -- "$@" "$first"; k=$((k - 1)); done
  for side in "$@"; do
    case "$side" in
      rust)
        "$weft" bench p2p -n 2 --test latency --sizes "$csv_sizes" --iters "$iters" |
          awk -v r="$i" '$1 ~ /^[0-9]+$/ { print "rust\t" $1 "\t" r "\t" $2 }' ;;
      mpi)
        "$out/weft/bin/mpiexec" -n 2 "$out/pingpong" -i "$iters" -t 600000 $sizes |
          awk -v r="$i" 'NR > 1 { print "mpi\t" $1 "\t" r "\t" $2 }' ;;
      base)
        "$out/base/bin/mpiexec" -n 2 "$out/pingpong-base" -i "$iters" -t 600000 $sizes |
          awk -v r="$i" 'NR > 1 { print "base\t" $1 "\t" r "\t" $2 }' ;;
      mt)
        "$out/weft/bin/mpiexec" -n 2 "$out/pingpong" -m -i "$iters" -t 600000 $sizes |
          awk -v r="$i" '/^# thread level provided:/ && !/ multiple$/ { print "mt side: MPI_THREAD_MULTIPLE not provided" > "/dev/stderr"; exit 1 }
            $1 ~ /^[0-9]+$/ { print "mt\t" $1 "\t" r "\t" $2 }' ;;
    esac
  done >> "$out/runs.tsv"
  i=$((i + 1))
done
stop_spinners
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg); $reps runs each, $iters round trips per run, $spinners spinners"
awk -F'\t' -v with_base="${base:+yes}" -v with_mt="$multiple" '
  { v[$2, $1] = v[$2, $1] " " $4; if (!($2 in seen)) { seen[$2] = 1; order[++n] = $2 } }
  function median(list,   a, k, i, j, t) {
    k = split(list, a, " ")
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
    return a[int((k + 1) / 2)]
  }
  END {
    printf "%8s  %-40s %-40s %9s %9s %8s\n", "bytes", "Rust API P50 per run (us)", "MPI P50 per run (us)", "Rust med", "MPI med", "MPI-Rust"
    for (i = 1; i <= n; i++) {
      s = order[i]; r = median(v[s, "rust"]); m = median(v[s, "mpi"])
      printf "%8s  %-40s %-40s %9.3f %9.3f %6.0f ns\n", s, v[s, "rust"], v[s, "mpi"], r, m, (m - r) * 1000
    }
    if (with_mt == "yes") {
      printf "\n%8s  %-40s %9s %9s %8s %8s\n", "bytes", "MULTIPLE P50 per run (us)", "SINGLE med", "MULT med", "MULT/SNG", "MULT-SNG"
      for (i = 1; i <= n; i++) {
        s = order[i]; m = median(v[s, "mpi"]); t = median(v[s, "mt"])
        printf "%8s  %-40s %9.3f %9.3f %8.3f %6.0f ns\n", s, v[s, "mt"], m, t, t / m, (t - m) * 1000
      }
    }
    if (with_base != "yes") exit
    printf "\n%8s  %-40s %9s %9s %8s %9s\n", "bytes", "base MPI P50 per run (us)", "base med", "MPI med", "MPI/base", "base-Rust"
    for (i = 1; i <= n; i++) {
      s = order[i]; r = median(v[s, "rust"]); m = median(v[s, "mpi"]); b = median(v[s, "base"])
      printf "%8s  %-40s %9.3f %9.3f %8.3f %6.0f ns\n", s, v[s, "base"], b, m, m / b, (b - r) * 1000
    }
  }' "$out/runs.tsv"

[ "$callgrind" = yes ] || exit 0
command -v valgrind >/dev/null || { echo "$0: --callgrind needs valgrind (apt-get install valgrind)" >&2; exit 1; }
# Instructions of the function named $2 in callgrind file $1, inclusive of its callees; with
# $3, only those of its callee $3 (called from $2). Names are matched whole after the
# "path:" callgrind_annotate puts in front of them.
cost() {
  callgrind_annotate --inclusive=yes --tree=calling --threshold=100 "$1" 2>/dev/null |
    awk -v caller="$2" -v callee="$3" '
      function named(line, f,   k) {
        sub(/ \([0-9,]+x\)/, "", line); sub(/ \[[^]]*\]$/, "", line)
        k = length(line) - length(f)
        return k > 1 && substr(line, k + 1) == f && substr(line, k, 1) == ":" && substr(line, k - 1, 1) != ":"
      }
      /^ *[0-9,]+ \([ 0-9.]+%\)  \*  / { inside = named($0, caller)
        if (inside && callee == "") { gsub(/,/, "", $1); print $1; exit } ; next }
      /^$/ { inside = 0 }
      inside && /^ *[0-9,]+ \([ 0-9.]+%\)  >  / && named($0, callee) { gsub(/,/, "", $1); print $1; exit }'
}
rm -f "$out"/cg.*
trips=22000 # 20000 timed round trips and 2000 warm-up ones on both sides
"$weft" run -n 2 valgrind -q --tool=callgrind --callgrind-out-file="$out/cg.mpi.%p" \
  "$out/pingpong" -i 20000 -t 600000 8 >/dev/null
"$weft" run -n 2 valgrind -q --tool=callgrind --callgrind-out-file="$out/cg.rust.%p" \
  "$weft" __bench-rank p2p --test latency --sizes 8 --iters 20000 >/dev/null
if [ -n "$base" ]; then
  "$out/base/bin/weft" run -n 2 valgrind -q --tool=callgrind \
    --callgrind-out-file="$out/cg.base.%p" "$out/pingpong-base" -i 20000 -t 600000 8 >/dev/null
  "$out/base/bin/weft" run -n 2 valgrind -q --tool=callgrind \
    --callgrind-out-file="$out/cg.baserust.%p" \
    "$out/base/bin/weft" __bench-rank p2p --test latency --sizes 8 --iters 20000 >/dev/null
fi
# MPI_Send + MPI_Recv minus the engine's wait loop, summed over the ranks' files $1.*. A
# blocking receive waits in weft::p2p::finish_status (weft::raw::RawRequest::wait before
# session 4); functions a build does not have count 0.
mpi_total() {
  t=0
  for f in "$1".*; do
    s=$(cost "$f" MPI_Send); r=$(cost "$f" MPI_Recv)
    w1=$(cost "$f" weft::raw::RawRequest::wait weft::engine::Engine::wait)
    w2=$(cost "$f" weft::p2p::finish_status weft::engine::Engine::wait)
    t=$((t + ${s:-0} + ${r:-0} - ${w1:-0} - ${w2:-0}))
  done
  echo "$t"
}
total_mpi=$(mpi_total "$out/cg.mpi")
# Comm::send_ctx + Comm::recv_ctx minus the engine's wait loop, summed over $1.*.
rust_total() {
  t=0
  for f in "$1".*; do
    s=$(cost "$f" "weft::p2p::<impl weft::comm::Comm>::send_ctx")
    r=$(cost "$f" "weft::p2p::<impl weft::comm::Comm>::recv_ctx")
    w=$(cost "$f" weft::p2p::finish weft::engine::Engine::wait)
    t=$((t + ${s:-0} + ${r:-0} - ${w:-0}))
  done
  echo "$t"
}
total_rust=$(rust_total "$out/cg.rust")
first=$(ls "$out"/cg.mpi.* | head -1)
callgrind_annotate --inclusive=no --threshold=100 "$first" > "$out/callgrind-mpi.txt" 2>/dev/null
echo "instructions per round trip and rank outside Engine::wait (callgrind, 8 B, $trips round trips):"
echo "  MPI (MPI_Send + MPI_Recv):        $((total_mpi / trips / 2))"
echo "  Rust API (send_ctx + recv_ctx):   $((total_rust / trips / 2))"
echo "  MPI layer:                        $(((total_mpi - total_rust) / trips / 2))"
if [ -n "$base" ]; then
  total_base=$(mpi_total "$out/cg.base")
  total_base_rust=$(rust_total "$out/cg.baserust")
  echo "  base MPI (MPI_Send + MPI_Recv):   $((total_base / trips / 2))"
  echo "  base Rust API:                    $((total_base_rust / trips / 2))"
  echo "  base MPI layer:                   $(((total_base - total_base_rust) / trips / 2))"
fi
echo "per function: $out/callgrind-mpi.txt"
