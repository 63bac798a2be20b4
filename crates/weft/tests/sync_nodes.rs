//! The job-wide synchronisation engine (`weft::sync::JobSync`) with rank threads that claim
//! 2 or 3 node ids (TCP on loopback between nodes, one shared table per node): barrier and
//! reduce rounds with 1 to 3 ranks per node, values and ordering checked, a subset of a
//! node's ranks taking part, bad input, and a vanished rank on another node reported to
//! every survivor (leaders and the ranks they release) instead of hanging; burst reduce of
//! whole buffers across nodes, over several chunks.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weft::sync::{JobSync, SyncOp};
use weft::ErrorKind;

/// Runs `rounds` barrier and reduce rounds on `n` ranks placed by `node_of` and checks the
/// results and that no rank leaves a barrier before every rank of every node entered it.
fn rounds(n: u32, node_of: fn(u32) -> u32, nodes: u32, rounds: u64) {
    let entered = Arc::new(AtomicU64::new(0));
    // The "nodes" share this machine's cores: more rank threads than cores overall, which no
    // single node can see, so every rank yields when idle (as on an oversubscribed node).
    common::run_job(n, &[("WEFT_YIELD", "on")], node_of, move |rank, weft, _| {
        let local = weft.local().1;
        let js = JobSync::new(&weft, "nodes").unwrap();
        assert_eq!(js.nodes(), nodes);
        let total = n as i64 * (n as i64 - 1) / 2;
        for round in 0..rounds {
            entered.fetch_add(1, Ordering::SeqCst);
            js.barrier(1, local).unwrap();
            // Every rank of the job entered this round's barrier before anyone left it.
            let seen = entered.load(Ordering::SeqCst);
            assert!(
                seen >= n as u64 * (round + 1),
                "rank {rank} round {round}: left the barrier after {seen} entries"
            );
            let s: i64 = js
                .reduce(2, rank as i64 + round as i64, SyncOp::Sum, local)
                .unwrap();
            assert_eq!(
                s,
                total + n as i64 * round as i64,
                "rank {rank} round {round}"
            );
            let m: u64 = js
                .reduce(3, (rank as u64 + round) % n as u64, SyncOp::Max, local)
                .unwrap();
            assert_eq!(m, n as u64 - 1);
            let f: f64 = js.reduce(4, 0.5 * rank as f64, SyncOp::Min, local).unwrap();
            assert_eq!(f, 0.0);
        }
        drop(js);
        weft.finalize().unwrap();
    });
}

#[test]
fn two_nodes_of_one_and_of_two_ranks() {
    rounds(2, |r| r, 2, 200);
    rounds(4, |r| r / 2, 2, 200);
}

#[test]
fn three_nodes_of_one_two_and_three_ranks() {
    // Nodes 0, 1, 2 hold 1, 2 and 3 ranks.
    rounds(6, |r| [0, 1, 1, 2, 2, 2][r as usize], 3, 100);
    rounds(3, |r| r, 3, 100);
}

/// Job-wide burst reduce on `n` ranks placed by `node_of`, with a burst chunk of 8 elements
/// (`WEFT_SYNC_BURST_BYTES=64`) so lengths of 0, 1, 8, 9 and 100 cross chunk boundaries.
fn burst(n: u32, node_of: fn(u32) -> u32) {
    common::run_job(
        n,
        &[("WEFT_YIELD", "on"), ("WEFT_SYNC_BURST_BYTES", "64")],
        node_of,
        move |rank, weft, _| {
            let local = weft.local().1;
            let js = JobSync::new(&weft, "burst").unwrap();
            for (round, len) in [0usize, 1, 8, 9, 100, 9].into_iter().enumerate() {
                let src: Vec<i64> = (0..len)
                    .map(|i| (rank as i64 + 1) * (i as i64 + 1) - round as i64)
                    .collect();
                let mut dst = vec![-7i64; len];
                js.burst_reduce(11, &src, &mut dst, SyncOp::Sum, local)
                    .unwrap();
                let ranks_sum = (n * (n + 1) / 2) as i64;
                for (i, &d) in dst.iter().enumerate() {
                    assert_eq!(
                        d,
                        ranks_sum * (i as i64 + 1) - n as i64 * round as i64,
                        "rank {rank} len {len} element {i}"
                    );
                }
                let fsrc: Vec<f64> = (0..len).map(|i| rank as f64 * 0.5 - i as f64).collect();
                let mut fdst = vec![0.0; len];
                js.burst_reduce(12, &fsrc, &mut fdst, SyncOp::Max, local)
                    .unwrap();
                for (i, &d) in fdst.iter().enumerate() {
                    assert_eq!(
                        d,
                        (n - 1) as f64 * 0.5 - i as f64,
                        "rank {rank} element {i}"
                    );
                }
            }
            let e = js
                .burst_reduce(13, &[1.0f64], &mut [0.0], SyncOp::Xor, local)
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidOp);
            drop(js);
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn burst_reduce_across_two_and_three_nodes() {
    burst(2, |r| r);
    burst(4, |r| r / 2);
    burst(6, |r| [0, 1, 1, 2, 2, 2][r as usize]);
}

#[test]
fn a_subset_of_each_node_takes_part_and_bad_input_is_an_error() {
    common::run_job(
        4,
        &[],
        |r| r / 2,
        |rank, weft, _| {
            let js = JobSync::new(&weft, "subset").unwrap();
            let (me, local) = weft.local();
            assert_eq!(local, 2);
            // Only each node's local rank 0 takes part (n = 1 on each node).
            if me == 0 {
                for round in 0..50u64 {
                    let s: u64 = js.reduce(7, round + rank as u64, SyncOp::Sum, 1).unwrap();
                    assert_eq!(s, 2 * round + 2);
                }
            }
            let e = js.barrier(8, 3).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidCount);
            assert!(e.message().contains("0x8"), "{e}");
            assert_eq!(
                js.barrier(8, 0).unwrap_err().kind(),
                ErrorKind::InvalidCount
            );
            let e = js.reduce(9, 1.0f64, SyncOp::And, 2).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidOp);
            js.barrier(10, 2).unwrap();
            drop(js);
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn a_vanished_rank_on_another_node_fails_every_survivor() {
    // Node 0: ranks 0 and 1; node 1: rank 2; node 2: rank 3, which vanishes.
    common::run_job(
        4,
        &[],
        |r| [0, 0, 1, 2][r as usize],
        |rank, weft, _| {
            let js = JobSync::new(&weft, "dead").unwrap();
            let local = weft.local().1;
            for round in 0..20u64 {
                let s: u64 = js.reduce(1, round, SyncOp::Sum, local).unwrap();
                assert_eq!(s, 4 * round);
            }
            let w = weft.world();
            // Rank 3 leaves (without finalize) only once the other leaders have all its data:
            // an abrupt close may reset a connection and discard bytes not yet read.
            match rank {
                3 => {
                    w.recv(&mut [0u8], 0, 6).unwrap();
                    w.recv(&mut [0u8], 2, 6).unwrap();
                    drop(w);
                    drop(js);
                    drop(weft);
                }
                _ => {
                    if rank != 1 {
                        w.send(&[0u8], 3, 6).unwrap();
                    }
                    let e = js.barrier(2, local).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PeerDead, "rank {rank}: {e}");
                    let e = js.reduce(3, 1u64, SyncOp::Sum, local).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PeerDead, "rank {rank}: {e}");
                    if rank == 1 {
                        assert!(e.message().contains("failed on a node"), "{e}");
                    }
                }
            }
        },
    );
}
