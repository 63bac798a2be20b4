//! The TCP lane says when an eager message it took is still partly in its hands: with the
//! receiver not reading, the sockets fill, a message is taken but kept (`Sent::Kept`), and
//! its token is reported done only once the sender's polls have written all of it, after
//! the receiver read. Two links in one thread over loopback.

mod tcp_common;

use weft_transport::net::{NetEndpoint, NetFailure, NetSink, Sent};
use weft_transport::shm::Header;
use weft_transport::tcp::frame::Limits;
use weft_transport::tcp::link::TcpLink;

const EAGER: usize = 64 * 1024;

fn links() -> Vec<TcpLink> {
    let limits = Limits {
        eager_bytes: EAGER as u32,
        fragment_bytes: 256 * 1024,
    };
    tcp_common::loopback_endpoints(2, &[5u8; 32], limits, 1)
        .into_iter()
        .map(|ep| TcpLink::new(ep, 32 * 1024))
        .collect()
}

#[derive(Default)]
struct Seen {
    /// Tags of the eager messages delivered, in order.
    tags: Vec<i32>,
    done: Vec<u32>,
}

impl NetSink for Seen {
    fn eager(&mut self, _peer: u32, h: &Header, body: &[u8]) {
        assert_eq!(body.len(), EAGER);
        assert!(
            body.iter().all(|&b| b == h.tag as u8),
            "message {} garbled",
            h.tag
        );
        self.tags.push(h.tag);
    }
    fn rendezvous(&mut self, _: u32, _: &Header, _: usize, _: u64) {
        panic!("no rendezvous here");
    }
    fn done(&mut self, token: u32, result: Result<(), NetFailure>) {
        result.unwrap();
        self.done.push(token);
    }
}

fn message(tag: i32) -> (Header, Vec<u8>) {
    let h = Header {
        tag,
        len: EAGER as u32,
        ..Header::default()
    };
    (h, vec![tag as u8; EAGER])
}

#[test]
fn a_message_the_socket_did_not_take_whole_is_done_only_once_written() {
    let mut l = links();
    let (mut s0, mut s1) = (Seen::default(), Seen::default());
    // Connect: the first message goes once the handshake is through (both polling).
    let (h, body) = message(0);
    let mut first = Sent::NotNow;
    for _ in 0..1_000_000 {
        first = l[0].try_send(1, &h, &[&body], 0);
        if first != Sent::NotNow {
            break;
        }
        l[0].poll(&mut s0);
        l[1].poll(&mut s1);
    }
    assert_ne!(first, Sent::NotNow, "never connected");
    for _ in 0..1_000_000 {
        if s1.tags.len() == 1 {
            break;
        }
        l[0].poll(&mut s0);
        l[1].poll(&mut s1);
    }
    assert_eq!(s1.tags, [0]);
    // The receiver stops reading: sends are taken whole until the sockets are full, then
    // one is kept (partly written), then none is taken.
    let mut kept = None;
    for tag in 1..100_000 {
        let (h, body) = message(tag);
        match l[0].try_send(1, &h, &[&body], tag as u32) {
            Sent::Done => {}
            Sent::Kept => {
                kept = Some(tag);
                break;
            }
            Sent::NotNow => panic!("message {tag} refused before any was kept"),
        }
        l[0].poll(&mut s0);
    }
    let kept = kept.expect("the sockets never filled");
    let (h, body) = message(kept + 1);
    assert_eq!(
        l[0].try_send(1, &h, &[&body], 0),
        Sent::NotNow,
        "a message behind a kept one"
    );
    // However long the sender polls, the kept message cannot leave while nobody reads.
    for _ in 0..1000 {
        l[0].poll(&mut s0);
    }
    assert!(s0.done.is_empty(), "reported done while still held");
    assert!(l[0].unsent());
    // The receiver reads; the sender's polls write the rest and report it.
    for _ in 0..10_000_000 {
        if s0.done == [kept as u32] && s1.tags.len() == kept as usize + 1 {
            break;
        }
        l[1].poll(&mut s1);
        l[0].poll(&mut s0);
    }
    assert_eq!(s0.done, [kept as u32]);
    assert_eq!(s1.tags, (0..=kept).collect::<Vec<_>>());
    assert!(!l[0].unsent());
}
