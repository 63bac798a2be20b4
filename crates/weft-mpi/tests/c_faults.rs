//! Faults the launcher must report by their first cause, with C programs (SIGPIPE at its
//! default action, as in every MPI program): a rank that dies after its peers have already
//! aborted because of it ends the job with its own code or signal, never with the peers'
//! MPI_ERR_PROC_ABORTED (58); every diagnostic line is whole.

use std::path::{Path, PathBuf};

mod common;

fn prefix() -> &'static Path {
    common::shared_prefix("mpi-prefix")
}

/// `itest/c/faults.c`, built once per test process (tests run in parallel).
fn faults() -> &'static Path {
    static PROG: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PROG.get_or_init(|| common::build_c(prefix(), "faults"))
}

fn run_mode(prog: &Path, n: u32, mode: &str) -> weft_launch::JobOutcome {
    let mut spec = weft_launch::JobSpec::new(n, prog);
    spec.args = vec![mode.into()];
    spec.output = weft_launch::OutputMode::Capture;
    spec.timeout = Some(common::JOB_TIMEOUT);
    spec.env = vec![("WEFT_TRANSPORTS".into(), "tcp".into())];
    let out = weft_launch::run_job(&spec).unwrap();
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
        .collect();
    assert!(left.is_empty(), "segments left behind: {left:?}");
    out
}

/// Every line of the job's stderr that starts like one of weft's is complete.
fn assert_whole_lines(err: &str) {
    for l in err.lines() {
        if l.starts_with("weft: rank") {
            assert!(
                l.contains(" aborting with code ")
                    || l.contains(" exited with code ")
                    || l.contains(" killed by signal ")
                    || l.contains(" called abort with code ")
                    || l.contains(": lost rank ")
                    || l.contains(": dropped TCP connection from "),
                "cut or unknown diagnostic line {l:?} in:\n{err}"
            );
        }
    }
}

#[test]
fn exit_without_finalize_is_reported_with_its_own_code() {
    let prog = faults();
    for n in [2, 3] {
        let out = run_mode(prog, n, "exit3");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.exit_code, 3, "n={n}:\n{err}");
        assert_eq!(
            out.failure.as_deref(),
            Some("weft: rank 0 exited with code 3; ending job"),
            "n={n}:\n{err}"
        );
        assert_whole_lines(&err);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("UNREACHABLE"));
    }
}

#[test]
fn a_killed_rank_is_reported_not_its_peers_aborts() {
    let prog = faults();
    for n in [2, 4] {
        let out = run_mode(prog, n, "kill");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.exit_code, 137, "n={n}:\n{err}");
        let line = out.failure.clone().unwrap_or_default();
        assert!(
            line.starts_with("weft: rank 0 (pid ") && line.contains("killed by signal 9 (SIGKILL)"),
            "n={n}: {line}\n{err}"
        );
        assert_whole_lines(&err);
    }
}
