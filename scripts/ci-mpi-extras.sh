#!/usr/bin/env bash
# Installs what weft-mpi's ignored MPI tests need and writes the variables they read into
# DIR/env.sh:
#   cmake (Debian package)                             tests/findmpi.rs   CMAKE
#   PyPI mpich (mpicc_abi, mpi_abi.h, libmpi_abi.so.1)  tests/abi_swap.rs  MPICH_ABI_PREFIX
#   mpi4py built for the MPI 5.0 standard ABI with      tests/mpi4py.rs    MPI4PY_PATH,
#     weft's mpicc (a debug install under DIR)                             MPI4PY_PYTHON
#   mpi4py's own test suite (test/ of the same PyPI     tests/mpi4py.rs    MPI4PY_TESTS
#     source distribution)
# Usage: scripts/ci-mpi-extras.sh [DIR]   (DIR default: ${CARGO_TARGET_DIR:-target}/mpi-extras)
# then:  . DIR/env.sh && cargo test -p weft-mpi --test findmpi --test abi_swap --test mpi4py \
#          -- --include-ignored
# Idempotent: what is already there (same pinned versions) is kept; every step says what it
# did and how long it took. Missing Debian packages (cmake, python3-venv, python3-dev) are
# installed with apt-get when running as root; otherwise the script stops naming them.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

MPICH_VERSION=5.0.2
MPI4PY_VERSION=4.1.2

target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
target=$(cd "$target" && pwd)
dir=${1:-$target/mpi-extras}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
venv=$dir/venv
prefix=$dir/weft-prefix
m4p=$dir/mpi4py
sdist=$dir/mpi4py-sdist
m4t=$dir/mpi4py-tests

say() { echo "ci-mpi-extras: $*"; }
die() { echo "ci-mpi-extras: error: $*" >&2; exit 1; }

apt_updated=no
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "needs the Debian package(s) $* (apt-get install $*, as root)"
  fi
  export DEBIAN_FRONTEND=noninteractive
  if [ $apt_updated = no ]; then apt-get update -qq; apt_updated=yes; fi
  apt-get install -y -qq "$@" >/dev/null
}

# Runs "$@" and says how long it took.
timed() {
  local what=$1 t0=$SECONDS
  shift
  "$@" || return
  say "$what: done in $((SECONDS - t0)) s"
}

# 1. cmake, for CMake's FindMPI.
if ! command -v cmake >/dev/null 2>&1; then
  timed "apt-get install cmake" apt_install cmake
fi
cmake_bin=$(command -v cmake) || die "cmake still not on PATH"
say "cmake: $("$cmake_bin" --version | head -1) at $cmake_bin"

# 2. A Python virtual environment (Debian's python refuses pip installs outside one).
if [ ! -x "$venv/bin/pip" ]; then
  command -v python3 >/dev/null 2>&1 || apt_install python3
  if ! python3 -m venv "$venv" >/dev/null 2>&1; then
    rm -rf "$venv"
    timed "apt-get install python3-venv" apt_install python3-venv
    python3 -m venv "$venv" || die "python3 -m venv $venv failed"
  fi
  say "venv: created $venv ($("$venv/bin/python3" --version))"
else
  say "venv: have $venv ($("$venv/bin/python3" --version))"
fi
# A registry that stops answering must fail the run, not hang it.
pip=(timeout 900 "$venv/bin/pip" --disable-pip-version-check)
# Compiling mpi4py takes over 15 minutes on a loaded 2-core machine: an hour for that step.
pip_build=(timeout 3600 "$venv/bin/pip" --disable-pip-version-check)

# 3. PyPI's mpich: another implementation of the standard ABI (mpicc_abi, libmpi_abi.so.1).
if [ -x "$venv/bin/mpicc_abi" ] && [ -f "$venv/include/mpi_abi.h" ] &&
  "${pip[@]}" show mpich 2>/dev/null | grep -qx "Version: $MPICH_VERSION"; then
  say "mpich $MPICH_VERSION: have it in $venv"
else
  timed "pip install mpich==$MPICH_VERSION" "${pip[@]}" install -q "mpich==$MPICH_VERSION"
fi
[ -x "$venv/bin/mpicc_abi" ] || die "pip's mpich did not install $venv/bin/mpicc_abi"

# 4. An installed weft prefix, for its mpicc (the tests install their own fresh prefixes).
timed "cargo build -p weft-mpi -p weft-cli" cargo build -q -p weft-mpi -p weft-cli
PROFILE=debug sh crates/weft-mpi/install.sh "$prefix" "$target" >/dev/null
say "weft: installed into $prefix"

# 5a. mpi4py's source distribution from PyPI (kept): what the build below compiles, and the
#     test suite it ships.
sdist_file=$sdist/mpi4py-$MPI4PY_VERSION.tar.gz
if [ -f "$sdist_file" ]; then
  say "mpi4py $MPI4PY_VERSION source: have $sdist_file"
else
  mkdir -p "$sdist"
  timed "pip download mpi4py==$MPI4PY_VERSION (source)" "${pip[@]}" download -q --no-deps \
    --no-binary mpi4py -d "$sdist" "mpi4py==$MPI4PY_VERSION" >"$dir/mpi4py-download.log" 2>&1 ||
    die "downloading mpi4py's source failed (log: $dir/mpi4py-download.log)"
fi
[ -f "$sdist_file" ] || die "pip did not leave $sdist_file"
if [ -f "$m4t/main.py" ] && [ "$(cat "$m4t/.weft-version" 2>/dev/null)" = "$MPI4PY_VERSION" ]; then
  say "mpi4py $MPI4PY_VERSION test suite: have it in $m4t"
else
  rm -rf "$m4t" "$m4t.tmp"
  mkdir -p "$m4t.tmp"
  tar -xzf "$sdist_file" -C "$m4t.tmp" --strip-components=2 "mpi4py-$MPI4PY_VERSION/test" ||
    die "no test/ in $sdist_file"
  echo "$MPI4PY_VERSION" >"$m4t.tmp/.weft-version"
  mv "$m4t.tmp" "$m4t"
  say "mpi4py $MPI4PY_VERSION test suite: unpacked into $m4t"
fi

# 5b. mpi4py built from source for the standard ABI with weft's mpicc (never a cached wheel:
#    a wheel built elsewhere would not show that our mpicc and mpi.h can build it).
#    The build is kept only for the same mpi4py and the same header and wrapper: a changed
#    mpi.h must be compiled against mpi4py again.
m4p_key="$MPI4PY_VERSION $(cat crates/weft-mpi/include/*.h crates/weft-mpi/bin/mpicc | sha256sum | cut -c1-16)"
if ls "$m4p"/mpi4py/MPI.*.so >/dev/null 2>&1 && [ "$(cat "$m4p/.weft-build" 2>/dev/null)" = "$m4p_key" ]; then
  say "mpi4py $MPI4PY_VERSION: have it in $m4p"
else
  inc=$("$venv/bin/python3" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  if [ ! -f "$inc/Python.h" ]; then
    timed "apt-get install python3-dev" apt_install python3-dev
    [ -f "$inc/Python.h" ] || die "no $inc/Python.h: install the headers of $("$venv/bin/python3" --version)"
  fi
  rm -rf "$m4p" "$m4p.tmp"
  say "mpi4py $MPI4PY_VERSION: building with MPI4PY_BUILD_MPIABI=1 MPICC=$prefix/bin/mpicc (minutes)"
  t0=$SECONDS
  if ! MPI4PY_BUILD_MPIABI=1 MPICC="$prefix/bin/mpicc" "${pip_build[@]}" install -q --no-cache-dir \
    --no-binary mpi4py --target "$m4p.tmp" "$sdist_file" >"$dir/mpi4py-build.log" 2>&1; then
    tail -40 "$dir/mpi4py-build.log" >&2
    die "building mpi4py failed (log: $dir/mpi4py-build.log)"
  fi
  say "build mpi4py==$MPI4PY_VERSION: done in $((SECONDS - t0)) s (log: $dir/mpi4py-build.log)"
  echo "$m4p_key" >"$m4p.tmp/.weft-build"
  mv "$m4p.tmp" "$m4p"
fi
ls "$m4p"/mpi4py/MPI.*.so >/dev/null 2>&1 || die "no mpi4py extension in $m4p/mpi4py"

cat >"$dir/env.sh" <<EOF
# Written by scripts/ci-mpi-extras.sh: the variables weft-mpi's ignored tests read.
export CMAKE='$cmake_bin'
export MPICH_ABI_PREFIX='$venv'
export MPI4PY_PATH='$m4p'
export MPI4PY_PYTHON='$venv/bin/python3'
export MPI4PY_TESTS='$m4t'
EOF
say "wrote $dir/env.sh:"
sed -n 's/^export /  /p' "$dir/env.sh"
