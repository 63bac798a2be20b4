#!/usr/bin/env bash
# Plays a newcomer on a fresh clone (CI's own checkout is one; .ci/run runs this after its
# test step): runs the README's first command (build everything, run the ring example),
# checks that its second command is the
# test command CI has just run (so it is not run twice), runs the README's MPI commands (with
# a scratch prefix for /opt/weft), then every mpiexec option the README lists on the
# README's MPI program `where` across two network-namespace hosts, checking rank placement,
# environment, stdin, output files and bindings, and then the README's multi-host example.
# The README's code blocks are read from README.md, so the script and the README cannot
# drift apart. Needs root and iproute2 (namespace hosts) and a C compiler; prints the wall
# time of each README command.
#
#   scripts/newcomer.sh [--skip-build]     (--skip-build: the release build is already there)
#   scripts/newcomer.sh --mpiexec-only PREFIX
#       only the mpiexec checks (3 and 4), with the MPI installed under PREFIX (for instance
#       by `PROFILE=debug crates/weft-mpi/install.sh PREFIX` after a debug build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
skip_build=no
only_prefix=
case "${1:-}" in
  --skip-build) skip_build=yes ;;
  --mpiexec-only) only_prefix=${2:?--mpiexec-only needs the install prefix} ;;
esac

# A newcomer has no CARGO_TARGET_DIR: the README's paths are under ./target.
unset CARGO_TARGET_DIR
say() { echo "== newcomer: $*"; }
fail() { echo "newcomer: FAILED: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || fail "the namespace hosts need root"
command -v ip >/dev/null || fail "ip (iproute2) is missing"

# The n-th ```sh block of README.md, or the one after the marker <!-- newcomer: NAME -->.
block_nth() {
  awk -v want="$1" '/^```sh$/ { n++; if (n == want) { on = 1; next } } /^```$/ { on = 0 } on' README.md
}
block_named() {
  awk -v want="<!-- newcomer: $1 -->" '$0 == want { armed = 1; next }
    armed && /^```sh$/ { on = 1; armed = 0; next } /^```$/ { on = 0 } on' README.md
}

work=$(mktemp -d "${TMPDIR:-/tmp}/weft-newcomer-XXXXXX")
hosts_up=()
cleanup() {
  if ((${#hosts_up[@]})); then scripts/testhosts.sh down "${hosts_up[@]}" >/dev/null 2>&1 || true; fi
  rm -rf "$work" "$root/where"
}
trap cleanup EXIT

if [ -z "$only_prefix" ]; then
# 1. The README's two commands.
first=$(block_nth 1)
second=$(block_nth 2)
[ -n "$first" ] || fail "README.md has no first sh block"
[ "$second" = "cargo test --workspace" ] || fail "README's second command is not 'cargo test --workspace' but: $second"
grep -qx 'cargo test --workspace' .ci/run || fail ".ci/run does not run the README's test command"
if [ "$skip_build" = no ]; then
  say "README command 1: $first"
  t0=$SECONDS
  out=$(bash -euc "$first" 2>&1) || { echo "$out"; fail "README command 1"; }
  say "README command 1 took $((SECONDS - t0)) s"
else
  out=$(bash -euc "${first#*&& }" 2>&1) || { echo "$out"; fail "README command 1 (run part)"; }
fi
echo "$out" | tail -4
for r in 0 1 2 3; do
  echo "$out" | grep -q "^\[$r\] " || fail "the ring example printed nothing for rank $r"
done
say "README command 2 (cargo test --workspace) is CI's test step, which ran before this script"

# 2. The README's MPI commands, with a scratch prefix for /opt/weft.
prefix="$work/opt-weft"
mpi=$(block_named mpi)
[ -n "$mpi" ] || fail "README.md has no block marked mpi"
say "README MPI commands (prefix $prefix for /opt/weft)"
t0=$SECONDS
out=$(bash -euc "${mpi//\/opt\/weft/$prefix}" 2>&1) || { echo "$out"; fail "README MPI commands"; }
say "README MPI commands took $((SECONDS - t0)) s"
echo "$out" | tail -4
[ "$(echo "$out" | grep -c '^rank=.* size=4 .* sum=6$')" = 4 ] || { echo "$out"; fail "where on 4 ranks"; }
mv where "$work/where"
else
  prefix=$(cd "$only_prefix" && pwd)
  "$prefix/bin/mpicc" crates/weft-mpi/examples/c/where.c -o "$work/where" || fail "mpicc where.c"
fi
where=$work/where
mpiexec=$prefix/bin/mpiexec
"$prefix/bin/mpicc" --showme crates/weft-mpi/examples/c/where.c | grep -q -- "-lmpi_abi" || fail "mpicc --showme"
"$prefix/bin/mpicc" -static crates/weft-mpi/examples/c/where.c -o "$work/where-static" || fail "mpicc -static"
if ldd "$work/where-static" 2>&1 | grep -q libmpi_abi; then fail "mpicc -static linked libmpi_abi.so"; fi
say "ok: mpicc --showme and -static"

# Runs mpiexec ARGS; its stdout in $out, stderr in $err, exit code in $rc.
run() {
  set +e
  out=$("$mpiexec" "$@" 2>"$work/err")
  rc=$?
  set -e
  err=$(cat "$work/err")
}
# expect DESCRIPTION REGEX COUNT: COUNT lines of $out match REGEX, and mpiexec succeeded.
expect() {
  local n
  n=$(echo "$out" | grep -cE -e "$2" || true)
  if [ "$rc" != 0 ] || [ "$n" != "$3" ]; then
    echo "--- stdout:"; echo "$out"; echo "--- stderr:"; echo "$err"
    fail "$1 (exit $rc, $n of $3 lines match $2)"
  fi
  say "ok: $1"
}
# refused DESCRIPTION REGEX: mpiexec exited 2 with one line on stderr matching REGEX.
refused() {
  if [ "$rc" != 2 ] || ! echo "$err" | grep -qE -e "$2" || [ "$(echo "$err" | wc -l)" != 1 ]; then
    echo "--- stderr:"; echo "$err"
    fail "$1 (exit $rc)"
  fi
  say "ok: $1"
}

# 3. Every mpiexec option on this machine.
me=$(hostname)
run -np 3 "$where"
expect "-np 3" "^rank=[0-2] size=3 node=$me " 3
run -np 2 "$work/where-static"
expect "a program built with mpicc -static" "^rank=[01] size=2 .* sum=1$" 2
run --host localhost:2 -launcher-exec /bin/false "$where"
expect "--host localhost starts here (the launcher, /bin/false, is not used)" "^rank=[01] size=2 node=$me " 2
run --host "$me:2" -launcher-exec /bin/false "$where"
expect "--host with this machine's name starts here" "^rank=[01] size=2 node=$me " 2
run -n 2 --allow-run-as-root --oversubscribe --mca btl self,vader "$where"
expect "--allow-run-as-root, --oversubscribe, --mca accepted" "^rank=[01] size=2 " 2
echo "$err" | grep -q -- "--mca btl self,vader has no meaning for weft" || fail "--mca gave no warning"
run -n 2 -l "$where"
expect "-l tags lines" '^\[[01]\] rank=[01] ' 2
run -n 2 -prepend-rank "$where"
expect "-prepend-rank tags lines" '^\[[01]\] rank=[01] ' 2
ncpu=$(nproc)
run -n 2 --bind-to core --report-bindings "$where"
expect "--bind-to core pins each rank to one CPU" '^rank=[01] .* cpus=[0-9]+ ' 2
[ "$(echo "$err" | grep -c 'bound to CPU')" = 2 ] || { echo "$err"; fail "--report-bindings"; }
say "ok: --report-bindings"
run -n 2 --bind-to none "$where"
if [ "$ncpu" -gt 1 ]; then
  expect "--bind-to none leaves every CPU" '^rank=[01] .* cpus=[0-9]+[-,]' 2
fi
printf 'one\ntwo\n' > "$work/input"
set +e; out=$("$mpiexec" -n 3 "$where" stdin < "$work/input" 2>"$work/err"); rc=$?; set -e; err=$(cat "$work/err")
expect "stdin feeds rank 0" '^rank=0 .* stdin=8 |^rank=[12] .* stdin=0 ' 3
set +e; out=$("$mpiexec" -n 3 --stdin all "$where" stdin < "$work/input" 2>"$work/err"); rc=$?; set -e; err=$(cat "$work/err")
expect "--stdin all" '^rank=[0-2] .* stdin=8 ' 3
set +e; out=$("$mpiexec" -n 3 --stdin 2 "$where" stdin < "$work/input" 2>"$work/err"); rc=$?; set -e; err=$(cat "$work/err")
expect "--stdin 2" '^rank=2 .* stdin=8 |^rank=[01] .* stdin=0 ' 3
run -n 2 --output-filename "$work/out" "$where"
expect "--output-filename copies to the terminal" '^rank=[01] ' 2
for r in 0 1; do
  grep -q "^rank=$r " "$work/out/1/rank.$r/stdout" || fail "--output-filename: $work/out/1/rank.$r/stdout"
done
say "ok: --output-filename files"
run -n 2 --output-filename "$work/out2:nocopy" "$where"
expect "--output-filename :nocopy" '^rank=' 0
grep -q "^rank=1 " "$work/out2/1/rank.1/stdout" || fail "--output-filename :nocopy files"
run --help
expect "--help" '^  --hostfile' 1
run --version
expect "--version" '^commit ' 1
run -wdir /tmp "$where"
refused "-wdir is refused with what to use" 'cd to the folder'
run --bind-to socket "$where"
refused "--bind-to socket is refused" '--bind-to core'
run -frobnicate "$where"
refused "an unknown option is named" 'unknown option -frobnicate'
run --host fa,fb -launcher fork "$where"
expect "-launcher fork: every host here" '^rank=0 .* node=fa |^rank=1 .* node=fb ' 2

# 4. Every host option on two namespace hosts.
tag=$((RANDOM % 900 + 100))
n1="nc${tag}a"; n2="nc${tag}b"
scripts/testhosts.sh up --net "10.214.$((tag % 200))" "$n1" "$n2" >/dev/null
hosts_up=("$n1" "$n2")
ns=(-launcher-exec "ip netns exec")
printf '# Open MPI\n%s slots=2\n%s slots=2 max_slots=4\n' "$n1" "$n2" > "$work/hosts.ompi"
printf '%s:2\n%s:2\n' "$n1" "$n2" > "$work/hosts.mpich"
run --hostfile "$work/hosts.ompi" "${ns[@]}" "$where"
expect "--hostfile (Open MPI format): filled by slot" "^rank=[01] size=4 node=$n1 |^rank=[23] size=4 node=$n2 " 4
run -f "$work/hosts.mpich" --map-by node "${ns[@]}" "$where"
expect "-f (MPICH format) --map-by node: round robin" "^rank=[02] size=4 node=$n1 |^rank=[13] size=4 node=$n2 " 4
run -machinefile "$work/hosts.mpich" --map-by slot "${ns[@]}" "$where"
expect "-machinefile --map-by slot" "^rank=[01] size=4 node=$n1 |^rank=[23] size=4 node=$n2 " 4
run --hostfile "$work/hosts.ompi" -ppn 1 "${ns[@]}" "$where"
expect "-ppn 1" "^rank=0 size=2 node=$n1 |^rank=1 size=2 node=$n2 " 2
run --hostfile "$work/hosts.ompi" --npernode 1 "${ns[@]}" "$where"
expect "--npernode 1" "^rank=0 size=2 node=$n1 |^rank=1 size=2 node=$n2 " 2
run --hostfile "$work/hosts.ompi" --map-by ppr:2:node "${ns[@]}" "$where"
expect "--map-by ppr:2:node" "^rank=[01] size=4 node=$n1 |^rank=[23] size=4 node=$n2 " 4
run --host "$n1,$n2" -genv WHERE_VAR "a b" "${ns[@]}" "$where"
expect "-genv reaches every host" "^rank=[01] .* var=a b " 2
run --host "$n1,$n2" -env WHERE_VAR e "${ns[@]}" "$where"
expect "-env reaches every host" "^rank=[01] .* var=e " 2
export WHERE_VAR=x; run --host "$n1,$n2" -x WHERE_VAR "${ns[@]}" "$where"
expect "-x NAME reaches every host" "^rank=[01] .* var=x " 2
export WHERE_VAR=all; run --host "$n1,$n2" -genvall "${ns[@]}" "$where"
expect "-genvall reaches every host" "^rank=[01] .* var=all " 2
export WHERE_VAR=list; run --host "$n1,$n2" -genvlist WHERE_VAR,HOME "${ns[@]}" "$where"
expect "-genvlist reaches every host" "^rank=[01] .* var=list " 2
unset WHERE_VAR
run --host "$n1,$n2" "${ns[@]}" "$where"
expect "other variables stay home" "^rank=[01] .* var=- " 2
set +e; out=$("$mpiexec" --host "$n1:2,$n2" "${ns[@]}" "$where" stdin < "$work/input" 2>"$work/err"); rc=$?; set -e; err=$(cat "$work/err")
expect "stdin reaches rank 0 on another host" "^rank=0 .* node=$n1 .* stdin=8 |^rank=[12] .* stdin=0 " 3
set +e; out=$("$mpiexec" --host "$n1,$n2" --stdin all "${ns[@]}" "$where" stdin < "$work/input" 2>"$work/err"); rc=$?; set -e; err=$(cat "$work/err")
expect "--stdin all across hosts" "^rank=[01] .* stdin=8 " 2
run --host "$n1,$n2" --output-filename "$work/out3" -l "${ns[@]}" "$where"
expect "--output-filename across hosts, -l" '^\[[01]\] rank=' 2
grep -q "node=$n2 " "$work/out3/1/rank.1/stdout" || fail "--output-filename across hosts: rank 1's file"
run --host "$n1,$n2" --bind-to core --report-bindings "${ns[@]}" "$where"
expect "--bind-to core across hosts" '^rank=[01] .* cpus=[0-9]+ ' 2
[ "$(echo "$err" | grep -c 'bound to CPU')" = 2 ] || { echo "$err"; fail "--report-bindings across hosts"; }
say "ok: --report-bindings across hosts"
scripts/testhosts.sh down "$n1" "$n2" >/dev/null
hosts_up=()

if [ -n "$only_prefix" ]; then
  say "mpiexec checks passed"
  exit 0
fi

# 5. The README's multi-host example, as written.
multi=$(block_named multihost)
[ -n "$multi" ] || fail "README.md has no block marked multihost"
say "README multi-host example"
hosts_up=(h1 h2)
out=$(bash -euc "$multi" 2>&1) || { echo "$out"; fail "README multi-host example"; }
hosts_up=()
echo "$out" | tail -3
for r in 0 1 2 3; do
  echo "$out" | grep -q "^\[$r\] " || fail "the multi-host ring printed nothing for rank $r"
done
say "all checks passed"
