//! `WEFT_LOG`, with real ranks started by weft-launch: at `debug` each rank explains on stderr
//! the lane each peer got, the collectives' algorithm choices and its connections; unset, a
//! job that works writes nothing on stderr; a misspelt filter stops the ranks at init.

use std::time::Duration;
use weft_itest::jobs::{assert_no_leftovers, assert_ok};
use weft_launch::{run_job, JobOutcome, JobSpec, OutputMode};

const RANK: &str = env!("CARGO_BIN_EXE_weft-itest-rank");

/// A job of `n` ranks of `scenario` with exactly `env` (no lane forced by the test suite:
/// these tests choose their transports), which must succeed.
fn job(n: u32, scenario: &str, env: &[(&str, &str)]) -> JobOutcome {
    let out = start(n, scenario, env);
    assert_ok(&out);
    assert_no_leftovers(&out.job_id);
    out
}

/// A job as [`job`] starts it, whatever its outcome.
fn start(n: u32, scenario: &str, env: &[(&str, &str)]) -> JobOutcome {
    let mut spec = JobSpec::new(n, RANK);
    spec.args = vec![scenario.into()];
    spec.env = env
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    spec.output = OutputMode::Capture;
    // A hang catcher: lock-step ranks take minutes on a busy 2-core machine.
    spec.timeout = Some(Duration::from_secs(600));
    run_job(&spec).expect("launch")
}

/// Whether some line of `text` starts with `start` and contains every one of `parts`.
fn has_line(text: &str, start: &str, parts: &[&str]) -> bool {
    text.lines()
        .any(|l| l.starts_with(start) && parts.iter().all(|p| l.contains(p)))
}

#[test]
fn debug_shows_each_ranks_lanes_and_algorithm_choices() {
    let out = job(2, "collectives", &[("WEFT_LOG", "debug")]);
    let err = String::from_utf8_lossy(&out.stderr);
    for (me, peer) in [(0, 1), (1, 0)] {
        let lanes = format!("weft: rank {me}: DEBUG weft::lanes: rank {peer} (same node): ");
        assert!(
            has_line(&err, &lanes, &["lane shm for small messages", "not used: "]),
            "no lane choice of rank {me} in:\n{err}"
        );
        let algo = format!("weft: rank {me}: DEBUG weft::coll::select: ");
        assert!(
            has_line(&err, &algo, &["allreduce of ", " on 2 ranks, 2 per node: "]),
            "no allreduce algorithm choice of rank {me} in:\n{err}"
        );
        // The bootstrap connects before the rank is known: its line names the process.
        let boot = "weft: pid ";
        let connected = [
            "DEBUG weft_boot::select: bootstrap weft connected",
            &format!(": rank {me} of 2"),
        ];
        assert!(
            has_line(&err, boot, &connected),
            "no bootstrap event of rank {me} in:\n{err}"
        );
        // Once per new call shape, not per call: the scenario calls allreduce twice (sum,
        // max) for each of its 5 sizes.
        let allreduce = err
            .lines()
            .filter(|l| l.starts_with(&algo) && l.contains("allreduce of "))
            .count();
        assert!(
            (1..=5).contains(&allreduce),
            "{allreduce} allreduce choices of rank {me} for 10 calls of 5 shapes in:\n{err}"
        );
    }
}

#[test]
fn debug_shows_tcp_connections() {
    let out = job(
        2,
        "collectives",
        &[("WEFT_LOG", "debug"), ("WEFT_TRANSPORTS", "tcp")],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    for (me, peer) in [(0, 1), (1, 0)] {
        let lanes =
            format!("weft: rank {me}: DEBUG weft::lanes: rank {peer} (same node): lane tcp");
        assert!(
            has_line(&err, &lanes, &[]),
            "no TCP lane of rank {me} in:\n{err}"
        );
        let tcp = format!("weft: rank {me}: DEBUG weft_transport::tcp: TCP connection ");
        assert!(
            has_line(
                &err,
                &tcp,
                &[&format!(" rank {peer} at "), " open (handshake proven)"]
            ),
            "no TCP connection event of rank {me} in:\n{err}"
        );
    }
}

#[test]
fn a_filter_names_the_targets_it_shows() {
    let out = job(2, "collectives", &[("WEFT_LOG", "weft::lanes=debug")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("DEBUG weft::lanes: "),
        "no lane choice in:\n{err}"
    );
    assert!(
        err.lines().all(|l| l.contains("DEBUG weft::lanes: ")),
        "lines of other targets in:\n{err}"
    );
}

#[test]
fn unset_a_working_job_writes_nothing_on_stderr() {
    let out = job(2, "collectives", &[]);
    assert!(
        out.stderr.is_empty(),
        "stderr of a job without WEFT_LOG:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_misspelt_filter_stops_every_rank_with_its_name() {
    // env_logger would take `debg` for a target and show nothing at all.
    let out = start(2, "collectives", &[("WEFT_LOG", "weft::lanes=debg")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.exit_code, 0, "a bad WEFT_LOG ran:\n{err}");
    assert!(
        err.contains("WEFT_LOG=weft::lanes=debg") && err.contains("is not a level"),
        "no WEFT_LOG error in:\n{err}"
    );
    assert_no_leftovers(&out.job_id);
}
