//! A network peer that dies while a send to it is still in the lane's hands: rank 0 stops
//! reading (it waits outside weft), rank 1 sends until the lane keeps a message it could not
//! hand on whole and queues the next ones behind it, then rank 0 exits without finalizing.
//! Every send of rank 1's must end — the ones that had left with success, the kept and the
//! queued ones with `PeerDead` naming rank 0 — and a send after that fails the same way: no
//! hang, no send reported done that never left. Real processes on two claimed nodes, over TCP
//! and (with the `ucx` feature) over UCX's TCP transport.
//!
//! The order is forced, not timed: rank 0 leaves only once rank 1 has written a marker file
//! saying its sends are stuck.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use std::path::PathBuf;
use std::time::{Duration, Instant};
use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_KEPT_CHILD";
/// Where rank 1 says that its sends are stuck (set by the test for its ranks).
const MARKER: &str = "WEFT_TEST_KEPT_MARKER";
/// Below the TCP lane's default eager limit (64 KiB), so each send is one eager frame.
const MESSAGE_BYTES: usize = 60_000;
/// Progress calls after which a send that has not completed counts as held by the lane.
const POLLS: usize = 1000;
/// Sends still incomplete behind the first held one before rank 0 is told to go (about
/// 3.8 MB: more than the kernel could still free for them without rank 0 reading).
const QUEUED_BEHIND: usize = 64;

fn child() {
    let marker = PathBuf::from(std::env::var_os(MARKER).expect("marker path"));
    let weft = weft::init().unwrap();
    let w = weft.world();
    let me = w.rank() as u32;
    // Connect both ways first: rank 0 will not poll again.
    let mut got = [0u8; 1];
    w.sendrecv(&[me as u8], 1 - me, 1, &mut got, (1 - me) as i32, 1)
        .unwrap();
    assert_eq!(got[0], (1 - me) as u8);
    if me == 0 {
        // Outside weft until rank 1's sends are stuck; a bound so that a broken rank 1
        // cannot keep this one forever.
        let until = Instant::now() + Duration::from_secs(600);
        while !marker.exists() {
            assert!(
                Instant::now() < until,
                "rank 1 never said its sends are stuck"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        println!("rank 0: leaving");
        std::process::exit(3);
    }
    let data = vec![0x5au8; MESSAGE_BYTES];
    let (left, dead) = w.scope(|s| {
        let mut reqs = Vec::new();
        for _ in 0..100_000 {
            let mut r = w.isend(s, &data, 0, 2).unwrap();
            let mut done = false;
            for _ in 0..POLLS {
                if r.test().unwrap().is_some() {
                    done = true;
                    break;
                }
            }
            if done {
                continue;
            }
            reqs.push(r);
            if reqs.len() > QUEUED_BEHIND {
                break;
            }
        }
        assert_eq!(
            reqs.len(),
            QUEUED_BEHIND + 1,
            "the sends never got stuck (rank 0 does not read)"
        );
        println!("rank 1: {} sends held", reqs.len());
        std::fs::write(&marker, b"stuck").unwrap();
        let (mut left, mut dead) = (0, 0);
        for r in reqs {
            match r.wait() {
                Ok(_) => left += 1,
                Err(e) => {
                    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
                    assert!(e.message().contains("rank 0"), "{e}");
                    dead += 1;
                }
            }
        }
        (left, dead)
    });
    println!("rank 1: {left} sent, {dead} failed with the peer dead");
    assert!(dead >= 1, "no held send failed: {left} completed");
    let e = w.send(&data, 0, 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    println!("rank 1: peer dead reported");
    std::process::exit(0);
}

fn run(test: &str, vars: &[(&str, &str)]) {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("kept{}-{test}", std::process::id());
    let marker = std::env::temp_dir().join(format!("weft-{job}.stuck"));
    let _ = std::fs::remove_file(&marker);
    let marker_text = marker.to_string_lossy().into_owned();
    let mut all = vars.to_vec();
    all.push((MARKER, &marker_text));
    let outputs = common::run_procs(test, CHILD, &job, &[0, 1], &all, common::JOB_TIMEOUT);
    let _ = std::fs::remove_file(&marker);
    let (status0, text0, err0) = &outputs[0];
    assert_eq!(status0.code(), Some(3), "rank 0: {text0}{err0}");
    let (status1, text1, err1) = &outputs[1];
    assert!(status1.success(), "rank 1 failed: {text1}{err1}");
    assert!(
        text1.contains("peer dead reported"),
        "rank 1: {text1}{err1}"
    );
}

#[test]
fn a_peer_dead_while_tcp_holds_a_send_fails_it() {
    run(
        "a_peer_dead_while_tcp_holds_a_send_fails_it",
        &[("WEFT_TRANSPORTS", "shm,tcp")],
    );
}

#[cfg(feature = "ucx")]
#[test]
fn a_peer_dead_while_ucx_holds_a_send_fails_it() {
    run(
        "a_peer_dead_while_ucx_holds_a_send_fails_it",
        &[("WEFT_TRANSPORTS", "shm,ucx"), ("UCX_TLS", "tcp")],
    );
}
