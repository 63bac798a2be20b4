//! Builds the C programs of `itest/c/` (they see only `mpi.h`) with our `mpicc` from an
//! `install.sh` prefix, runs them as jobs of 1 to 4 ranks and checks their exit codes; the
//! fatal-handler program must end its job with MPI_ERR_RANK and one message naming the
//! function, the argument and the rank; `mpiexec` runs a program through `weft run`.
//! No job may leave a `/dev/shm/weft-*` segment behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use weft_launch::place::MapBy;

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

fn build(name: &str) -> PathBuf {
    common::build_c(prefix(), name)
}

fn run(program: &Path, n: u32) -> weft_launch::JobOutcome {
    common::run_c(program, n, &[])
}

fn run_ok(name: &str) {
    common::run_c_ok(prefix(), name, 1..=4, &[]);
}

#[test]
fn environment_info_and_versions() {
    run_ok("env");
}

#[test]
fn point_to_point() {
    run_ok("p2p");
}

#[test]
fn collectives_and_operations() {
    run_ok("coll");
}

/// Negative, mixed and wild displacements in the v/w collectives (itest/c/negative_displs.c),
/// blocking, nonblocking and persistent, at 1 to 4 ranks and at 7.
#[test]
fn v_collectives_take_negative_displacements() {
    common::run_c_ok(prefix(), "negative_displs", 1..=4, &[]);
    common::run_c_ok(prefix(), "negative_displs", 7..=7, &[]);
}

#[test]
fn communicators_groups_types_topologies() {
    run_ok("comm");
}

#[test]
fn graph_topologies_and_neighborhood_collectives() {
    run_ok("topo");
}

/// MPI_Cart_create with reorder (itest/c/cart_reorder.c): on one node nothing changes; on
/// two simulated hosts with ranks dealt round robin, a 4x2 grid reordered puts fewer
/// neighbour pairs on different hosts (rows of one host) than the given order (every
/// row split), and MPI_Cart_map agrees; with ranks in blocks the given order is already best
/// and stays.
#[test]
fn cartesian_reorder_keeps_grid_neighbours_on_one_node() {
    common::run_c_ok(prefix(), "cart_reorder", 1..=4, &[]);
    let prog = build("cart_reorder");
    for (hosts, map_by, args) in [
        ("a:4,b:4", MapBy::Node, &["fewer", "4", "2"][..]),
        ("a:3,b:4", MapBy::Node, &["same", "3", "2"][..]),
        ("a:2,b:2", MapBy::Slot, &["same"][..]),
    ] {
        let text = run_on_simulated_hosts(&prog, hosts, map_by, args);
        if hosts == "a:4,b:4" {
            assert!(text.contains("cut identity 4 reordered 2"), "{text}");
        }
    }
}

/// `prog` on simulated hosts (`a:4,b:4`: host:ranks) placed by `map_by`; its output, once it
/// exited 0.
fn run_on_simulated_hosts(
    prog: &std::path::Path,
    hosts: &str,
    map_by: MapBy,
    args: &[&str],
) -> String {
    let on = common::Hosts {
        hosts,
        launcher: "env",
        boot_addr: "127.0.0.1",
        map_by,
    };
    let out = common::run_c_placed(prefix(), prog, &on, args, &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.exit_code,
        0,
        "{} on {hosts} {args:?}:\n{text}\n{}",
        prog.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// MPI_Graph_create, MPI_Dist_graph_create(_adjacent) and MPI_Graph_map with reorder
/// (itest/c/graph_reorder.c): rings over the job, unweighted and weighted, with the
/// neighbour lists seen through the new communicators and a neighbourhood exchange checked
/// against the ranks named. On one node (1 to 4 ranks) nothing moves; on simulated hosts
/// with ranks dealt round robin the reordered graph rings cut fewer edges (every edge -> 2;
/// distributed graphs keep their order and cut);
/// with ranks in blocks, or a triangle, the given order is already best.
#[test]
fn graph_reorder_keeps_graph_neighbours_on_one_node() {
    common::run_c_ok(prefix(), "graph_reorder", 1..=4, &[]);
    let prog = build("graph_reorder");
    for (hosts, map_by, args, want) in [
        (
            "a:4,b:4",
            MapBy::Node,
            &["unweighted", "fewer"][..],
            Some("graph cut 16 -> 4, dist cut 16 -> 16, general cut 16 -> 16"),
        ),
        (
            "a:4,b:4",
            MapBy::Node,
            &["weighted", "fewer"][..],
            Some("graph cut 16 -> 4, dist cut 88 -> 88, general cut 88 -> 88"),
        ),
        ("a:3,b:4", MapBy::Node, &["weighted", "fewer"][..], None),
        (
            "a:2,b:2,c:2,d:1",
            MapBy::Node,
            &["unweighted", "fewer"][..],
            None,
        ),
        ("a:2,b:1", MapBy::Node, &["weighted", "same"][..], None),
        (
            "a:2,b:2",
            MapBy::Slot,
            &["unweighted", "same"][..],
            Some("graph cut 4 -> 4"),
        ),
    ] {
        let text = run_on_simulated_hosts(&prog, hosts, map_by, args);
        if let Some(want) = want {
            assert!(text.contains(want), "{hosts} {args:?}: {text}");
        }
    }
}

/// The point-to-point fast path for predefined contiguous datatypes (src/fast.rs) keeps the
/// checks MPI requires: every argument error of the fast calls gets its class, truncation
/// from Recv, Sendrecv, Wait and Test reports class, source and tag, good messages their
/// statuses, and errors reach their communicator's handler (itest/c/fastpath.c).
#[test]
fn fast_path_keeps_every_error_class_and_status() {
    run_ok("fastpath");
}

/// The blocking collectives' fast path (src/fast.rs) and the checked path it hands the rest
/// to: right results on both (in place, two datatypes of one signature, garbage arguments
/// where MPI ignores them, pairs), and every argument error keeps its class and reaches the
/// communicator's handler (itest/c/collfast.c).
#[test]
fn collective_fast_path_keeps_results_and_error_classes() {
    run_ok("collfast");
}

#[test]
fn nonblocking_collectives() {
    run_ok("icoll");
}

#[test]
fn intercommunicators() {
    run_ok("inter");
    // Groups of 3 and 4: uneven, and more than one remote rank to every rank.
    common::run_c_ok(prefix(), "inter", 7..=7, &[]);
}

#[test]
fn nonblocking_intercommunicator_collectives_progress_after_their_start() {
    run_ok("inter_nb");
    common::run_c_ok(prefix(), "inter_nb", 7..=7, &[]);
}

#[test]
fn neighborhood_collectives_involve_the_neighbors_only() {
    run_ok("neighbors");
}

#[test]
fn communicators_from_groups_without_a_parent() {
    run_ok("from_groups");
}

#[test]
fn isendrecv_bsend_init_reduce_local_persistent_v_and_friends() {
    run_ok("extras");
}

#[test]
fn derived_datatypes() {
    run_ok("dtype");
}

/// Review findings: padded pairs' one wire form, inactive persistent requests in the
/// any/some calls, short messages into derived types, in-place reduce-scatter-block, freed
/// active receives, argument errors that keep requests, size*count overflow.
#[test]
fn review_fixes() {
    run_ok("fixes");
}

/// MPI_BOTTOM with a struct type of absolute addresses through point-to-point and
/// collective staging (MPICH's pt2pt/bottom).
#[test]
fn mpi_bottom_with_absolute_addresses() {
    run_ok("bottom");
}

/// Generalized requests: callbacks in the standard's order from wait/test/get_status/
/// cancel/free, mixed with ordinary requests, completed from another thread.
#[test]
fn generalized_requests() {
    run_ok("greq");
}

#[test]
fn invalid_arguments_return_their_classes() {
    let prog = build("errors");
    for n in [1, 3] {
        let out = run(&prog, n);
        assert_eq!(out.exit_code, 0, "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("all invalid-argument checks passed"));
    }
}

#[test]
fn fatal_handler_names_function_argument_and_rank() {
    let prog = build("fatal");
    let out = run(&prog, 3);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.exit_code, 6, "want MPI_ERR_RANK (6):\n{err}");
    assert!(
        err.lines()
            .any(|l| l.contains("MPI_Send on rank 1: dest = 8 is not a rank")),
        "{err}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("UNREACHABLE"));
}

/// The fatal handler names the call the program made when another entry's work runs it:
/// MPI_Bcast under MPI_THREAD_MULTIPLE (its nonblocking twin's work), MPI_Allgather_c
/// (MPI_Allgather's work), MPI_Wait under MPI_THREAD_MULTIPLE (MPI_Test's polls),
/// MPI_Attr_put (MPI_Comm_set_attr's work) and MPI_Type_size_x (MPI_Type_size_c's), at 1
/// and 3 ranks (itest/c/fatal_names.c).
#[test]
fn fatal_handler_names_the_call_made() {
    let prog = build("fatal_names");
    for n in [1, 3] {
        for (case, call, class) in [
            ("bcast", "MPI_Bcast", 8),
            ("allgather_c", "MPI_Allgather_c", 3),
            ("wait", "MPI_Wait", 7),
            ("attr_put", "MPI_Attr_put", 36),
            ("type_size_x", "MPI_Type_size_x", 3),
        ] {
            let out = common::run_c_args(&prog, n, &[case], &[]);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.exit_code, class, "{case} at {n} ranks:\n{err}");
            assert!(
                err.lines().any(|l| l.contains(&format!("{call} on rank "))),
                "{case} at {n} ranks:\n{err}"
            );
            assert!(
                ![
                    "MPI_Ibcast on",
                    "MPI_Allgather on",
                    "MPI_Test on",
                    "MPI_Comm_set_attr on",
                    "MPI_Type_size_c on"
                ]
                .iter()
                .any(|other| err.contains(other)),
                "{err}"
            );
            assert!(!String::from_utf8_lossy(&out.stdout).contains("UNREACHABLE"));
        }
    }
}

/// mpicc's Open MPI spellings (`--showme`, `--showme:link`) and `-static`: a program linked
/// with `libmpi_abi.a` and the system libraries it needs, without the shared library, runs
/// as a job and computes right (crates/weft-mpi/examples/c/where.c).
#[test]
fn mpicc_showme_and_static() {
    let mpicc = prefix().join("bin/mpicc");
    let show = Command::new(&mpicc)
        .args(["--showme", "x.c"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&show.stdout).to_string();
    assert!(line.contains("x.c") && line.contains("-lmpi_abi"), "{line}");
    let link = Command::new(&mpicc)
        .args(["-static", "--showme:link"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&link.stdout).to_string();
    assert!(
        line.contains("lib/libmpi_abi.a") && line.contains("-lpthread"),
        "{line}"
    );
    let src = common::repo_root().join("crates/weft-mpi/examples/c/where.c");
    let exe = std::env::temp_dir().join(format!("weft-where-static-{}", std::process::id()));
    let built = Command::new(&mpicc)
        .arg("-static")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "mpicc -static: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ldd = Command::new("ldd").arg(&exe).output().unwrap();
    let deps = String::from_utf8_lossy(&ldd.stdout).to_string();
    assert!(!deps.contains("libmpi_abi"), "linked dynamically: {deps}");
    // A static program cannot load libucp at run time: it keeps the default transports
    // whatever lane WEFT_TEST_LANES forces (checked below for the UCX lane).
    let out = common::run_c(&exe, 3, &[("WEFT_TRANSPORTS", "shm,cma,tcp")]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.exit_code,
        0,
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(" sum=3")).count(),
        3,
        "{stdout}"
    );
    if cfg!(feature = "ucx") {
        // The UCX lane alone: refused with a reason, not a crash in the loader.
        let out = common::run_c(&exe, 2, &[("WEFT_TRANSPORTS", "ucx")]);
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(
            out.exit_code != 0 && out.exit_code < 128,
            "exit {}: {stderr}",
            out.exit_code
        );
        assert!(stderr.contains("linked statically"), "{stderr}");
    }
    std::fs::remove_file(&exe).unwrap();
}

/// The wrappers: mpicc -show prints the command with the rpath, mpiexec maps -n and
/// --oversubscribe and -x onto `weft run`.
#[test]
fn wrappers_show_and_mpiexec() {
    let show = Command::new(prefix().join("bin/mpicc"))
        .args(["-show", "x.c", "-o", "x"])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&show.stdout).to_string();
    let p = prefix().display().to_string();
    assert!(
        line.contains(&format!("-I{p}/include"))
            && line.contains(&format!("-Wl,-rpath,{p}/lib"))
            && line.contains("-lmpi_abi"),
        "{line}"
    );
    let compile = Command::new(prefix().join("bin/mpicxx"))
        .arg("-showme:compile")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&compile.stdout).trim(),
        format!("-I{p}/include")
    );

    let weft = prefix().join("bin/weft");
    let prog = build("env");
    let out = Command::new(prefix().join("bin/mpiexec"))
        .args(["-n", "2", "--oversubscribe", "-x", "WEFT_MPI_TEST_VAR=1"])
        .arg(&prog)
        .env("WEFT_BIN", &weft)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mpiexec: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad = Command::new(prefix().join("bin/mpirun"))
        .args(["--bogus", "x"])
        .env("WEFT_BIN", &weft)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// Datatype decoding (MPI_Type_get_envelope/get_contents for every combiner, derived old
/// types as new handles that decode after the original was freed), external32 packing
/// (big-endian bytes, 4-byte MPI_LONG, MPI_ERR_CONVERSION beyond it), datatype attributes
/// (copy on dup, delete on free and replacement) and the MPI 5.0 status and request
/// queries, each with its bad-input classes (itest/c/decode.c).
#[test]
fn datatype_decoding_external32_attributes_and_status_queries() {
    run_ok("decode");
}

/// User error classes and codes with their strings and removal, MPI_INFO_ENV's keys, and
/// MPI_COMM_SELF's attribute delete callbacks at the start of MPI_Finalize in reverse order
/// of setting (itest/c/errclass.c).
#[test]
fn user_error_classes_info_env_and_finalize_callbacks() {
    run_ok("errclass");
}

/// MPI_Comm_idup returns before the other ranks call it (they communicate first), several
/// run at once and around a blocking creation, the handle appears at completion with the
/// attributes (copied at the call) and error handler, and bad input gets its error class
/// (itest/c/idup.c).
#[test]
fn comm_idup_is_nonblocking() {
    run_ok("idup");
}
