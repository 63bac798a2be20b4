//! The point-to-point fast path for predefined contiguous datatypes (src/fast.rs) against
//! the checks MPI requires: `itest/c/fastpath.c` makes every argument error of the fast
//! calls (wrong rank, tag, count < 0, invalid and uncommitted datatype handles, NULL buffer,
//! NULL communicator) and asserts its error class, truncation from MPI_Recv, MPI_Sendrecv,
//! MPI_Wait and MPI_Test (class and the status's source and tag), the statuses of good
//! messages, and that errors reach the handler of their communicator. Runs at 1, 2 and 3
//! ranks (a rank without a partner talks to itself).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use weft_launch::{run_job, JobSpec, OutputMode};

mod common;

fn build(name: &str) -> PathBuf {
    let prefix = common::install("fast-path");
    let out = prefix.join(format!("t-{name}"));
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../itest/c/{name}.c"));
    let o = Command::new(prefix.join("bin/mpicc"))
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

#[test]
fn fast_path_keeps_every_error_class_and_status() {
    let prog = build("fastpath");
    for n in [1, 2, 3] {
        let mut spec = JobSpec::new(n, &prog);
        spec.output = OutputMode::Capture;
        spec.timeout = Some(Duration::from_secs(60));
        let out = run_job(&spec).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.exit_code, 0, "{n} ranks:\n{stderr}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("fast path checks passed"),
            "{n} ranks:\n{stderr}"
        );
        let leftovers: Vec<_> = std::fs::read_dir("/dev/shm")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(&out.job_id))
            .collect();
        assert!(leftovers.is_empty(), "segments left behind: {leftovers:?}");
    }
}
