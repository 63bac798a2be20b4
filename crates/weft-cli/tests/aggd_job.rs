//! Jobs with `WEFT_AGGD` set (docs/aggd.md): ranks of this test binary on named hosts
//! (`WEFT_NODE_ID`), bootstrapped over a TCP store, ask a real `weft aggd`. With the
//! manager up, the world gets a type II tree and the hierarchical collectives' levels gain
//! the leaf switches above the hosts; with the manager gone (killed before the job), every
//! rank says type I and the levels are the hosts' alone; killed during the job, after every
//! rank got its tree (files order the steps), the job keeps the tree and finishes. In all,
//! forced hierarchical k-nomial bcast, reduce and allreduce give the right data at sizes 0,
//! 1, odd and past the eager limit. After a job, the manager holds no entry (the lease).

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start"
)]

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "WEFT_TEST_AGGD_JOB_CHILD";
/// `type2-leaves`, `type2-spine` or `type1`: what the children must get.
const EXPECT: &str = "WEFT_TEST_AGGD_JOB_EXPECT";
/// `spread` or `pairs`: where the ranks run (see `child`).
const HOSTS: &str = "WEFT_TEST_AGGD_JOB_HOSTS";
/// Set: the manager is killed while the job runs, after every rank got its tree (files in
/// this directory order the steps).
const SYNC_DIR: &str = "WEFT_TEST_AGGD_JOB_SYNC";
const KEY: &[u8] = b"aggd-job-test-secret-0123456789";
const JOB_TIMEOUT: Duration = Duration::from_secs(300);

/// node0, node1 on leaf0; node2, node3 on leaf1; both leaves under the spine.
const FABRIC: &str = r#"
switches = [{ name = "spine" }, { name = "leaf0" }, { name = "leaf1" }]
links = [["spine", "leaf0"], ["spine", "leaf1"]]
endpoints = [
  { name = "node0", switch = "leaf0" }, { name = "node1", switch = "leaf0" },
  { name = "node2", switch = "leaf1" }, { name = "node3", switch = "leaf1" },
]
"#;

fn val(rank: u32, i: usize) -> i64 {
    (rank as i64 + 5) * 1_000 + (i as i64 % 811) - 300
}

fn child() {
    let expect = std::env::var(EXPECT).unwrap();
    let weft = weft::init().unwrap();
    let w = weft.world();
    let (me, np) = (w.rank(), w.size());
    let tree = w.aggregation_tree();
    let levels = w.coll_levels().unwrap();
    let got: Vec<Vec<u32>> = (0..levels.depth())
        .map(|i| levels.level(i).to_vec())
        .collect();
    // HOSTS: `spread` = rank r on host node<r>; `pairs` = ranks 2h and 2h+1 on node<2h>
    // (one host under each leaf). The node level numbers hosts by first appearance.
    let pairs = std::env::var(HOSTS).unwrap() == "pairs";
    let nodes: Vec<u32> = (0..np).map(|r| if pairs { r / 2 } else { r }).collect();
    let host = |r: u32| if pairs { 2 * (r / 2) } else { r };
    let leaf = |r: u32| u32::from(host(r) >= 2);
    // Levels inside the hosts (core groups of this machine) may come first.
    let n = got.len();
    match expect.as_str() {
        "type2-leaves" => {
            assert!(tree.starts_with("type II"), "rank {me}: {tree}");
            assert!(n >= 2, "rank {me}: levels {got:?}");
            assert_eq!(got[n - 2], nodes, "rank {me}: host level of {got:?}");
            for a in 0..np {
                for b in 0..np {
                    assert_eq!(
                        got[n - 1][a as usize] == got[n - 1][b as usize],
                        leaf(a) == leaf(b),
                        "rank {me}: ranks {a} and {b} in the leaf level of {got:?}"
                    );
                }
            }
        }
        "type2-spine" => {
            // Two hosts under different leaves: the minimum-cost tree keeps the spine
            // alone (both hang under it), which groups nothing beyond the hosts.
            assert!(tree.starts_with("type II"), "rank {me}: {tree}");
            assert!(
                tree.contains("1 switches kept (spine)"),
                "rank {me}: {tree}"
            );
            assert_eq!(got[n - 1], nodes, "rank {me}: levels {got:?}");
        }
        _ => {
            assert!(tree.starts_with("type I "), "rank {me}: {tree}");
            assert!(tree.contains("gave no answer"), "rank {me}: {tree}");
            assert_eq!(got[n - 1], nodes, "rank {me}: levels {got:?}");
        }
    }
    if let Some(dir) = std::env::var_os(SYNC_DIR) {
        // The parent kills the manager once every rank holds the tree, then says so.
        let dir = PathBuf::from(dir);
        w.barrier().unwrap();
        if me == 0 {
            std::fs::write(dir.join("granted"), b"").unwrap();
        }
        let start = Instant::now();
        while !dir.join("killed").exists() {
            assert!(start.elapsed() < JOB_TIMEOUT, "rank {me}: never told");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    for radix in ["2", "3"] {
        let vars = [
            ("WEFT_BCAST_ALGO", "hier_knomial"),
            ("WEFT_REDUCE_ALGO", "hier_knomial"),
            ("WEFT_ALLREDUCE_ALGO", "hier_knomial"),
            ("WEFT_BCAST_RADIX", radix),
            ("WEFT_REDUCE_RADIX", radix),
            ("WEFT_ALLREDUCE_RADIX", radix),
        ];
        w.set_collective_tuning(weft::coll::Tuning::from_vars(&vars).unwrap());
        for n in [0usize, 1, 13, 5000] {
            let what = format!("np={np} radix {radix} n={n}");
            let send: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
            let sum: Vec<i64> = (0..n).map(|i| (0..np).map(|r| val(r, i)).sum()).collect();
            let mut out = vec![0i64; n];
            w.allreduce(&send, &mut out, &weft::Op::Sum).unwrap();
            assert_eq!(out, sum, "allreduce {what}");
            for root in 0..np {
                let want: Vec<i64> = (0..n).map(|i| val(root + 11, i)).collect();
                let mut b = if me == root { want.clone() } else { vec![0; n] };
                w.bcast(&mut b, root).unwrap();
                assert_eq!(b, want, "bcast root {root} {what}");
                let mut r = vec![0i64; if me == root { n } else { 0 }];
                w.reduce(&send, &mut r, &weft::Op::Sum, root).unwrap();
                if me == root {
                    assert_eq!(r, sum, "reduce root {root} {what}");
                }
            }
        }
    }
    weft.finalize().unwrap();
    println!("rank {me}: {tree}");
}

/// A scratch directory under the target directory, removed on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> (Scratch, PathBuf, PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("aggd-job-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let fabric = dir.join("fabric.toml");
    std::fs::write(&fabric, FABRIC).unwrap();
    let key = dir.join("key");
    std::fs::write(&key, weft_core::auth::encode_hex(KEY)).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    (Scratch(dir), fabric, key)
}

/// A manager process, killed and reaped on drop (also when a test fails).
struct Manager(std::process::Child);

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `weft aggd`; returns it and its address.
fn aggd(fabric: &PathBuf, key: &PathBuf) -> (Manager, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_weft"))
        .arg("aggd")
        .arg("--fabric")
        .arg(fabric)
        .arg("--key-file")
        .arg(key)
        .args(["--listen", "127.0.0.1:0", "--entries", "4"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("weft aggd: listening on ")
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .to_string();
    (Manager(child), addr)
}

/// Runs test `name`'s job of `np` ranks against the manager at `addr`.
#[allow(clippy::too_many_arguments)]
fn job(
    name: &str,
    np: u32,
    pairs: bool,
    addr: &str,
    key: &PathBuf,
    expect: &str,
    kill_mid: Option<(&PathBuf, &mut Manager)>,
) {
    let secret = b"weft-aggd-job-boot-secret";
    let server = weft_boot::TcpStoreServer::bind("127.0.0.1:0", secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let job_id = format!("aggdjob{}-{name}", std::process::id());
    let mut children: Vec<std::process::Child> = (0..np)
        .map(|rank| {
            let mut c = Command::new(&exe);
            if let Some((dir, _)) = &kill_mid {
                c.env(SYNC_DIR, dir);
            }
            let host = if pairs { 2 * (rank / 2) } else { rank };
            c.args(["--exact", name, "--nocapture"])
                .env(CHILD, "1")
                .env(EXPECT, expect)
                .env(HOSTS, if pairs { "pairs" } else { "spread" })
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", np.to_string())
                .env("WEFT_JOB_ID", &job_id)
                .env("WEFT_NODE_ID", format!("node{host}"))
                .env("WEFT_AGGD", addr)
                .env("WEFT_AGGD_KEY_FILE", key)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let deadline = Instant::now() + JOB_TIMEOUT;
    let mut failed = None;
    if let Some((dir, manager)) = kill_mid {
        while !dir.join("granted").exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        manager.0.kill().unwrap();
        manager.0.wait().unwrap();
        std::fs::write(dir.join("killed"), b"").unwrap();
    }
    for rank in 0..children.len() {
        loop {
            if children[rank].try_wait().unwrap().is_some() {
                break;
            }
            if Instant::now() > deadline {
                for c in children.iter_mut() {
                    let _ = c.kill();
                }
                failed.get_or_insert(format!("rank {rank} did not finish in {JOB_TIMEOUT:?}"));
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for (rank, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() || !text.contains(&format!("rank {rank}: type I")) {
            failed.get_or_insert(format!("rank {rank}: {}\n{text}{err}", out.status));
        }
    }
    if let Some(f) = failed {
        panic!("{f}");
    }
}

/// Runs test `name`: `np` ranks (`pairs`: two to a host) against a manager that is up or
/// already gone; the children must find `expect`.
fn run(name: &str, np: u32, pairs: bool, manager_up: bool, expect: &str) {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let (_dir, fabric, key) = scratch(name);
    let (mut manager, addr) = aggd(&fabric, &key);
    if !manager_up {
        // Gone before the job starts: nothing listens at its address any more.
        manager.0.kill().unwrap();
        manager.0.wait().unwrap();
    }
    if expect == "type2-then-killed" {
        job(
            name,
            np,
            pairs,
            &addr,
            &key,
            "type2-leaves",
            Some((&_dir.0, &mut manager)),
        );
        return;
    }
    job(name, np, pairs, &addr, &key, expect, None);
    if manager_up {
        // The job's lease ended with it: the manager holds nothing now.
        let mut c = weft::agg::Client::connect(&addr, KEY, JOB_TIMEOUT).unwrap();
        let start = Instant::now();
        while c.status().unwrap().entries_used != 0 {
            assert!(
                start.elapsed() < JOB_TIMEOUT,
                "the job's tree was never released"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[test]
fn four_ranks_on_four_hosts_group_by_leaf() {
    run(
        "four_ranks_on_four_hosts_group_by_leaf",
        4,
        false,
        true,
        "type2-leaves",
    );
}

#[test]
fn three_ranks_on_three_hosts_group_by_leaf() {
    run(
        "three_ranks_on_three_hosts_group_by_leaf",
        3,
        false,
        true,
        "type2-leaves",
    );
}

#[test]
fn four_ranks_two_to_a_host_under_two_leaves_get_the_spine() {
    run(
        "four_ranks_two_to_a_host_under_two_leaves_get_the_spine",
        4,
        true,
        true,
        "type2-spine",
    );
}

#[test]
fn a_dead_manager_leaves_the_job_on_type1_trees() {
    run(
        "a_dead_manager_leaves_the_job_on_type1_trees",
        4,
        true,
        false,
        "type1",
    );
}

#[test]
fn two_ranks_with_a_dead_manager_finish() {
    run(
        "two_ranks_with_a_dead_manager_finish",
        2,
        false,
        false,
        "type1",
    );
}

#[test]
fn a_manager_killed_mid_job_leaves_the_job_running() {
    run(
        "a_manager_killed_mid_job_leaves_the_job_running",
        4,
        false,
        true,
        "type2-then-killed",
    );
}
