//! Repeated blocking scatterv and gatherv calls run without their plan: a scatterv root
//! sends each rank its block directly (`direct::root_scatter_now`), a scatterv leaf whose
//! message is already here takes it at once (`direct::leaf_take_now`), a gatherv leaf sends
//! its block (`direct::leaf_send_now`). These check that each is taken, that the results
//! are right at odd, empty and large blocks and a moving root, and that whatever they
//! cannot handle (bad arguments, a length the root did not send, an unfinished nonblocking
//! collective) goes the usual way and gets its usual answer, on real shared-memory rings
//! (one thread per rank).

mod common;

use common::Signal;
use weft::{Comm, ErrorKind};

/// Call `call`'s counts (elements per rank: odd, some zero) and displacements (blocks in
/// reverse rank order with a gap of 3 between them) on `n` ranks; the send length.
fn layout(n: u32, call: u64) -> (Vec<usize>, Vec<usize>, usize) {
    let counts: Vec<usize> = (0..n as u64)
        .map(|i| ((i * 3 + call) % 5) as usize)
        .collect();
    let mut displs = vec![0; n as usize];
    let mut at = 1;
    for i in (0..n as usize).rev() {
        displs[i] = at;
        at += counts[i] + 3;
    }
    (counts, displs, at)
}

/// What element `k` of rank `i`'s block holds in call `call`.
fn value(call: u64, i: u32, k: usize) -> u32 {
    (call * 1000 + i as u64 * 10 + k as u64) as u32
}

/// Runs `body(w, call, root, signal)` for calls 0..16 on 1, 2, 3, 4 and 7 ranks, the root
/// moving every 4 calls; `signal` is the job's, for ordering the ranks' steps.
fn with_moving_root(body: fn(&Comm, u64, u32, &Signal)) {
    for n in [1u32, 2, 3, 4, 7] {
        let signal = Signal::new();
        common::run_ranks(n, &[], move |w| {
            for call in 0..16u64 {
                body(&w, call, (call / 4) as u32 % n, &signal);
            }
        });
    }
}

/// One scatterv of call `call` with `root`, checked; (direct runs, messages taken at once)
/// it added on this rank.
fn scatterv_checked(w: &Comm, call: u64, root: u32) -> (u64, u64) {
    let (rank, n) = (w.rank(), w.size());
    let (counts, displs, len) = layout(n, call);
    let mut send = vec![u32::MAX; len];
    for i in 0..n {
        for k in 0..counts[i as usize] {
            send[displs[i as usize] + k] = value(call, i, k);
        }
    }
    let mut recv = vec![0u32; counts[rank as usize]];
    let (runs, at_once) = (w.coll_direct_runs(), w.coll_received_at_once());
    if rank == root {
        w.scatterv(&send, &counts, &displs, &mut recv, root)
            .unwrap();
    } else {
        w.scatterv(&[], &[], &[], &mut recv, root).unwrap();
    }
    let want: Vec<u32> = (0..recv.len()).map(|k| value(call, rank, k)).collect();
    assert_eq!(recv, want, "call {call} root {root} rank {rank}");
    (
        w.coll_direct_runs() - runs,
        w.coll_received_at_once() - at_once,
    )
}

/// At 1, 2, 3, 4 and 7 ranks, with the root moving every 4 calls: every call is right;
/// after a rank's first call every root call runs directly, and a leaf that calls after its
/// message came (on odd calls it waits for the root's call to end) takes it at once.
#[test]
fn repeated_scatterv_runs_without_its_plan() {
    with_moving_root(|w, call, root, sent| {
        let rank = w.rank();
        let late = rank != root && call % 2 == 1;
        if late {
            sent.wait_for(call + 1, "the root's scatterv");
        }
        let (runs, at_once) = scatterv_checked(w, call, root);
        if rank == root {
            // The root's sends are eager: every block is in its leaf's ring.
            sent.raise_to(call + 1);
        }
        if call > 0 && rank == root {
            assert_eq!(runs, 1, "call {call}: the root ran directly");
            assert_eq!(at_once, 0, "call {call}: the root receives nothing");
        }
        if call > 0 && late {
            assert_eq!(
                (runs, at_once),
                (1, 1),
                "call {call} rank {rank} of {}: taken at once",
                w.size()
            );
            assert_eq!(at_once, 1, "call {call} rank {rank}: taken at once");
        }
        // Nothing of the next call reaches a leaf still polling in this one.
        w.barrier().unwrap();
    });
}

/// Blocks above the eager limit (64 KiB and 1 MiB) from a root that runs directly: its sends
/// wait for their receivers as the run's would, and the data are right.
#[test]
fn large_blocks_from_a_direct_root() {
    common::run_ranks(3, &[], move |w| {
        let (rank, n) = (w.rank(), w.size() as usize);
        for (call, block) in [(0u32, 16usize << 10), (1, 16 << 10), (2, 256 << 10)] {
            let counts = vec![block; n];
            let displs: Vec<usize> = (0..n).map(|i| i * block).collect();
            let send: Vec<u32> = (0..(n * block) as u32).map(|x| x ^ call).collect();
            let mut recv = vec![0u32; block];
            let runs = w.coll_direct_runs();
            if rank == 0 {
                w.scatterv(&send, &counts, &displs, &mut recv, 0).unwrap();
                if call > 0 {
                    assert_eq!(w.coll_direct_runs() - runs, 1, "call {call}");
                }
            } else {
                w.scatterv(&[], &[], &[], &mut recv, 0).unwrap();
            }
            assert_eq!(recv, send[rank as usize * block..][..block], "call {call}");
        }
    });
}

/// After good calls, a root whose arrays are bad gets the usual error and sends nothing
/// and uses no call number: its next good call is the one the leaves are waiting in.
#[test]
fn bad_arrays_at_the_root_get_the_usual_error() {
    common::run_ranks(3, &[], move |w| {
        let rank = w.rank();
        warm_up(&w);
        if rank == 0 {
            let send = [1u32, 2, 3, 4, 5, 6];
            let mut recv = [0u32; 2];
            let short = w.scatterv(&send, &[2, 2], &[0, 2], &mut recv, 0);
            assert_eq!(short.unwrap_err().kind(), ErrorKind::InvalidCount);
            let past = w.scatterv(&send, &[2, 2, 2], &[0, 2, 5], &mut recv, 0);
            assert_eq!(past.unwrap_err().kind(), ErrorKind::InvalidCount);
            let mut wrong = [0u32; 3];
            let mine = w.scatterv(&send, &[2, 2, 2], &[0, 2, 4], &mut wrong, 0);
            assert_eq!(mine.unwrap_err().kind(), ErrorKind::InvalidCount);
        }
        scatterv_checked(&w, 2, 0);
    });
}

/// A leaf that expects another length than the root sent it, with the message already
/// there: not taken at once, and the leaf gets the count error of the usual way.
#[test]
fn a_leaf_expecting_another_length_gets_the_count_error() {
    let sent = Signal::new();
    common::run_ranks(2, &[], move |w| {
        let rank = w.rank();
        warm_up(&w);
        w.barrier().unwrap();
        if rank == 0 {
            let mut recv = [0u32; 1];
            w.scatterv(&[7u32, 8, 9], &[1, 2], &[0, 1], &mut recv, 0)
                .unwrap();
            sent.raise_to(1);
        } else {
            sent.wait_for(1, "the root's scatterv");
            let at_once = w.coll_received_at_once();
            let mut recv = [0u32; 3];
            let e = w.scatterv(&[], &[], &[], &mut recv, 0).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidCount, "{e}");
            assert_eq!(w.coll_received_at_once(), at_once, "not taken at once");
        }
    });
}

/// One gatherv of call `call` to `root` (the layout of [`layout`]), checked at the root;
/// the direct runs it added on this rank.
fn gatherv_checked(w: &Comm, call: u64, root: u32) -> u64 {
    let (rank, n) = (w.rank(), w.size());
    let (counts, displs, len) = layout(n, call);
    let mine: Vec<u32> = (0..counts[rank as usize])
        .map(|k| value(call, rank, k))
        .collect();
    let runs = w.coll_direct_runs();
    if rank == root {
        let mut recv = vec![u32::MAX; len];
        w.gatherv(&mine, &mut recv, &counts, &displs, root).unwrap();
        for i in 0..n {
            for k in 0..counts[i as usize] {
                let got = recv[displs[i as usize] + k];
                assert_eq!(got, value(call, i, k), "call {call} block {i} element {k}");
            }
        }
    } else {
        w.gatherv(&mine, &mut [], &[], &[], root).unwrap();
    }
    w.coll_direct_runs() - runs
}

/// At 1, 2, 3, 4 and 7 ranks, with the root moving every 4 calls: every call is right, and
/// after a rank's first call every leaf call runs directly.
#[test]
fn repeated_gatherv_leaves_run_without_their_plan() {
    with_moving_root(|w, call, root, _| {
        let rank = w.rank();
        let runs = gatherv_checked(w, call, root);
        if call > 0 && rank != root {
            assert_eq!(runs, 1, "call {call} rank {rank}: the leaf ran directly");
        }
    });
}

/// Leaves' blocks above the eager limit: their direct sends wait for the root as the run's
/// would, and the root has every block right.
#[test]
fn large_blocks_from_direct_leaves() {
    common::run_ranks(3, &[], move |w| {
        let (rank, n) = (w.rank(), w.size() as usize);
        for (call, block) in [(0u32, 16usize << 10), (1, 16 << 10), (2, 256 << 10)] {
            let mine: Vec<u32> = (0..block as u32).map(|x| x ^ (rank << 20) ^ call).collect();
            let runs = w.coll_direct_runs();
            if rank == 0 {
                let counts = vec![block; n];
                let displs: Vec<usize> = (0..n).map(|i| i * block).collect();
                let mut recv = vec![0u32; n * block];
                w.gatherv(&mine, &mut recv, &counts, &displs, 0).unwrap();
                for i in 0..n {
                    let want: Vec<u32> = (0..block as u32)
                        .map(|x| x ^ ((i as u32) << 20) ^ call)
                        .collect();
                    assert!(
                        recv[i * block..][..block] == want[..],
                        "call {call} block {i}"
                    );
                }
            } else {
                w.gatherv(&mine, &mut [], &[], &[], 0).unwrap();
                if call > 0 {
                    assert_eq!(w.coll_direct_runs() - runs, 1, "call {call}");
                }
            }
        }
    });
}

/// A direct leaf that sends more than the root expects from it: the root gets the error of
/// the usual way, and the next calls are right.
#[test]
fn a_leaf_sending_another_length_gets_the_root_an_error() {
    common::run_ranks(2, &[], move |w| {
        let rank = w.rank();
        warm_up(&w);
        if rank == 0 {
            let mut recv = [0u32; 3];
            let e = w
                .gatherv(&[1u32], &mut recv, &[1, 2], &[0, 1], 0)
                .unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::InvalidCount | ErrorKind::Truncate),
                "{e}"
            );
        } else {
            let runs = w.coll_direct_runs();
            w.gatherv(&[5u32, 6, 7], &mut [], &[], &[], 0).unwrap();
            assert_eq!(w.coll_direct_runs() - runs, 1, "the leaf ran directly");
        }
        w.barrier().unwrap();
        gatherv_checked(&w, 2, 0);
    });
}

/// Two good scatterv and two good gatherv calls with root 0 (calls 0 and 1), so every rank
/// has made the choices and the next calls may run without their plan.
fn warm_up(w: &Comm) {
    for call in 0..2 {
        scatterv_checked(w, call, 0);
        gatherv_checked(w, call, 0);
    }
}

/// A rank whose unfinished nonblocking collectives are at their limit (2^13, one call
/// number each) may start no other collective: a scatterv root and a gatherv leaf that
/// would run without their plan get the usual way's refusal, send nothing and use no call
/// number (the next good calls, once the barriers are done, are the ones everyone makes).
#[test]
fn an_unfinished_collective_limit_refuses_the_calls_without_plan_too() {
    const LIMIT: usize = 1 << 13;
    common::run_ranks(2, &[], move |w| {
        let rank = w.rank();
        warm_up(&w);
        let mut token = [0u8; 1];
        if rank == 0 {
            let reqs: Vec<_> = (0..LIMIT).map(|_| w.ibarrier().unwrap()).collect();
            let (send, mut recv) = ([1u32, 2, 3, 4], [0u32; 2]);
            let e = w
                .scatterv(&send, &[2, 2], &[0, 2], &mut recv, 0)
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            let e = w.gatherv(&[5u32], &mut [], &[], &[], 1).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            w.send(&token, 1, 9).unwrap();
            weft::coll::CollRequest::wait_all(reqs).unwrap();
        } else {
            w.recv(&mut token, 0, 9).unwrap();
            let reqs: Vec<_> = (0..LIMIT).map(|_| w.ibarrier().unwrap()).collect();
            weft::coll::CollRequest::wait_all(reqs).unwrap();
        }
        scatterv_checked(&w, 2, 0);
        gatherv_checked(&w, 2, 1);
    });
}
