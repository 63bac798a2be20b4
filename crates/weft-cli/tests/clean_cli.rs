//! Segments a job could not remove (its launcher killed with SIGKILL before every local rank
//! had attached, or every process of a node killed at once) do not outlive the job for long:
//! the next job's start sweeps them, and `weft clean` removes them on demand (`--dry-run`
//! lists them). A segment some live process still holds is never taken.
//!
//! The leftovers are made by the test: files named like a job's segments, dated a minute
//! back, that nobody holds (the state a SIGKILLed launcher's job leaves).

use std::fs::{File, FileTimes};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime};

const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// A file `/dev/shm/weft-<fake job>-<what>` of 4 KiB last modified a minute ago.
fn leftover(what: &str) -> PathBuf {
    let p = PathBuf::from(format!(
        "/dev/shm/weft-cleantest{}-{what}",
        std::process::id()
    ));
    std::fs::write(&p, [0u8; 4096]).unwrap();
    let old = SystemTime::now() - Duration::from_secs(60);
    File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_times(FileTimes::new().set_modified(old))
        .unwrap();
    p
}

fn weft(args: &[&str]) -> (i32, String) {
    let o = Command::new(WEFT).args(args).output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code().unwrap_or(-1), text)
}

#[test]
fn a_jobs_start_and_weft_clean_remove_segments_nobody_holds() {
    let stale = leftover("0badf00d");
    let held = leftover("0badf00d-heap0");
    let keep = File::open(&held).unwrap();

    let (code, out) = weft(&["clean", "--dry-run"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("would remove {} (4096 bytes)", stale.display())),
        "{out}"
    );
    assert!(!out.contains(&held.display().to_string()), "{out}");
    assert!(stale.exists(), "a dry run removes nothing");

    // The next job's start sweeps it.
    let (code, out) = weft(&["run", "-n", "2", "true"]);
    assert_eq!(code, 0, "{out}");
    assert!(!stale.exists(), "the job's start left {}", stale.display());
    assert!(held.exists(), "a held segment was taken");

    // weft clean removes what a job start has not seen yet (it takes any age).
    let again = leftover("0badf00d-node");
    File::options()
        .write(true)
        .open(&again)
        .unwrap()
        .set_times(FileTimes::new().set_modified(SystemTime::now()))
        .unwrap();
    let (code, out) = weft(&["clean"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("removed {} (4096 bytes)", again.display())),
        "{out}"
    );
    assert!(!again.exists() && held.exists());

    drop(keep);
    let (code, out) = weft(&["clean"]);
    assert_eq!(code, 0, "{out}");
    assert!(!held.exists(), "released, it is stale: {out}");
}
