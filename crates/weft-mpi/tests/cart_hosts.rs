//! MPI_Cart_create across network-namespace hosts (scripts/testhosts.sh, `ip netns exec
//! {host}`): real ranks on different network stacks, talking over TCP.
//!
//! - With ranks dealt round robin over 2, 3 and 4 hosts, a halo exchange (1001 bytes to both
//!   neighbours of every dimension, data checked) on a grid made with reorder sends strictly
//!   fewer bytes to ranks of other hosts (told apart by MPI_Get_processor_name) than on the
//!   same grid without reorder (itest/c/cart_hosts.c).
//! - Under `weft run --map torus:2x2@3x2 --exclude FILE`, a periodic grid of the job's torus
//!   with and without reorder puts every rank at the coordinates the launcher gave it, on
//!   the host the launcher's placement chose.
//! - Under `weft run --map torus:2x2` with 2 ranks per host, a 4x2 grid periodic in its
//!   first dimension: the reorder moves the same bytes between hosts but fewer bytes times
//!   torus hops (its blocks follow the torus; a row per host, the identity, puts hosts two
//!   hops apart next to each other).
//!
//! Needs root and iproute2 (skips saying why otherwise). Jobs have a hang-catching timeout
//! only; no namespace of these tests is left (checked), nor a `/dev/shm` segment of the jobs
//! started through weft-launch (checked by `common::run_c_placed`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use weft_itest::hosts::Hosts;
use weft_launch::place::{HostSlots, MapBy};
use weft_launch::torus::{excluded_hosts, place_on_torus, TorusRequest};

mod common;

const NETNS: &str = "ip netns exec {host}";
/// Bytes of each message of the halo exchange: odd, and past one TCP segment's worth of
/// small-message paths.
const BYTES: u64 = 1001;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

/// `n` namespace hosts on a subnet of this test (second octets 10-39 are used by no other
/// test file), or `None` after saying why they cannot be made here.
fn hosts(tag: char, n: usize, third: u32) -> Option<Hosts> {
    let net = format!("10.{}.{third}", 10 + std::process::id() % 30);
    match Hosts::up(tag, n, &net) {
        Ok(h) => Some(h),
        Err(why) => {
            eprintln!("skipping: {why}");
            None
        }
    }
}

/// `NAME:ranks` for every host of `h`, comma-separated (as `weft run --hosts` takes it).
fn host_list(h: &Hosts, ranks: u32) -> String {
    h.names
        .iter()
        .map(|n| format!("{n}:{ranks}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Checks that none of `names` is still a network namespace.
fn assert_namespaces_gone(names: &[String]) {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&out.stdout);
    for n in names {
        assert!(!left.contains(n.as_str()), "namespace {n} left: {left}");
    }
}

/// Grid neighbour pairs whose ranks sit on different hosts: without reorder (ranks dealt
/// round robin, rank r on host r mod hosts, grid positions in rank order) and with it (the
/// order `weft_model::mapping::cart_order` gives: each host's ranks a row of the grid).
const CASES: &[(usize, u32, &[u32], u64, u64)] = &[
    // hosts, ranks per host, dims, cut without reorder, cut with it
    (2, 4, &[4, 2], 4, 2),
    (3, 2, &[3, 2], 7, 4),
    (4, 2, &[4, 2], 10, 6),
];

#[test]
fn cart_reorder_moves_fewer_bytes_across_namespace_hosts() {
    let Some(h) = hosts('c', 4, 230) else { return };
    let prog = common::build_c(prefix(), "cart_hosts");
    for &(nhosts, per_host, dims, cut_identity, cut_reordered) in CASES {
        let list = h.names[..nhosts]
            .iter()
            .map(|n| format!("{n}:{per_host}"))
            .collect::<Vec<_>>()
            .join(",");
        let on = common::Hosts {
            hosts: &list,
            launcher: NETNS,
            boot_addr: &h.root_ip(),
            map_by: MapBy::Node,
        };
        let mut args = vec!["bytes".to_owned(), BYTES.to_string()];
        args.extend(dims.iter().map(u32::to_string));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = common::run_c_placed(prefix(), &prog, &on, &args, &[]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.exit_code,
            0,
            "{nhosts} hosts {dims:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Each cut pair carries one message each way.
        let want = format!(
            "bytes across hosts identity {} reordered {}",
            2 * BYTES * cut_identity,
            2 * BYTES * cut_reordered
        );
        assert!(stdout.contains(&want), "{nhosts} hosts {dims:?}: {stdout}");
        assert!(cut_reordered < cut_identity);
    }
    let names = h.names.clone();
    drop(h);
    assert_namespaces_gone(&names);
}

#[test]
fn cart_create_on_a_weft_run_map_torus_takes_the_launcher_s_coordinates() {
    let Some(h) = hosts('m', 6, 231) else { return };
    let prog = common::build_c(prefix(), "cart_hosts");
    let list = host_list(&h, 1);
    // Node 2 (coordinates 2,0 of the 3x2 machine) is faulty.
    let exclude = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cart-hosts-exclude-{}", std::process::id()));
    std::fs::write(&exclude, format!("{}  # faulty\n", h.names[2])).unwrap();
    let out = Command::new(prefix().join("bin/weft"))
        .args(["run", "--hosts", &list, "--launcher", NETNS, "--boot-addr"])
        .arg(h.root_ip())
        .args(["--map", "torus:2x2@3x2", "--exclude"])
        .arg(&exclude)
        .args(["--timeout", "600"])
        .arg(&prog)
        .args(["torus", &BYTES.to_string()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&exclude);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let slots: Vec<HostSlots> = h
        .names
        .iter()
        .map(|n| HostSlots {
            name: n.clone(),
            slots: 1,
        })
        .collect();
    let bad = excluded_hosts(&h.names[2], "x", &slots, &[3, 2]).unwrap();
    let request = TorusRequest::parse("torus:2x2@3x2").unwrap();
    let want = place_on_torus(&request, &slots, &bad, None).unwrap();
    assert!(stderr.contains(&want.summary()), "{stderr}");
    for (rank, host) in want.hosts.iter().enumerate() {
        let coords: Vec<String> = host.coords.iter().map(u32::to_string).collect();
        let line = format!("rank {rank} host {} coords {}", host.name, coords.join(","));
        assert!(stdout.contains(&line), "{line}:\n{stdout}");
        assert_ne!(host.name, h.names[2]);
    }
    // One rank per host: every message of the exchange (2 dimensions, both ways, 4 ranks)
    // crosses hosts.
    assert!(
        stdout.contains(&format!("bytes across hosts {}\n", 16 * BYTES)),
        "{stdout}"
    );
    let names = h.names.clone();
    drop(h);
    assert_namespaces_gone(&names);
}

#[test]
fn cart_reorder_on_a_torus_of_hosts_keeps_neighbours_one_hop_apart() {
    let Some(h) = hosts('t', 4, 232) else { return };
    let prog = common::build_c(prefix(), "cart_hosts");
    let list = host_list(&h, 2);
    let out = Command::new(prefix().join("bin/weft"))
        .args(["run", "--hosts", &list, "--launcher", NETNS, "--boot-addr"])
        .arg(h.root_ip())
        .args(["--map", "torus:2x2", "--timeout", "600"])
        .arg(&prog)
        .args(["hops", &BYTES.to_string(), "1,0", "4", "2"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    // 8 grid edges cut either way (one message each way per edge); identity: 4 of them 1
    // hop and 4 of them 2 hops, reordered (2x1 blocks on the 2x2 torus): all 1 hop.
    let want = format!(
        "hop-bytes identity {} reordered {}",
        2 * BYTES * 12,
        2 * BYTES * 8
    );
    assert!(stdout.contains(&want), "{want}:\n{stdout}\n{stderr}");
    let want = format!(
        "bytes across hosts identity {} reordered {}",
        2 * BYTES * 8,
        2 * BYTES * 8
    );
    assert!(stdout.contains(&want), "{want}:\n{stdout}\n{stderr}");
    let names = h.names.clone();
    drop(h);
    assert_namespaces_gone(&names);
}
