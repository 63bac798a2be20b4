//! The fault-injection campaign at a small size, as CI runs it every time: two jobs of each
//! fault kind (rank SIGKILL, rank exit(C) without finalize, a real segmentation fault,
//! SIGTERM and SIGINT to the launcher, SIGKILL to the launcher while the ranks move data and
//! while they start up), each checked for its exit code, its first-cause line, leftover
//! processes and segments, and hangs (see `src/bin/weft-fault-campaign.rs`). That a job ended
//! because of its fault is shown by its exit code and first-cause line, not by how fast: the
//! bound on the time from fault to end is 120 s here, a hang catcher (CI shares a 2-core
//! machine, and this test must not depend on scheduling luck), not the 1 s of the documented
//! long run, which measures it; the times are printed in the summary.

use std::path::PathBuf;
use std::process::Command;

/// The `weft` binary, built into this test's target directory (the campaign drives the real
/// launcher, so that it can be signalled and killed like a user's).
fn weft_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap().to_path_buf();
    let mut cmd = Command::new(env!("CARGO"));
    // The same packages weft-mpi's tests build (tests/common), so both share one build.
    cmd.args(["build", "-q", "-p", "weft-mpi", "-p", "weft-cli"]);
    if profile.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd
        .env("CARGO_TARGET_DIR", profile.parent().unwrap())
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .status()
        .unwrap();
    assert!(st.success(), "cargo build -p weft-cli failed");
    profile.join("weft")
}

#[test]
fn a_small_fault_campaign_ends_every_job_cleanly_with_its_first_cause() {
    let out = Command::new(env!("CARGO_BIN_EXE_weft-fault-campaign"))
        .args(["--jobs", "14", "--seed", "28", "--max-end-ms", "120000"])
        .arg("--weft")
        .arg(weft_binary())
        .arg("--rank")
        .arg(env!("CARGO_BIN_EXE_weft-itest-rank"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    let summary = text
        .lines()
        .find(|l| l.starts_with("campaign: "))
        .unwrap_or_else(|| panic!("no summary:\n{text}"));
    assert!(
        summary.starts_with(
            "campaign: 14 jobs, 0 failed, 0 hangs, 0 leaked processes, 0 leaked segments"
        ),
        "{text}"
    );
    assert!(summary.contains("first cause 10/10"), "{text}");
}
