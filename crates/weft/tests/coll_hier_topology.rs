//! The multi-level live hierarchy across real processes: ranks on one machine told by
//! `WEFT_TOPOLOGY` that their node is an hwloc synthetic topology of 2 packages (local rank
//! l on PU l mod PUs), so the hierarchical k-nomial bcast, reduce and allreduce (forced)
//! nest the packages' groups inside the nodes. Each rank checks the levels its runtime
//! builds (`Comm::coll_levels`), that exactly one edge of the live tree enters each group
//! but the root's at every level, for every root and radix 2 and 3 (`Comm::coll_hier_tree`,
//! the tree the plans are built on), and the data of every collective at every root, sizes
//! 0, 1, odd and past the eager limit. The parent checks the runtime's own report
//! (WEFT_LOG=debug) of each rank's core group and of the levels the plans were built over.
//! 1, 3, 7 and 8 ranks on one node; 8 ranks on two nodes (TCP on loopback between them);
//! 8 ranks on two network-namespace hosts (scripts/testhosts.sh; needs root and iproute2,
//! skips saying why otherwise), 4 to a host: levels [package, host].

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start"
)]

mod common;

use weft::{Comm, Op};

const CHILD: &str = "WEFT_TEST_HIER_TOPOLOGY_CHILD";
/// The levels the child must find, innermost first: levels `;`-separated, ids `,`-separated.
const LEVELS: &str = "WEFT_TEST_HIER_TOPOLOGY_LEVELS";

fn val(rank: u32, i: usize) -> i64 {
    (rank as i64 + 3) * 1_000 + (i as i64 % 977) - 400
}

fn parse_levels(text: &str) -> Vec<Vec<u32>> {
    text.split(';')
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect()
}

fn levels_text(levels: &[Vec<u32>]) -> String {
    levels
        .iter()
        .map(|l| {
            l.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Checks the live levels and trees, then the collectives' data.
fn child() {
    let want = parse_levels(&std::env::var(LEVELS).unwrap());
    let weft = weft::init().unwrap();
    let w: Comm = weft.world();
    let (me, np) = (w.rank(), w.size());
    let levels = w.coll_levels().unwrap();
    let got: Vec<Vec<u32>> = (0..levels.depth())
        .map(|i| levels.level(i).to_vec())
        .collect();
    assert_eq!(got, want, "rank {me}: group levels");
    for radix in [2, 3] {
        for root in 0..np {
            let t = w.coll_hier_tree(radix, root).unwrap();
            assert_eq!(t.size(), np);
            for (i, ids) in got.iter().enumerate() {
                let mut groups = ids.clone();
                groups.sort_unstable();
                groups.dedup();
                for g in groups {
                    let entering = (0..np)
                        .filter(|&r| ids[r as usize] == g)
                        .filter(|&r| t.parent(r).is_some_and(|p| ids[p as usize] != g))
                        .count();
                    let want = usize::from(ids[root as usize] != g);
                    assert_eq!(
                        entering, want,
                        "radix {radix} root {root}: edges entering level {i} group {g}"
                    );
                }
            }
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
            w.allreduce(&send, &mut out, &Op::Sum).unwrap();
            assert_eq!(out, sum, "allreduce {what}");
            for root in 0..np {
                let want: Vec<i64> = (0..n).map(|i| val(root + 17, i)).collect();
                let mut b = if me == root { want.clone() } else { vec![0; n] };
                w.bcast(&mut b, root).unwrap();
                assert_eq!(b, want, "bcast root {root} {what}");
                let mut r = vec![0i64; if me == root { n } else { 0 }];
                w.reduce(&send, &mut r, &Op::Sum, root).unwrap();
                if me == root {
                    assert_eq!(r, sum, "reduce root {root} {what}");
                }
            }
        }
    }
    weft.finalize().unwrap();
    println!("rank {me}: hierarchy checked");
}

/// Runs test `name`'s job: rank r on node `nodes[r]`, topology `topology`; every rank must
/// find `levels`, and report core group `groups[r]` (a package; `None`: in none; no entry:
/// reports nothing).
fn run(name: &str, nodes: &[u32], topology: &str, levels: &[Vec<u32>], groups: &[Option<u32>]) {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    // The test's name keeps apart jobs of the same size running at once in this binary.
    let job = format!("hiert{}-{name}", std::process::id());
    let levels_var = levels_text(levels);
    let outputs = common::run_procs(
        name,
        CHILD,
        &job,
        nodes,
        &[
            ("WEFT_TOPOLOGY", topology),
            (LEVELS, levels_var.as_str()),
            ("WEFT_LOG", "debug"),
            // Force the hierarchical algorithm from the start too (the children set it again
            // per radix).
            ("WEFT_BCAST_ALGO", "hier_knomial"),
        ],
        common::JOB_TIMEOUT,
    );
    // What the runtime reports of the levels its plans used: the innermost first.
    let plans_over = format!(
        "hier_knomial over group levels (innermost first) {:?}",
        levels
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(status.success(), "rank {rank} failed: {text}{err}");
        assert!(
            text.contains("hierarchy checked"),
            "rank {rank}: {text}{err}"
        );
        if nodes.len() > 1 {
            assert!(
                err.contains(&plans_over),
                "rank {rank}: {plans_over}: {err}"
            );
        }
        let Some(&mine) = groups.get(rank) else {
            continue;
        };
        let group = match mine {
            Some(g) => format!("rank {rank}: core group package {g} of 2"),
            None => format!("rank {rank}: in no core group"),
        };
        assert!(err.contains(&group), "rank {rank}: {group}: {err}");
    }
}

const TWO_BY_FOUR: &str = "synthetic:package:2 core:4 pu:1";

#[test]
fn two_packages_of_one_node_are_the_inner_level() {
    // 8 ranks: local rank l on PU l, packages 0-3 and 4-7.
    let p = vec![0, 0, 0, 0, 1, 1, 1, 1];
    let groups: Vec<Option<u32>> = p.iter().map(|&g| Some(g)).collect();
    run(
        "two_packages_of_one_node_are_the_inner_level",
        &[0; 8],
        TWO_BY_FOUR,
        &[p],
        &groups,
    );
}

#[test]
fn seven_ranks_fill_one_package_and_most_of_the_other() {
    let p = vec![0, 0, 0, 0, 1, 1, 1];
    let groups: Vec<Option<u32>> = p.iter().map(|&g| Some(g)).collect();
    run(
        "seven_ranks_fill_one_package_and_most_of_the_other",
        &[0; 7],
        TWO_BY_FOUR,
        &[p],
        &groups,
    );
}

#[test]
fn three_ranks_in_one_package_are_one_group() {
    // PUs 0-2 are all in package 0: no level splits anything, one group of all.
    run(
        "three_ranks_in_one_package_are_one_group",
        &[0; 3],
        TWO_BY_FOUR,
        &[vec![0; 3]],
        &[Some(0), Some(0), Some(0)],
    );
}

#[test]
fn one_rank_is_one_group() {
    // A node of one rank has nothing to split: no topology is read, nothing reported.
    run("one_rank_is_one_group", &[0], TWO_BY_FOUR, &[vec![0]], &[]);
}

#[test]
fn packages_nest_in_two_nodes() {
    // 4 ranks per node on 2 packages of 2 PUs: levels [package, node].
    let nodes = [0, 0, 0, 0, 1, 1, 1, 1];
    let p = vec![0, 0, 1, 1, 2, 2, 3, 3];
    let local = [0, 0, 1, 1, 0, 0, 1, 1];
    let groups: Vec<Option<u32>> = local.iter().map(|&g| Some(g)).collect();
    run(
        "packages_nest_in_two_nodes",
        &nodes,
        "synthetic:package:2 core:2 pu:1",
        &[p, nodes.to_vec()],
        &groups,
    );
}

/// Namespace hosts made by scripts/testhosts.sh, removed on drop.
struct NetnsHosts {
    names: Vec<String>,
}

impl NetnsHosts {
    fn script() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/testhosts.sh")
    }

    /// `n` hosts on subnet `net` (A.B.C), or why they cannot be made (code 77: skipped).
    fn up(n: usize, net: &str) -> Result<NetnsHosts, String> {
        let pid = std::process::id();
        let names: Vec<String> = (0..n)
            .map(|i| format!("wh{:05}t{i}", pid % 100_000))
            .collect();
        let out = std::process::Command::new("bash")
            .arg(Self::script())
            .args(["up", "--net", net])
            .args(&names)
            .output()
            .map_err(|e| format!("running testhosts.sh: {e}"))?;
        match out.status.code() {
            Some(0) => Ok(NetnsHosts { names }),
            Some(77) => Err(format!("skipped: {}", String::from_utf8_lossy(&out.stderr))),
            _ => panic!("testhosts.sh up: {}", String::from_utf8_lossy(&out.stderr)),
        }
    }
}

impl Drop for NetnsHosts {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(Self::script())
            .arg("down")
            .args(&self.names)
            .status();
    }
}

#[test]
fn packages_nest_in_two_namespace_hosts() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let net = format!("10.{}.77", 100 + std::process::id() % 50);
    let hosts = match NetnsHosts::up(2, &net) {
        Ok(h) => h,
        Err(why) => {
            eprintln!("skipping: {why}");
            return;
        }
    };
    let secret = b"weft-hier-hosts-secret";
    let server = weft_boot::TcpStoreServer::bind(&format!("{net}.1:0"), secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let nodes = [0u32, 0, 0, 0, 1, 1, 1, 1];
    let levels = [vec![0, 0, 1, 1, 2, 2, 3, 3], nodes.to_vec()];
    let levels_var = levels_text(&levels);
    let job = format!("hierh{}", std::process::id());
    let mut children: Vec<std::process::Child> = nodes
        .iter()
        .enumerate()
        .map(|(rank, &host)| {
            std::process::Command::new("ip")
                .args(["netns", "exec", &hosts.names[host as usize]])
                .arg(&exe)
                .args([
                    "--exact",
                    "packages_nest_in_two_namespace_hosts",
                    "--nocapture",
                ])
                .env(CHILD, "1")
                .env(LEVELS, &levels_var)
                .env("WEFT_TOPOLOGY", "synthetic:package:2 core:2 pu:1")
                .env("WEFT_LOG", "debug")
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", nodes.len().to_string())
                .env("WEFT_JOB_ID", &job)
                .env("WEFT_NODE_ID", &hosts.names[host as usize])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // A hang is caught by the deadline (minutes), not timed.
    let deadline = std::time::Instant::now() + common::JOB_TIMEOUT;
    let mut outputs = Vec::new();
    while let Some(mut c) = (!children.is_empty()).then(|| children.remove(0)) {
        while c.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                for o in children.iter_mut().chain(std::iter::once(&mut c)) {
                    let _ = o.kill();
                    let _ = o.wait();
                }
                panic!("a rank did not finish in {:?}", common::JOB_TIMEOUT);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        outputs.push(c.wait_with_output().unwrap());
    }
    let plans_over = format!("hier_knomial over group levels (innermost first) {levels:?}");
    for (rank, out) in outputs.iter().enumerate() {
        let (text, err) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "rank {rank} failed: {text}{err}");
        assert!(
            text.contains("hierarchy checked"),
            "rank {rank}: {text}{err}"
        );
        assert!(
            err.contains(&plans_over),
            "rank {rank}: {plans_over}: {err}"
        );
        let group = format!("rank {rank}: core group package {} of 2", (rank % 4) / 2);
        assert!(err.contains(&group), "rank {rank}: {group}: {err}");
    }
    let names = hosts.names.clone();
    drop(hosts);
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&out.stdout);
    for n in &names {
        assert!(!left.contains(n.as_str()), "namespace {n} left: {left}");
    }
    let leftover: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&job))
        .collect();
    assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
}

/// A topology the user gives that cannot be read stops every rank at start with a message
/// naming it (one rank per node too, where there is nothing to split), and leaves nothing in
/// /dev/shm: a description hwloc refuses, a missing XML file, and hwloc not loadable at all.
#[test]
fn a_topology_hwloc_cannot_read_stops_the_job() {
    const NAME: &str = "a_topology_hwloc_cannot_read_stops_the_job";
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let cases: [(&str, &str, &str); 3] = [
        (
            "synthetic:no such thing",
            "libhwloc.so.15",
            "WEFT_TOPOLOGY=synthetic:no such thing: hwloc refused it",
        ),
        (
            "/nonexistent/weft-topology.xml",
            "libhwloc.so.15",
            "WEFT_TOPOLOGY=/nonexistent/weft-topology.xml: could not read it",
        ),
        (
            TWO_BY_FOUR,
            "libhwloc-not-there.so.15",
            "WEFT_TOPOLOGY=synthetic:package:2 core:4 pu:1 needs hwloc, which cannot be had: \
             libhwloc-not-there.so.15 cannot be loaded",
        ),
    ];
    for (case, (topology, library, want)) in cases.into_iter().enumerate() {
        for nodes in [vec![0u32; 4], vec![0, 1]] {
            let job = format!("hiertbad{}c{case}n{}", std::process::id(), nodes.len());
            let outputs = common::run_procs(
                NAME,
                CHILD,
                &job,
                &nodes,
                &[
                    ("WEFT_TOPOLOGY", topology),
                    ("WEFT_HWLOC_LIB", library),
                    (LEVELS, "0"),
                ],
                common::JOB_TIMEOUT,
            );
            for (rank, (status, text, err)) in outputs.iter().enumerate() {
                assert!(!status.success(), "rank {rank} started: {text}{err}");
                assert!(err.contains(want), "rank {rank}: {want}: {err}");
            }
            let leftover: Vec<_> = std::fs::read_dir("/dev/shm")
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().contains(&job))
                .collect();
            assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
        }
    }
}

/// Without hwloc (the library cannot be loaded) and no topology given, a node of 3 ranks is
/// one group, the job runs, and each rank says why it is in no core group.
#[test]
fn without_hwloc_a_node_is_one_group() {
    const NAME: &str = "without_hwloc_a_node_is_one_group";
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("hiertnohw{}", std::process::id());
    let outputs = common::run_procs(
        NAME,
        CHILD,
        &job,
        &[0; 3],
        &[
            ("WEFT_HWLOC_LIB", "libhwloc-not-there.so.15"),
            (LEVELS, "0,0,0"),
            ("WEFT_LOG", "debug"),
        ],
        common::JOB_TIMEOUT,
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(status.success(), "rank {rank} failed: {text}{err}");
        assert!(
            text.contains("hierarchy checked"),
            "rank {rank}: {text}{err}"
        );
        let why = format!(
            "rank {rank}: in no core group (no hwloc to read this machine's topology: \
             libhwloc-not-there.so.15 cannot be loaded"
        );
        assert!(err.contains(&why), "rank {rank}: {why}: {err}");
    }
}
