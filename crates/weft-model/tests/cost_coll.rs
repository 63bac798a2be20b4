//! The step costs the collective algorithms' formulas are made of: closed forms at one node,
//! lanes that follow the placement, and the shapes the model refuses. (The formulas of the
//! algorithms themselves are tested with the runtime's algorithm tables, `weft::coll`.)

use weft_model::cost::{AlphaBeta, CollModel, CollShape, Lanes};

/// Shared memory: 200 ns, 10 GB/s; network: 2 µs, 1 GB/s; reduce 0.2 ns/byte.
fn lanes() -> Lanes {
    Lanes {
        intra: AlphaBeta::from_bandwidth(200.0, 10e9),
        inter: AlphaBeta::from_bandwidth(2000.0, 1e9),
        reduce_ns_per_byte: 0.2,
        inter_rails: 1,
        stripe_efficiency: 1.0,
        node_cores: 0,
    }
}

fn shape(procs: u32, ppn: u32, bytes: u64) -> CollShape {
    CollShape { procs, ppn, bytes }
}

#[test]
fn refuses_empty_shapes_and_radix_below_two() {
    let l = lanes();
    assert!(CollModel::new(&shape(0, 8, 8), 2, &l).is_none());
    assert!(CollModel::new(&shape(8, 0, 8), 2, &l).is_none());
    assert!(CollModel::new(&shape(8, 8, 8), 1, &l).is_none());
    let m = CollModel::new(&shape(10, 4, 64), 3, &l).unwrap();
    assert_eq!((m.ranks(), m.nodes(), m.radix(), m.local()), (10, 3, 3, 4));
    assert_eq!(m.bytes(), 64.0);
}

#[test]
fn closed_forms_at_one_node() {
    let l = lanes();
    let m = CollModel::new(&shape(16, 16, 1000), 2, &l).unwrap();
    // Binomial fan-out over 16 ranks: 4 levels of one message.
    let t = m.knomial(2, 0.0, |_| 1000.0);
    assert!((t - 4.0 * l.intra.time_ns(1000)).abs() < 1e-9);
    // 4-nomial over 16 ranks: 2 levels of 3 sequential messages.
    let t = m.knomial(4, 0.0, |_| 1000.0);
    assert!((t - 6.0 * l.intra.time_ns(1000)).abs() < 1e-9);
    // Ring allgather over 8 ranks: 7 steps.
    let m8 = CollModel::new(&shape(8, 8, 100), 2, &l).unwrap();
    assert!((m8.ring_allgather(100.0) - 7.0 * l.intra.time_ns(100)).abs() < 1e-9);
    // ceil(log2 9) = 4 steps; 9 ranks fold, 8 do not.
    let m9 = CollModel::new(&shape(9, 9, 0), 2, &l).unwrap();
    assert_eq!(m9.log2(), 4);
    assert!(m9.fold(8.0) > 0.0 && m8.fold(8.0) == 0.0);
}

#[test]
fn lanes_follow_placement() {
    let l = lanes();
    // Binomial levels inside a node of 8 use the intra lane: only the top 3 of 6 levels
    // cross nodes.
    let m = CollModel::new(&shape(64, 8, 0), 2, &l).unwrap();
    let t = m.knomial(2, 0.0, |_| 0.0);
    assert!(
        (t - 3.0 * l.intra.latency_ns - 3.0 * l.inter.latency_ns).abs() < 1e-9,
        "{t}"
    );
    // Same P, one node vs eight: crossing nodes costs more.
    let one = CollModel::new(&shape(64, 64, 4096), 2, &l).unwrap();
    assert!(one.ring_allgather(4096.0) < m.ring_allgather(4096.0));
    assert!(one.halving_reduce_scatter(4096.0) < m.halving_reduce_scatter(4096.0));
    // XOR partners 1 apart stay in a node of 8; 8 apart do not.
    assert_eq!(m.xor(1), &l.intra);
    assert_eq!(m.xor(8), &l.inter);
    // With a slow network the two-level tree beats a flat one when nodes are not aligned to
    // the radix (ppn 6: every flat level crosses nodes).
    let striped = CollModel::new(&shape(96, 6, 8), 2, &l).unwrap();
    let flat = striped.knomial(2, 0.0, |_| 8.0);
    let hier = striped.hier_fan(2, 8.0, 0.0);
    assert!(hier < flat, "hier {hier} flat {flat}");
}

#[test]
fn steps_grow_with_bytes() {
    let l = lanes();
    for (procs, ppn) in [(2u32, 2u32), (7, 7), (64, 8), (100, 6)] {
        let mut last = [-1.0f64; 6];
        for bytes in [0u64, 1, 8, 1024, 65536, 1 << 20] {
            let m = CollModel::new(&shape(procs, ppn, bytes), 2, &l).unwrap();
            let n = m.bytes();
            let now = [
                m.scatter_binomial(n),
                m.halving_reduce_scatter(n),
                m.doubling_allgather(n),
                m.hier_fan(3, n, m.gamma()),
                m.shm_reduce(n),
                m.fold(n),
            ];
            for (i, (&a, &b)) in now.iter().zip(&last).enumerate() {
                assert!(
                    a.is_finite() && a >= b,
                    "step {i} p={procs}: {a} < {b} at {bytes}"
                );
            }
            last = now;
        }
    }
}

#[test]
fn ranks_beyond_the_cores_share_them() {
    let on = |node_cores: u32, procs: u32, ppn: u32| {
        let l = Lanes {
            node_cores,
            ..lanes()
        };
        CollModel::new(&shape(procs, ppn, 1 << 20), 2, &l)
            .unwrap()
            .all_ranks_busy()
    };
    // Cores not known, or at least as many as the node's ranks: no sharing.
    assert_eq!(on(0, 8, 8), 1.0);
    assert_eq!(on(8, 8, 8), 1.0);
    assert_eq!(on(4, 3, 8), 1.0);
    // 4 ranks on 2 cores: each runs at half speed; 7 on 2: 3.5 times slower.
    assert_eq!(on(2, 4, 4), 2.0);
    assert_eq!(on(2, 7, 7), 3.5);
    // The busiest node counts: 3 nodes of 6 ranks on 4 cores each.
    assert_eq!(on(4, 18, 6), 1.5);
    // Read from older files without the field: not known.
    let old: Lanes = serde_json::from_str(
        r#"{"intra":{"latency_ns":1.0,"ns_per_byte":0.1},"inter":{"latency_ns":1.0,"ns_per_byte":0.1},"reduce_ns_per_byte":0.1}"#,
    )
    .unwrap();
    assert_eq!(old.node_cores, 0);
}
