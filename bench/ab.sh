#!/bin/sh
# Two builds of weft side by side, for a change that must not cost speed: the release build
# of this checkout ("new") against the release build of a base revision ("base", main by
# default), both through the MPI programs of bench/c/ (pingpong, bandwidth and coll_lat,
# the ones bench/compare.sh runs, at its sizes), in one run, the builds interleaved inside each repetition (the
# order alternates between repetitions), so slow drifts of a busy machine hit both alike.
# Output: per benchmark, np and size, each build's median P50 over the repetitions and the
# ratio new / base of times (below 1.0: the new build is faster; for bandwidth, whose
# figures are MB/s, base MB/s / new MB/s); the same as ab.md and raw TSV.
# --callgrind adds what load does not change: both builds run bench/c/coll_self.c under
# valgrind's callgrind (13 collectives on MPI_COMM_SELF, repeated calls and calls that
# alternate two sizes), and the instructions per call go to callgrind.md.
#
#   bench/ab.sh [--base REV] [--np "2 4"] [--reps 5] [--colls NAME,NAME] [--sizes "8 64K 1M"]
#               [--pp-sizes "8 1K 64K 1M"] [--bw-sizes "8 64K 1M 4M"] [--budget-ms 400] [--timeout 900] [--out DIR]
#               [--no-build] [--callgrind]
#
# The base is `git archive REV` built in OUT/base with its own target directory; the new
# build goes into $CARGO_TARGET_DIR or target/. --no-build uses what is there. Runs are
# bracketed by bench/c/hostprobe.c as in bench/compare.sh (columns 8 and 9 of results.tsv,
# ns); a run whose probe is above twice the run's fastest probe ran in the host's slow mode
# and is left out of a cell's median whenever the cell has runs in the fast mode.
set -e
root=$(cd "$(dirname "$0")/.." && pwd)
base_rev=main
nps="2 4"
reps=5
colls=""
sizes="8 64K 1M"
pp_sizes="8 1K 64K 1M"
bw_sizes="8 64K 1M 4M"
budget_ms=400
run_timeout=900
build=yes
callgrind=no
out=${TMPDIR:-/tmp}/weft-ab-$$
usage="usage: $0 [--base REV] [--np \"2 4\"] [--reps N] [--colls A,B] [--sizes \"8 64K 1M\"] [--pp-sizes \"8 1K 64K 1M\"] [--bw-sizes \"8 64K 1M 4M\"] [--budget-ms MS] [--timeout S] [--out DIR] [--no-build] [--callgrind]"
need() { [ $# -ge 2 ] || { echo "$0: $1 needs a value" >&2; echo "$usage" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --base) need "$@"; base_rev="$2"; shift 2 ;;
    --np) need "$@"; nps="$2"; shift 2 ;;
    --reps) need "$@"; reps="$2"; shift 2 ;;
    --colls) need "$@"; colls="$2"; shift 2 ;;
    --sizes) need "$@"; sizes="$2"; shift 2 ;;
    --pp-sizes) need "$@"; pp_sizes="$2"; shift 2 ;;
    --bw-sizes) need "$@"; bw_sizes="$2"; shift 2 ;;
    --budget-ms) need "$@"; budget_ms="$2"; shift 2 ;;
    --timeout) need "$@"; run_timeout="$2"; shift 2 ;;
    --out) need "$@"; out="$2"; shift 2 ;;
    --no-build) build=no; shift ;;
    --callgrind) callgrind=yes; shift ;;
    -h|--help) echo "$usage"; exit 0 ;;
    *) echo "$0: unknown argument $1" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
is_count() { case "$1" in ''|*[!0-9]*) return 1 ;; *) [ "$1" -gt 0 ] ;; esac; }
for v in "reps=$reps" "budget-ms=$budget_ms" "timeout=$run_timeout"; do
  is_count "${v#*=}" || { echo "$0: --${v%%=*} ${v#*=}: expected a positive integer" >&2; exit 2; }
done
for np in $nps; do
  { is_count "$np" && [ "$np" -ge 2 ]; } || { echo "$0: --np: $np is not a process count >= 2" >&2; exit 2; }
done
git -C "$root" rev-parse --verify -q "$base_rev^{commit}" >/dev/null ||
  { echo "$0: --base $base_rev: not a revision of this repository" >&2; exit 2; }
mkdir -p "$out/bin" "$out/logs" "$out/base"
out=$(cd "$out" && pwd)
new_target=${CARGO_TARGET_DIR:-$root/target}
base_target="$out/base/target"
if [ "$build" = yes ]; then
  echo "building the new weft (release) into $new_target" >&2
  (cd "$root" && CARGO_TARGET_DIR="$new_target" cargo build --release -q -p weft-mpi -p weft-cli)
  echo "building $base_rev (release) into $base_target" >&2
  rm -rf "$out/base/src" && mkdir -p "$out/base/src"
  git -C "$root" archive "$base_rev" | tar -x -C "$out/base/src"
  (cd "$out/base/src" && CARGO_TARGET_DIR="$base_target" cargo build --release -q -p weft-mpi -p weft-cli)
fi
for b in "base|$base_target" "new|$new_target"; do
  name=${b%%|*}
  target=${b#*|}
  [ -f "$target/release/libmpi_abi.so" ] ||
    { echo "$0: $target/release/libmpi_abi.so missing (run without --no-build)" >&2; exit 1; }
  # Each build is installed by its own revision's script (the base's weft may lack commands
  # the current script's wrappers call).
  src="$root"
  [ "$name" = base ] && src="$out/base/src"
  [ -f "$src/crates/weft-mpi/install.sh" ] ||
    { echo "$0: $src/crates/weft-mpi/install.sh missing (run without --no-build)" >&2; exit 1; }
  PROFILE=release sh "$src/crates/weft-mpi/install.sh" "$out/$name" "$target" >/dev/null
  for prog in pingpong bandwidth coll_lat coll_self; do
    "$out/$name/bin/mpicc" -O2 -o "$out/bin/$name-$prog" "$root/bench/c/$prog.c" ||
      { echo "$0: building $prog against the $name build failed" >&2; exit 1; }
  done
done
probe_bin="$out/bin/hostprobe"
cc -O2 -pthread -o "$probe_bin" "$root/bench/c/hostprobe.c" 2>/dev/null && "$probe_bin" >/dev/null 2>&1 ||
  { echo "no host speed probes: runs in the host's slow mode are not told apart" >&2; probe_bin=""; }
probe() { [ -z "$probe_bin" ] || "$probe_bin" 2>/dev/null || true; }

if [ "$callgrind" = yes ]; then
  command -v valgrind >/dev/null || { echo "$0: --callgrind: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
  mkdir -p "$out/callgrind"
  for name in base new; do
    echo "callgrind: $name" >&2
    rm -f "$out/callgrind/$name.out"*
    timeout -k 10 "$run_timeout" "$out/$name/bin/mpiexec" -n 1 valgrind --tool=callgrind \
      --callgrind-out-file="$out/callgrind/$name.out" "$out/bin/$name-coll_self" \
      >"$out/logs/$name-coll_self.out" 2>"$out/logs/$name-coll_self.err" </dev/null ||
      { echo "$0: coll_self under callgrind failed for $name; see $out/logs/$name-coll_self.err" >&2; exit 1; }
  done
  python3 - "$out/callgrind" "$base_rev" <<'EOF'
import glob, os, sys
d = sys.argv[1]
def counts(name):
    c = {}
    for f in glob.glob(os.path.join(d, name + ".out.*")):
        phase = total = None
        for line in open(f):
            if line.startswith("desc: Trigger: Client Request: "):
                phase = line[len("desc: Trigger: Client Request: "):].strip()
            elif line.startswith("summary: "):
                total = int(line.split()[1])
        if phase and total is not None:
            c[phase] = total
    return c
base, new = counts("base"), counts("new")
out = ["| phase | base | new | new / base |", "|---|---|---|---|"]
for phase in sorted(set(base) & set(new), key=lambda p: (p.split("-")[0], p)):
    b, n = base[phase] / 10000, new[phase] / 10000
    out.append(f"| {phase} | {b:.0f} | {n:.0f} | {n / b:.3f} |")
text = "\n".join(out) + "\n"
open(os.path.join(d, "..", "callgrind.md"), "w").write(
    f"Instructions per call, MPI_COMM_SELF, 8 B (alternate: 8 and 16 B). Base: {sys.argv[2]}.\n\n" + text)
print(text, end="")
EOF
fi

results="$out/results.tsv"
: > "$results"
coll_args="-t $budget_ms"
[ -n "$colls" ] && coll_args="$coll_args -c $colls"
pp_args="-t $((budget_ms * 5)) $pp_sizes"
ncores=$(nproc)
# One run: $1 build, $2 np, $3 program, $4 rep, $5 arguments; appends
# "bench bytes np build rep p50 probe_before probe_after" lines.
run_one() {
  log="$out/logs/$1-np$2-$3-rep$4"
  extra=""
  [ "$2" -gt "$ncores" ] && extra="--oversubscribe"
  before=$(probe)
  # shellcheck disable=SC2086 # argument lists
  if timeout -k 10 "$run_timeout" "$out/$1/bin/mpiexec" -n "$2" $extra "$out/bin/$1-$3" $5 \
    >"$log.out" 2>"$log.err" </dev/null; then
    after=$(probe)
    case "$3" in
      pingpong|bandwidth) awk -v np="$2" -v b="$1" -v r="$4" -v p="$before" -v q="$after" \
        -v prog="$3" -v OFS='\t' 'NR > 1 { print prog, $1, np, b, r, $2, p, q }' "$log.out" ;;
      coll_lat) awk -v np="$2" -v b="$1" -v r="$4" -v p="$before" -v q="$after" -v OFS='\t' \
        'NR > 1 { print $1, $2, np, b, r, $3, p, q }' "$log.out" ;;
    esac >> "$results"
  else
    echo "$1 np=$2 $3 rep $4 failed (exit $?); see $log.err" >&2
    echo "$1 np=$2 $3 rep $4" >> "$out/failures.txt"
  fi
}
t_start=$(date +%s)
rep=1
while [ "$rep" -le "$reps" ]; do
  order="base new"
  [ $((rep % 2)) -eq 0 ] && order="new base"
  for np in $nps; do
    for name in $order; do
      echo "rep $rep/$reps np=$np $name ($(($(date +%s) - t_start)) s)" >&2
      run_one "$name" "$np" pingpong "$rep" "$pp_args"
      run_one "$name" "$np" bandwidth "$rep" "$bw_sizes"
      # shellcheck disable=SC2086 # size list
      run_one "$name" "$np" coll_lat "$rep" "$coll_args $sizes"
    done
  done
  rep=$((rep + 1))
done

python3 - "$results" "$out/ab.md" "$base_rev" <<'EOF'
import statistics, sys
from collections import defaultdict
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
fastest = min((float(x) for r in rows for x in r[6:8] if x), default=None)
cells = defaultdict(lambda: defaultdict(list))
for bench, size, np, build, rep, p50, a, b in rows:
    slow = fastest is not None and any(x and float(x) > 2 * fastest for x in (a, b))
    cells[(bench, int(np), int(size))][build].append((slow, float(p50)))
def median(runs):
    fast = [v for slow, v in runs if not slow]
    return statistics.median(fast or [v for _, v in runs]), len(fast), len(runs)
out = ["| benchmark | np | bytes | base P50 | new P50 | new / base (time) | fast-mode runs base, new |",
       "|---|---|---|---|---|---|---|"]
for (bench, np, size) in sorted(cells):
    c = cells[(bench, np, size)]
    if "base" not in c or "new" not in c:
        continue
    (mb, fb, nb), (mn, fn, nn) = median(c["base"]), median(c["new"])
    # Bandwidth is MB/s (higher is better): its ratio of times is base / new.
    bw = bench == "bandwidth"
    ratio = (mb / mn if mn > 0 else float("nan")) if bw else (mn / mb if mb > 0 else float("nan"))
    unit = " MB/s" if bw else " us"
    out.append(f"| {bench} | {np} | {size} | {mb:.3f}{unit} | {mn:.3f}{unit} | {ratio:.2f} | {fb}/{nb}, {fn}/{nn} |")
text = "\n".join(out) + "\n"
open(sys.argv[2], "w").write(f"Base: {sys.argv[3]}; new: this checkout. Median over repetitions of each run's P50.\n\n" + text)
print(text, end="")
EOF
[ ! -s "$out/failures.txt" ] || { echo "failed runs: $(wc -l < "$out/failures.txt"), listed in $out/failures.txt" >&2; exit 1; }
