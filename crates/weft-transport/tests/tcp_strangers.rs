//! TCP endpoints over loopback facing strangers and slow peers: a stranger's HELLO claiming a
//! rank does not stop sends to that rank, a flood of silent connections evicts only unproven
//! inbound ones (a real rank cut mid-handshake dials again instead of declaring death),
//! strangers do not make the endpoint busy, a peer that answers long after the handshake
//! timeout is still reached, and one that computes between HELLO and PROOF is not dropped.

mod tcp_common;

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};
use weft_transport::shm::Header;
use weft_transport::tcp::frame::{Limits, KIND_EAGER};
use weft_transport::tcp::{handshake, Endpoint};

const LIMITS: Limits = Limits {
    eager_bytes: 64 * 1024,
    fragment_bytes: 256 * 1024,
};
const KEY: [u8; 32] = [6u8; 32];

fn endpoints(n: u32) -> Vec<Endpoint> {
    tcp_common::loopback_endpoints(n, &KEY, LIMITS, 1)
}

fn eager(tag: i32) -> (Header, Vec<u8>) {
    let body = vec![tag as u8; 16];
    let h = Header {
        kind: KIND_EAGER,
        tag,
        len: body.len() as u32,
        ..Header::default()
    };
    (h, body)
}

/// How long a loop here waits for an event (a frame, an accept, a handshake step): a hang
/// catcher only, since on loopback each takes milliseconds. Nothing here depends on how long
/// anything takes; the loops that run for a time (ten handshake timeouts) only give a
/// timeout the chance to fire, and pass the more surely the longer they run.
const HANG: Duration = Duration::from_secs(300);

/// Polls endpoint `who` alone until `done` holds of it; fails naming `what` after [`HANG`].
fn poll_until(eps: &mut [Endpoint], who: usize, what: &str, done: impl Fn(&Endpoint) -> bool) {
    let start = Instant::now();
    while !done(&eps[who]) {
        assert!(start.elapsed() < HANG, "{what}");
        eps[who].poll(|_, _, _| {});
    }
}

/// Sends one frame 0 -> 1 and pumps both until it arrives or `limit` (a hang catcher) passes;
/// returns how long it took, or None.
fn deliver(eps: &mut [Endpoint], tag: i32, limit: Duration) -> Option<Duration> {
    let (h, body) = eager(tag);
    let start = Instant::now();
    let mut sent = false;
    let mut got = false;
    while start.elapsed() < limit {
        if !sent {
            sent = eps[0].try_send(1, &h, &[&body]);
        }
        eps[0].poll(|_, _, _| {});
        eps[1].poll(|peer, fh, fb| {
            if peer == 0 && fh.tag == tag && fb == body.as_slice() {
                got = true;
            }
        });
        if got {
            return Some(start.elapsed());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    None
}

#[test]
fn a_stranger_claiming_a_rank_does_not_block_sends_to_it() {
    let mut eps = endpoints(2);
    // The stranger's claim would only be dropped after an hour: a send held up behind it
    // does not get through in the time `deliver` allows, however fast or loaded the machine.
    for ep in &mut eps {
        ep.set_timeouts(Duration::from_secs(3600), Duration::from_secs(60));
    }
    // Anyone can send a HELLO claiming to be rank 1, then go silent.
    let mut s = TcpStream::connect(eps[0].addresses()[0]).unwrap();
    s.write_all(&handshake::hello(1, 0, &handshake::nonce().unwrap()))
        .unwrap();
    // Rank 0 read the claim and challenged it: the claim stands while the send goes on.
    poll_until(
        &mut eps,
        0,
        "the stranger's HELLO was never answered",
        |e| e.handshakes_waiting().1 == 1,
    );
    assert_eq!(eps[0].unproven_count(), 1);
    // A stranger's claim must not cost every progress call an epoll_wait.
    assert!(
        !eps[0].busy(),
        "an unproven inbound connection made TCP busy"
    );
    deliver(&mut eps, 3, HANG).expect("a send to rank 1 stalled behind a stranger's claim");
    assert!(eps[0].take_lost().is_empty());
    drop(s);
}

#[test]
fn a_flood_of_silent_strangers_evicts_only_unproven_ones_and_a_cut_rank_dials_again() {
    let mut eps = endpoints(2);
    let cap = eps[1].max_unproven();
    assert_eq!(cap, 64, "max(64, 2 * size)");
    let addr = eps[1].addresses()[0];
    let mut strangers: Vec<TcpStream> = Vec::new();
    // The cap fills with silent strangers.
    for _ in 0..cap {
        strangers.push(TcpStream::connect(addr).unwrap());
    }
    poll_until(&mut eps, 1, "the strangers were never taken", |e| {
        e.unproven_count() == cap
    });
    // Rank 0 dials and its HELLO is out before more strangers arrive behind it: its
    // connection becomes the oldest unproven one and is evicted before rank 1 reads it.
    let (h, body) = eager(9);
    assert!(!eps[0].try_send(1, &h, &[&body]));
    poll_until(&mut eps, 0, "rank 0's HELLO never went out", |e| {
        e.handshakes_waiting().0 == 1
    });
    for _ in 0..cap + 16 {
        strangers.push(TcpStream::connect(addr).unwrap());
    }
    // Rank 1 takes rank 0's connection and the cap + 16 behind it: every one past the cap
    // evicts the oldest unproven one, rank 0's among them.
    poll_until(
        &mut eps,
        1,
        "the strangers past the cap were not refused",
        |e| e.refused_count() > cap as u64,
    );
    assert!(eps[1].unproven_count() <= cap);
    // Rank 0 saw its handshake cut: it must dial again, not declare rank 1 dead. Getting
    // through at all is the point.
    deliver(&mut eps, 9, HANG).expect("rank 0 never got through");
    assert!(
        eps[0].take_lost().is_empty(),
        "a live rank was declared dead"
    );
    assert!(!eps[0].is_dead(1));
    drop(strangers);
}

#[test]
fn a_peer_that_answers_long_after_the_handshake_timeout_is_not_dead() {
    let mut eps = endpoints(2);
    for ep in &mut eps {
        ep.set_timeouts(Duration::from_millis(100), Duration::from_secs(60));
    }
    let (h, body) = eager(4);
    assert!(!eps[0].try_send(1, &h, &[&body]));
    poll_until(&mut eps, 0, "rank 0's HELLO never went out", |e| {
        e.handshakes_waiting().0 == 1
    });
    // Rank 1 computes (never polls) for ten handshake timeouts; rank 0 keeps polling.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        eps[0].poll(|_, _, _| {});
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(
        eps[0].take_lost().is_empty(),
        "a busy peer was declared dead"
    );
    assert!(!eps[0].is_dead(1));
    assert!(eps[0].busy(), "our own handshake keeps the endpoint busy");
    assert_eq!(
        eps[0].handshakes_waiting().0,
        1,
        "still waiting for the challenge"
    );
    deliver(&mut eps, 4, HANG).expect("the late peer never got the frame");
    assert!(eps[1].take_lost().is_empty());
}

#[test]
fn a_challenged_peer_that_computes_before_its_proof_is_not_dropped() {
    let mut eps = endpoints(2);
    // Until rank 1 has answered the HELLO, its handshake timeout is long: a HELLO read late
    // by a loaded machine must not be taken for a silent stranger. Only the wait for the
    // PROOF runs with the short one.
    eps[0].set_timeouts(Duration::from_millis(100), Duration::from_secs(60));
    eps[1].set_timeouts(Duration::from_secs(3600), Duration::from_secs(60));
    let (h, body) = eager(8);
    assert!(!eps[0].try_send(1, &h, &[&body]));
    // Rank 0 gets its HELLO out, then computes (never polls); rank 1 answers with a
    // challenge and keeps polling for ten handshake timeouts while no proof comes.
    poll_until(&mut eps, 0, "rank 0's HELLO never went out", |e| {
        e.handshakes_waiting().0 == 1
    });
    poll_until(&mut eps, 1, "rank 1 never challenged rank 0's HELLO", |e| {
        e.handshakes_waiting().1 == 1
    });
    eps[1].set_timeouts(Duration::from_millis(100), Duration::from_secs(60));
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        eps[1].poll(|_, _, _| {});
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(
        eps[1].refused_count(),
        0,
        "the challenged connection was dropped"
    );
    assert_eq!(
        eps[1].handshakes_waiting().1,
        1,
        "still waiting for the proof"
    );
    deliver(&mut eps, 8, HANG).expect("rank 0 never got through");
    assert!(
        eps[0].take_lost().is_empty(),
        "a live rank was declared dead"
    );
    assert!(eps[1].take_lost().is_empty());
}
