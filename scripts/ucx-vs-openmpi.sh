#!/usr/bin/env bash
# weft's UCX lane against Open MPI over UCX (`--mca pml ucx`), and against weft's own TCP
# lane, between 2 namespace hosts with 2 ranks each (scripts/testhosts.sh), the libraries
# interleaved round by round: ping-pong (bench/c/pingpong.c, pairs (0,1) and (2,3) placed on
# different hosts, so every timed message crosses hosts) and allreduce (bench/c/coll_lat.c).
# Prints each run's P50 per size, then the medians and the ratios weft-ucx / Open MPI and
# weft-ucx / weft-tcp (target of issue 30: weft-ucx at most 1.0x Open MPI in every cell).
#
#   scripts/ucx-vs-openmpi.sh [--reps 5] [--pp-sizes "8 64K 1M"] [--ar-sizes "8 1M"]
#                             [--target DIR] [--base DIR] [--yield on|off] [--rt PRIO]
#                             [--spinners N] [--out FILE]
#
# UCX runs over its TCP transport for both libraries (UCX_TLS=tcp,self, UCX_NET_DEVICES=eth0:
# namespace hosts share one kernel, so UCX's shared-memory transports would otherwise
# connect the "hosts" through memory; Open MPI's pml ucx needs pml_ucx_tls/devices "any" to
# accept UCX's TCP transport). Open MPI then sends inside a host over UCX's TCP
# too (pml ucx has no shared-memory path of its own), weft over its shared memory: that is
# each library's design, and the allreduce cells carry it. DIR holds the release builds of
# weft-mpi and weft-cli with the ucx feature (default $CARGO_TARGET_DIR or target/;
# `cargo build --release -p weft-mpi -p weft-cli --features weft/ucx`). --base DIR adds
# another build of weft (DIR/release/libmpi_abi.so and DIR/release/weft, e.g. main's, for
# an A/B of a change) as a fourth library, base-ucx (its UCX lane), interleaved with the
# others, with its column and the ratio weft-ucx / base-ucx. --yield on (the
# default when the 4 ranks outnumber this machine's cores) makes both libraries yield when
# idle (WEFT_YIELD=on; Open MPI's --mca mpi_yield_when_idle 1). --rt PRIO runs every job
# under `chrt -f PRIO` (see scripts/hosts-vs-openmpi.sh: on a loaded machine the jobs
# otherwise measure the other work's bursts). --spinners N runs N busy loops (`yes >
# /dev/null`) for the whole comparison, the two libraries then share the cores with them
# alike. --out FILE keeps the raw results (lib bench
# bytes p50 per line). Needs root, iproute2, openmpi-bin + libopenmpi-dev and libucx0
# (exits 77 when one is missing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
reps=5
pp_sizes="8 64K 1M"
ar_sizes="8 1M"
target=${CARGO_TARGET_DIR:-$root/target}
base=""
yield=""
rt=()
spinners=0
keep=""
while (($#)); do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --pp-sizes) pp_sizes=$2; shift 2 ;;
    --ar-sizes) ar_sizes=$2; shift 2 ;;
    --target) target=$2; shift 2 ;;
    --base) base=$2; shift 2 ;;
    --yield) yield=$2; shift 2 ;;
    --out) keep=$2; shift 2 ;;
    --spinners) spinners=$2; shift 2 ;;
    --rt) [[ "${2:-}" =~ ^[1-9][0-9]?$ ]] || { echo "ucx-vs-openmpi.sh: --rt: '${2:-}' is not a priority 1-99" >&2; exit 2; }
      rt=(chrt -f "$2"); shift 2 ;;
    *) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
[[ "$spinners" =~ ^[0-9]+$ ]] || { echo "ucx-vs-openmpi.sh: --spinners: '$spinners' is not a count" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "ucx-vs-openmpi.sh: --reps: '$reps' is not a count" >&2; exit 2; }
for tool in mpicc.openmpi mpirun.openmpi; do
  command -v "$tool" >/dev/null || { echo "ucx-vs-openmpi.sh: skipped: $tool not found (apt-get install openmpi-bin libopenmpi-dev)" >&2; exit 77; }
done
ldconfig -p | grep 'libucp.so.0 ' >/dev/null || { echo "ucx-vs-openmpi.sh: skipped: libucp.so.0 not found (apt-get install libucx0)" >&2; exit 77; }
[ -f "$target/release/libmpi_abi.so" ] && [ -x "$target/release/weft" ] ||
  { echo "ucx-vs-openmpi.sh: build first: cargo build --release -p weft-mpi -p weft-cli --features weft/ucx (target $target)" >&2; exit 2; }
[ -z "$base" ] || { [ -f "$base/release/libmpi_abi.so" ] && [ -x "$base/release/weft" ]; } ||
  { echo "ucx-vs-openmpi.sh: --base $base: no release/libmpi_abi.so and release/weft there" >&2; exit 2; }
if [ -z "$yield" ]; then
  if [ "$(nproc)" -lt 4 ]; then yield=on; else yield=off; fi
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-ucx-vs-ompi.XXXXXX")
hosts=(wuo0 wuo1)
net=10.213.31
spinner_pids=()
cleanup() {
  ((${#spinner_pids[@]})) && kill "${spinner_pids[@]}" 2>/dev/null
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
[ -z "$base" ] || PROFILE=release "$root/crates/weft-mpi/install.sh" "$work/base" "$base" >/dev/null
for prog in pingpong coll_lat; do
  mpicc.openmpi -O2 -I"$root/bench/c" -o "$work/$prog.ompi" "$root/bench/c/$prog.c"
  "$work/weft/bin/mpicc" -O2 -I"$root/bench/c" -o "$work/$prog.weft" "$root/bench/c/$prog.c"
  [ -z "$base" ] || "$work/base/bin/mpicc" -O2 -I"$root/bench/c" -o "$work/$prog.base" "$root/bench/c/$prog.c"
done

export UCX_TLS=tcp,self UCX_NET_DEVICES=eth0
# PROG ARGS... under Open MPI with pml ucx, ranks placed round robin over the hosts.
ompi_run() {
  local prog=$1; shift
  local extra=()
  [ "$yield" = on ] && extra=(--oversubscribe --mca mpi_yield_when_idle 1)
  timeout 600 "${rt[@]}" mpirun.openmpi --allow-run-as-root -np 4 --host "${hosts[0]}:2,${hosts[1]}:2" \
    --map-by node --mca plm_rsh_agent "$work/agent.sh" --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any --mca btl ^vader,tcp,openib,uct \
    --mca oob_tcp_if_include "$net.0/24" -x UCX_TLS -x UCX_NET_DEVICES "${extra[@]}" \
    "$work/$prog.ompi" "$@" 2>>"$work/stderr"
}
# BUILD PROG ARGS... under weft (BUILD: weft, this build; base, --base's) with
# WEFT_TRANSPORTS=$transports.
weft_run() {
  local build=$1 transports=$2 prog=$3; shift 3
  local y=off dir=$target
  [ "$yield" = on ] && y=on
  [ "$build" = base ] && dir=$base
  WEFT_TRANSPORTS=$transports WEFT_YIELD=$y timeout 600 "${rt[@]}" "$dir/release/weft" run -n 4 \
    --hosts "${hosts[0]}:2,${hosts[1]}:2" --map-by node --boot-addr "$net.1" \
    --launcher "ip netns exec {host}" -x UCX_TLS -x UCX_NET_DEVICES "$work/$prog.$build" "$@" 2>>"$work/stderr"
}
lib_run_once() {
  local lib=$1; shift
  case "$lib" in
    ompi-ucx) ompi_run "$@" ;;
    weft-ucx) weft_run weft shm,ucx "$@" ;;
    weft-tcp) weft_run weft shm,tcp "$@" ;;
    base-ucx) weft_run base shm,ucx "$@" ;;
  esac
}
# LIB PROG ARGS... | FILTER: a run that fails (Open MPI's launch sometimes does on a loaded
# machine) is run again, at most twice; the failures are listed at the end.
lib_run() {
  local attempt out
  for attempt in 1 2 3; do
    if out=$(lib_run_once "$@") && [ -n "$out" ]; then
      printf '%s\n' "$out"
      return 0
    fi
    echo "$1 $2 failed (attempt $attempt)" >> "$work/failures"
  done
  return 1
}

for ((i = 0; i < spinners; i++)); do
  yes > /dev/null &
  spinner_pids+=($!)
done

results="$work/results"
: > "$results"
libs=(ompi-ucx weft-ucx weft-tcp)
[ -z "$base" ] || libs+=(base-ucx)
for ((i = 1; i <= reps; i++)); do
  for lib in "${libs[@]}"; do
    # shellcheck disable=SC2086 # sizes are separate arguments
    out=$(lib_run "$lib" pingpong $pp_sizes | awk '$1 ~ /^[0-9]+$/ { print "pingpong", $1, $2 }') || true
    # shellcheck disable=SC2086
    out2=$(lib_run "$lib" coll_lat -c allreduce $ar_sizes | awk '$1 == "allreduce" { print "allreduce", $2, $3 }') || true
    [ -n "$out" ] && [ -n "$out2" ] || {
      echo "ucx-vs-openmpi.sh: a $lib run failed three times (round $i); last errors:" >&2
      tail -20 "$work/stderr" >&2
      exit 1
    }
    while read -r bench bytes p50; do
      echo "$lib $bench $bytes $p50" >> "$results"
      echo "round $i: $lib $bench $bytes bytes: P50 $p50 us"
    done <<< "$out"$'\n'"$out2"
  done
done
[ -n "$keep" ] && cp "$results" "$keep"
[ -s "$work/failures" ] && { echo "runs repeated after a failure:"; sort "$work/failures" | uniq -c; }
echo "medians over $reps rounds (2 hosts x 2 ranks, UCX_TLS=$UCX_TLS, yield $yield, $spinners spinners${rt[*]:+, ${rt[*]}}; the machine may be shared):"
if [ -n "$base" ]; then
  printf "  %-10s %9s %12s %12s %12s %12s %12s %12s %12s\n" bench bytes weft-ucx "Open MPI" weft-tcp base-ucx ucx/ompi ucx/tcp ucx/base
else
  printf "  %-10s %9s %12s %12s %12s %12s %12s\n" bench bytes weft-ucx "Open MPI" weft-tcp ucx/ompi ucx/tcp
fi
awk -v with_base="${base:+1}" '
  { v[$1 " " $2 " " $3] = v[$1 " " $2 " " $3] " " $4; cells[$2 " " $3] = 1 }
  function median(list,   a, n, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  END {
    for (c in cells) {
      split(c, k, " ")
      u = median(v["weft-ucx " c]); o = median(v["ompi-ucx " c]); t = median(v["weft-tcp " c])
      if (with_base) {
        b = median(v["base-ucx " c])
        printf "  %-10s %9d %9.2f us %9.2f us %9.2f us %9.2f us %12.2f %12.2f %12.2f\n", k[1], k[2], u, o, t, b, u / o, u / t, u / b
      } else
        printf "  %-10s %9d %9.2f us %9.2f us %9.2f us %12.2f %12.2f\n", k[1], k[2], u, o, t, u / o, u / t
    }
  }' "$results" | sort -k1,1 -k2n
