//! MPI_THREAD_MULTIPLE (`itest/c/thread_multiple.c`): four threads per rank doing blocking
//! and nonblocking point-to-point, probes and matched probes, collectives and
//! communicator duplication at once, with a chain of blocking calls that only completes if a
//! waiting call lets the other threads of its rank in. Jobs of 1, 2, 3, 4 and 7 ranks, with
//! no knob (MPI_THREAD_MULTIPLE is provided when asked); with `WEFT_MPI_THREAD_MULTIPLE=0`
//! the library provides MPI_THREAD_SERIALIZED and says so. Ranks asking for different
//! levels still meet.

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

/// Runs `prog args` as a job of `n` ranks with `env` added (a hang catcher of
/// [`common::JOB_TIMEOUT`]); it must exit 0 and leave no `/dev/shm` segment behind.
fn run_ok(prog: &Path, n: u32, args: &[&str], env: &[(&str, &str)]) {
    let out = common::run_c_args(prog, n, args, env);
    assert_eq!(
        out.exit_code,
        0,
        "{} {args:?} at {n} ranks with {env:?}:\nstdout:\n{}\nstderr:\n{}",
        prog.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn threads_call_mpi_at_once_under_thread_multiple() {
    let prog = common::build_c(prefix(), "thread_multiple");
    for n in [1, 2, 3, 4, 7] {
        run_ok(&prog, n, &[], &[]);
    }
}

#[test]
fn thread_multiple_is_capped_by_the_knob() {
    let prog = common::build_c(prefix(), "thread_multiple");
    for n in [1, 3] {
        run_ok(
            &prog,
            n,
            &["serialized"],
            &[("WEFT_MPI_THREAD_MULTIPLE", "0")],
        );
    }
}

/// Ranks that ask for different thread levels (`itest/c/thread_levels_mixed.c`: rank 0
/// MPI_THREAD_MULTIPLE, odd ranks MPI_THREAD_SERIALIZED, other even ranks
/// MPI_THREAD_FUNNELED) still match in blocking and nonblocking collectives, MPI_Comm_dup and
/// _split, intercommunicator creation and merging and a window's creation and fences: the
/// init agrees that every rank takes the blocking calls' nonblocking twins. Jobs of 1-4 and
/// 7 ranks.
#[test]
fn ranks_at_different_thread_levels_still_meet() {
    let prog = common::build_c(prefix(), "thread_levels_mixed");
    for n in [1, 2, 3, 4, 7] {
        run_ok(&prog, n, &[], &[]);
    }
}
