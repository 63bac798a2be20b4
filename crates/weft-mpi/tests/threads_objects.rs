//! MPI_THREAD_MULTIPLE and the calls that create objects, synchronise windows or flush
//! buffers (`itest/c/thread_multiple_objects.c`): a thread blocked in a communicator creation
//! (split, split_type, create, create_group, create_from_group, Cartesian, graph and
//! distributed graph topologies, dup, intercommunicator creation from a peer communicator
//! and from groups, merge, split and create on an intercommunicator), a window creation
//! (create, allocate, allocate_shared, create_dynamic), a window synchronisation (fence,
//! free, start/complete/wait, lock exclusive and shared, lock_all, with every flush form),
//! a file call (open, write_at_all/read_at_all, write_all/read_all, set_view, set_size,
//! preallocate, sync, set_atomicity, seek_shared, write_ordered, close) or
//! MPI_Buffer_detach lets the other threads of its process send and receive, and the
//! call completes while another thread waits in MPI_Recv; so do the reductions that used
//! to finish inside their start (MPI_Reduce_scatter(_block) and the nonblocking forms on an
//! intercommunicator, MPI_Allreduce/MPI_Reduce and the nonblocking forms with a user
//! operation on a derived datatype), whose results are checked. The program's ranks depend on
//! each other so that a call which keeps the other threads out while it waits deadlocks
//! (the job's bounded wait then fails the test). Jobs of 1, 2, 3, 4 and 7 ranks; again at
//! 2 and 3 ranks with `WEFT_SHM_CMA=off`, where the windows over the program's memory reach
//! the other members through their one-sided services (lock words and completion over the
//! service lanes).

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn creations_windows_files_and_buffer_detach_let_other_threads_in() {
    let prog = common::build_c(prefix(), "thread_multiple_objects");
    for n in [1, 2, 3, 4, 7] {
        let out = common::run_c_args(&prog, n, &[], &[]);
        assert_eq!(
            out.exit_code,
            0,
            "thread_multiple_objects at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for n in [2, 3] {
        let out = common::run_c_args(&prog, n, &[], &[("WEFT_SHM_CMA", "off")]);
        assert_eq!(
            out.exit_code,
            0,
            "thread_multiple_objects at {n} ranks without CMA:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
