#!/usr/bin/env bash
# What weft's launcher tests need, on a Debian machine (root only):
#   scripts/ci-launchers.sh start   installs (apt-get, when missing) Slurm and munge, MPICH's
#                                   Hydra (mpich), Open MPI (openmpi-bin, libopenmpi-dev),
#                                   the PMIx headers (libpmix-dev), cmake, environment-modules
#                                   and pkg-config; starts the one-host Slurm cluster of
#                                   scripts/ci-slurm.sh and its two-node cluster in network
#                                   namespaces (start2); prints the `export SLURM_CONF=...`
#                                   and `export WEFT_TEST_SLURM2_CONF=...` lines the tests
#                                   need (eval them)
#   scripts/ci-launchers.sh stop    stops both clusters
# Both are idempotent. The tests: `cargo test -p weft-mpi --test launchers`, `-p weft-boot
# --test pmix_headers` and `-p weft-cli --test install`, each with `-- --include-ignored`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
case "${1:-start}" in
  start)
    need=()
    command -v mpiexec.hydra >/dev/null 2>&1 || need+=(mpich)
    command -v mpirun.openmpi >/dev/null 2>&1 || need+=(openmpi-bin libopenmpi-dev)
    [ -f /usr/lib/x86_64-linux-gnu/pkgconfig/pmix.pc ] || need+=(libpmix-dev)
    command -v cmake >/dev/null 2>&1 || need+=(cmake)
    command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config)
    [ -f /usr/share/modules/init/bash ] || need+=(environment-modules)
    command -v srun >/dev/null 2>&1 || need+=(slurm-wlm munge)
    if ((${#need[@]})); then
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2
      apt-get install -y -qq "${need[@]}" >/dev/null
    fi
    bash "$here/ci-slurm.sh" start
    bash "$here/ci-slurm.sh" start2
    ;;
  stop)
    bash "$here/ci-slurm.sh" stop2
    bash "$here/ci-slurm.sh" stop
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
