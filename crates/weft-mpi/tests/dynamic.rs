//! Process management's ports, names and joins (`itest/c/ports.c`): the halves of
//! MPI_COMM_WORLD meet on a published port (after two strangers the accept must drop),
//! trade point-to-point messages and collectives of 0, 7 and 1 MiB + 3 bytes over the
//! intercommunicator and its merge, and disconnect; two ranks join over their own socket;
//! unknown names, services and ports fail with MPI_ERR_NAME, MPI_ERR_SERVICE and
//! MPI_ERR_PORT. Jobs of 1, 2, 3, 4 and 7 ranks, on one node and on two simulated hosts
//! (ranks of both halves over TCP), and a process started without a launcher.

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn halves_of_a_job_accept_and_connect_through_a_published_port() {
    let prog = common::build_c(prefix(), "ports");
    for n in [1, 2, 3, 4, 7] {
        let out = common::run_c(&prog, n, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "ports at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The same on two simulated hosts (`a:2,b:1`: the halves' leaders on different nodes),
/// ranks dealt in order, so the intercommunicator's traffic crosses TCP.
#[test]
fn ports_connect_groups_on_two_hosts() {
    let prog = common::build_c(prefix(), "ports");
    for hosts in ["a:1,b:1", "a:2,b:1", "a:2,b:2"] {
        let out = common::run_c_hosts(prefix(), &prog, hosts, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "ports on {hosts}:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Started without a launcher (a singleton: no store, no job secret), the names are the
/// process's own and the port errors are the same.
#[test]
fn a_singleton_publishes_to_itself() {
    let prog = common::build_c(prefix(), "ports");
    let out = std::process::Command::new(&prog)
        .env("LD_LIBRARY_PATH", prefix().join("lib"))
        .env_remove("WEFT_BOOT_ADDR")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ports alone: {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `itest/c/ports_threads.c`: under MPI_THREAD_MULTIPLE a thread waiting in
/// MPI_Comm_accept, MPI_Comm_connect or MPI_Comm_join leaves the library to the process's other threads
/// (their point-to-point and collectives on another communicator complete while it waits,
/// the order forced by the program); a process connecting to its own port from a second
/// thread gets an error on both threads, not a hang. 1 to 4 ranks.
#[test]
fn accept_and_connect_wait_without_holding_the_lock() {
    let prog = common::build_c(prefix(), "ports_threads");
    for n in [1, 2, 3, 4] {
        let out = common::run_c(&prog, n, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "ports_threads at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
