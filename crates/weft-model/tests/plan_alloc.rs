//! Allocation experiments: pattern shapes, entry accounting, failures and fallbacks, and the
//! physical vs minimum-cost ordering.

use weft_model::fabric::Fabric;
use weft_model::plan::{allocate, AllocConfig, Method, Pattern};

const FT: &str = "fat-tree:leaves=8,spines=4,endpoints-per-leaf=4";

fn fabric() -> Fabric {
    Fabric::generate(FT, &[]).unwrap()
}

#[test]
fn pattern_shapes() {
    let f = fabric();
    let c = Pattern::parse("grid2d:4x8")
        .unwrap()
        .communicators(&f)
        .unwrap();
    // 4 rows of 8 and 8 columns of 4.
    assert_eq!(c.len(), 12);
    assert_eq!(c[0], (0..8).collect::<Vec<_>>());
    assert_eq!(c[4], vec![0, 8, 16, 24]);
    let c = Pattern::parse("grid3d:2x4x4")
        .unwrap()
        .communicators(&f)
        .unwrap();
    // Lines along c: 2*4, along b: 2*4, along a: 4*4.
    assert_eq!(c.len(), 8 + 8 + 16);
    assert!(c.iter().all(|m| m.len() >= 2));
    let c = Pattern::parse("grid2d:1x8")
        .unwrap()
        .communicators(&f)
        .unwrap();
    // Columns of one rank need no tree.
    assert_eq!(c.len(), 1);
    let c = Pattern::parse("random:10,5,3")
        .unwrap()
        .communicators(&f)
        .unwrap();
    assert_eq!(c.len(), 10);
    for m in &c {
        let mut s = m.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), 5);
        assert!(s.iter().all(|&e| e < 32));
    }
    assert_eq!(
        c,
        Pattern::parse("random:10,5,3")
            .unwrap()
            .communicators(&f)
            .unwrap()
    );
    let big = Pattern::parse("random:3,30,1")
        .unwrap()
        .communicators(&f)
        .unwrap();
    assert!(big.iter().all(|m| m.len() == 30));
}

#[test]
fn bad_patterns() {
    let f = fabric();
    for (text, word) in [
        ("grid2d:4", "grid2d"),
        ("grid2d:4x0", "size"),
        ("grid3d:2x2", "grid3d"),
        ("random:1,1,1", "SIZE"),
        ("random:1,2", "COUNT,SIZE,SEED"),
        ("ring:3", "ring"),
        ("nothing", "pattern"),
    ] {
        let err = Pattern::parse(text).unwrap_err();
        assert!(err.message().contains(word), "{text}: {err}");
    }
    let err = Pattern::parse("grid2d:8x8")
        .unwrap()
        .communicators(&f)
        .unwrap_err();
    assert!(err.message().contains("64 processes"), "{err}");
}

#[test]
fn rows_on_one_leaf_use_one_entry_each() {
    let f = fabric();
    // grid2d:8x4: rows of 4 = one leaf each (topology-aware); columns of 8 span all leaves.
    let comms = Pattern::parse("grid2d:8x4")
        .unwrap()
        .communicators(&f)
        .unwrap();
    let cfg = |method, entries| AllocConfig::new(entries, None, method);
    let phys = allocate(&f, &comms, cfg(Method::Physical, u32::MAX)).unwrap();
    let min = allocate(&f, &comms, cfg(Method::Mincost, u32::MAX)).unwrap();
    assert_eq!(phys.communicators, 12);
    assert_eq!(phys.failures, 0);
    // Rows: 1 leaf each (8 entries). Columns: spine + 8 leaves each (4 × 9 = 36).
    assert_eq!(phys.entries_used, 8 + 36);
    // Minimum cost: a spine has 8 leaf ports, enough for 8 members: 1 entry per column.
    assert_eq!(min.entries_used, 8 + 4);
    // Columns pick the least loaded spine: 4 columns on 4 spines.
    assert_eq!(min.peak_entries, 1);
}

#[test]
fn limited_entries_cause_failures_physical_first() {
    let f = fabric();
    // 40 random communicators of 6 members over 32 endpoints: leaf switches are shared a lot.
    let comms = Pattern::parse("random:40,6,11")
        .unwrap()
        .communicators(&f)
        .unwrap();
    let run = |method| allocate(&f, &comms, AllocConfig::new(4, None, method)).unwrap();
    let phys = run(Method::Physical);
    let min = run(Method::Mincost);
    assert!(phys.failures > 0, "{phys:?}");
    assert!(min.failures < phys.failures, "{min:?} vs {phys:?}");
    assert!(phys.peak_entries <= 4 && min.peak_entries <= 4);
    assert!((phys.failure_rate - phys.failures as f64 / 40.0).abs() < 1e-12);
    // A small degree limit forces more switches per tree than the port-count default.
    let narrow = allocate(
        &f,
        &comms,
        AllocConfig::new(u32::MAX, Some(2), Method::Mincost),
    )
    .unwrap();
    let wide = allocate(
        &f,
        &comms,
        AllocConfig::new(u32::MAX, None, Method::Mincost),
    )
    .unwrap();
    assert!(
        narrow.entries_used + narrow.failures * 6 > wide.entries_used,
        "{narrow:?} {wide:?}"
    );
    let err = allocate(&f, &comms, AllocConfig::new(4, Some(1), Method::Mincost)).unwrap_err();
    assert!(err.message().contains("degree"));
}

/// A full spine blocks the closest root; a leaf root two hops farther lets the minimum-cost
/// tree pass through the spine without keeping it. Physical trees must keep the spine.
#[test]
fn root_slack_passes_through_full_switches() {
    let f = Fabric::generate("fat-tree:leaves=2,spines=1,endpoints-per-leaf=2", &[]).unwrap();
    let comms = vec![vec![0, 2], vec![1, 3]];
    let run = |method, slack| {
        let config = AllocConfig {
            root_slack_hops: slack,
            ..AllocConfig::new(1, None, method)
        };
        allocate(&f, &comms, config).unwrap()
    };
    assert_eq!(run(Method::Mincost, 0).failures, 1);
    let slack = run(Method::Mincost, 2);
    assert_eq!(slack.failures, 0);
    assert_eq!(slack.later_roots, 1);
    assert_eq!(slack.entries_used, 2);
    assert_eq!(run(Method::Physical, 2).failures, 1);
}
