//! Builds `itest/c/typelarge.c` (it sees only `mpi.h`) with our `mpicc` from an `install.sh`
//! prefix and runs it at 1 and 2 ranks: the MPI-4 large-count datatype constructors build
//! the same types as their `int` forms, take counts above 2^31, decode through
//! MPI_Type_get_envelope_c/get_contents_c, and refuse bad arguments with the right class.
//! No job may leave a `/dev/shm/weft-*` segment behind.

mod common;

#[test]
fn large_count_datatype_constructors() {
    common::run_c_ok(
        common::shared_prefix("mpi-prefix-large"),
        "typelarge",
        1..=2,
        &[],
    );
}
