//! One-sided communication (MPI-4.1 ch. 12) through the C interface: `itest/c/win.c` on
//! every window flavor at 1 to 4 and 7 ranks on one node (load/store and CMA paths), with
//! CMA refused (`WEFT_SHM_CMA=off`: created windows then reach their node's members through
//! the one-sided service), and across two simulated nodes (different `WEFT_NODE_ID`: the
//! service over TCP), and across network-namespace hosts made by `scripts/testhosts.sh`
//! (each host its own addresses; skipped where namespaces cannot be made); and the
//! `itest/c/rma_*.c` programs, each on one case MPICH's test suite found. No job may leave a
//! `/dev/shm/weft-*` segment or a namespace behind.

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

/// Namespace hosts of one test (`scripts/testhosts.sh`), removed on drop.
struct NsHosts(Vec<String>);

impl Drop for NsHosts {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(testhosts())
            .arg("down")
            .args(&self.0)
            .status();
    }
}

fn testhosts() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testhosts.sh")
}

#[test]
fn windows_across_namespace_hosts() {
    let pid = std::process::id();
    let names: Vec<String> = (0..2)
        .map(|i| format!("wm{:05}w{i}", pid % 100_000))
        .collect();
    let net = format!("10.{}.201", 100 + pid % 150);
    let up = std::process::Command::new("bash")
        .arg(testhosts())
        .args(["up", "--net", &net])
        .args(&names)
        .output()
        .unwrap();
    if up.status.code() == Some(77) {
        eprintln!("skipping: {}", String::from_utf8_lossy(&up.stderr).trim());
        return;
    }
    assert!(
        up.status.success(),
        "testhosts.sh up: {}",
        String::from_utf8_lossy(&up.stderr)
    );
    let hosts = NsHosts(names);
    let prog = common::build_c(prefix(), "win");
    for slots in [[1, 1], [2, 1]] {
        let list = format!("{}:{},{}:{}", hosts.0[0], slots[0], hosts.0[1], slots[1]);
        let out = common::run_c_on(
            prefix(),
            &prog,
            &list,
            "ip netns exec {host}",
            &format!("{net}.1"),
            &[],
        );
        assert_eq!(
            out.exit_code,
            0,
            "win on {list}:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("win ok"));
    }
    drop(hosts);
    let left = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    assert!(
        !left.contains(&format!("wm{:05}w", pid % 100_000)),
        "namespaces left: {left}"
    );
}

/// `itest/c/rma_types.c`: MPI_CHAR as a signed 8-bit integer in reductions (MPI_Allreduce,
/// MPI_Reduce, MPI_Reduce_local) and in accumulates, fetch-and-op and compare-and-swap, and
/// the padded pair MPI_SHORT_INT (6 bytes over 8) in fetches and accumulates.
#[test]
fn char_reductions_and_padded_pairs_in_accumulates() {
    common::run_c_ok(prefix(), "rma_types", 1..=4, &[]);
    common::run_c_ok(prefix(), "rma_types", 7..=7, &[]);
    // MPI-4.1's strict table refuses the arithmetic on MPI_CHAR, also one-sided.
    common::run_c_ok(
        prefix(),
        "rma_types",
        2..=2,
        &[("WEFT_CHAR_REDUCTIONS", "0")],
    );
}

/// `itest/c/rma_attach.c`: hundreds of regions attached to a dynamic window, detached and
/// attached again, and accesses across regions attached back to back (CMA inside the node,
/// and the one-sided service with CMA refused).
#[test]
fn dynamic_windows_take_any_number_of_regions() {
    common::run_c_ok(prefix(), "rma_attach", 1..=4, &[]);
    common::run_c_ok(prefix(), "rma_attach", 7..=7, &[]);
    common::run_c_ok(prefix(), "rma_attach", 2..=3, &[("WEFT_SHM_CMA", "off")]);
}

/// `itest/c/rma_shared.c`: a shared window where odd ranks have no memory: their base is
/// NULL in MPI_Win_shared_query; puts between fences reach the even ranks' memory.
#[test]
fn shared_windows_with_members_without_memory() {
    common::run_c_ok(prefix(), "rma_shared", 1..=4, &[]);
    common::run_c_ok(prefix(), "rma_shared", 7..=7, &[]);
}

/// Fence epochs on the allocated, created and shared flavors (`itest/c/rma_fence.c`: puts and
/// gets of 0, 1, 7, 4097 and 1 MiB + 3 bytes between neighbours, every byte checked) at 1 to
/// 4 and 7 ranks; then with `WEFT_BLOCK=on` and a sleep of up to ten minutes, so a member
/// that waits at a fence sleeps and only the last arrival's wake-up ends its sleep (a lost
/// one would hold the job until the hang catcher ends it).
#[test]
fn fences_wake_sleeping_members() {
    let prog = common::build_c(prefix(), "rma_fence");
    let sleeping = [("WEFT_BLOCK", "on"), ("WEFT_BLOCK_SLEEP_MS", "600000")];
    for (n, env) in [1, 2, 3, 4, 7]
        .into_iter()
        .flat_map(|n| [(n, &[][..]), (n, &sleeping[..])])
    {
        let out = common::run_c(&prog, n, env);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.exit_code == 0 && stdout.contains("rma_fence ok"),
            "rma_fence at {n} ranks with {env:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
