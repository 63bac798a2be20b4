//! What mpi4py's test suite found refused or wrong (issue 32), through the C interface:
//! `itest/c/suite_fixes.c` at 1 to 4 and 7 ranks, under MPI_THREAD_MULTIPLE at 1 to 4, and
//! across two simulated nodes. Each check
//! in the program names the finding it covers. No job may leave a `/dev/shm/weft-*`
//! segment behind.

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn mpi4py_findings_on_one_node() {
    common::run_c_ok(prefix(), "suite_fixes", 1..=4, &[]);
    let prog = common::build_c(prefix(), "suite_fixes");
    let out = common::run_c(&prog, 7, &[]);
    assert_eq!(
        out.exit_code,
        0,
        "suite_fixes at 7 ranks:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The same checks under MPI_THREAD_MULTIPLE, whose blocking collectives run as their
/// nonblocking forms: they must still meet the other ranks' blocking calls whatever order
/// the nonblocking ones take around them (mpi4py's `testIAgree`).
#[test]
fn mpi4py_findings_under_thread_multiple() {
    common::run_c_ok(
        prefix(),
        "suite_fixes",
        1..=4,
        &[("SUITE_FIXES_INIT", "multiple")],
    );
}

/// `WEFT_CHAR_REDUCTIONS=0` keeps MPI-4.1's table: MPI_CHAR in a reduction is MPI_ERR_OP.
#[test]
fn strict_char_reductions() {
    common::run_c_ok(
        prefix(),
        "suite_fixes",
        2..=2,
        &[("WEFT_CHAR_REDUCTIONS", "0")],
    );
}

#[test]
fn mpi4py_findings_across_two_nodes() {
    let prog = common::build_c(prefix(), "suite_fixes");
    for hosts in ["a:1,b:1", "a:2,b:1"] {
        let out = common::run_c_hosts(prefix(), &prog, hosts, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "suite_fixes on {hosts}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
