#!/bin/sh
# Side-by-side collective MPI-IO bandwidth of weft, Open MPI and MPICH in one run:
# bench/c/fileio_bw.c (standard MPI only) built against each library, run at NP ranks for
# each view (contig, strided), REPS times with the libraries interleaved (so slow drifts of
# a busy machine hit them all alike). Each run times one MPI_File_write_all and one
# MPI_File_read_all of TOTAL bytes (no warm-up: every library alike) and checks the bytes
# read back. Output: per library, view and direction the median MB/s over the
# runs, and the ratio best peer / weft (<= 1.0: weft at least as fast as every peer).
# Each run starts after a `sync` (outside the timed calls), so no run pays for the
# writeback of the one before.
#
#   bench/io_compare.sh [--np 4] [--reps 7] [--total 64M] [--block 16K] [--dir DIR]
#                       [--out DIR] [--no-build]
#
# weft is built here (cargo build --release -p weft-mpi -p weft-cli into $CARGO_TARGET_DIR
# or target/, unless --no-build) and installed into OUT/weft by crates/weft-mpi/install.sh;
# Open MPI (mpicc.openmpi, mpirun.openmpi) and MPICH (mpicc.mpich, mpiexec.mpich) are
# Debian's (apt-get install openmpi-bin libopenmpi-dev mpich libmpich-dev); a missing one is
# skipped. Files go to DIR (default: OUT), which should be a local file system.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
np=4
reps=7
total=64M
block=16K
out=""
dir=""
build=yes
while [ $# -gt 0 ]; do
  case "$1" in
    --np) np=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --total) total=$2; shift 2 ;;
    --block) block=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=no; shift ;;
    *) echo "$0: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/weft-io-compare.XXXXXX")
[ -n "$dir" ] || dir="$out"
mkdir -p "$out/bin" "$out/logs" "$dir"
target=${CARGO_TARGET_DIR:-$root/target}
if [ "$build" = yes ]; then
  (cd "$root" && CARGO_TARGET_DIR="$target" cargo build --release -q -p weft-mpi -p weft-cli)
fi
PROFILE=release sh "$root/crates/weft-mpi/install.sh" "$out/weft" "$target" >/dev/null

libs="weft|$out/weft/bin/mpicc|$out/weft/bin/mpiexec"
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  libs="$libs openmpi|mpicc.openmpi|mpirun.openmpi@--allow-run-as-root@--oversubscribe"
else echo "skipped: openmpi (apt-get install openmpi-bin libopenmpi-dev)" >&2; fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
  libs="$libs mpich|mpicc.mpich|mpiexec.mpich"
else echo "skipped: mpich (apt-get install mpich libmpich-dev)" >&2; fi

names=""
for l in $libs; do
  name=${l%%|*}
  cc=$(echo "$l" | cut -d'|' -f2)
  "$cc" -O2 -I"$root/bench/c" -o "$out/bin/$name-fileio_bw" "$root/bench/c/fileio_bw.c"
  names="$names $name"
done

results="$out/results.tsv"
: > "$results"
rep=1
while [ "$rep" -le "$reps" ]; do
  for view in contig strided; do
    for l in $libs; do
      name=${l%%|*}
      launcher=$(echo "$l" | cut -d'|' -f3 | tr '@' ' ')
      log="$out/logs/$name-$view-$rep"
      # Every run starts with no dirty pages of earlier runs still being written back (they
      # would stall this run's writes by however much the last run left behind).
      sync
      # shellcheck disable=SC2086 # the launcher is a word list
      if timeout -k 10 300 $launcher -n "$np" "$out/bin/$name-fileio_bw" -n 1 -b "$block" \
        "$dir/io-compare-$name.dat" "$total" "$view" >"$log.out" 2>"$log.err" </dev/null; then
        awk -v l="$name" -v r="$rep" '{ print l "\t" $1 "\t" $2 "\t" r "\t" $5 }' "$log.out" >> "$results"
      else
        echo "$name $view rep $rep failed (exit $?): see $log.err" >&2
      fi
    done
  done
  rep=$((rep + 1))
done

echo "collective MPI-IO, $np ranks, $total bytes, strided blocks of $block, median MB/s of $reps interleaved runs"
echo "(shared, loaded machine; files in $dir)"
printf '%-10s %-8s' op view
for n in $names; do printf ' %10s' "$n"; done
printf ' %14s\n' "best peer/weft"
for op in write_all read_all; do
  for view in contig strided; do
    printf '%-10s %-8s' "$op" "$view"
    w=""
    best=""
    for n in $names; do
      m=$(awk -F'\t' -v l="$n" -v o="$op" -v v="$view" '$1 == l && $2 == o && $3 == v { print $5 }' "$results" |
        sort -g | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)] }')
      printf ' %10s' "${m:--}"
      if [ "$n" = weft ]; then w=$m
      elif [ -n "$m" ] && { [ -z "$best" ] || awk -v a="$m" -v b="$best" 'BEGIN { exit !(a > b) }'; }; then best=$m; fi
    done
    if [ -n "$w" ] && [ -n "$best" ]; then
      awk -v w="$w" -v b="$best" 'BEGIN { printf " %14.2f\n", b / w }'
    else echo " -"; fi
  done
done
rm -f "$dir"/io-compare-*.dat
