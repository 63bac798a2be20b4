//! A repeated blocking collective takes a message that is already here without posting a
//! receive (`Engine::recv_eager_now`): from its ring, or from the messages waiting unmatched
//! when a progress pass of another call took it off the ring; but only when nothing else
//! could take that message or come before it: no receive posted, no older matching message
//! waiting, the exact length expected. These check both sides of that rule, with the
//! results, on real shared-memory rings (one thread per rank).

mod common;

use common::Signal;
use std::cell::Cell;
use std::rc::Rc;
use weft::coll::{RingWait, Tuning};
use weft::{Comm, ErrorKind};

/// Linear scatter from root 0 (one message per leaf) and k-nomial bcast, forced so the
/// plans are the same whatever the tuning table says.
fn force(w: &Comm) {
    w.set_collective_tuning(
        Tuning::from_vars(&[
            ("WEFT_SCATTER_ALGO", "linear"),
            ("WEFT_BCAST_ALGO", "knomial"),
        ])
        .unwrap(),
    );
}

/// The leaves wait (outside weft) until the root's call is done, so the root's message is in
/// their ring when they start; they take it at once, and the data is right, every time.
/// With `drained`, a probe for something else took the message off the ring first (a
/// progress pass of another call), and on every other call a point-to-point message of the
/// root's waits unmatched in front of it (another context): the leaves take the
/// collective's message from the messages waiting unmatched at once all the same, and
/// receive the other after.
#[test]
fn a_message_already_there_is_taken_at_once() {
    for n in [2u32, 3] {
        for drained in [false, true] {
            let sent = Signal::new();
            common::run_ranks(n, &[], move |w| {
                force(&w);
                let rank = w.rank();
                let mut at_once = 0;
                for call in 0..6u64 {
                    let p2p_first = drained && call % 2 == 1;
                    if rank == 0 && p2p_first {
                        for leaf in 1..n {
                            w.send(&[call as u32], leaf, 7).unwrap();
                        }
                    }
                    if rank != 0 {
                        sent.wait_for(call + 1, "the root's scatter and bcast");
                        if drained {
                            assert!(w.iprobe(weft::ANY_SOURCE, 999).unwrap().is_none());
                        }
                    }
                    let before = w.coll_received_at_once();
                    let send: Vec<u64> = (0..n as u64 * 3).map(|i| i + 100 * call).collect();
                    let mut recv = vec![0u64; 3];
                    w.scatter(&send, &mut recv, 0).unwrap();
                    let want: Vec<u64> = (0..3).map(|i| rank as u64 * 3 + i + 100 * call).collect();
                    assert_eq!(recv, want, "call {call} rank {rank}");
                    let mut buf = vec![rank as u64 + call; 5];
                    w.bcast(&mut buf, 0).unwrap();
                    assert_eq!(buf, vec![call; 5], "call {call} rank {rank}");
                    if rank == 0 {
                        // Both sends are eager: the messages are in the leaves' rings.
                        sent.raise_to(call + 1);
                    }
                    at_once += w.coll_received_at_once() - before;
                    if rank != 0 && p2p_first {
                        let mut p2p = [0u32; 1];
                        w.recv(&mut p2p, 0, 7).unwrap();
                        assert_eq!(p2p, [call as u32], "call {call} rank {rank}");
                    }
                    w.barrier().unwrap();
                }
                if rank == 0 {
                    assert_eq!(at_once, 0, "the root receives nothing");
                } else {
                    // The first call of each collective takes the schedule; the other five
                    // scatters and five bcasts run directly and find their message here.
                    assert_eq!(
                        at_once, 10,
                        "rank {rank} of {n} (drained {drained}): taken at once"
                    );
                }
            });
        }
    }
}

/// A point-to-point receive posted on rank 1 (it could take any message, though not this
/// one: another context), or a point-to-point message from the root waiting unmatched in
/// front of the collective's: rank 1 posts its receive as usual, and both the collective
/// and the point-to-point traffic get the right data.
#[test]
fn a_posted_receive_or_an_earlier_message_keeps_the_usual_way() {
    let sent = Signal::new();
    let took = Signal::new();
    common::run_ranks(2, &[], move |w| {
        force(&w);
        let rank = w.rank();
        // Warm up: later calls repeat this one and run directly.
        let mut b = vec![0u64; 4];
        w.bcast(&mut b, 0).unwrap();
        w.barrier().unwrap();
        // A posted receive: rank 0 sends its point-to-point message only after rank 1's
        // bcast is done (sooner, it could complete the receive before the bcast looks).
        let mut p2p = [0u32; 2];
        w.scope(|s| {
            if rank == 1 {
                let r = w.irecv(s, &mut p2p, 0, 5).unwrap();
                sent.wait_for(1, "rank 0's first bcast");
                let before = w.coll_received_at_once();
                let mut buf = vec![9u64; 4];
                w.bcast(&mut buf, 0).unwrap();
                assert_eq!(buf, vec![0u64; 4]);
                assert_eq!(w.coll_received_at_once(), before, "a receive was posted");
                took.raise_to(1);
                r.wait().unwrap();
            } else {
                let mut buf = vec![0u64; 4];
                w.bcast(&mut buf, 0).unwrap();
                sent.raise_to(1);
                took.wait_for(1, "rank 1's bcast");
                w.send(&[5u32, 6], 1, 5).unwrap();
            }
        });
        if rank == 1 {
            assert_eq!(p2p, [5, 6]);
        }
        w.barrier().unwrap();
        // A message in front: rank 0's point-to-point message comes first in the ring. Rank
        // 0 sends it only once rank 1 has left the barrier (whose last progress pass could
        // otherwise take it off the ring) and makes no call until its bcast.
        if rank == 1 {
            took.raise_to(2);
        }
        if rank == 0 {
            took.wait_for(2, "rank 1 out of the barrier");
            w.send(&[8u32, 9], 1, 6).unwrap();
            let mut buf = vec![1u64; 4];
            w.bcast(&mut buf, 0).unwrap();
            sent.raise_to(2);
        } else {
            sent.wait_for(2, "rank 0's message and second bcast");
            let before = w.coll_received_at_once();
            let mut buf = vec![9u64; 4];
            w.bcast(&mut buf, 0).unwrap();
            assert_eq!(buf, vec![1u64; 4]);
            assert_eq!(w.coll_received_at_once(), before, "a message came first");
            let mut p2p = [0u32; 2];
            w.recv(&mut p2p, 0, 6).unwrap();
            assert_eq!(p2p, [8, 9]);
        }
        w.barrier().unwrap();
    });
}

/// A leaf that passes another length than the root's, with the root's message already
/// there (in its ring, or taken off it by a probe): the message is not taken at once (it
/// is not what the leaf expects) and the leaf gets the count error it gets when the message
/// comes later.
#[test]
fn a_message_of_another_length_is_not_taken() {
    for drained in [false, true] {
        let sent = Signal::new();
        common::run_ranks(2, &[], move |w| {
            force(&w);
            let rank = w.rank();
            // The leaf's last call repeats these, so it runs directly, expecting 3 elements.
            let mut buf = vec![1u64; 3];
            w.bcast(&mut buf, 0).unwrap();
            w.bcast(&mut buf, 0).unwrap();
            // Nothing of the root's next call reaches the leaf while it still polls in the
            // last.
            w.barrier().unwrap();
            if rank == 0 {
                let mut longer = vec![2u64; 4];
                w.bcast(&mut longer, 0).unwrap();
                sent.raise_to(1);
            } else {
                sent.wait_for(1, "the root's longer bcast");
                if drained {
                    assert!(w.iprobe(weft::ANY_SOURCE, 999).unwrap().is_none());
                }
                let (runs, before) = (w.coll_direct_runs(), w.coll_received_at_once());
                let e = w.bcast(&mut buf, 0).unwrap_err();
                // Longer than the buffer: a truncation, as MPI classes it.
                assert_eq!(e.kind(), ErrorKind::Truncate, "{e}");
                assert!(w.coll_direct_runs() > runs, "the call ran directly");
                assert_eq!(w.coll_received_at_once(), before);
            }
        });
    }
}

/// A two-rank exchange (allreduce by recursive doubling) whose peer's message is not there
/// yet waits for it on the peer's ring once its own message is out, and takes it as it
/// lands (counted as taken at once). The order is forced: in each call one rank (by turns)
/// goes first, and the other starts its call only when the first is waiting on its ring
/// (the wait's hook tells it) and finishes before the first looks. A peer that comes only
/// after the wait gave up (the hook again) sends the call the usual way, and so does a
/// receive of the program's posted meanwhile; every result is right.
#[test]
fn a_waiting_receive_takes_its_message_from_the_ring() {
    const CALLS: u64 = 200;
    let waiting = Signal::new();
    let done = Signal::new();
    let gave_up = Signal::new();
    let posted = Signal::new();
    common::run_ranks(2, &[], move |w| {
        w.set_collective_tuning(
            Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", "recursive_doubling")]).unwrap(),
        );
        let rank = w.rank();
        let op = weft::coll::Op::Sum;
        let mut out = [0u64; 2];
        // Warm up: the first call takes the schedule, the next ones run directly.
        for call in 0..2u64 {
            w.allreduce(&[call, rank as u64], &mut out, &op).unwrap();
        }
        w.barrier().unwrap();
        // The call under way; its first rank's hook lets the other one go, then waits until
        // that one's call is done (its message is then in the first rank's ring).
        let current = Rc::new(Cell::new(0u64));
        let (cur, go, fin) = (current.clone(), waiting.clone(), done.clone());
        w.set_coll_ring_wait_hook(Some(Box::new(move |moment| {
            let call = cur.get();
            assert_eq!(
                moment,
                RingWait::Waiting,
                "rank {rank} call {call}: gave up"
            );
            assert_eq!(
                call % 2,
                rank as u64,
                "rank {rank} waited in call {call}, not its turn"
            );
            go.raise_to(call + 1);
            fin.wait_for(call + 1, "the other rank's call");
        })));
        let before = w.coll_received_on_ring();
        for call in 0..CALLS {
            current.set(call);
            let first = call % 2 == rank as u64;
            if !first {
                waiting.wait_for(call + 1, "the first rank waiting on its ring");
            }
            w.allreduce(&[call, rank as u64], &mut out, &op).unwrap();
            assert_eq!(out, [2 * call, 1], "call {call}");
            if !first {
                done.raise_to(call + 1);
            }
        }
        let waited = w.coll_received_on_ring() - before;
        assert_eq!(
            waited,
            CALLS / 2,
            "rank {rank}: waits on the ring that took the message"
        );
        w.barrier().unwrap();
        // Rank 1 comes only once rank 0 gave up waiting on the ring: rank 0 posts and waits.
        let gone = gave_up.clone();
        w.set_coll_ring_wait_hook(Some(Box::new(move |moment| {
            if moment == RingWait::GaveUp {
                gone.raise_to(gone.get() + 1);
            }
        })));
        let (on_ring, at_once) = (w.coll_received_on_ring(), w.coll_received_at_once());
        for call in 0..3u64 {
            if rank == 1 {
                gave_up.wait_for(call + 1, "rank 0 giving up its wait");
            }
            w.allreduce(&[call, 7], &mut out, &op).unwrap();
            assert_eq!(out, [2 * call, 14]);
        }
        if rank == 0 {
            assert_eq!(gave_up.get(), 3);
            assert_eq!(
                w.coll_received_on_ring(),
                on_ring,
                "rank 0 posted its receives"
            );
            assert_eq!(
                w.coll_received_at_once(),
                at_once,
                "rank 0 posted its receives"
            );
        }
        w.set_coll_ring_wait_hook(None);
        w.barrier().unwrap();
        // A receive of the program's posted on rank 0: its allreduce waits the usual way.
        let mut p2p = [0u32; 1];
        w.scope(|s| {
            if rank == 0 {
                let r = w.irecv(s, &mut p2p, 1, 9).unwrap();
                posted.raise_to(1);
                let before = w.coll_received_at_once();
                w.allreduce(&[1, 2], &mut out, &op).unwrap();
                assert_eq!(out, [2, 4]);
                assert_eq!(w.coll_received_at_once(), before, "a receive was posted");
                // Only now may rank 1's message come (sooner, it could complete the receive
                // before the allreduce looks).
                posted.raise_to(2);
                r.wait().unwrap();
            } else {
                posted.wait_for(1, "rank 0's receive");
                w.allreduce(&[1, 2], &mut out, &op).unwrap();
                posted.wait_for(2, "rank 0's allreduce");
                w.send(&[3u32], 0, 9).unwrap();
            }
        });
        if rank == 0 {
            assert_eq!(p2p, [3]);
        }
    });
}
