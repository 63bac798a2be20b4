#!/bin/sh
# MPI_Comm_spawn side by side: one process spawns N children (default 4) of bench/c/spawn.c,
# which run MPI_Init, an MPI_Intercomm_merge and a barrier; the parent times that with
# MPI_Wtime. weft (built here, installed into OUT/weft), Debian's Open MPI (mpirun.openmpi
# --oversubscribe), Debian's MPICH 4 (mpiexec.mpich) and PyPI's MPICH 5 on the standard
# ABI (mpicc_abi and mpiexec.hydra: in PATH, in $MPICH_ABI_PREFIX/bin or in the venv
# scripts/ci-mpi-extras.sh makes), REPS runs each, the libraries interleaved; prints each
# run, then each library's median and weft's median over it, and the load average before
# and after. A library that cannot spawn here has its runs listed as failed.
#
#   bench/spawn_compare.sh [--n 4] [--reps 7] [--out DIR] [--no-build]
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
n=4
reps=7
out=${CARGO_TARGET_DIR:-$root/target}/spawn-compare
build=yes
while [ $# -gt 0 ]; do
  case $1 in
    --n) n=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-build) build=no; shift ;;
    *) echo "usage: $0 [--n N] [--reps R] [--out DIR] [--no-build]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
target=${CARGO_TARGET_DIR:-$root/target}
if [ $build = yes ]; then
  cargo build -q --release -p weft-mpi -p weft-cli
fi
PROFILE=release sh crates/weft-mpi/install.sh "$out/weft" "$target" >/dev/null
libs=""
"$out/weft/bin/mpicc" -O2 bench/c/spawn.c -o "$out/spawn-weft" && libs="weft"
if command -v mpicc.openmpi >/dev/null && command -v mpirun.openmpi >/dev/null; then
  mpicc.openmpi -O2 bench/c/spawn.c -o "$out/spawn-openmpi" && libs="$libs openmpi"
else
  echo "openmpi: mpicc.openmpi/mpirun.openmpi missing, skipped"
fi
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
  mpicc.mpich -O2 bench/c/spawn.c -o "$out/spawn-mpich" && libs="$libs mpich"
else
  echo "mpich: mpicc.mpich/mpiexec.mpich missing, skipped"
fi
abi_bin=""
for d in "$(dirname "$(command -v mpicc_abi 2>/dev/null || echo /nonexistent/x)")" \
  "${MPICH_ABI_PREFIX:-/nonexistent}/bin" "$target/mpi-extras/venv/bin"; do
  if [ -x "$d/mpicc_abi" ] && [ -x "$d/mpiexec.hydra" ]; then abi_bin=$d; break; fi
done
if [ -n "$abi_bin" ]; then
  "$abi_bin/mpicc_abi" -O2 bench/c/spawn.c -o "$out/spawn-mpich5-abi" && libs="$libs mpich5-abi"
else
  echo "mpich5-abi: no mpicc_abi with mpiexec.hydra (pip install mpich), skipped"
fi
# Open MPI refuses root unless told.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run() {
  case $1 in
    weft) timeout 120 "$out/weft/bin/weft" run -n 1 "$out/spawn-weft" "$n" ;;
    openmpi) timeout 120 mpirun.openmpi --oversubscribe -n 1 "$out/spawn-openmpi" "$n" ;;
    mpich) timeout 120 mpiexec.mpich -n 1 "$out/spawn-mpich" "$n" ;;
    mpich5-abi) timeout 120 "$abi_bin/mpiexec.hydra" -n 1 "$out/spawn-mpich5-abi" "$n" ;;
  esac
}

echo "load before: $(cat /proc/loadavg)"
: >"$out/results.tsv"
i=1
while [ "$i" -le "$reps" ]; do
  for lib in $libs; do
    if t=$(run "$lib" 2>"$out/$lib.err" | awk '$1 == "spawn" { print $3 }') && [ -n "$t" ]; then
      printf '%s\t%s\n' "$lib" "$t" >>"$out/results.tsv"
      printf 'rep %d %-8s %s s\n' "$i" "$lib" "$t"
    else
      printf 'rep %d %-8s failed (%s)\n' "$i" "$lib" "$(tail -1 "$out/$lib.err")"
    fi
  done
  i=$((i + 1))
done
echo "load after: $(cat /proc/loadavg)"
echo "spawn of $n + Init + merge + barrier, median of $reps (seconds; weft / library):"
for lib in $libs; do
  awk -v lib="$lib" '$1 == lib { print $2 }' "$out/results.tsv" | sort -g >"$out/$lib.sorted"
done
wm=$(awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }' "$out/weft.sorted")
for lib in $libs; do
  m=$(awk '{ a[NR] = $1 } END { if (NR) print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }' "$out/$lib.sorted")
  if [ -n "$m" ] && [ -n "$wm" ]; then
    printf '  %-8s %s s  weft/%s = %s\n' "$lib" "$m" "$lib" "$(awk -v w="$wm" -v m="$m" 'BEGIN { printf "%.2f", w / m }')"
  else
    printf '  %-8s no successful run\n' "$lib"
  fi
done
