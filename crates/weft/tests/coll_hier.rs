//! The hierarchical k-nomial bcast, reduce and allreduce on real node groupings: an
//! in-process job whose rank threads claim different nodes (the ranks of one node talk over
//! shared memory, the nodes over TCP on loopback), so the trees group ranks by the engine's
//! `node_of` rather than a synthetic grouping. Interleaved and blocked placements, radix 2
//! and 3, every root, sizes 0, 1, odd and past the eager limit; data checked. Also the
//! automatic choice across nodes (no algorithm forced): the selector sees the same ranks per
//! node on every rank, even where nodes hold unequal shares, picks the hierarchical tree
//! where the model says so, and every collective's data is right.

mod common;

use weft::coll::select::{CallTraits, Coll};
use weft::coll::Tuning;
use weft::{Comm, Op};

/// One thread per rank; rank r claims node `node(r)` (the shared in-process harness: a rank
/// that panics ends the test at once, one that hangs is aborted by its watchdog).
fn job(n: u32, node: fn(u32) -> u32, body: fn(Comm)) {
    common::run_job(n, &[], node, move |_, weft, _| {
        body(weft.world());
        weft.finalize().unwrap();
    });
}

fn val(rank: u32, i: usize) -> i64 {
    (rank as i64 + 3) * 1_000 + (i as i64 % 977) - 400
}

fn body(w: Comm) {
    let (me, np) = (w.rank(), w.size());
    for radix in ["2", "3"] {
        let vars = [
            ("WEFT_BCAST_ALGO", "hier_knomial"),
            ("WEFT_REDUCE_ALGO", "hier_knomial"),
            ("WEFT_ALLREDUCE_ALGO", "hier_knomial"),
            ("WEFT_BCAST_RADIX", radix),
            ("WEFT_REDUCE_RADIX", radix),
            ("WEFT_ALLREDUCE_RADIX", radix),
        ];
        w.set_collective_tuning(Tuning::from_vars(&vars).unwrap());
        for n in [0usize, 1, 13, 5000] {
            let what = format!("np={np} radix {radix} n={n}");
            let send: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
            let sum: Vec<i64> = (0..n).map(|i| (0..np).map(|r| val(r, i)).sum()).collect();
            let mut out = vec![0i64; n];
            w.allreduce(&send, &mut out, &Op::Sum).unwrap();
            assert_eq!(out, sum, "allreduce {what}");
            for root in 0..np {
                let want: Vec<i64> = (0..n).map(|i| val(root + 17, i)).collect();
                let mut b = if me == root { want.clone() } else { vec![0; n] };
                w.bcast(&mut b, root).unwrap();
                assert_eq!(b, want, "bcast root {root} {what}");
                let mut r = vec![0i64; if me == root { n } else { 0 }];
                w.reduce(&send, &mut r, &Op::Sum, root).unwrap();
                if me == root {
                    assert_eq!(r, sum, "reduce root {root} {what}");
                }
            }
        }
    }
}

#[test]
fn hierarchical_trees_across_nodes() {
    // Ranks alternate between two nodes (a plain k-nomial tree crosses nodes on most edges)…
    job(4, |r| r % 2, body);
    job(5, |r| r % 2, body);
    // …or sit in blocks, with a node of one rank.
    job(5, |r| r / 2, body);
}

/// Rabenseifner's allreduce and reduce (reduce-scatter then gather) forced, on layouts where
/// the halving pairs ranks near first (blocks) and far first (round robin); data checked for
/// every root, sizes 0, 1, odd and past the eager limit.
fn halving(w: Comm) {
    let (me, np) = (w.rank(), w.size());
    let vars = [
        ("WEFT_ALLREDUCE_ALGO", "rabenseifner"),
        ("WEFT_REDUCE_ALGO", "reduce_scatter_gather"),
    ];
    w.set_collective_tuning(Tuning::from_vars(&vars).unwrap());
    for n in [0usize, 1, 13, 5000] {
        let what = format!("np={np} n={n} (halving)");
        let send: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
        let sum: Vec<i64> = (0..n).map(|i| (0..np).map(|r| val(r, i)).sum()).collect();
        let mut out = vec![0i64; n];
        w.allreduce(&send, &mut out, &Op::Sum).unwrap();
        assert_eq!(out, sum, "allreduce {what}");
        for root in 0..np {
            let mut r = vec![0i64; if me == root { n } else { 0 }];
            w.reduce(&send, &mut r, &Op::Sum, root).unwrap();
            if me == root {
                assert_eq!(r, sum, "reduce root {root} {what}");
            }
        }
    }
}

#[test]
fn halving_pairs_in_either_order_across_nodes() {
    job(4, |r| r / 2, halving);
    job(4, |r| r % 2, halving);
    job(6, |r| r / 3, halving);
    job(7, |r| r / 4, halving);
    job(8, |r| r / 4, halving);
}

/// Every collective with the automatic choice on a multi-node job; data checked.
fn automatic(w: Comm) {
    let (me, np) = (w.rank(), w.size());
    for n in [0usize, 1, 13, 5000] {
        let what = format!("np={np} n={n} (automatic)");
        let send: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
        let sum: Vec<i64> = (0..n).map(|i| (0..np).map(|r| val(r, i)).sum()).collect();
        let mut out = vec![0i64; n];
        w.allreduce(&send, &mut out, &Op::Sum).unwrap();
        assert_eq!(out, sum, "allreduce {what}");
        for root in 0..np {
            let want: Vec<i64> = (0..n).map(|i| val(root + 17, i)).collect();
            let mut b = if me == root { want.clone() } else { vec![0; n] };
            w.bcast(&mut b, root).unwrap();
            assert_eq!(b, want, "bcast root {root} {what}");
            let mut r = vec![0i64; if me == root { n } else { 0 }];
            w.reduce(&send, &mut r, &Op::Sum, root).unwrap();
            if me == root {
                assert_eq!(r, sum, "reduce root {root} {what}");
            }
        }
        let mut all = vec![0i64; n * np as usize];
        w.allgather(&send, &mut all).unwrap();
        for r in 0..np as usize {
            for i in 0..n {
                assert_eq!(all[r * n + i], val(r as u32, i), "allgather {what}");
            }
        }
        let blocks: Vec<i64> = (0..n * np as usize)
            .map(|i| me as i64 * 1_000_000 + i as i64)
            .collect();
        let mut got = vec![0i64; blocks.len()];
        w.alltoall(&blocks, &mut got).unwrap();
        for r in 0..np as usize {
            for i in 0..n {
                let want = r as i64 * 1_000_000 + (me as usize * n + i) as i64;
                assert_eq!(got[r * n + i], want, "alltoall {what}");
            }
        }
        w.barrier().unwrap();
    }
}

#[test]
fn automatic_choice_across_nodes() {
    // The model's choice for these layouts (the same inputs every rank gives the selector:
    // ranks, the most ranks any node holds, bytes).
    let t = Tuning::default();
    let traits = CallTraits {
        commutative: true,
        shared_memory: false,
        blocking: true,
        cma: false,
        oversubscribed: false,
    };
    for (np, ppn) in [(4, 2), (5, 3)] {
        let c = t.select(Coll::Bcast, np, ppn, 8, traits).unwrap();
        assert_eq!(
            (c.algo.name, c.source),
            ("hier_knomial", "model"),
            "{np}/{ppn}"
        );
    }
    // Two nodes of 2, interleaved; then 3 + 2 in blocks (unequal shares: ranks on the
    // smaller node must still see 3 ranks per node, or they would pick other algorithms
    // than their peers and hang).
    job(4, |r| r % 2, automatic);
    job(5, |r| r / 3, automatic);
}
