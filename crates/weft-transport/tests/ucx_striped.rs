//! Striped rendezvous over two UCX rails between two links of one process: the receiver
//! keeps the pieces of one message apart from the next one's even when the sender used the
//! same engine token for both. The engine reuses a token once a send is done, and a striped
//! send is done once its pieces left, which can be before the receiver has taken the last
//! piece of the message in: the next message's pieces then arrive while the first is still
//! open on the receiver. Here the test forces that order by starting both sends before the
//! receiver matches either.
#![cfg(feature = "ucx")]

use std::time::{Duration, Instant};
use weft_transport::buf::{RawBuf, RawBufMut};
use weft_transport::net::{Handle, NetEndpoint, NetFailure, NetSink};
use weft_transport::shm::Header;
use weft_transport::ucx::link::{UcxConfig, UcxLink};

const WAIT: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Seen {
    announced: Vec<(i32, usize, Handle)>,
    done: Vec<(u32, Result<(), NetFailure>)>,
}

impl NetSink for Seen {
    fn eager(&mut self, _: u32, h: &Header, _: &[u8]) {
        panic!("an eager message arrived: {h:?}");
    }
    fn rendezvous(&mut self, _: u32, h: &Header, len: usize, handle: Handle) {
        self.announced.push((h.tag, len, handle));
    }
    fn done(&mut self, token: u32, result: Result<(), NetFailure>) {
        self.done.push((token, result));
    }
}

fn link(rank: u32) -> UcxLink {
    UcxLink::open(&UcxConfig {
        rank,
        size: 2,
        key: vec![3; 32],
        eager_bytes: 8192,
        copy_bytes: 8192,
        library: "libucp.so.0".into(),
        rails: vec![None, None],
        stripe_bytes: 64 << 10,
    })
    .expect("libucp.so.0 loads and opens two rails")
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn two_striped_messages_under_one_token_stay_apart() {
    let mut sender = link(0);
    let mut receiver = link(1);
    let own = |l: &UcxLink| -> Vec<Vec<u8>> { l.addresses().iter().map(|a| a.to_vec()).collect() };
    let (sender_addrs, receiver_addrs) = (own(&sender), own(&receiver));
    assert_eq!(receiver_addrs.len(), 2, "one address per rail");
    sender.set_peer_addresses(1, receiver_addrs);
    receiver.set_peer_addresses(0, sender_addrs);

    // Odd length: the last piece is shorter than the others.
    let len = 300_001;
    let (first, second) = (pattern(len, 1), pattern(len, 2));
    const TOKEN: u32 = 5;
    for (tag, data) in [(10, &first), (11, &second)] {
        let h = Header {
            tag,
            ..Default::default()
        };
        // SAFETY: both buffers outlive the links' use of them (polled to completion below).
        assert!(unsafe { sender.start_rendezvous(1, &h, RawBuf::new(data), TOKEN) });
    }

    let (mut at_sender, mut at_receiver) = (Seen::default(), Seen::default());
    let start = Instant::now();
    while at_receiver.announced.len() < 2 && start.elapsed() < WAIT {
        sender.poll(&mut at_sender);
        receiver.poll(&mut at_receiver);
    }
    assert_eq!(at_receiver.announced.len(), 2, "both announcements arrive");
    let (a, b) = (at_receiver.announced[0], at_receiver.announced[1]);
    assert_eq!((a.0, a.1, b.0, b.1), (10, len, 11, len));
    assert_ne!(a.2, b.2, "two messages, two handles");

    let (mut got_first, mut got_second) = (vec![0u8; len], vec![0u8; len]);
    // SAFETY: the buffers stay alive and untouched until their tokens are reported done.
    unsafe {
        receiver.fetch(0, a.2, RawBufMut::new(&mut got_first), 100);
        receiver.fetch(0, b.2, RawBufMut::new(&mut got_second), 101);
    }
    let start = Instant::now();
    while (at_receiver.done.len() < 2 || at_sender.done.len() < 2) && start.elapsed() < WAIT {
        sender.poll(&mut at_sender);
        receiver.poll(&mut at_receiver);
    }
    let mut fetched: Vec<u32> = at_receiver.done.iter().map(|d| d.0).collect();
    fetched.sort_unstable();
    assert_eq!(fetched, [100, 101], "both fetches report once");
    assert!(at_receiver.done.iter().all(|d| d.1.is_ok()));
    assert_eq!(at_sender.done.len(), 2, "both sends report");
    assert!(at_sender.done.iter().all(|d| d.0 == TOKEN && d.1.is_ok()));
    assert!(
        got_first == first,
        "the first message landed whole in its own buffer"
    );
    assert!(
        got_second == second,
        "the second message landed whole in its own buffer"
    );
    assert_eq!(
        sender.stats().striped,
        2,
        "each message sent one of its two pieces on the second rail"
    );
}
