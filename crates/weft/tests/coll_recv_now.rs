//! A repeated blocking collective takes a message that is already here without posting a
//! receive (`Engine::recv_eager_now`): from its ring, or from the messages waiting unmatched
//! when a progress pass of another call took it off the ring; but only when nothing else
//! could take that message or come before it: no receive posted, no older matching message
//! waiting, the exact length expected. These check both sides of that rule, with the
//! results, on real shared-memory rings (one thread per rank).

mod common;

use std::time::Duration;
use weft::coll::Tuning;
use weft::{Comm, ErrorKind};

/// The tests of this file one at a time: their ranks spin while others sleep, and the
/// test of waiting on the ring counts what lands within a short spin, which threads of
/// another test competing for the cores starve.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

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

/// The leaves wait before each call, so the root's message is in their ring when they
/// start; they take it at once, and the data is right, every time. With `drained`, a
/// probe for something else took the message off the ring first (a progress pass of
/// another call), and on every other call a point-to-point message of the root's waits
/// unmatched in front of it (another context): the leaves take the collective's message
/// from the messages waiting unmatched at once all the same, and receive the other after.
#[test]
fn a_message_already_there_is_taken_at_once() {
    let _serial = serial();
    for n in [2u32, 3] {
        for drained in [false, true] {
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
                        std::thread::sleep(Duration::from_millis(20));
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
                    // The first call takes the schedule, the rest run directly; a 20 ms
                    // head start leaves the messages waiting in all but a starved run.
                    assert!(
                        at_once >= 2,
                        "rank {rank} of {n} (drained {drained}): {at_once} taken at once"
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
    let _serial = serial();
    common::run_ranks(2, &[], move |w| {
        force(&w);
        let rank = w.rank();
        // Warm up: later calls repeat this one and run directly.
        let mut b = vec![0u64; 4];
        w.bcast(&mut b, 0).unwrap();
        w.barrier().unwrap();
        // A posted receive: rank 0 sends its point-to-point message only after the bcast.
        let mut p2p = [0u32; 2];
        w.scope(|s| {
            if rank == 1 {
                let r = w.irecv(s, &mut p2p, 0, 5).unwrap();
                std::thread::sleep(Duration::from_millis(20));
                let before = w.coll_received_at_once();
                let mut buf = vec![9u64; 4];
                w.bcast(&mut buf, 0).unwrap();
                assert_eq!(buf, vec![0u64; 4]);
                assert_eq!(w.coll_received_at_once(), before, "a receive was posted");
                r.wait().unwrap();
            } else {
                let mut buf = vec![0u64; 4];
                w.bcast(&mut buf, 0).unwrap();
                w.send(&[5u32, 6], 1, 5).unwrap();
            }
        });
        if rank == 1 {
            assert_eq!(p2p, [5, 6]);
        }
        w.barrier().unwrap();
        // A message in front: rank 0's point-to-point message comes first in the ring.
        if rank == 0 {
            w.send(&[8u32, 9], 1, 6).unwrap();
            let mut buf = vec![1u64; 4];
            w.bcast(&mut buf, 0).unwrap();
        } else {
            std::thread::sleep(Duration::from_millis(20));
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
    let _serial = serial();
    for drained in [false, true] {
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
            } else {
                std::thread::sleep(Duration::from_millis(20));
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
/// lands (counted as taken at once). A peer late by far more than that wait, or a receive
/// of the program's posted meanwhile, sends the call the usual way; every result is right.
#[test]
fn a_waiting_receive_takes_its_message_from_the_ring() {
    let _serial = serial();
    common::run_ranks(2, &[], move |w| {
        w.set_collective_tuning(
            Tuning::from_vars(&[("WEFT_ALLREDUCE_ALGO", "recursive_doubling")]).unwrap(),
        );
        let rank = w.rank();
        let op = weft::coll::Op::Sum;
        let mut out = [0u64; 2];
        let before = w.coll_received_on_ring();
        for call in 0..2000u64 {
            w.allreduce(&[call, rank as u64], &mut out, &op).unwrap();
            assert_eq!(out, [2 * call, 1], "call {call}");
        }
        // Back-to-back calls: most messages land while the other rank waits for them.
        let waited = w.coll_received_on_ring() - before;
        assert!(
            waited > 0,
            "rank {rank}: none of 2000 waited for on the ring"
        );
        // Rank 1 late by 20 ms: rank 0 gives up waiting on the ring and posts.
        for call in 0..3u64 {
            if rank == 1 {
                std::thread::sleep(Duration::from_millis(20));
            }
            w.allreduce(&[call, 7], &mut out, &op).unwrap();
            assert_eq!(out, [2 * call, 14]);
        }
        // A receive of the program's posted on rank 0: its allreduce waits the usual way.
        let mut p2p = [0u32; 1];
        w.scope(|s| {
            if rank == 0 {
                let r = w.irecv(s, &mut p2p, 1, 9).unwrap();
                let before = w.coll_received_at_once();
                w.allreduce(&[1, 2], &mut out, &op).unwrap();
                assert_eq!(out, [2, 4]);
                assert_eq!(w.coll_received_at_once(), before, "a receive was posted");
                r.wait().unwrap();
            } else {
                std::thread::sleep(Duration::from_millis(20));
                w.allreduce(&[1, 2], &mut out, &op).unwrap();
                w.send(&[3u32], 0, 9).unwrap();
            }
        });
        if rank == 0 {
            assert_eq!(p2p, [3]);
        }
    });
}
