//! A TCP peer that goes away mid-stream must be an error for the writer, never a SIGPIPE:
//! a C program (an MPI rank) keeps SIGPIPE at its default action, which kills the process.
//!
//! The test runs itself again as a child process with SIGPIPE reset to its default (as in a
//! C program); the child connects two endpoints, closes one and keeps sending to it without
//! reading (so the writes, not a read of the close, meet the dead connection). The child
//! must end normally, having seen the peer reported lost or the send refused.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod tcp_common;

use std::process::Command;
use std::time::{Duration, Instant};
use weft_transport::shm::Header;
use weft_transport::tcp::frame::{Limits, KIND_EAGER};
use weft_transport::tcp::Endpoint;

const CHILD_VAR: &str = "WEFT_TEST_SIGPIPE_CHILD";

fn endpoints(n: u32) -> Vec<Endpoint> {
    let limits = Limits {
        eager_bytes: 64 * 1024,
        fragment_bytes: 256 * 1024,
    };
    tcp_common::loopback_endpoints(n, &[7u8; 32], limits, 1)
}

/// The child's part: returns how many sends after the close went out before the peer was
/// known lost.
fn write_to_a_closed_peer() -> usize {
    let mut eps = endpoints(2);
    let body = vec![0xA5u8; 16 * 1024];
    let h = Header {
        kind: KIND_EAGER,
        len: body.len() as u32,
        ..Header::default()
    };
    // Connect and deliver one frame, so the connection is open on both sides.
    let mut got = 0;
    // A hang catcher, as the one below: on loopback it takes milliseconds.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut sent = false;
    while got == 0 {
        assert!(Instant::now() < deadline, "the first frame never arrived");
        if !sent {
            sent = eps[0].try_send(1, &h, &[&body]);
        }
        eps[0].poll(|_, _, _| {});
        eps[1].poll(|_, _, _| got += 1);
    }
    // The peer goes away; rank 0 keeps writing and never reads.
    let peer = eps.pop().unwrap();
    drop(peer);
    let mut went_out = 0;
    let deadline = Instant::now() + Duration::from_secs(300);
    while Instant::now() < deadline {
        if !eps[0].try_send(1, &h, &[&body]) {
            break;
        }
        went_out += 1;
        std::thread::sleep(Duration::from_millis(2));
        if went_out > 1000 {
            panic!("1000 sends to a closed peer were all taken");
        }
    }
    went_out
}

#[test]
fn writing_to_a_closed_peer_does_not_raise_sigpipe() {
    if std::env::var_os(CHILD_VAR).is_some() {
        // SAFETY: restoring a standard disposition before any socket exists.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
        let n = write_to_a_closed_peer();
        println!("child: {n} sends went out after the close, then the send failed");
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "writing_to_a_closed_peer_does_not_raise_sigpipe",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        None,
        "the writer was killed by signal {:?} (13 is SIGPIPE):\n{text}",
        out.status.signal()
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("then the send failed"), "{text}");
}
