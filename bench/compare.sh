#!/bin/sh
# Side-by-side benchmark of weft's MPI against other MPI libraries on this machine, in one
# run: the programs of bench/c/ (standard MPI only) are built against each library found and
# run at each process count; the output is one table per benchmark with each library's P50
# and the ratio weft / best peer.
#
#   bench/compare.sh [--np "2 4"] [--install] [--out DIR]
#
# Libraries: weft (crates/weft-mpi/install.sh from $CARGO_TARGET_DIR or target/, release
# profile when built, else debug), PyPI MPICH 5 on the standard ABI (mpicc_abi), Debian's
# Open MPI (mpicc.openmpi) and Debian's MPICH 4 (mpicc.mpich). --install installs the missing
# peers first (pip install mpich; apt-get install openmpi-bin libopenmpi-dev mpich
# libmpich-dev). Libraries not found are listed and skipped.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
nps="2 4"
install=no
out=${TMPDIR:-/tmp}/weft-compare-$$
while [ $# -gt 0 ]; do
  case "$1" in
    --np) nps="$2"; shift 2 ;;
    --install) install=yes; shift ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 [--np \"2 4\"] [--install] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
if [ "$install" = yes ]; then
  command -v mpicc_abi >/dev/null || pip install mpich
  command -v mpicc.openmpi >/dev/null && command -v mpicc.mpich >/dev/null ||
    { apt-get update && apt-get install -y openmpi-bin libopenmpi-dev mpich libmpich-dev; }
fi

target=${CARGO_TARGET_DIR:-$root/target}
profile=debug
[ -f "$target/release/libmpi_abi.so" ] && profile=release
PROFILE=$profile sh "$root/crates/weft-mpi/install.sh" "$out/weft" "$target" >/dev/null

# name | compiler | launcher (the program follows "-n NP")
libs="weft|$out/weft/bin/mpicc|$out/weft/bin/mpiexec"
if command -v mpicc_abi >/dev/null; then
  abi_bin=$(dirname "$(mpicc_abi -show | tr ' ' '\n' | sed -n 's/^-I//p' | head -1)")/bin
  libs="$libs
mpich5-abi|mpicc_abi|$abi_bin/mpiexec.hydra"
else
  echo "skipped: PyPI MPICH (pip install mpich)" >&2
fi
if command -v mpicc.openmpi >/dev/null; then
  libs="$libs
openmpi|mpicc.openmpi|mpirun.openmpi --oversubscribe --allow-run-as-root"
else
  echo "skipped: Debian Open MPI (apt-get install openmpi-bin libopenmpi-dev)" >&2
fi
if command -v mpicc.mpich >/dev/null; then
  libs="$libs
mpich4|mpicc.mpich|mpiexec.mpich"
else
  echo "skipped: Debian MPICH (apt-get install mpich libmpich-dev)" >&2
fi

results="$out/results.tsv"
: > "$results"
echo "$libs" | while IFS='|' read -r name cc launch; do
  for prog in pingpong coll_lat; do
    $cc -O2 "$root/bench/c/$prog.c" -o "$out/$name-$prog"
  done
  for np in $nps; do
    echo "running $name at np=$np" >&2
    if [ "$np" -eq 2 ]; then
      $launch -n 2 "$out/$name-pingpong" 8 20000 </dev/null |
        awk -v l="$name" -v np="$np" '$1 == 8 { print "pingpong\t" $1 "\t" np "\t" l "\t" $2 }' >> "$results"
    fi
    $launch -n "$np" "$out/$name-coll_lat" 8 65536 1048576 </dev/null |
      awk -v l="$name" -v np="$np" 'NR > 1 { print $1 "\t" $2 "\t" np "\t" l "\t" $3 }' >> "$results"
  done
done

# One table per benchmark: rows (size, np), a P50 column per library, weft / best peer.
names=$(echo "$libs" | cut -d'|' -f1 | tr '\n' ' ')
awk -F'\t' -v names="$names" '
  { key = $1 SUBSEP $2 SUBSEP $3; v[key, $4] = $5; if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
  END {
    nl = split(names, lib, " ")
    last = ""
    for (i = 1; i <= n; i++) {
      split(order[i], k, SUBSEP)
      if (k[1] != last) {
        printf "\n%s (P50 us)\n%10s %4s", k[1], "bytes", "np"
        for (j = 1; j <= nl; j++) printf " %12s", lib[j]
        printf " %12s\n", "weft/best"
        last = k[1]
      }
      printf "%10s %4s", k[2], k[3]
      best = ""
      for (j = 1; j <= nl; j++) {
        x = v[order[i], lib[j]]
        printf " %12s", x == "" ? "-" : x
        if (j > 1 && x != "" && (best == "" || x + 0 < best + 0)) best = x
      }
      w = v[order[i], lib[1]]
      if (best != "" && w != "" && best + 0 > 0) printf " %12.2f\n", w / best; else printf " %12s\n", "-"
    }
  }' "$results"
echo
echo "raw results: $results"
