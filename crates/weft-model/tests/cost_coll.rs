//! Sanity properties of the collective cost models the selector relies on.

use weft_model::cost::{
    algorithms, cost_ns, takes_radix, AlphaBeta, CollShape, Lanes, COLLECTIVES,
};

/// Shared memory: 200 ns, 10 GB/s; network: 2 µs, 1 GB/s; reduce 0.2 ns/byte.
fn lanes() -> Lanes {
    Lanes {
        intra: AlphaBeta::from_bandwidth(200.0, 10e9),
        inter: AlphaBeta::from_bandwidth(2000.0, 1e9),
        reduce_ns_per_byte: 0.2,
    }
}

fn cost(coll: &str, algo: &str, radix: u32, procs: u32, ppn: u32, bytes: u64) -> f64 {
    cost_ns(
        coll,
        algo,
        radix,
        &CollShape { procs, ppn, bytes },
        &lanes(),
    )
    .unwrap_or_else(|| panic!("{coll}/{algo} k={radix} p={procs} ppn={ppn} n={bytes}"))
}

#[test]
fn every_listed_algorithm_has_a_cost_and_grows_with_bytes() {
    for &coll in COLLECTIVES {
        assert!(!algorithms(coll).is_empty());
        for &algo in algorithms(coll) {
            let radices: &[u32] = if takes_radix(algo) {
                &[2, 3, 4, 8]
            } else {
                &[0]
            };
            for &k in radices {
                for (procs, ppn) in [
                    (1u32, 1u32),
                    (2, 2),
                    (7, 7),
                    (16, 16),
                    (64, 8),
                    (100, 6),
                    (256, 32),
                ] {
                    let nodes = procs.div_ceil(ppn);
                    let shm = algo.starts_with("shm");
                    let shape = |bytes| CollShape { procs, ppn, bytes };
                    if shm && nodes > 1 {
                        assert_eq!(cost_ns(coll, algo, k, &shape(8), &lanes()), None);
                        continue;
                    }
                    let mut last = -1.0;
                    for bytes in [0u64, 1, 8, 1024, 65536, 1 << 20, 1 << 24] {
                        let t = cost_ns(coll, algo, k, &shape(bytes), &lanes()).unwrap();
                        assert!(t.is_finite() && t >= 0.0, "{coll}/{algo} {t}");
                        assert!(
                            t >= last,
                            "{coll}/{algo} k={k} p={procs}: {t} < {last} at {bytes}"
                        );
                        last = t;
                    }
                    if procs == 1 {
                        assert_eq!(last, 0.0);
                    } else if coll != "barrier" {
                        assert!(last > 0.0, "{coll}/{algo} costs nothing at p={procs}");
                    }
                }
            }
        }
    }
}

#[test]
fn unknown_and_invalid_combinations() {
    let s = CollShape {
        procs: 8,
        ppn: 8,
        bytes: 8,
    };
    assert_eq!(cost_ns("bcast", "ring", 0, &s, &lanes()), None);
    assert_eq!(cost_ns("nonsense", "knomial", 2, &s, &lanes()), None);
    assert_eq!(cost_ns("bcast", "knomial", 1, &s, &lanes()), None);
    assert_eq!(
        cost_ns(
            "bcast",
            "knomial",
            2,
            &CollShape {
                procs: 0,
                ppn: 8,
                bytes: 8
            },
            &lanes()
        ),
        None
    );
    assert_eq!(
        cost_ns(
            "bcast",
            "knomial",
            2,
            &CollShape {
                procs: 8,
                ppn: 0,
                bytes: 8
            },
            &lanes()
        ),
        None
    );
    assert!(algorithms("nonsense").is_empty());
}

#[test]
fn allreduce_crossovers() {
    // Large buffers at large P: bandwidth-optimal ring and Rabenseifner beat recursive doubling.
    let big = 64 << 20;
    let ring = cost("allreduce", "ring", 0, 256, 32, big);
    let rd = cost("allreduce", "recursive_doubling", 0, 256, 32, big);
    let rab = cost("allreduce", "rabenseifner", 0, 256, 32, big);
    assert!(ring < rd / 2.0, "ring {ring} rd {rd}");
    assert!(rab < rd / 2.0, "rab {rab} rd {rd}");
    // 8 bytes: latency rules; recursive doubling's log P steps beat the ring's 2(P-1).
    let ring = cost("allreduce", "ring", 0, 256, 32, 8);
    let rd = cost("allreduce", "recursive_doubling", 0, 256, 32, 8);
    assert!(rd < ring / 10.0, "rd {rd} ring {ring}");
    // Same at one node.
    assert!(
        cost("allreduce", "recursive_doubling", 0, 32, 32, 8)
            < cost("allreduce", "ring", 0, 32, 32, 8)
    );
}

#[test]
fn closed_forms_at_one_node() {
    let l = lanes();
    // Binomial bcast over 16 ranks: 4 levels of one message.
    let t = cost("bcast", "knomial", 2, 16, 16, 1000);
    assert!((t - 4.0 * l.intra.time_ns(1000)).abs() < 1e-9);
    // 4-nomial over 16 ranks: 2 levels of 3 sequential messages.
    let t = cost("bcast", "knomial", 4, 16, 16, 1000);
    assert!((t - 6.0 * l.intra.time_ns(1000)).abs() < 1e-9);
    // Ring allgather: P-1 steps.
    let t = cost("allgather", "ring", 0, 8, 8, 100);
    assert!((t - 7.0 * l.intra.time_ns(100)).abs() < 1e-9);
    // Dissemination barrier: ceil(log2 P) latencies.
    let t = cost("barrier", "dissemination", 0, 9, 9, 0);
    assert!((t - 4.0 * l.intra.latency_ns).abs() < 1e-9);
}

#[test]
fn lanes_follow_placement() {
    // Same P, one node vs eight: crossing nodes costs more.
    for (coll, algo, k) in [
        ("bcast", "knomial", 2),
        ("allreduce", "ring", 0),
        ("alltoall", "pairwise", 0),
    ] {
        assert!(
            cost(coll, algo, k, 64, 64, 4096) < cost(coll, algo, k, 64, 8, 4096),
            "{coll}/{algo}"
        );
    }
    // Binomial levels inside a node of 8 use the intra lane: only the top 3 of 6 levels
    // cross nodes.
    let l = lanes();
    let t = cost("bcast", "knomial", 2, 64, 8, 0);
    assert!(
        (t - 3.0 * l.intra.latency_ns - 3.0 * l.inter.latency_ns).abs() < 1e-9,
        "{t}"
    );
    // With a slow network, the hierarchical tree beats a flat k-nomial when nodes are not
    // aligned to the radix (ppn 6: every flat level crosses nodes).
    let flat = cost("bcast", "knomial", 2, 96, 6, 8);
    let hier = cost("bcast", "hier_knomial", 2, 96, 6, 8);
    assert!(hier < flat, "hier {hier} flat {flat}");
}

#[test]
fn large_bcast_prefers_scatter_allgather() {
    let big = 16 << 20;
    let sag = cost("bcast", "scatter_allgather", 0, 128, 16, big);
    let binomial = cost("bcast", "knomial", 2, 128, 16, big);
    assert!(sag < binomial / 1.5, "sag {sag} binomial {binomial}");
    let small_sag = cost("bcast", "scatter_allgather", 0, 128, 16, 8);
    let small_binomial = cost("bcast", "knomial", 2, 128, 16, 8);
    assert!(small_binomial < small_sag);
}

#[test]
fn shm_wins_inside_a_node_for_small_allreduce() {
    let shm = cost("allreduce", "shm", 0, 16, 16, 8);
    let ring = cost("allreduce", "ring", 0, 16, 16, 8);
    assert!(shm < ring, "shm {shm} ring {ring}");
}
