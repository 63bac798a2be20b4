#!/usr/bin/env bash
# Start-up benchmark of docs/bench/startup.md: launch + MPI_Init + one MPI_Barrier +
# MPI_Finalize (bench/c/startup.c) at 4, 16 and 64 ranks under
#   weft run                 (weft's MPI, the C program built with weft's mpicc)
#   srun --mpi=pmix          (the same weft program, a step of one Slurm allocation)
#   srun --mpi=pmix          (Open MPI's build of the program)
#   mpirun (Open MPI)        (Open MPI's build)
#   srun --mpi=pmi2, mpiexec.hydra (the weft program; for reference)
# timed by `weft bench startup`: every launcher at every size once per round, interleaved,
# medians over the rounds. Run twice: on a quiet machine, and with two spinning processes
# (`yes > /dev/null`) beside. Prints both tables and the ratios the issue asks for.
#
#   bench/startup.sh [REPS] [OUT_DIR]      (defaults: 5 rounds, target/startup-bench)
#
# Needs root, a running Slurm cluster (eval "$(bash scripts/ci-launchers.sh start)", which
# also installs Open MPI and MPICH), and builds weft in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
out=${2:-${CARGO_TARGET_DIR:-target}/startup-bench}
sizes=4,16,64
[ -n "${SLURM_CONF:-}" ] || { echo "startup.sh: SLURM_CONF is not set (scripts/ci-launchers.sh start)" >&2; exit 2; }
for t in srun salloc scancel mpicc.openmpi mpirun.openmpi mpiexec.hydra yes; do
  command -v "$t" >/dev/null || { echo "startup.sh: $t is missing (scripts/ci-launchers.sh start)" >&2; exit 2; }
done
mkdir -p "$out"
out=$(cd "$out" && pwd)

cargo build -q --release -p weft-cli -p weft-mpi -p weft-shmem
"${CARGO_TARGET_DIR:-target}/release/weft" install --prefix "$out/prefix" >/dev/null
W=$out/prefix/bin/weft
"$out/prefix/bin/mpicc" -O2 bench/c/startup.c -o "$out/startup.weft"
mpicc.openmpi -O2 bench/c/startup.c -o "$out/startup.ompi"

# One allocation for every srun step, so each step times the step launch, not scheduling.
alloc=$(salloc -n 64 -O --no-shell 2>&1)
J=$(echo "$alloc" | grep -o 'allocation [0-9]*' | cut -d' ' -f2)
[ -n "$J" ] || { echo "startup.sh: salloc failed: $alloc" >&2; exit 1; }
spinners=()
cleanup() {
  for p in "${spinners[@]}"; do kill "$p" 2>/dev/null || true; done
  scancel "$J" 2>/dev/null || true
}
trap cleanup EXIT

bench() {
  "$W" bench startup -n "$sizes" --reps "$reps" --timeout 300 \
    --compare "weft-run=$W run -n {n} $out/startup.weft" \
    --compare "srun-pmix-weft=srun --jobid=$J --overlap --mpi=pmix -O -n {n} $out/startup.weft" \
    --compare "srun-pmix-ompi=srun --jobid=$J --overlap --mpi=pmix -O -n {n} $out/startup.ompi" \
    --compare "mpirun-ompi=mpirun.openmpi --allow-run-as-root --oversubscribe -n {n} $out/startup.ompi" \
    --compare "srun-pmi2-weft=srun --jobid=$J --overlap --mpi=pmi2 -O -n {n} $out/startup.weft" \
    --compare "hydra-weft=mpiexec.hydra -n {n} $out/startup.weft"
}

# The ratios: weft run / Open MPI's mpirun, and weft / Open MPI both under srun --mpi=pmix.
ratios() {
  awk '$1 ~ /^[0-9]+$/ { m[$1 " " $2] = $3; n[$1] = 1 }
    END { printf "%6s %26s %34s\n", "ranks", "weft run / mpirun (ompi)", "srun pmix: weft / ompi";
      for (k in n) printf "%6d %26.3f %34.3f\n", k, m[k " weft-run"] / m[k " mpirun-ompi"],
        m[k " srun-pmix-weft"] / m[k " srun-pmix-ompi"] }' "$1" | sort -n
}

for phase in quiet loaded; do
  if [ "$phase" = loaded ]; then
    for _ in 1 2; do yes >/dev/null & spinners+=($!); done
  fi
  echo "== $phase (load average $(cut -d' ' -f1-3 /proc/loadavg))"
  bench | tee "$out/$phase.txt"
  ratios "$out/$phase.txt" | tee "$out/$phase.ratios"
  for p in "${spinners[@]}"; do kill "$p" 2>/dev/null || true; done
  spinners=()
done
echo "(tables in $out)"
