#!/usr/bin/env bash
# Allreduce across 2 namespace hosts with 2 ranks each (unshaped veth links), weft against
# Open MPI's TCP transport (issue 5): the same program, bench/c/coll_lat.c, built once with
# Debian's Open MPI (mpicc.openmpi) and once with weft's mpicc, run REPS times with the two
# libraries interleaved. Open MPI starts its daemons through an rsh agent that does
# `ip netns exec HOST`, with `--mca btl tcp,self` (every byte over TCP, inside a host too);
# weft starts its ranks with `weft run --hosts ... --launcher "ip netns exec {host}"` and
# chooses its lanes (shared memory inside a host, TCP across). Prints each run's P50 per
# size, the medians and the ratio weft / Open MPI (target: at most 1.2).
#
#   scripts/hosts-vs-openmpi.sh [--reps 3] [--sizes "8 1M"] [--target DIR] [--yield on|off]
#                               [--rt PRIO]
#
# DIR is the cargo target directory holding the release builds of weft-mpi and weft-cli
# (default $CARGO_TARGET_DIR or target/; build them with
# `cargo build --release -p weft-mpi -p weft-cli`). --yield on (the default when the 4 ranks
# outnumber this machine's cores) makes both libraries yield the CPU when idle
# (WEFT_YIELD=on; Open MPI's --mca mpi_yield_when_idle 1): namespace hosts share one
# machine's cores, so otherwise busy-polling ranks steal them from each other. --rt PRIO runs
# both libraries' jobs (launcher and ranks) under `chrt -f PRIO` (real-time FIFO): on a
# machine busy with other work, each run otherwise measures the other work's bursts more
# than the library (medians of 1 MiB moved 2-5x between runs at load 8-10); the kernel's
# real-time throttling still leaves the rest of the machine 5% of each second. Needs root,
# iproute2 and openmpi-bin + libopenmpi-dev (exits 77 when one is missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=3
sizes="8 1M"
target=${CARGO_TARGET_DIR:-$root/target}
yield=""
rt=()
while (($#)); do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --yield) yield=$2; shift 2 ;;
    --rt) [[ "${2:-}" =~ ^[1-9][0-9]?$ ]] || { echo "hosts-vs-openmpi.sh: --rt: '${2:-}' is not a priority 1-99" >&2; exit 2; }
      rt=(chrt -f "$2"); shift 2 ;;
    *) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
for tool in mpicc.openmpi mpirun.openmpi; do
  command -v "$tool" >/dev/null || { echo "hosts-vs-openmpi.sh: skipped: $tool not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 77; }
done
[ -f "$target/release/libmpi_abi.so" ] && [ -x "$target/release/weft" ] ||
  { echo "hosts-vs-openmpi.sh: build first: cargo build --release -p weft-mpi -p weft-cli (target $target)" >&2; exit 2; }
if [ -z "$yield" ]; then
  if [ "$(nproc)" -lt 4 ]; then yield=on; else yield=off; fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-vs-ompi.XXXXXX")
hosts=(wom0 wom1)
net=10.213.21
cleanup() {
  "$root/scripts/testhosts.sh" down "${hosts[@]}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
set +e
"$root/scripts/testhosts.sh" up --net "$net" "${hosts[@]}" >/dev/null
rc=$?
set -e
[ $rc = 0 ] || exit $rc

# Open MPI's rsh agent: "agent [options] HOST COMMAND..." runs COMMAND on HOST's namespace.
cat > "$work/agent.sh" <<'AGENT'
#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1
shift
exec ip netns exec "$host" sh -c "$*"
AGENT
chmod +x "$work/agent.sh"
PROFILE=release "$root/crates/weft-mpi/install.sh" "$work/weft" "$target" >/dev/null
mpicc.openmpi -O2 -I"$root/bench/c" -o "$work/coll_lat.ompi" "$root/bench/c/coll_lat.c"
"$work/weft/bin/mpicc" -O2 -I"$root/bench/c" -o "$work/coll_lat.weft" "$root/bench/c/coll_lat.c"

ompi_run() {
  local extra=()
  [ "$yield" = on ] && extra=(--oversubscribe --mca mpi_yield_when_idle 1)
  # shellcheck disable=SC2086 # sizes are separate arguments
  timeout 600 "${rt[@]}" mpirun.openmpi --allow-run-as-root -np 4 --host "${hosts[0]}:2,${hosts[1]}:2" \
    --mca plm_rsh_agent "$work/agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" "${extra[@]}" \
    "$work/coll_lat.ompi" -c allreduce $sizes 2>/dev/null
}
weft_run() {
  local y=off
  [ "$yield" = on ] && y=on
  # shellcheck disable=SC2086
  WEFT_YIELD=$y timeout 600 "${rt[@]}" "$target/release/weft" run -n 4 --hosts "${hosts[0]}:2,${hosts[1]}:2" \
    --launcher "ip netns exec {host}" "$work/coll_lat.weft" -c allreduce $sizes
}
# "allreduce BYTES P50 AVG ITERS" lines -> "BYTES P50".
p50s() { awk '$1 == "allreduce" { print $2, $3 }'; }

: > "$work/results"
for ((i = 1; i <= reps; i++)); do
  for lib in ompi weft; do
    out=$("${lib}_run" | p50s) || true
    [ -n "$out" ] || { echo "hosts-vs-openmpi.sh: the $lib run failed" >&2; exit 1; }
    while read -r bytes p50; do
      echo "$lib $bytes $p50" >> "$work/results"
      echo "run $i: $lib allreduce $bytes bytes: P50 $p50 us"
    done <<< "$out"
  done
done
echo "medians over $reps runs (2 hosts x 2 ranks, unshaped, yield $yield${rt[*]:+, ${rt[*]}}):"
awk '
  { v[$1 " " $2] = v[$1 " " $2] " " $3; sizes[$2] = 1 }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (s in sizes) {
      o = median(v["ompi " s]); w = median(v["weft " s])
      printf "  allreduce %8d bytes: weft %10.2f us, Open MPI %10.2f us, weft / Open MPI %.2f\n", s, w, o, w / o
    }
  }' "$work/results" | sort -k2 -n
