#!/bin/sh
# Waiting under load: weft with sleeping waits off (WEFT_BLOCK=off: spin, then yield)
# against WEFT_BLOCK=auto, Open MPI and MPICH,
# quiet and with N busy processes beside the job, in one run: per repetition every
# (load, np) cell runs each library in turn (the order alternates between repetitions).
# Programs: bench/c/pingpong.c and bench/c/coll_lat.c (OSU-style P50s, us). Output: a table
# of medians over the repetitions with the ratios auto/off and auto/best peer, and raw TSV.
#
#   bench/wait_load.sh [--np "2 4"] [--reps 3] [--spinners 2] [--budget-ms 300]
#                      [--colls allreduce,alltoall,gather,barrier] [--timeout 90] [--out DIR]
#                      [--no-build] [--no-peers]
#
# weft is the release build of this checkout ($CARGO_TARGET_DIR or target/); Open MPI and
# MPICH are Debian's (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev); a
# missing one is skipped (--no-peers: weft only). Each run is bounded by --timeout seconds
# (90; a run that times out leaves its cells empty and is listed on stderr). The node's
# runnable tasks (/proc/loadavg) before each run are logged: on a shared machine the quiet
# cells are only as quiet as the other work on it.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
nps="2 4"
reps=3
spinners=2
budget_ms=300
run_timeout=90
colls=allreduce,alltoall,gather,barrier
build=yes
peers=yes
out=${TMPDIR:-/tmp}/weft-wait-load-$$
while [ $# -gt 0 ]; do
  case "$1" in
    --np) nps="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --spinners) spinners="$2"; shift 2 ;;
    --budget-ms) budget_ms="$2"; shift 2 ;;
    --colls) colls="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --timeout) run_timeout="$2"; shift 2 ;;
    --no-build) build=no; shift ;;
    --no-peers) peers=no; shift ;;
    *) echo "usage: $0 [--np \"2 4\"] [--reps N] [--spinners N] [--budget-ms MS] [--colls A,B] [--timeout S] [--out DIR] [--no-build] [--no-peers]" >&2; exit 2 ;;
  esac
done
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$out/bin" "$out/logs"
[ "$build" = no ] || (cd "$root" && cargo build --release -q -p weft-mpi -p weft-cli)
PROFILE=release sh "$root/crates/weft-mpi/install.sh" "$out/weft" "$target" >/dev/null
ncores=$(nproc)
libs="weft-off weft-auto"
build_prog() { # $1 name, $2 compiler
  for p in pingpong coll_lat; do $2 -O2 -o "$out/bin/$1-$p" "$root/bench/c/$p.c"; done
}
build_prog weft "$out/weft/bin/mpicc"
if [ "$peers" = yes ] && command -v mpicc.openmpi >/dev/null; then build_prog openmpi mpicc.openmpi; libs="$libs openmpi"; fi
if [ "$peers" = yes ] && command -v mpicc.mpich >/dev/null; then build_prog mpich mpicc.mpich; libs="$libs mpich"; fi
launch() { # $1 lib, $2 np
  case "$1" in
    weft-off) echo "env WEFT_BLOCK=off $out/weft/bin/mpiexec -n $2" ;;
    weft-auto) echo "env WEFT_BLOCK=auto $out/weft/bin/mpiexec -n $2" ;;
    openmpi)
      extra=""; [ "$2" -gt "$ncores" ] && extra="--oversubscribe --mca mpi_yield_when_idle 1"
      echo "mpirun.openmpi --allow-run-as-root -n $2 $extra" ;;
    mpich) echo "mpiexec.mpich -n $2" ;;
  esac
}
bin_of() { case "$1" in weft-*) echo weft ;; *) echo "$1" ;; esac; }
raw="$out/raw.tsv"
: > "$raw"
: > "$out/runnable.txt"
. "$root/bench/spinners.sh"
rep=1
while [ "$rep" -le "$reps" ]; do
  order=$libs
  [ $((rep % 2)) -eq 0 ] && order=$(echo "$libs" | tr ' ' '\n' | tac | tr '\n' ' ')
  for load in 0 "$spinners"; do
    start_spinners "$load"
    for np in $nps; do
      for lib in $order; do
        echo "rep $rep load $load np $np $lib (runnable now: $(cut -d' ' -f4 /proc/loadavg))" >&2
        echo "$load $(cut -d' ' -f4 /proc/loadavg | cut -d/ -f1)" >> "$out/runnable.txt"
        b=$(bin_of "$lib")
        log="$out/logs/$lib-l$load-np$np-r$rep"
        # shellcheck disable=SC2046 # launcher is a word list
        # The large size on its own: a run that times out loses only its cell.
        for pp in "8 64K" 1M; do
          # shellcheck disable=SC2046,SC2086 # launcher and sizes are word lists
          if timeout -k 5 "$run_timeout" $(launch "$lib" "$np") "$out/bin/$b-pingpong" -t $((budget_ms * 3)) $pp >"$log.pp" 2>"$log.pp.err" </dev/null; then
            awk -v l="$lib" -v ld="$load" -v np="$np" -v r="$rep" 'NR > 1 { print "pingpong\t" $1 "\t" np "\t" ld "\t" l "\t" r "\t" $2 }' "$log.pp" >> "$raw"
          else echo "  $lib pingpong $pp failed or timed out ($log.pp.err)" >&2; fi
        done
        if timeout -k 5 "$run_timeout" $(launch "$lib" "$np") "$out/bin/$b-coll_lat" -t "$budget_ms" -c "$colls" 8 1M >"$log.cl" 2>"$log.cl.err" </dev/null; then
          awk -v l="$lib" -v ld="$load" -v np="$np" -v r="$rep" 'NR > 1 { print $1 "\t" $2 "\t" np "\t" ld "\t" l "\t" r "\t" $3 }' "$log.cl" >> "$raw"
        else echo "  $lib coll_lat failed or timed out ($log.cl.err)" >&2; fi
      done
    done
    stop_spinners
  done
  rep=$((rep + 1))
done
# Medians per (bench, bytes, np, load, lib), then one row per cell.
sort -t"$(printf '\t')" -k1,1 -k2,2n -k3,3n -k4,4n -k5,5 "$raw" | awk -F'\t' -v libs="$libs" '
  function median(s,   n, a, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  { k = $1 "\t" $2 "\t" $3 "\t" $4; v[k, $5] = v[k, $5] " " $7; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k } }
  END {
    nl = split(libs, L, " ")
    printf "bench\tbytes\tnp\tspinners"; for (i = 1; i <= nl; i++) printf "\t%s", L[i]; print "\tauto/off\tauto/best peer"
    for (q = 1; q <= nk; q++) {
      k = keys[q]; printf "%s", k
      best = ""
      for (i = 1; i <= nl; i++) { m = ((k, L[i]) in v) ? median(v[k, L[i]]) : ""; med[i] = m; printf "\t%s", m
        if (L[i] !~ /^weft/ && m != "" && (best == "" || m + 0 < best + 0)) best = m }
      off = med[1]; au = med[2]
      printf "\t%s\t%s\n", (off + 0 > 0 && au != "") ? sprintf("%.2f", au / off) : "", (best + 0 > 0 && au != "") ? sprintf("%.2f", au / best) : ""
    }
  }' > "$out/table.tsv"
column -t -s"$(printf '\t')" "$out/table.tsv"
awk '{ n[$1]++; t[$1] += $2 } END { for (l in n) printf "spinners %s: %.1f runnable tasks on the node on average before a run (this job not started yet)\n", l, t[l] / n[l] }' "$out/runnable.txt" >&2
echo "raw: $raw; table: $out/table.tsv (us, medians of $reps repetitions)" >&2
