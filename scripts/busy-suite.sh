#!/usr/bin/env bash
# Runs the README's test command (`cargo test --workspace`) several times beside spinning
# processes, from the current tree, to show the suite passes on a busy machine.
#
#   scripts/busy-suite.sh [--runs N] [--spinners K] [-- CARGO-TEST-ARGS...]
#
# N runs (default 3) beside K busy-looping processes (default 2; 0 for none). Arguments after
# `--` replace `--workspace` (e.g. `-- -p weft --test coll_all`). The tests are built first,
# before the spinners start, so each run's wall time is the tests'. After each run it records
# pass/fail, wall time, the load average, the failing tests, the `weft-*` entries of /dev/shm
# the run left and the test processes still alive; the spinners are killed on exit. Logs and
# the summary go to target/busy-suite/ (or $CARGO_TARGET_DIR/busy-suite/). Exit status 0
# only if every run passed and left nothing behind.
set -u

runs=3
spinners=2
args=(--workspace)
while [ $# -gt 0 ]; do
    case "$1" in
    --runs) runs=$2; shift 2 ;;
    --spinners) spinners=$2; shift 2 ;;
    --) shift; args=("$@"); break ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "busy-suite: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
case "$runs$spinners" in
*[!0-9]*) echo "busy-suite: --runs and --spinners take whole numbers" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.." || exit 2
target=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[ -n "$target" ] || target=${CARGO_TARGET_DIR:-$PWD/target}
out=$target/busy-suite
mkdir -p "$out"
summary=$out/summary.txt

# start_spinners / stop_spinners, stopped on exit (the benchmarks use the same).
. bench/spinners.sh

shm_entries() { find /dev/shm -maxdepth 1 -name 'weft-*' 2>/dev/null | sort; }
# Processes started from this tree's build output (test binaries, ranks, C programs, the launcher).
test_procs() { pgrep -af -- "$target/" 2>/dev/null; }

echo "busy-suite: building the tests (cargo test ${args[*]} --no-run)"
if ! cargo test "${args[@]}" --no-run >"$out/build.log" 2>&1; then
    tail -20 "$out/build.log"
    echo "busy-suite: the build failed (see $out/build.log)" >&2
    exit 1
fi

start_spinners "$spinners"

printf '%-4s %-5s %8s %-17s %s\n' run result wall_s load_before/after notes | tee "$summary"
failed=0
for run in $(seq 1 "$runs"); do
    log=$out/run-$run.log
    shm_before=$(shm_entries)
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    t0=$(date +%s)
    cargo test "${args[@]}" >"$log" 2>&1
    code=$?
    wall=$(($(date +%s) - t0))
    load_after=$(cut -d' ' -f1 /proc/loadavg)
    notes=()
    result=pass
    if [ "$code" -ne 0 ]; then
        result=FAIL
        fails=$(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$log" | sort -u | tr '\n' ' ')
        bins=$(grep -o 'to rerun pass `[^`]*`' "$log" | sed 's/to rerun pass //; s/`//g' |
            tr '\n' ';')
        # In-process ranks end their test process on a panic, without a FAILED line.
        panics=$(grep -h 'panicked' "$log" | head -3 | tr '\n' ';')
        notes+=("exit $code; failed: ${fails:-?} (${bins:-no rerun line}) ${panics}")
    fi
    left_shm=$(comm -13 <(echo "$shm_before") <(shm_entries) | tr '\n' ' ')
    if [ -n "${left_shm// /}" ]; then
        result=FAIL
        notes+=("/dev/shm left: $left_shm")
    fi
    left_procs=$(test_procs | tr '\n' ';')
    if [ -n "$left_procs" ]; then
        result=FAIL
        notes+=("processes left: $left_procs")
    fi
    [ "$result" = pass ] || failed=$((failed + 1))
    printf '%-4s %-5s %8s %-17s %s\n' "$run" "$result" "$wall" "$load_before/$load_after" \
        "${notes[*]:-}" | tee -a "$summary"
done
echo "busy-suite: $failed of $runs runs failed beside $spinners spinners; logs in $out" |
    tee -a "$summary"
[ "$failed" -eq 0 ]
