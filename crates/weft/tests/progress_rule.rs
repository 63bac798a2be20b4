//! MPI's progress rule (MPI-4.1 §3.7.4, §6.12): a rank blocked in any call — a receive, a
//! probe, the wait of another collective — still advances its started nonblocking
//! collectives, so legal programs that complete them late cannot deadlock; and a barrier
//! polls at least once, so a receive posted before it is answered before the work after
//! it. One thread per
//! rank (the in-process harness), 4 ranks; each scenario runs under a watchdog so that a
//! regression fails instead of hanging the suite.

mod common;

use std::sync::mpsc;
use std::time::Duration;
use weft::coll::{CollRequest, Op};
use weft::Comm;

/// Runs `body` on 4 ranks with the knobs `vars`; fails if the job does not end in time.
fn run_bounded(vars: &'static [(&'static str, &'static str)], body: fn(&Comm)) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        common::run_ranks(4, vars, move |w| body(&w));
        let _ = tx.send(());
    });
    // A hang catcher: the scenario takes milliseconds, minutes on a loaded machine.
    match rx.recv_timeout(common::STEP_WAIT) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a rank failed (see its panic)"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("deadlock: a blocked rank did not advance its pending collective")
        }
    }
}

/// Rank 0: ibarrier; recv from 2; wait. Rank 2: ibarrier; wait; send to 0. Others: ibarrier;
/// wait. With a multi-round barrier some rank's round depends on rank 0's later round,
/// which rank 0 only sends if its blocking receive advances the barrier.
fn barrier_then_recv(w: &Comm) {
    let rank = w.rank();
    if rank != 0 {
        // Rank 0 must find its first round still open when it starts the barrier, so it
        // enters the receive with rounds left to send (else the race can hide the bug).
        std::thread::sleep(Duration::from_millis(30));
    }
    let r = w.ibarrier().unwrap();
    match rank {
        0 => {
            let mut got = [0u64; 4];
            let st = w.recv(&mut got, 2, 7).unwrap();
            assert_eq!(st.source, 2);
            assert_eq!(got, [2, 20, 200, 2000]);
            r.wait().unwrap();
        }
        2 => {
            r.wait().unwrap();
            w.send(&[2u64, 20, 200, 2000], 0, 7).unwrap();
        }
        _ => r.wait().unwrap(),
    }
}

#[test]
fn blocking_recv_advances_pending_barrier() {
    run_bounded(&[], barrier_then_recv);
}

#[test]
fn blocking_recv_advances_pending_dissemination_barrier() {
    run_bounded(&[("WEFT_BARRIER_ALGO", "dissemination")], barrier_then_recv);
}

#[test]
fn blocking_recv_advances_pending_knomial_barrier() {
    run_bounded(&[("WEFT_BARRIER_ALGO", "knomial")], barrier_then_recv);
}

/// Mixed point-to-point and collective traffic: a rendezvous-sized iallreduce and an ibcast
/// rooted at the rank that blocks in a probe, a large send whose receiver first finishes its
/// collectives, and the collectives completed in different orders on different ranks.
fn mixed(w: &Comm) {
    let (rank, size) = (w.rank(), w.size());
    let n = 40_000usize; // above the eager limit: rendezvous traffic inside the collectives
    let send: Vec<u64> = (0..n)
        .map(|i| (rank as u64 + 1) * 1_000 + i as u64)
        .collect();
    let mut sum = vec![0u64; n];
    let mut bc: Vec<u32> = if rank == 1 {
        (0..n as u32).map(|i| i ^ 0xa5a5).collect()
    } else {
        vec![0; n]
    };
    let big: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(31)).collect();
    {
        // SAFETY: both requests are waited below, none is leaked.
        let (ar, b) = unsafe {
            (
                w.iallreduce(&send, &mut sum, &Op::Sum).unwrap(),
                w.ibcast(&mut bc, 1).unwrap(),
            )
        };
        match rank {
            // The bcast root blocks in a probe for a message rank 2 sends only once both of
            // its collectives are done, which needs the root's data.
            1 => {
                let st = w.probe(2, 9).unwrap();
                assert_eq!(st.bytes, n * 4);
                let mut got = vec![0u32; n];
                w.recv(&mut got, 2, 9).unwrap();
                assert_eq!(got, big);
                b.wait().unwrap();
                ar.wait().unwrap();
            }
            2 => {
                b.wait().unwrap();
                ar.wait().unwrap();
                w.send(&big, 1, 9).unwrap();
            }
            // Rank 0 waits the bcast first, then blocks in a receive from rank 3.
            0 => {
                b.wait().unwrap();
                let mut x = [0u32; 1];
                w.recv(&mut x, 3, 11).unwrap();
                assert_eq!(x, [33]);
                ar.wait().unwrap();
            }
            // Rank 3 sends to rank 0 only after the allreduce, which needs rank 0's part.
            _ => {
                CollRequest::wait_all(vec![ar, b]).unwrap();
                w.send(&[33u32], 0, 11).unwrap();
            }
        }
    }
    let want: Vec<u64> = (0..n)
        .map(|i| (0..size as u64).map(|r| (r + 1) * 1_000 + i as u64).sum())
        .collect();
    assert_eq!(sum, want, "allreduce on rank {rank}");
    let want: Vec<u32> = (0..n as u32).map(|i| i ^ 0xa5a5).collect();
    assert_eq!(bc, want, "bcast on rank {rank}");
}

#[test]
fn blocking_p2p_advances_pending_collectives() {
    run_bounded(&[], mixed);
}

/// A collective waited while another, started earlier, is still pending on a peer that
/// waits them in the opposite order.
fn opposite_orders(w: &Comm) {
    let rank = w.rank();
    let a = w.ibarrier().unwrap();
    let dup = w.dup().unwrap();
    let b = dup.ibarrier().unwrap();
    if rank.is_multiple_of(2) {
        a.wait().unwrap();
        b.wait().unwrap();
    } else {
        b.wait().unwrap();
        a.wait().unwrap();
    }
}

#[test]
fn waits_in_opposite_orders_complete() {
    run_bounded(&[("WEFT_BARRIER_ALGO", "dissemination")], opposite_orders);
}

/// What rank 1 saw of its send in [`barrier_exit_pass`], one entry per test (they run at the
/// same time): 0 not yet, 1 complete while rank 0 stayed out of every call, 2 not complete
/// within the bound.
static SEND_SEEN: [std::sync::atomic::AtomicU32; 2] = [
    std::sync::atomic::AtomicU32::new(0),
    std::sync::atomic::AtomicU32::new(0),
];

/// The order of [`barrier_exit_pass`]'s steps between ranks 0 and 1, one per test: 1 when
/// rank 0 has left the first barrier, 2 when rank 1 has posted its send.
static STEPS: [common::Signal; 2] = [
    common::Signal(std::sync::atomic::AtomicU64::new(0)),
    common::Signal(std::sync::atomic::AtomicU64::new(0)),
];

/// Rank 0 posts a receive for a message above the eager limit, then arrives last at a
/// barrier that rank 1 entered after sending it, and afterwards makes no call until rank 1
/// has seen its send complete (or given up). The send completes only if rank 0's barrier
/// took the request to send and answered it, though the barrier was complete at rank 0's
/// first look (rank 0 is the node's leader: the others wait for its release, so they poll
/// at least once whatever the order of arrival). `test` picks the test's [`SEND_SEEN`].
fn barrier_exit_pass(w: &Comm, test: usize) {
    use std::sync::atomic::Ordering;
    use std::time::Instant;
    let rank = w.rank();
    // 24 KiB: above the eager limit (16 KiB), so a request to send goes first; once
    // answered, the whole message fits in the ring, so the send completes without more
    // help from the receiver.
    let n = 3 * 1024;
    let data: Vec<u64> = (0..n as u64).map(|i| i * 7 + 3).collect();
    let mut got = vec![0u64; n];
    // Repeated barriers run directly (the first call of a plan takes the schedule): both
    // paths are crossed before the one that counts.
    for _ in 0..3 {
        w.barrier().unwrap();
    }
    w.scope(|s| match rank {
        1 => {
            w.barrier().unwrap();
            // Rank 0 has left the barrier above: it cannot see the request to send in that
            // barrier's wait.
            STEPS[test].wait_for(1, "rank 0 out of the first barrier");
            let mut r = w.isend(s, &data, 0, 5).unwrap();
            STEPS[test].raise_to(2);
            w.barrier().unwrap();
            // Once answered the send completes on its own: the 300 s only catch a send that
            // was never answered (below run_bounded's, to fail with this test's message).
            let t0 = Instant::now();
            let seen = loop {
                if r.test().unwrap().is_some() {
                    break 1;
                }
                if t0.elapsed() > Duration::from_secs(300) {
                    break 2;
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            SEND_SEEN[test].store(seen, Ordering::Release);
            assert_eq!(
                seen, 1,
                "rank 1's send did not complete while rank 0 computed"
            );
            r.wait().unwrap();
        }
        0 => {
            let r = w.irecv(s, &mut got, 1, 5).unwrap();
            w.barrier().unwrap();
            STEPS[test].raise_to(1);
            // The request to send is on its way before rank 0 enters the next barrier, so
            // that barrier must answer it. The pause only makes it likely that everyone else
            // already waits there (the barrier complete at rank 0's first look, the case
            // this test is about); when not, rank 0 answers in the barrier's wait and the
            // test passes all the same.
            STEPS[test].wait_for(2, "rank 1's send posted");
            std::thread::sleep(Duration::from_millis(150));
            w.barrier().unwrap();
            // "Computing": no call until rank 1 has seen its send complete or given up.
            while SEND_SEEN[test].load(Ordering::Acquire) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
            let st = r.wait().unwrap();
            assert_eq!(st.bytes, n * 8);
        }
        _ => {
            w.barrier().unwrap();
            w.barrier().unwrap();
        }
    });
    if rank == 0 {
        assert_eq!(got, data);
    }
}

#[test]
fn barrier_answers_a_request_to_send_after_the_last_arrival() {
    run_bounded(&[], |w| barrier_exit_pass(w, 0));
}

#[test]
fn counter_barrier_answers_a_request_to_send_after_the_last_arrival() {
    run_bounded(&[("WEFT_BARRIER_ALGO", "shm_counter")], |w| {
        barrier_exit_pass(w, 1)
    });
}
