//! MPI_THREAD_MULTIPLE and the calls that create objects or flush buffers
//! (`itest/c/thread_multiple_objects.c`): a thread blocked in a communicator creation
//! (split, split_type, create, create_group, create_from_group, Cartesian, graph and
//! distributed graph topologies, dup, intercommunicator creation from a peer communicator
//! and from groups, merge, split and create on an intercommunicator) or in
//! MPI_Buffer_detach lets the other threads of its
//! process send and receive, and the creation completes while another thread waits in
//! MPI_Recv. The program's ranks depend on each other so that a creation which keeps the
//! other threads out while it waits deadlocks (the job's bounded wait then fails the test).
//! Jobs of 1, 2, 3, 4 and 7 ranks.

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn creations_and_buffer_detach_let_other_threads_in() {
    let prog = common::build_c(prefix(), "thread_multiple_objects");
    for n in [1, 2, 3, 4, 7] {
        let out = common::run_c_args(&prog, n, &[], &[("WEFT_MPI_THREAD_MULTIPLE", "1")]);
        assert_eq!(
            out.exit_code,
            0,
            "thread_multiple_objects at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
