#!/bin/sh
# Side-by-side benchmark of weft's MPI against other MPI libraries on this machine, in one
# run: the programs of bench/c/ (standard MPI only: pingpong, bandwidth, coll_lat, rma) are built
# against each library and run at each process count, REPS times with the libraries
# interleaved (so slow drifts of a busy machine hit them all alike). Output: one table per
# benchmark with each library's P50 (median over the repetitions of each run's P50) and the
# ratio weft / best peer; the same tables in Markdown; raw and summary TSV; PNG plots.
#
#   bench/compare.sh [--np "2 4"] [--reps 3] [--libs "weft openmpi mpich4 mpich5-abi"]
#                    [--colls NAME,NAME] [--sizes "8 64K 1M"] [--pp-sizes "8 1K 64K 1M"]
#                    [--bw-sizes "8 64K 1M 4M"] [--rma-sizes "8 1M"]
#                    [--progs "pingpong bandwidth coll_lat rma"] [--spinners N]
#                    [--budget-ms 400] [--stat p50|span|max] [--timeout 900] [--out DIR]
#                    [--mode-retries 2] [--install] [--no-build] [--no-plot]
#   bench/compare.sh --retable DIR [--stat span|max] [--no-plot]   (tables and plots again from
#                    DIR/results.tsv of an earlier run, e.g. with the other statistic)
#
# Libraries (a missing one is listed and skipped; --install installs it first):
#   weft        built here (cargo build --release -p weft-mpi -p weft-cli into
#               $CARGO_TARGET_DIR or target/, unless --no-build) and installed into OUT/weft
#               by crates/weft-mpi/install.sh
#   openmpi     Debian's Open MPI (mpicc.openmpi, mpirun.openmpi; apt-get install
#               openmpi-bin libopenmpi-dev)
#   mpich4      Debian's MPICH 4 (mpicc.mpich, mpiexec.mpich; apt-get install mpich
#               libmpich-dev). Its rma runs fail their checks: MPICH 4.0.2's ch4:ucx with
#               UCX 1.13 loses puts and accumulates into an 8-byte MPI_Win_allocate window
#               (64 bytes and more work), a bug fixed in later MPICH; mpich5-abi is the MPICH
#               column for rma
#   mpich5-abi  PyPI's MPICH 5 on the MPI 5.0 standard ABI (mpicc_abi and the mpiexec.hydra
#               next to it; pip install mpich)
# Oversubscription (more ranks than cores): weft yields by itself; Open MPI gets
# --oversubscribe --mca mpi_yield_when_idle 1; MPICH (ch4:ucx) has no working yield setting
# and busy-polls (milliseconds per collective), which the time budget per point keeps
# bounded (--budget-ms for coll_lat, five times that for pingpong). Every run is also bounded by --timeout seconds; a run that
# fails, times out or reports wrong results is listed and leaves its cells empty.
#
# Collectives have three statistics (bench/c/coll_lat.c, OSU 7.4's loop: a barrier after each
# call, the records combined after the loop): p50, OSU's P50 (median over calls of the mean
# over ranks of the time in the call; the default), max (--stat max: the median over calls of
# the maximum over ranks) and span (--stat span: the median of last exit - first entry on the
# node's clock, which does not reward a barrier that releases the root first). results.tsv
# keeps all three (columns 6, 7 and 8: p50, span, max).
#
# The host's speed: some machines (the development VM) have a mode in which every transfer
# between cores takes several times as long, for seconds to minutes at a time, which makes
# a library measured in it look slower than one measured outside it. bench/c/hostprobe.c
# (two threads passing a cache line, no MPI) runs before and after each program run; a run
# whose two probes differ by more than 2x (the mode changed during it) is run again, up
# to --mode-retries times. results.tsv keeps both probes (columns 9 and 10, ns); a run
# whose probes exceed 2x the run's fastest probe was measured in the slow mode and is left
# out of a cell's median whenever the cell has a run in the fast mode. compare.md lists the
# probes of every repetition and how many runs each library had in each mode.
#
# One-sided (bench/c/rma.c, rank 0 to rank 1 on an MPI_Win_allocate window): put and get of
# each --rma-sizes size with fence and with lock/flush (sizes above 8 KiB as bandwidth rows,
# rma_*_bw), accumulate and fetch-and-op of one long, each with fence and with lock/flush.
#
# --spinners N runs N busy processes (a shell loop each, not MPI) for the whole measurement,
# so that the libraries are compared on cores they share with other work (they are stopped
# at the end, also on interruption). They are paused (SIGSTOP) while the host speed probe
# runs: beside them its two threads seldom run at once (probes of 5-18 us against 50-60 ns)
# and the load the script made itself would be taken for the host's slow mode, leaving out
# most runs of every library.
#
# For the ratio, "best peer" is the fastest library other than weft. Bandwidth is shown in
# MB/s, and its ratio is one of times too (best peer's MB/s / weft's MB/s), so everywhere a
# ratio <= 1.0 means weft is at least as fast as every peer.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
nps="2 4"
reps=3
want_libs="weft openmpi mpich4 mpich5-abi"
colls=""
sizes="8 64K 1M"
pp_sizes="8 1K 64K 1M"
bw_sizes="8 64K 1M 4M"
rma_sizes="8 1M"
progs="pingpong bandwidth coll_lat rma"
spinners=0
budget_ms=400
stat=p50
run_timeout=900
mode_retries=2
install=no
build=yes
plot=yes
retable=no
out=${TMPDIR:-/tmp}/weft-compare-$$
usage="usage: $0 [--np \"2 4\"] [--reps N] [--libs \"weft openmpi mpich4 mpich5-abi\"] [--colls A,B] [--sizes \"8 64K 1M\"] [--pp-sizes \"8 1K 64K 1M\"] [--bw-sizes \"8 64K 1M 4M\"] [--rma-sizes \"8 1M\"] [--progs \"pingpong bandwidth coll_lat rma\"] [--spinners N] [--budget-ms MS] [--stat p50|span|max] [--timeout S] [--out DIR] [--mode-retries N] [--install] [--no-build] [--no-plot] | --retable DIR [--stat span|max]"
need() { [ $# -ge 2 ] || { echo "$0: $1 needs a value" >&2; echo "$usage" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --np) need "$@"; nps="$2"; shift 2 ;;
    --reps) need "$@"; reps="$2"; shift 2 ;;
    --libs) need "$@"; want_libs="$2"; shift 2 ;;
    --colls) need "$@"; colls="$2"; shift 2 ;;
    --sizes) need "$@"; sizes="$2"; shift 2 ;;
    --bw-sizes) need "$@"; bw_sizes="$2"; shift 2 ;;
    --pp-sizes) need "$@"; pp_sizes="$2"; shift 2 ;;
    --rma-sizes) need "$@"; rma_sizes="$2"; shift 2 ;;
    --progs) need "$@"; progs="$2"; shift 2 ;;
    --spinners) need "$@"; spinners="$2"; shift 2 ;;
    --budget-ms) need "$@"; budget_ms="$2"; shift 2 ;;
    --stat) need "$@"; stat="$2"; shift 2 ;;
    --timeout) need "$@"; run_timeout="$2"; shift 2 ;;
    --mode-retries) need "$@"; mode_retries="$2"; shift 2 ;;
    --out) need "$@"; out="$2"; shift 2 ;;
    --retable) need "$@"; out="$2"; retable=yes; shift 2 ;;
    --install) install=yes; shift ;;
    --no-build) build=no; shift ;;
    --no-plot) plot=no; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$0: unknown argument $1" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
is_count() { case "$1" in ''|*[!0-9]*) return 1 ;; *) [ "$1" -gt 0 ] ;; esac; }
for v in "reps=$reps" "budget-ms=$budget_ms" "timeout=$run_timeout"; do
  is_count "${v#*=}" || { echo "$0: --${v%%=*} ${v#*=}: expected a positive integer" >&2; exit 2; }
done
case "$mode_retries" in ''|*[!0-9]*) echo "$0: --mode-retries $mode_retries: expected a count (0 or more)" >&2; exit 2 ;; esac
case "$spinners" in ''|*[!0-9]*) echo "$0: --spinners $spinners: expected a count (0 or more)" >&2; exit 2 ;; esac
[ -n "$progs" ] || { echo "$0: --progs: no program" >&2; exit 2; }
for p in $progs; do
  case "$p" in pingpong|bandwidth|coll_lat|rma) ;; *) echo "$0: --progs: unknown program $p (pingpong bandwidth coll_lat rma)" >&2; exit 2 ;; esac
done
for np in $nps; do
  { is_count "$np" && [ "$np" -ge 2 ]; } || { echo "$0: --np: $np is not a process count >= 2" >&2; exit 2; }
done
for l in $want_libs; do
  case "$l" in weft|openmpi|mpich4|mpich5-abi) ;; *) echo "$0: --libs: unknown library $l (weft openmpi mpich4 mpich5-abi)" >&2; exit 2 ;; esac
done
case "$stat" in p50|span|max) ;; *) echo "$0: --stat $stat: expected p50, span or max" >&2; exit 2 ;; esac
case " $want_libs " in *" weft "*) ;; *) echo "$0: --libs must include weft (the ratios are weft / best peer)" >&2; exit 2 ;; esac
if [ "$retable" = yes ] && [ ! -s "$out/results.tsv" ]; then
  echo "$0: --retable $out: no results.tsv there" >&2
  exit 2
fi
mkdir -p "$out/bin" "$out/logs"
out=$(cd "$out" && pwd)
ncores=$(nproc)
wants() { case " $want_libs " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
target=${CARGO_TARGET_DIR:-$root/target}
results="$out/results.tsv"
failures="$out/failures.txt"

if [ "$retable" = yes ]; then
  # The libraries of the earlier run, weft first.
  built="weft $(cut -f4 "$results" | awk '$1 != "weft" && !seen[$1]++' | tr '\n' ' ')"
  # And its repetitions and process counts, for the header.
  reps=$(awk -F'\t' '$5 + 0 > m { m = $5 + 0 } END { print m }' "$results")
  nps=$(cut -f3 "$results" | awk '!seen[$1]++' | tr '\n' ' ' | sed 's/ $//')
else
# ---- build and measure (not indented: most of the script) ----
if [ "$install" = yes ]; then
  if wants mpich5-abi && ! command -v mpicc_abi >/dev/null; then pip install mpich; fi
  missing=""
  wants openmpi && ! command -v mpicc.openmpi >/dev/null && missing="$missing openmpi-bin libopenmpi-dev"
  wants mpich4 && ! command -v mpicc.mpich >/dev/null && missing="$missing mpich libmpich-dev"
  if [ -n "$missing" ]; then
    # shellcheck disable=SC2086 # one word per package
    { apt-get update && apt-get install -y $missing; }
  fi
fi

if [ "$build" = yes ]; then
  echo "building weft (release) into $target" >&2
  (cd "$root" && CARGO_TARGET_DIR="$target" cargo build --release -q -p weft-mpi -p weft-cli)
fi
[ -f "$target/release/libmpi_abi.so" ] ||
  { echo "$0: $target/release/libmpi_abi.so missing (cargo build --release -p weft-mpi -p weft-cli)" >&2; exit 1; }
PROFILE=release sh "$root/crates/weft-mpi/install.sh" "$out/weft" "$target" >/dev/null

# One line per library: name|compiler|launcher (the launcher line gets "-n NP" and, when
# oversubscribed, the library's own flags; see launch below).
libs="weft|$out/weft/bin/mpicc|$out/weft/bin/mpiexec"
skipped=""
if wants openmpi; then
  if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
    libs="$libs
openmpi|mpicc.openmpi|mpirun.openmpi --allow-run-as-root"
  else skipped="$skipped openmpi(apt-get install openmpi-bin libopenmpi-dev)"; fi
fi
if wants mpich4; then
  if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
    libs="$libs
mpich4|mpicc.mpich|mpiexec.mpich"
  else skipped="$skipped mpich4(apt-get install mpich libmpich-dev)"; fi
fi
if wants mpich5-abi; then
  abi_inc=""
  command -v mpicc_abi >/dev/null && abi_inc=$(mpicc_abi -show | tr ' ' '\n' | sed -n 's/^-I//p' | head -1)
  if [ -n "$abi_inc" ] && [ -x "$(dirname "$abi_inc")/bin/mpiexec.hydra" ]; then
    libs="$libs
mpich5-abi|mpicc_abi|$(dirname "$abi_inc")/bin/mpiexec.hydra"
  else skipped="$skipped mpich5-abi(pip install mpich)"; fi
fi
[ -n "$skipped" ] && echo "skipped (not installed; --install installs them):$skipped" >&2

# The launch command of library $1 at $2 ranks.
launch() {
  cmd=$(echo "$libs" | awk -F'|' -v l="$1" '$1 == l { print $3 }')
  extra=""
  if [ "$2" -gt "$ncores" ]; then
    case "$1" in
      openmpi) extra="--oversubscribe --mca mpi_yield_when_idle 1" ;;
      weft) extra="--oversubscribe" ;;
    esac
  fi
  echo "$cmd -n $2 $extra"
}

built=""
for line in $(echo "$libs" | tr ' ' '@'); do
  name=$(echo "$line" | cut -d'|' -f1)
  cc=$(echo "$line" | cut -d'|' -f2 | tr '@' ' ')
  ok=yes
  for prog in $progs; do
    # shellcheck disable=SC2086 # cc may carry arguments
    $cc -O2 -o "$out/bin/$name-$prog" "$root/bench/c/$prog.c" 2>"$out/logs/build-$name-$prog.log" ||
      { ok=no; echo "$name: building $prog failed, see $out/logs/build-$name-$prog.log" >&2; }
  done
  [ "$ok" = yes ] && built="$built $name"
done
case " $built " in *" weft "*) ;; *) echo "$0: weft's programs did not build" >&2; exit 1 ;; esac
probe_bin="$out/bin/hostprobe"
if ! { cc -O2 -pthread -o "$probe_bin" "$root/bench/c/hostprobe.c" 2>"$out/logs/build-hostprobe.log" &&
  "$probe_bin" >/dev/null 2>>"$out/logs/build-hostprobe.log"; }; then
  echo "no host speed probes (see $out/logs/build-hostprobe.log): runs in the host's slow mode are not told apart" >&2
  probe_bin=""
fi
echo "libraries:$built; np: $nps; reps: $reps; cores: $ncores; output: $out" >&2

coll_args="-t $budget_ms"
[ -n "$colls" ] && coll_args="$coll_args -c $colls"
: > "$results"
: > "$failures"
pp_args="-t $((budget_ms * 5)) $pp_sizes"
# One run: $1 library, $2 np, $3 program, $4 rep, $5 program arguments. Prints
# "bench bytes np lib rep value [span max]" lines; a failed run goes to failures.txt instead.
run_one() {
  log="$out/logs/$1-np$2-$3-rep$4"
  # shellcheck disable=SC2086 # launcher and arguments are word lists
  if timeout -k 10 "$run_timeout" $(launch "$1" "$2") "$out/bin/$1-$3" $5 >"$log.out" 2>"$log.err" </dev/null; then
    case "$3" in
      pingpong) awk -v np="$2" -v l="$1" -v r="$4" 'NR > 1 { print "pingpong\t" $1 "\t" np "\t" l "\t" r "\t" $2 }' "$log.out" ;;
      bandwidth) awk -v np="$2" -v l="$1" -v r="$4" 'NR > 1 { print "bandwidth\t" $1 "\t" np "\t" l "\t" r "\t" $2 }' "$log.out" ;;
      coll_lat) awk -v np="$2" -v l="$1" -v r="$4" 'NR > 1 { print $1 "\t" $2 "\t" np "\t" l "\t" r "\t" $3 "\t" $6 "\t" $7 }' "$log.out" ;;
      rma) awk -v np="$2" -v l="$1" -v r="$4" 'NR > 1 { print $1 "\t" $2 "\t" np "\t" l "\t" r "\t" $3 }' "$log.out" ;;
    esac
  else
    rc=$?
    echo "$1 np=$2 $3 rep $4: exit $rc$( [ "$rc" -eq 124 ] && echo " (timed out after ${run_timeout}s)"); see $log.err" | tee -a "$failures" >&2
  fi
}
# The host's speed now (hostprobe's round trip, ns), or nothing without the probe.
# Our own spinners are paused meanwhile (see --spinners above).
probe() {
  [ -n "$probe_bin" ] || return 0
  pause_spinners
  "$probe_bin" 2>/dev/null || true
  resume_spinners
}
# Whether two probes differ by more than 2x (the fast mode alone spans 70-107 ns here, the
# slow one about 400).
changed() { [ -n "$1" ] && [ -n "$2" ] && awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > 2 * b || b > 2 * a) }'; }
# run_one between two probes, again while the host changed speed during it (at most
# --mode-retries times); appends its lines to results.tsv with the probes as columns 9, 10.
run_probed() {
  tries=0
  while :; do
    before=$(probe)
    lines=$(run_one "$@")
    after=$(probe)
    if changed "$before" "$after" && [ "$tries" -lt "$mode_retries" ]; then
      tries=$((tries + 1))
      echo "  the host changed speed during $1 np=$2 $3 (probe $before -> $after ns): again" >&2
      continue
    fi
    [ -z "$lines" ] || printf '%s\n' "$lines" |
      awk -F'\t' -v OFS='\t' -v a="$before" -v b="$after" '{ while (NF < 8) $(NF + 1) = ""; print $0, a, b }' >> "$results"
    return 0
  done
}
. "$root/bench/spinners.sh"
start_spinners "$spinners"
[ "$spinners" -eq 0 ] || echo "spinners (busy loops) running:$spinner_pids" >&2
t_start=$(date +%s)
rep=1
while [ "$rep" -le "$reps" ]; do
  for np in $nps; do
    for name in $built; do
      echo "rep $rep/$reps np=$np $name ($(($(date +%s) - t_start)) s)" >&2
      # shellcheck disable=SC2086 # size lists are word lists
      for prog in $progs; do
        case "$prog" in
          pingpong) run_probed "$name" "$np" pingpong "$rep" "$pp_args" ;;
          bandwidth) run_probed "$name" "$np" bandwidth "$rep" "$bw_sizes" ;;
          coll_lat) run_probed "$name" "$np" coll_lat "$rep" "$coll_args $sizes" ;;
          rma) run_probed "$name" "$np" rma "$rep" "-t $budget_ms $rma_sizes" ;;
        esac
      done
    done
  done
  rep=$((rep + 1))
done
stop_spinners
fi

# Median over repetitions per (bench, bytes, np, lib), then one table per benchmark: rows
# (np, bytes), a column per library, weft / best peer. The same tables go to compare.md.
summary="$out/summary.tsv"
# Results of coll_lat before session 6 have no max column, and their column 6 was the maximum.
if [ "$stat" != p50 ]; then
  col=7; [ "$stat" = max ] && col=8
  if awk -F'\t' -v c="$col" '$1 !~ /^(pingpong|bandwidth|rma_.*)$/ && $c == "" { f = 1 } END { exit !f }' "$results"; then
    echo "$0: --stat $stat: $results has collective rows without that column (written before session 6, when column 6 was another statistic too)" >&2
    exit 2
  fi
fi
# A run is in the slow mode when a probe of it (columns 9, 10) exceeds twice the fastest
# run's larger probe ($fastest_probe, ns; empty when no row has probes); a cell's median
# takes only its fast runs when it has any (rows without probes, from before session 16,
# count as fast). Ping-pong, bandwidth and the rma_ rows have one statistic (column 6).
fastest_probe=$(awk -F'\t' '$9 != "" && $10 != "" { w = ($9 + 0 > $10 + 0 ? $9 : $10) + 0; if (best == "" || w < best) best = w } END { print best }' "$results")
# The awk function of a row's mode, for the programs below that need it.
fast_fn='function fast() { return $9 == "" || $10 == "" || ($9 + 0 > $10 + 0 ? $9 : $10) + 0 <= 2 * limit }'
awk -F'\t' -v OFS='\t' -v stat="$stat" -v limit="$fastest_probe" "$fast_fn"'
  { if (!($1 in bench)) bench[$1] = ++nb
    key = $1 OFS $2 OFS $3 OFS $4
    if (!(key in n)) { order[++k] = key; n[key] = 0; nf[key] = 0 }
    x = ($1 ~ /^(pingpong|bandwidth|rma_.*)$/ ? $6 : stat == "span" ? $7 : stat == "max" ? $8 : $6) + 0
    v[key, ++n[key]] = x
    if (fast()) vf[key, ++nf[key]] = x }
  END {
    for (i = 1; i <= k; i++) {
      key = order[i]
      c = nf[key]
      if (c > 0) for (a = 1; a <= c; a++) w[a] = vf[key, a]
      else { c = n[key]; for (a = 1; a <= c; a++) w[a] = v[key, a] }
      for (a = 2; a <= c; a++)   # insertion sort of a handful of repetitions
        for (b = a; b > 1 && w[b - 1] > w[b]; b--) { t = w[b]; w[b] = w[b - 1]; w[b - 1] = t }
      split(key, f, OFS)
      print bench[f[1]], f[3], f[2], key, w[int((c + 1) / 2)], c
    }
  }' "$results" | sort -s -t"$(printf '\t')" -k1,1n -k2,2n -k3,3n | cut -f4- > "$summary"
tables() {
  awk -F'\t' -v names="$built" -v md="$1" '
    { key = $1 SUBSEP $3 SUBSEP $2; v[key, $4] = $5; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
    END {
      nl = split(names, lib, " ")
      last = ""
      for (i = 1; i <= n; i++) {
        split(order[i], k, SUBSEP)
        if (k[1] != last) {
          unit = k[1] == "bandwidth" || k[1] ~ /_bw$/ ? "MB/s, higher is better; ratio of times" : "us"
          if (md) {
            printf "\n### %s (P50, %s)\n\n| np | bytes |", k[1], unit
            for (j = 1; j <= nl; j++) printf " %s |", lib[j]
            printf " weft/best |\n|---|---|"
            for (j = 1; j <= nl; j++) printf "---|"
            printf "---|\n"
          } else {
            printf "\n%s (P50, %s)\n%4s %10s", k[1], unit, "np", "bytes"
            for (j = 1; j <= nl; j++) printf " %11s", lib[j]
            printf " %10s\n", "weft/best"
          }
          last = k[1]
        }
        bw = k[1] == "bandwidth" || k[1] ~ /_bw$/
        best = ""
        if (md) printf "| %s | %s |", k[2], k[3]; else printf "%4s %10s", k[2], k[3]
        for (j = 1; j <= nl; j++) {
          x = v[order[i], lib[j]]
          if (md) printf " %s |", x == "" ? "-" : x; else printf " %11s", x == "" ? "-" : x
          if (lib[j] != "weft" && x != "" && (best == "" || (bw ? x + 0 > best + 0 : x + 0 < best + 0))) best = x
        }
        w = v[order[i], "weft"]
        r = "-"
        if (best != "" && w != "" && best + 0 > 0 && w + 0 > 0) {
          r = sprintf("%.2f", bw ? best / w : w / best)
          if (md && r + 0 > 1.0) r = "**" r "**"
        }
        if (md) printf " %s |\n", r; else printf " %10s\n", r
      }
    }' "$summary"
}
# Each repetition's ping-pong 8 B per library and np: a host that changes speed between
# repetitions (the development VM has a mode three times slower, for minutes) shows here as
# one repetition far above the others, for every library that ran in it.
reps_line() {
  awk -F'\t' '$1 == "pingpong" && $2 == "8" {
      key = "np=" $3 " " $4; if (!(key in v)) order[++n] = key; v[key] = v[key] " " $6 }
    END { for (i = 1; i <= n; i++) printf "%s%s:%s", (i > 1 ? "; " : ""), order[i], v[order[i]]; print "" }' "$results"
}
# The host's mode per library and np: how many of its program runs were in the fast mode
# (see the summary above), and every run's probes (ns, before/after). Rows of old runs
# without probes are not counted.
modes() {
  awk -F'\t' -v md="$1" -v limit="$fastest_probe" "$fast_fn"'
    $9 != "" && $10 != "" {
      prog = $1 ~ /^(pingpong|bandwidth)$/ ? $1 : $1 ~ /^rma_/ ? "rma" : "coll_lat"
      run = prog SUBSEP $3 SUBSEP $4 SUBSEP $5
      if (run in seen) next
      seen[run] = 1
      key = "np=" $3 " " $4
      if (!(key in all)) order[++n] = key
      all[key]++
      if (fast()) fastruns[key]++
      probes[key] = probes[key] " " $9 "/" $10 }
    END {
      if (n == 0) { print "no host speed probes in these results"; exit }
      printf "fastest run probe %s ns (a run with a probe above %.0f ns ran in the slow mode)\n", limit, 2 * limit
      for (i = 1; i <= n; i++)
        printf "%s%s: %d of %d runs in the fast mode; probes:%s\n", (md ? "- " : ""), order[i], fastruns[order[i]] + 0, all[order[i]], probes[order[i]]
    }' "$results"
}
tables "" | tee "$out/tables.txt"
echo
echo "ping-pong 8 B by repetition (us): $(reps_line)" | tee -a "$out/tables.txt"
echo "host speed: $(modes "")" | tee -a "$out/tables.txt"
{
  echo "Machine: $(nproc) cores, $(uname -r); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "Libraries:$built; np: $nps; repetitions: $reps; spinners (busy loops beside the runs): $spinners; each cell is the median over repetitions of the run's P50; collectives: $stat statistic."
  echo
  echo "Ping-pong 8 B by repetition (us; a repetition far above the others ran while the host was slower): $(reps_line)."
  echo
  echo "Host speed (bench/c/hostprobe.c before and after each program run; a cell's median leaves out the runs in the slow mode when it has runs in the fast mode): $(modes md)"
  tables md
  if [ -s "$failures" ]; then
    echo
    echo "Failed runs (their cells are empty or from the other repetitions):"
    echo
    sed 's/^/    /' "$failures"
  fi
} > "$out/compare.md"
echo
echo "raw results: $results; summary: $summary; Markdown: $out/compare.md"

if [ "$plot" = yes ]; then
  # bench/plot is a small Rust program with its own workspace (plotters, as weft-cli uses).
  if (cd "$root/bench/plot" && CARGO_TARGET_DIR="$target" cargo build --release -q) 2>"$out/logs/build-plot.log"; then
    "$target/release/weft-compare-plot" "$summary" "$out/plots" || echo "plot failed" >&2
  else
    echo "plot tool did not build, see $out/logs/build-plot.log" >&2
  fi
fi
[ -s "$failures" ] && { echo "$(wc -l < "$failures") runs failed: $failures" >&2; exit 1; }
exit 0
