//! One-sided communication (MPI-4.1 ch. 12) through the C interface: `itest/c/win.c` on
//! every window flavor at 1 to 4 and 7 ranks on one node (load/store and CMA paths), with
//! CMA refused (`WEFT_SHM_CMA=off`: created windows then reach their node's members through
//! the one-sided service), and across two simulated nodes (different `WEFT_NODE_ID`: the
//! service over TCP). No job may leave a `/dev/shm/weft-*` segment behind.

use std::path::Path;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

#[test]
fn windows_of_every_flavor_on_one_node() {
    common::run_c_ok(prefix(), "win", 1..=4, &[]);
    let prog = common::build_c(prefix(), "win");
    let out = common::run_c(&prog, 7, &[]);
    assert_eq!(
        out.exit_code,
        0,
        "win at 7 ranks:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn windows_without_cma_use_the_service_inside_a_node() {
    common::run_c_ok(prefix(), "win", 2..=3, &[("WEFT_SHM_CMA", "off")]);
}

#[test]
fn windows_across_two_nodes() {
    let prog = common::build_c(prefix(), "win");
    for hosts in ["a:1,b:1", "a:2,b:1", "a:2,b:2"] {
        let out = common::run_c_hosts(prefix(), &prog, hosts, &[]);
        assert_eq!(
            out.exit_code,
            0,
            "win on {hosts}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("win ok"));
    }
}
