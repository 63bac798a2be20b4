#!/bin/sh
# Installs weft's MPI interface under PREFIX: lib/libmpi_abi.so.1 with the libmpi_abi.so and
# libmpi.so links, lib/libmpi_abi.a, include/mpi.h, bin/mpicc mpicxx mpiexec mpirun (and
# the weft binary when found), lib/pkgconfig/mpi.pc.
#   crates/weft-mpi/install.sh PREFIX [TARGET_DIR]
# TARGET_DIR is the cargo target directory holding the built library (default: target,
# or $CARGO_TARGET_DIR); the profile is $PROFILE (default debug).
set -e
prefix=${1:?usage: install.sh PREFIX [TARGET_DIR]}
crate=$(cd "$(dirname "$0")" && pwd)
target=${2:-${CARGO_TARGET_DIR:-$crate/../../target}}
profile=${PROFILE:-debug}
lib="$target/$profile"
[ -f "$lib/libmpi_abi.so" ] || { echo "install.sh: $lib/libmpi_abi.so not built (cargo build -p weft-mpi)" >&2; exit 1; }
mkdir -p "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/bin"
prefix=$(cd "$prefix" && pwd)
cp "$lib/libmpi_abi.so" "$prefix/lib/libmpi_abi.so.1.tmp" && mv "$prefix/lib/libmpi_abi.so.1.tmp" "$prefix/lib/libmpi_abi.so.1"
ln -sf libmpi_abi.so.1 "$prefix/lib/libmpi_abi.so"
ln -sf libmpi_abi.so.1 "$prefix/lib/libmpi.so"
[ -f "$lib/libmpi_abi.a" ] && cp "$lib/libmpi_abi.a" "$prefix/lib/libmpi_abi.a"
cp "$crate/include/mpi.h" "$crate/include/mpi_proto.h" "$prefix/include/"
for f in mpicc mpiexec; do cp "$crate/bin/$f" "$prefix/bin/$f"; chmod +x "$prefix/bin/$f"; done
ln -sf mpicc "$prefix/bin/mpicxx"
ln -sf mpiexec "$prefix/bin/mpirun"
[ -x "$lib/weft" ] && cp "$lib/weft" "$prefix/bin/weft"
sed "s|@PREFIX@|$prefix|g" "$crate/mpi.pc.in" > "$prefix/lib/pkgconfig/mpi.pc"
echo "installed weft MPI into $prefix"
