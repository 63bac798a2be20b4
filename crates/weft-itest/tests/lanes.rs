//! The lane matrix: point-to-point, collectives, one-sided (OpenSHMEM) and fault scenarios
//! between two network-namespace hosts with two ranks each, over each lane:
//!
//! - `shm+tcp`: shared memory inside a host, weft's TCP between hosts (the default);
//! - `shm+ucx`: shared memory inside a host, UCX between hosts;
//! - `tcp`: TCP between every pair, inside a host too;
//! - `ucx`: UCX between every pair.
//!
//! UCX runs over its TCP transport (`UCX_TLS=tcp`), as between hosts without RDMA hardware.
//! `WEFT_TEST_LANES` (comma-separated names) picks the lanes (CI runs one per job); unset,
//! `shm+tcp` and `tcp` run, and the UCX lanes too when this crate is built with its `ucx`
//! feature. One-sided traffic between nodes goes through each PE's one-sided service
//! (`weft::rma::net`), whichever lane carries messages.
//!
//! Needs root and iproute2, the `weft` binary (the hosts' agent) and, for the one-sided
//! scenario, `libshmem.so`, all built next to this test (`cargo build -p weft-cli -p
//! weft-shmem`). Without them the tests say why and pass when `WEFT_TEST_LANES` is unset,
//! and fail when it is set (a CI job must not pass without checking anything).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weft_itest::hosts::Hosts;
use weft_itest::jobs::{assert_no_leftovers, built_binary, describe};
use weft_itest::lanes::{lane, Lane};
use weft_launch::{run_job, HostsSpec, JobOutcome, JobSpec, MapBy, OutputMode};

const RANK: &str = env!("CARGO_BIN_EXE_weft-itest-rank");
const NETNS: &str = "ip netns exec {host}";
/// The timeout of these jobs: a hang catcher only (lock-step ranks take minutes on a busy
/// 2-core machine); a test that needs a job ended forces it and checks why it ended.
const HANG_CATCHER: Duration = Duration::from_secs(600);

/// The lanes to run, and whether they were asked for (then nothing may be skipped).
fn lanes() -> (Vec<Lane>, bool) {
    let asked = weft_itest::lanes::named().unwrap_or_else(|e| panic!("{e}"));
    if !asked.is_empty() {
        return (asked, true);
    }
    let mut names = vec!["shm+tcp", "tcp"];
    if cfg!(feature = "ucx") {
        names.extend(["shm+ucx", "ucx"]);
    }
    let all = names.into_iter().map(|n| lane(n).expect("a known lane"));
    (all.collect(), false)
}

/// Says why a test cannot run: fails when lanes were asked for, else skips.
fn cannot(asked: bool, why: &str) {
    assert!(!asked, "WEFT_TEST_LANES is set but {why}");
    eprintln!("skipping: {why}");
}

/// Hosts for one test; `tag` (a letter) and the subnet keep tests apart.
fn hosts(tag: char, asked: bool) -> Option<Hosts> {
    let pid = std::process::id();
    let net = format!("10.{}.{}", 40 + pid % 50, (tag as u32 - 'a' as u32) * 4 + 1);
    match Hosts::up(tag, 2, &net) {
        Ok(h) => Some(h),
        Err(why) => {
            cannot(asked, &why);
            None
        }
    }
}

/// Runs `program args` with 2 ranks on each host under `lane`, bounded by `timeout`.
fn job(
    weft: &Path,
    h: &Hosts,
    lane: &Lane,
    program: &Path,
    args: &[&str],
    timeout: Duration,
) -> JobOutcome {
    let mut spec = JobSpec::new(4, program);
    spec.args = args.iter().map(|a| a.into()).collect();
    spec.env = lane.env.clone();
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    spec.timeout = Some(timeout);
    spec.hosts = Some(HostsSpec {
        hosts: h.slots(2),
        map_by: MapBy::Slot,
        launcher: NETNS.into(),
        boot_addr: Some(h.root_ip()),
        agent_program: weft.to_path_buf(),
    });
    run_job(&spec).expect("launch")
}

fn ok(lane: &Lane, what: &str, out: &JobOutcome) {
    assert_eq!(out.exit_code, 0, "{} {what}: {}", lane.name, describe(out));
}

#[test]
fn p2p_and_collectives_over_every_lane() {
    let (lanes, asked) = lanes();
    let Some(weft) = built_binary("weft") else {
        return cannot(
            asked,
            "no weft binary next to this test (cargo build -p weft-cli)",
        );
    };
    let Some(h) = hosts('a', asked) else { return };
    let rank = Path::new(RANK);
    let t = HANG_CATCHER;
    for lane in &lanes {
        // Every rank reaches the others over the lane's network transport.
        let out = job(&weft, &h, lane, rank, &["transport"], t);
        ok(lane, "transport", &out);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said.matches(&format!("network {}", lane.network)).count(),
            4,
            "{}: {said}",
            lane.name
        );
        for (scenario, says) in [
            ("exchange", "exchange ok"),
            ("wildcards", ""),
            ("split", ""),
            ("collectives", "collectives ok"),
        ] {
            let out = job(&weft, &h, lane, rank, &[scenario], t);
            ok(lane, scenario, &out);
            let said = String::from_utf8_lossy(&out.stdout);
            if !says.is_empty() {
                assert_eq!(said.matches(says).count(), 4, "{}: {said}", lane.name);
            }
            assert_no_leftovers(&out.job_id);
        }
    }
}

#[test]
fn faults_over_every_lane() {
    let (lanes, asked) = lanes();
    let Some(weft) = built_binary("weft") else {
        return cannot(
            asked,
            "no weft binary next to this test (cargo build -p weft-cli)",
        );
    };
    let Some(h) = hosts('b', asked) else { return };
    let rank = Path::new(RANK);
    for lane in &lanes {
        // A rank killed in the middle of an exchange ends the whole job, with the rank and
        // the signal named, and leaves nothing behind (a job the kill did not end would end
        // by its timeout, whose line names no rank).
        let out = job(&weft, &h, lane, rank, &["die-mid-exchange"], HANG_CATCHER);
        assert_ne!(out.exit_code, 0, "{}: {}", lane.name, describe(&out));
        let failure = out.failure.clone().unwrap_or_default();
        assert!(
            failure.contains("rank 1") && failure.contains("signal 9"),
            "{}: {}",
            lane.name,
            describe(&out)
        );
        assert_no_leftovers(&out.job_id);
        // A peer that exits without a word is an error naming it, not a hang.
        let out = job(&weft, &h, lane, rank, &["dead-peer-error"], HANG_CATCHER);
        ok(lane, "dead-peer-error", &out);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("peer died") && said.contains("rank 1"),
            "{}: {}",
            lane.name,
            describe(&out)
        );
    }
    let left = Command::new("pgrep")
        .args(["-f", &format!("{RANK} die-mid-exchange")])
        .output()
        .unwrap();
    assert!(
        left.stdout.is_empty(),
        "ranks left: {}",
        String::from_utf8_lossy(&left.stdout)
    );
}

#[test]
fn large_messages_stripe_over_two_rails_of_every_lane() {
    let (lanes, asked) = lanes();
    let Some(weft) = built_binary("weft") else {
        return cannot(
            asked,
            "no weft binary next to this test (cargo build -p weft-cli)",
        );
    };
    let pid = std::process::id();
    let net = format!("10.{}.{}", 40 + pid % 50, 13);
    let h = match Hosts::up_with('d', 2, &net, &["--rails", "2"]) {
        Ok(h) => h,
        Err(why) => return cannot(asked, &why),
    };
    let rank = Path::new(RANK);
    for lane in &lanes {
        let mut lane_rails = Lane {
            name: lane.name,
            env: lane.env.clone(),
            network: lane.network,
        };
        lane_rails.env.push(("WEFT_MAX_RAILS".into(), "2".into()));
        let out = job(&weft, &h, &lane_rails, rank, &["rails"], HANG_CATCHER);
        ok(lane, "rails", &out);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said.matches("exchange ok").count(),
            4,
            "{}: {said}",
            lane.name
        );
        // Every rank sent messages of 1 MiB and more to the other host: some of their
        // pieces went over the second rail.
        let striped: Vec<u64> = said
            .lines()
            .filter_map(|l| l.split("striped ").nth(1))
            .map(|n| n.trim().parse().unwrap())
            .collect();
        assert_eq!(striped.len(), 4, "{}: {said}", lane.name);
        assert!(
            striped.iter().all(|&n| n > 0),
            "{}: pieces on the second rail per rank: {striped:?}\n{}",
            lane.name,
            describe(&out)
        );
    }
}

/// Compiles `crates/weft-shmem/tests/c/NAME.c` with oshcc against the libshmem.so in `lib`.
fn oshcc(name: &str, lib: &Path) -> PathBuf {
    let shmem = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../weft-shmem");
    let out = std::env::temp_dir().join(format!("weft-lanes-{name}-{}", std::process::id()));
    let status = Command::new(shmem.join("bin/oshcc"))
        .env("WEFT_SHMEM_LIB", lib)
        .args([
            "-O1",
            "-Wall",
            "-Werror",
            "-pthread",
            "-Wl,--disable-new-dtags",
            "-o",
        ])
        .arg(&out)
        .arg(shmem.join(format!("tests/c/{name}.c")))
        .status()
        .expect("run oshcc");
    assert!(status.success(), "oshcc {name}.c failed");
    out
}

#[test]
fn one_sided_over_every_lane() {
    let (lanes, asked) = lanes();
    let Some(weft) = built_binary("weft") else {
        return cannot(
            asked,
            "no weft binary next to this test (cargo build -p weft-cli)",
        );
    };
    let Some(lib) = built_binary("libshmem.so") else {
        return cannot(
            asked,
            "no libshmem.so next to this test (cargo build -p weft-shmem)",
        );
    };
    let Some(h) = hosts('c', asked) else { return };
    let exe = oshcc("rma_nodes", lib.parent().unwrap());
    for lane in &lanes {
        let out = job(&weft, &h, lane, &exe, &[], HANG_CATCHER);
        ok(lane, "rma_nodes", &out);
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            said.matches("rma_nodes ok").count(),
            4,
            "{}: {said}",
            lane.name
        );
        assert_no_leftovers(&out.job_id);
    }
    let _ = std::fs::remove_file(exe);
}
