//! A blocking point-to-point receive from a named rank of the node takes a message that is
//! already here (in its sender's ring, or taken off it by a progress pass and waiting
//! unmatched) without a request (`Engine::recv_p2p_now`), and gives the status the usual
//! way would: source, tag (also for ANY_TAG), length of a shorter message. Anything the
//! usual way must decide stays with it: a longer message (truncation), a receive posted
//! earlier, an ANY_SOURCE receive. Messages from one sender keep their order whichever way
//! each is taken. Real shared-memory rings, one thread per rank, at 2 and 3 ranks.

mod common;

use common::Signal;
use weft::{Comm, ErrorKind, ANY_SOURCE, ANY_TAG};

/// Waits (outside weft) until the `senders` other ranks have sent (their blocking eager sends
/// returned: the messages are in rank 0's rings), then with `drained` makes one progress
/// pass (a probe for a tag nobody sends), which takes them off the rings into the
/// unexpected queue.
fn head_start(w: &Comm, sent: &Signal, senders: u64, drained: bool) {
    sent.wait_for(senders, "the other ranks' sends");
    if drained {
        assert!(w.iprobe(ANY_SOURCE, 999).unwrap().is_none());
    }
}

/// Every rank but 0 sends rank 0 three messages (tags 1, 2, 3; lengths 3, 0 and 5 words),
/// then rank 0 receives them after a head start: in the ring, or off it (`drained`).
/// Named-source receives take them at once with the right data and status; the order of
/// each sender's messages holds.
#[test]
fn messages_already_here_are_taken_at_once_with_their_status() {
    for n in [2u32, 3] {
        for drained in [false, true] {
            let sent = Signal::new();
            common::run_ranks(n, &[], move |w| {
                let rank = w.rank();
                if rank != 0 {
                    let r = rank as u64;
                    w.send(&[r, r + 1, r + 2], 0, 1).unwrap();
                    w.send::<u64>(&[], 0, 2).unwrap();
                    w.send(&[10 * r; 5], 0, 3).unwrap();
                    sent.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    w.barrier().unwrap();
                    return;
                }
                head_start(&w, &sent, n as u64 - 1, drained);
                let before = w.p2p_received_at_once();
                for src in 1..n {
                    let r = src as u64;
                    let mut buf = [0u64; 8];
                    // ANY_TAG takes the oldest: tag 1, 3 words into an 8-word buffer.
                    let st = w.recv(&mut buf, src as i32, ANY_TAG).unwrap();
                    assert_eq!((st.source, st.tag, st.bytes), (src as i32, 1, 24));
                    assert_eq!(&buf[..4], &[r, r + 1, r + 2, 0]);
                    // Tag 3 named before tag 2: the zero-length message stays for later.
                    let st = w.recv(&mut buf, src as i32, 3).unwrap();
                    assert_eq!((st.source, st.tag, st.bytes), (src as i32, 3, 40));
                    assert_eq!(&buf[..5], &[10 * r; 5]);
                    let st = w.recv(&mut buf, src as i32, 2).unwrap();
                    assert_eq!((st.source, st.tag, st.bytes), (src as i32, 2, 0));
                }
                let taken = w.p2p_received_at_once() - before;
                // Drained, every message waits unmatched and is taken at once. In the ring,
                // tag 3 behind the unmatched tag-2 message goes the usual way (only the
                // ring's next message is looked at), whose progress pass takes every ring's
                // messages off: the rest are then taken at once from the unmatched ones.
                let want = if drained {
                    3 * (n as u64 - 1)
                } else {
                    3 * (n as u64 - 1) - 1
                };
                assert_eq!(taken, want, "n {n} drained {drained}: taken at once");
                w.barrier().unwrap();
            });
        }
    }
}

/// A message longer than the buffer is not taken at once: the receive reports the
/// truncation as it does when it was posted first, in the ring and off it.
#[test]
fn a_longer_message_is_left_for_the_truncation_error() {
    for drained in [false, true] {
        let sent = Signal::new();
        common::run_ranks(2, &[], move |w| {
            if w.rank() == 1 {
                w.send(&[7u32; 6], 0, 4).unwrap();
                sent.raise_to(1);
                w.barrier().unwrap();
                return;
            }
            head_start(&w, &sent, 1, drained);
            let before = w.p2p_received_at_once();
            let mut buf = [0u32; 4];
            let e = w.recv(&mut buf, 1, 4).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Truncate, "{e}");
            assert_eq!(w.p2p_received_at_once(), before);
            w.barrier().unwrap();
        });
    }
}

/// Set by rank 0 of [`an_earlier_posted_receive_or_any_source_keeps_the_usual_way`] once its
/// nonblocking receive is posted: rank 1 sends only then. Not a barrier: a barrier may poll
/// (the leader's last arrival makes one progress pass), and a poll after the first message
/// arrived would complete the posted receive before the blocking one starts.
static POSTED: Signal = Signal(std::sync::atomic::AtomicU64::new(0));

/// Raised by rank 1 of that test once its sends returned.
static SENT: Signal = Signal(std::sync::atomic::AtomicU64::new(0));

/// A receive posted earlier (nonblocking, same sender and tag) gets the first message, the
/// blocking one the second; an ANY_SOURCE receive takes the usual way.
#[test]
fn an_earlier_posted_receive_or_any_source_keeps_the_usual_way() {
    common::run_ranks(2, &[], move |w| {
        if w.rank() == 1 {
            POSTED.wait_for(1, "rank 0's nonblocking receive");
            w.send(&[1u32], 0, 5).unwrap();
            w.send(&[2u32], 0, 5).unwrap();
            w.send(&[3u32], 0, 6).unwrap();
            SENT.raise_to(1);
            w.barrier().unwrap();
            return;
        }
        let mut first = [0u32; 1];
        let mut second = [0u32; 1];
        w.scope(|s| {
            let r = w.irecv(s, &mut first, 1, 5).unwrap();
            POSTED.raise_to(1);
            // No call until the blocking receive: nothing polls the ring in between; the
            // messages are there once rank 1's sends returned.
            SENT.wait_for(1, "rank 1's three sends");
            let before = w.p2p_received_at_once();
            w.recv(&mut second, 1, 5).unwrap();
            assert_eq!(w.p2p_received_at_once(), before, "a receive was posted");
            r.wait().unwrap();
        });
        assert_eq!((first, second), ([1], [2]));
        let before = w.p2p_received_at_once();
        let mut third = [0u32; 1];
        let st = w.recv(&mut third, ANY_SOURCE, 6).unwrap();
        assert_eq!((third, st.source), ([3], 1));
        assert_eq!(w.p2p_received_at_once(), before, "ANY_SOURCE");
        w.barrier().unwrap();
    });
}
