//! Whole-machine scale: hierarchical trees over 100 000 ranks in 3 levels must build fast
//! (the planner builds them for whole machines). Run with `--release` for the real figure;
//! the bound asserted here is loose enough for an unoptimised build on a busy machine.

use std::time::Duration;

/// CPU time this thread has run so far (the kernel's schedstat): unlike the wall clock, the
/// load of other processes does not inflate it, so the bounds below hold on a busy machine.
fn thread_cpu() -> Duration {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat")
        .expect("/proc/thread-self/schedstat (Linux with schedstats)");
    Duration::from_nanos(s.split_whitespace().next().unwrap().parse().unwrap())
}
use weft_model::tree::{
    hierarchical_knomial, hierarchical_layout, inter_group_edges, naive_layout, GroupLevels,
};

/// 100 000 ranks: nodes of `ppn`, leaf switches of `nodes_per_switch`, pods of
/// `switches_per_pod` (the last of each possibly partial).
fn machine(ppn: u32, nodes_per_switch: u32, switches_per_pod: u32) -> GroupLevels {
    let ranks = 100_000u32;
    let nodes: Vec<u32> = (0..ranks.div_ceil(ppn))
        .map(|i| ppn.min(ranks - i * ppn))
        .collect();
    let chunk = |n: usize, per: u32| -> Vec<u32> {
        (0..(n as u32).div_ceil(per))
            .map(|i| per.min(n as u32 - i * per))
            .collect()
    };
    let switches = chunk(nodes.len(), nodes_per_switch);
    let pods = chunk(switches.len(), switches_per_pod);
    GroupLevels::contiguous(&[nodes, switches, pods]).unwrap()
}

#[test]
fn hundred_thousand_ranks_in_three_levels() {
    for (ppn, per_switch, per_pod, k) in [
        (32, 16, 8, 2),
        (48, 18, 6, 8),
        (64, 32, 4, 32),
        (1, 40, 25, 4),
    ] {
        let levels = machine(ppn, per_switch, per_pod);
        let start = thread_cpu();
        let layout = hierarchical_layout(&levels, k, None, 12_345).unwrap();
        let built = thread_cpu() - start;
        let tree = layout.tree().unwrap();
        let with_tree = thread_cpu() - start;
        tree.validate().unwrap();
        let naive = naive_layout(&levels, k, 12_345).unwrap();
        let expected: Vec<u64> = (0..3).map(|i| levels.group_count(i) as u64 - 1).collect();
        assert_eq!(inter_group_edges(&tree, &levels), expected);
        assert!(layout.order() <= naive.order());
        eprintln!(
            "ppn {ppn}, {per_switch} nodes/switch, {per_pod} switches/pod, k={k}: layout {:.3} s, \
             with tree {:.3} s; order {} height {} degree {}; naive order {} height {}",
            built.as_secs_f64(),
            with_tree.as_secs_f64(),
            layout.order(),
            layout.height(),
            tree.max_degree(),
            naive.order(),
            naive.height()
        );
        assert!(with_tree.as_secs_f64() < 20.0, "took {with_tree:?}");
    }
}

#[test]
fn hundred_thousand_ranks_in_irregular_groups() {
    // Deterministic pseudo-random sizes (64-bit LCG): nodes of 1..=64 ranks, switches of
    // 1..=24 nodes, pods of 1..=10 switches.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |range: u32| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        1 + ((state >> 33) as u32 % range)
    };
    let mut nodes = Vec::new();
    let mut left = 100_000u32;
    while left > 0 {
        let s = next(64).min(left);
        nodes.push(s);
        left -= s;
    }
    let group = |count: usize, range: u32, next: &mut dyn FnMut(u32) -> u32| {
        let mut out = Vec::new();
        let mut left = count as u32;
        while left > 0 {
            let s = next(range).min(left);
            out.push(s);
            left -= s;
        }
        out
    };
    let switches = group(nodes.len(), 24, &mut next);
    let pods = group(switches.len(), 10, &mut next);
    let levels = GroupLevels::contiguous(&[nodes, switches, pods]).unwrap();
    for k in [2, 4, 16] {
        let start = thread_cpu();
        let layout = hierarchical_layout(&levels, k, None, 99_999).unwrap();
        let tree = layout.tree().unwrap();
        let took = thread_cpu() - start;
        tree.validate().unwrap();
        let naive = naive_layout(&levels, k, 99_999).unwrap();
        let expected: Vec<u64> = (0..3).map(|i| levels.group_count(i) as u64 - 1).collect();
        assert_eq!(inter_group_edges(&tree, &levels), expected);
        assert!(layout.order() <= naive.order());
        eprintln!(
            "irregular, k={k}: {:.3} s; order {} height {} degree {}; naive order {} height {}",
            took.as_secs_f64(),
            layout.order(),
            layout.height(),
            tree.max_degree(),
            naive.order(),
            naive.height()
        );
        assert!(took.as_secs_f64() < 20.0, "took {took:?}");
    }
}

#[test]
fn hundred_thousand_ranks_under_a_degree_limit() {
    let levels = machine(32, 16, 8);
    for (k, limit) in [(4u32, 8u32), (8, 16), (2, 12)] {
        let start = thread_cpu();
        let result = hierarchical_knomial(&levels, k, Some(limit), 0);
        let took = thread_cpu() - start;
        match &result {
            Ok(tree) => {
                assert!(tree.max_degree() <= limit);
                tree.validate().unwrap();
            }
            Err(e) => assert!(e.message().contains("degree limit"), "{e}"),
        }
        eprintln!(
            "degree limit {limit}, k={k}: {:.3} s, {}",
            took.as_secs_f64(),
            match &result {
                Ok(t) => format!("height {} degree {}", t.height(), t.max_degree()),
                Err(e) => format!("error: {e}"),
            }
        );
        assert!(took.as_secs_f64() < 60.0, "took {took:?}");
    }
}
