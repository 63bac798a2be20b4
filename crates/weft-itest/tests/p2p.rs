//! Multi-process point-to-point tests: real ranks started by weft-launch, at 1, 2, 3, 4 and 7
//! ranks, over the shared-memory transport with CMA and with the copy fallback.

use std::path::Path;
use std::time::Duration;
use weft_itest::jobs::{assert_no_leftovers, assert_ok};
use weft_launch::{run_job, JobOutcome, JobSpec, OutputMode};

const RANK: &str = env!("CARGO_BIN_EXE_weft-itest-rank");

fn job(n: u32, args: &[&str], env: &[(&str, &str)]) -> JobOutcome {
    let mut spec = JobSpec::new(n, RANK);
    spec.args = args.iter().map(|a| a.into()).collect();
    let env = env.iter().map(|(a, b)| (a.to_string(), b.to_string()));
    // WEFT_TEST_LANES may force a lane on every job (weft_itest::lanes).
    spec.env = weft_itest::lanes::with_forced_lane(cfg!(feature = "ucx"), env.collect());
    spec.output = OutputMode::Capture;
    spec.tag_output = true;
    // A hang catcher: lock-step ranks take minutes on a busy 2-core machine.
    spec.timeout = Some(Duration::from_secs(600));
    let out = run_job(&spec).expect("launch");
    assert_no_leftovers(&out.job_id);
    out
}

#[test]
fn exchange_all_sizes_at_1_2_3_4_7_ranks_with_cma() {
    for n in [1, 2, 3, 4, 7] {
        let out = job(
            n,
            &["exchange"],
            &[("WEFT_SHM_CMA", "on"), ("WEFT_SHM_CMA_MIN_BYTES", "0")],
        );
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text.matches("exchange ok").count(), n as usize, "{text}");
    }
}

#[test]
fn exchange_with_copy_fallback_and_small_eager_limit() {
    for n in [2, 3] {
        assert_ok(&job(
            n,
            &["exchange", "4096"],
            &[("WEFT_SHM_CMA", "off"), ("WEFT_SHM_EAGER_BYTES", "4096")],
        ));
    }
}

#[test]
fn exchange_with_both_sides_copying_small_rendezvous() {
    // The cooperative CMA rendezvous (receiver reads the lower half, sender writes the upper)
    // for every rendezvous size, at odd rank counts.
    for n in [3, 4] {
        assert_ok(&job(
            n,
            &["exchange"],
            &[
                ("WEFT_SHM_COOP_BYTES", "16385"),
                ("WEFT_SHM_CMA_MIN_BYTES", "0"),
            ],
        ));
    }
}

#[test]
fn wildcards_keep_per_sender_order() {
    for n in [2, 4, 7] {
        assert_ok(&job(n, &["wildcards"], &[]));
    }
}

#[test]
fn every_collective_across_processes() {
    for n in [1, 2, 3, 4, 7] {
        let out = job(n, &["collectives"], &[]);
        assert_ok(&out);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout)
                .matches("collectives ok")
                .count(),
            n as usize
        );
    }
}

#[test]
fn split_communicators() {
    for n in [1, 3, 4, 7] {
        assert_ok(&job(n, &["split"], &[]));
    }
}

#[test]
fn killed_rank_ends_the_job_cleanly() {
    let out = job(4, &["die-mid-exchange"], &[]);
    assert_ne!(out.exit_code, 0);
    let line = out.failure.clone().unwrap_or_default();
    assert!(
        line.contains("rank 1") && line.contains("signal 9"),
        "failure line: {line:?}"
    );
    // The kill ended the job: without it reaching every rank the job would run into its
    // 600 s timeout, whose failure line names no rank.
    // The job's ranks are gone: nothing runs from our rank binary with this job id.
    let ours = std::process::Command::new("pgrep")
        .args(["-f", "weft-itest-rank die-mid-exchange"])
        .output()
        .unwrap();
    assert!(
        ours.stdout.is_empty(),
        "ranks left: {}",
        String::from_utf8_lossy(&ours.stdout)
    );
}

#[test]
fn dead_peer_is_an_error_not_a_hang() {
    let out = job(2, &["dead-peer-error"], &[]);
    assert_ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("peer died"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A hang would end by the job's 600 s timeout, which `ok` refuses (code 124).
}

/// The CPUs of a `Cpus_allowed_list` value such as `0-3,8`.
fn cpu_list(text: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(lo.parse::<usize>().unwrap()..=hi.parse::<usize>().unwrap());
    }
    cpus
}

#[test]
fn ranks_pin_to_cores_under_weft_bind() {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let own = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in /proc/self/status");
    let allowed = cpu_list(own);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(allowed.len());
    // SAFETY: sysconf has no memory effects.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    // core: always pinned; none: never; auto: when the node has more ranks than cores (not
    // tried on a big machine: one process per core and one more), or with a core per rank
    // when other programs competed for the cores as the rank started: each rank says
    // whether it saw them (`compete`), since the machine's load decides that, not the test
    // (bind.rs's unit tests force both answers).
    let mut cases = vec![("core", 3), ("none", 3), ("auto", 2)];
    if cores <= 16 {
        cases.push(("auto", cores as u32 + 1));
    }
    for (mode, n) in cases {
        let out = job(n, &["info"], &[("WEFT_BIND", mode)]);
        assert_ok(&out);
        let text = String::from_utf8_lossy(&out.stdout);
        let mut seen = 0;
        for line in text.lines().filter(|l| l.contains(" cpus ")) {
            let local: usize = line
                .split(" local ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no local rank in {line:?}"));
            let cpus = cpu_list(line.split(" cpus ").nth(1).unwrap());
            let compete = line.contains(" compete true ");
            assert!(
                line.contains(" compete false ") || (compete && mode == "auto"),
                "WEFT_BIND={mode} at {n} ranks: {line}"
            );
            let pinned = mode == "core"
                || (mode == "auto"
                    && allowed.len() >= online
                    && (n as usize > allowed.len() || compete));
            let expect = if pinned {
                vec![allowed[local % allowed.len()]]
            } else {
                allowed.clone()
            };
            assert_eq!(cpus, expect, "WEFT_BIND={mode} at {n} ranks: {line}");
            // Pinning does not change the engine's decision to yield.
            let oversubscribed = n as usize > cores;
            assert!(
                line.contains(&format!("yield {oversubscribed}")),
                "WEFT_BIND={mode} at {n} ranks: {line}"
            );
            seen += 1;
        }
        assert_eq!(seen, n, "WEFT_BIND={mode}: {text}");
    }
}

#[test]
fn oversubscribed_node_yields() {
    let out = job(4, &["info"], &[]);
    assert_ok(&out);
    let text = String::from_utf8_lossy(&out.stdout);
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let expect = if 4 > cores {
        "yield true"
    } else {
        "yield false"
    };
    assert_eq!(text.matches(expect).count(), 4, "{text}");
    assert!(Path::new(RANK).exists());
}
