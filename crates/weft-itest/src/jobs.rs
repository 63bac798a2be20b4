//! What the multi-process tests check of every job they start: that it succeeded (or the
//! panic shows its output) and that it left nothing in `/dev/shm`.

use std::path::PathBuf;
use weft_launch::JobOutcome;

/// A binary cargo built beside the running test (`<target>/<profile>/NAME`, or in `deps/`
/// next to the test binary), or `None` when it was not built.
pub fn built_binary(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    [dir.join(name), dir.parent()?.join(name)]
        .into_iter()
        .find(|p| p.is_file())
}

/// The job's exit code, failure and output, for a test's panic message.
pub fn describe(out: &JobOutcome) -> String {
    format!(
        "exit {} {:?}\nstdout:\n{}\nstderr:\n{}",
        out.exit_code,
        out.failure,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Panics, with the job's failure and output, unless it exited with code 0.
pub fn assert_ok(out: &JobOutcome) {
    assert_eq!(out.exit_code, 0, "job failed: {}", describe(out));
}

/// Panics, naming them, when segments of job `job_id` are left in `/dev/shm`.
pub fn assert_no_leftovers(job_id: &str) {
    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .expect("/dev/shm is readable")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(job_id))
        .collect();
    assert!(left.is_empty(), "job {job_id} left segments: {left:?}");
}
