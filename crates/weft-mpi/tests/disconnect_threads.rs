//! MPI_Comm_disconnect under MPI_THREAD_MULTIPLE (`itest/c/disconnect_threads.c`): a thread
//! waiting in the disconnect of a duplicate of MPI_COMM_WORLD, or of an intercommunicator
//! between the world's halves, lets the other threads of its process into MPI. Rank 0's
//! disconnect completes only after another thread of rank 0 has sent the message the other
//! ranks wait for before their disconnect, so a disconnect that keeps the process's lock
//! while it waits deadlocks (the job's bounded wait, [`common::JOB_TIMEOUT`], then fails the
//! test). Disconnecting MPI_COMM_WORLD, MPI_COMM_SELF or MPI_COMM_NULL fails with
//! MPI_ERR_COMM. Jobs of 1 (the error checks and the duplicate only), 2, 3 and 4 ranks;
//! again at 2, 3 and 4 ranks with only rank 0 at MPI_THREAD_MULTIPLE and the others at
//! MPI_THREAD_SINGLE, whose disconnects must meet rank 0's. Each job leaves nothing in
//! `/dev/shm`.

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn disconnect_lets_other_threads_in_under_thread_multiple() {
    let prog = common::build_c(prefix(), "disconnect_threads");
    for n in [1, 2, 3, 4] {
        let out = common::run_c(&prog, n, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "disconnect_threads at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn disconnect_meets_ranks_at_lower_thread_levels() {
    let prog = common::build_c(prefix(), "disconnect_threads");
    for n in [2, 3, 4] {
        let out = common::run_c_args(&prog, n, &["mixed"], &[]);
        assert_eq!(
            out.exit_code,
            0,
            "disconnect_threads mixed at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
