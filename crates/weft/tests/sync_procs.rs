//! The synchronisation engine across real processes without a launcher to end the job: the
//! test binary starts copies of itself as ranks (a real bootstrap store, one shared table).
//! After some barrier and reduce rounds one rank exits; the others, asleep on the futex of a
//! barrier that can never complete, must notice and report the dead peer instead of hanging.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use weft::sync::{SyncEngine, SyncOp};
use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_SYNC_CHILD";
const NP: u32 = 3;

fn child() {
    let weft = weft::init().unwrap();
    let engine = SyncEngine::new(&weft, "procs").unwrap();
    let me = weft.world().rank();
    for round in 0..50u64 {
        let s: u64 = engine
            .reduce(1, me as u64 + round, SyncOp::Sum, NP)
            .unwrap();
        assert_eq!(s, 3 + 3 * round);
        engine.barrier(2, NP).unwrap();
    }
    if me == NP - 1 {
        std::process::exit(3);
    }
    let e = engine.barrier(2, NP).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    assert!(e.message().contains("barrier"), "{e}");
    println!("rank {me}: dead peer reported: {e}");
    std::process::exit(0);
}

#[test]
fn a_dead_process_ends_a_sync_wait_with_peer_dead() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let secret = b"sync-procs-test-secret";
    let server = weft_boot::TcpStoreServer::bind("127.0.0.1:0", secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let job = format!("syncp{}", std::process::id());
    let children: Vec<_> = (0..NP)
        .map(|rank| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "a_dead_process_ends_a_sync_wait_with_peer_dead",
                    "--nocapture",
                ])
                .env(CHILD, "1")
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", NP.to_string())
                .env("WEFT_JOB_ID", &job)
                .env("WEFT_NODE_ID", "node0")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // A hang catcher (a lost wake-up never ends; a loaded machine takes minutes).
    let deadline = Instant::now() + Duration::from_secs(600);
    for (rank, mut c) in children.into_iter().enumerate() {
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                let out = c.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                let err = String::from_utf8_lossy(&out.stderr);
                if rank as u32 == NP - 1 {
                    assert_eq!(status.code(), Some(3), "rank {rank}: {text}{err}");
                } else {
                    assert!(status.success(), "rank {rank} failed: {text}{err}");
                    assert!(
                        text.contains("dead peer reported"),
                        "rank {rank}: {text}{err}"
                    );
                }
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                panic!(
                    "rank {rank} did not finish in 600 s (a sync wait hung?): {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let left: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&job))
        .collect();
    assert!(left.is_empty(), "segments left behind: {left:?}");
}
