//! C programs of `itest/c/` for nonblocking communicator creation (MPI_Comm_idup), built with
//! our `mpicc` from an `install.sh` prefix and run as jobs of 1 to 4 ranks; each asserts its
//! results and error codes and exits 0. No job may leave a `/dev/shm/weft-*` segment behind.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weft_launch::{run_job, JobSpec, OutputMode};

mod common;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Installs into a fresh prefix under the target's temp directory, once per test process.
fn prefix() -> &'static Path {
    static PREFIX: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PREFIX.get_or_init(|| common::install("nbcomm-prefix"))
}

/// Compiles `itest/c/<name>.c` with our mpicc; returns the program.
fn build(name: &str) -> PathBuf {
    let out = prefix().join(format!("t-{name}"));
    let src = repo_root().join(format!("itest/c/{name}.c"));
    let o = Command::new(prefix().join("bin/mpicc"))
        .args(["-O1", "-Wall", "-Wextra", "-Werror"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "mpicc {name}.c failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

fn run(program: &Path, n: u32) -> weft_launch::JobOutcome {
    let mut spec = JobSpec::new(n, program);
    spec.output = OutputMode::Capture;
    spec.timeout = Some(Duration::from_secs(60));
    let out = run_job(&spec).unwrap();
    let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
        .collect();
    assert!(leftovers.is_empty(), "segments left behind: {leftovers:?}");
    out
}

fn run_ok(name: &str) {
    let prog = build(name);
    for n in 1..=4 {
        let out = run(&prog, n);
        assert_eq!(
            out.exit_code,
            0,
            "{name} at {n} ranks:\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// MPI_Comm_idup returns before the other ranks call it (they communicate first), several
/// run at once and around a blocking creation, the handle appears at completion with the
/// attributes and error handler, and bad input gets its error class (itest/c/idup.c).
#[test]
fn comm_idup_is_nonblocking() {
    run_ok("idup");
}
