//! A diagnostic line reaches stderr in one write, so a process killed right after it started
//! reporting never leaves a cut line (`weft: rank `) in the job's output.
//!
//! The test runs itself again as a child whose stderr is a datagram socket: every `write`
//! becomes one datagram, so the parent counts the child's writes exactly.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::Duration;

const CHILD_VAR: &str = "WEFT_TEST_DIAG_CHILD";

#[test]
fn a_diagnostic_line_is_one_write() {
    if std::env::var_os(CHILD_VAR).is_some() {
        let (rank, code, why) = (3, 58, "peer rank 1 died");
        weft_core::diag!("weft: rank {rank} aborting with code {code}: {why}");
        weft_core::diag::eprint_line("weft: second line");
        return;
    }
    let (parent, child) = UnixDatagram::pair().unwrap();
    let status = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_diagnostic_line_is_one_write",
            "--test-threads=1",
            "--nocapture",
            "--quiet",
        ])
        .env(CHILD_VAR, "1")
        .stdout(Stdio::null())
        .stderr(Stdio::from(OwnedFd::from(child)))
        .status()
        .unwrap();
    assert!(status.success());
    parent
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut writes = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    while let Ok(n) = parent.recv(&mut buf) {
        writes.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    // The harness may write its own bits; ours are the writes that mention weft.
    let ours: Vec<&String> = writes.iter().filter(|w| w.contains("weft")).collect();
    assert_eq!(
        ours,
        [
            "weft: rank 3 aborting with code 58: peer rank 1 died\n",
            "weft: second line\n"
        ],
        "every write: {writes:?}"
    );
}
