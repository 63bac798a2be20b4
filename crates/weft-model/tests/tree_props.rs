//! Property tests of the tree builders: every rank has one path to the root, shapes follow
//! their definitions, degree limits hold, groups are crossed once per group, and bad input
//! gives a clear error instead of a panic.

use proptest::prelude::*;
use weft_core::ErrorKind;
use weft_model::tree::{
    hierarchical_knomial, hierarchical_layout, inter_group_edges, kary, knomial,
    naive_hierarchical, naive_layout, GroupLevels, Tree,
};

/// Walks every rank up to the root, checking it gets there in at most `size` steps.
fn assert_spanning(tree: &Tree) {
    tree.validate().unwrap();
    let n = tree.size();
    let mut max_depth = 0;
    for r in 0..n {
        let mut x = r;
        let mut steps = 0;
        while let Some(p) = tree.parent(x) {
            assert!(
                tree.children(p).contains(&x),
                "rank {x} missing from children of {p}"
            );
            x = p;
            steps += 1;
            assert!(steps <= n, "rank {r} loops");
        }
        assert_eq!(x, tree.root(), "rank {r} ends at {x}");
        max_depth = max_depth.max(steps);
    }
    assert_eq!(tree.height(), max_depth);
    assert_eq!(tree.subtree_size(tree.root()), n);
    for r in 0..n {
        // Children are in broadcast order: largest subtree first.
        let sizes: Vec<u32> = tree
            .children(r)
            .iter()
            .map(|&c| tree.subtree_size(c))
            .collect();
        assert!(
            sizes.windows(2).all(|w| w[0] >= w[1]),
            "rank {r}: {sizes:?}"
        );
    }
}

fn ceil_log(k: u32, n: u32) -> u32 {
    let mut e = 0;
    let mut c: u64 = 1;
    while c < n as u64 {
        c *= k as u64;
        e += 1;
    }
    e
}

#[test]
fn kary_matches_breadth_first_formula() {
    let t = kary(10, 3, 0).unwrap();
    assert_spanning(&t);
    for r in 1..10 {
        assert_eq!(t.parent(r), Some((r - 1) / 3));
    }
    assert_eq!(t.children(0), &[1, 2, 3]);
    assert_eq!(t.height(), 2);
    // A root other than 0 is a rotation of the same shape.
    let t = kary(10, 3, 4).unwrap();
    assert_spanning(&t);
    assert_eq!(t.parent(5), Some(4));
    assert_eq!(t.parent(8), Some(5)); // relative 4 -> relative 1
}

#[test]
fn knomial_matches_digit_formula() {
    // k = 2, 8 ranks: the binomial tree.
    let t = knomial(8, 2, 0).unwrap();
    assert_spanning(&t);
    assert_eq!(t.parent(7), Some(6));
    assert_eq!(t.parent(6), Some(4));
    assert_eq!(t.parent(5), Some(4));
    assert_eq!(t.children(0), &[4, 2, 1]);
    assert_eq!(t.height(), 3);
    // k = 3, 9 ranks: root has (k-1)·log_k P = 4 children.
    let t = knomial(9, 3, 0).unwrap();
    assert_eq!(t.children(0).len(), 4);
    assert_eq!(t.parent(8), Some(6));
    // Holes: 5 ranks, k=4: ranks 1,2,3,4 all children of 0.
    let t = knomial(5, 4, 0).unwrap();
    assert_eq!(t.children(0), &[1, 2, 3, 4]);
    // Root 3 of 8: relative rank 1 is rank 4.
    let t = knomial(8, 2, 3).unwrap();
    assert_eq!(t.parent(4), Some(3));
    assert_eq!(t.parent(2), Some(1)); // relative 7 -> 6
}

#[test]
fn bad_arguments_are_errors() {
    assert_eq!(
        kary(0, 2, 0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kary(4, 1, 0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(kary(4, 2, 4).unwrap_err().kind(), ErrorKind::InvalidRoot);
    assert_eq!(
        knomial(4, 0, 0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    let e = knomial(4, 2, 9).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidRoot);
    assert!(e.message().contains('9'), "{e}");
    assert!(GroupLevels::new(vec![]).is_err());
    assert!(GroupLevels::new(vec![vec![]]).is_err());
    let e = GroupLevels::new(vec![vec![0, 0, 1], vec![0, 1, 1]]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("split"), "{e}");
    assert!(GroupLevels::new(vec![vec![0, 0, 1], vec![0, 0]]).is_err());
    assert!(GroupLevels::contiguous(&[vec![2, 2], vec![3]]).is_err());
    let levels = GroupLevels::contiguous(&[vec![2, 2]]).unwrap();
    let e = hierarchical_knomial(&levels, 1, None, 0).unwrap_err();
    assert!(e.message().contains("k = 1"), "{e}");
    assert_eq!(
        hierarchical_knomial(&levels, 2, None, 4)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidRoot
    );
    assert!(hierarchical_knomial(&levels, 2, Some(0), 0).is_err());
    assert!(naive_hierarchical(&levels, 2, 7).is_err());
    // Limit 1: a chain, reached by the widest-slot variant for a few ranks...
    let chain = hierarchical_knomial(&levels, 2, Some(1), 0).unwrap();
    assert_eq!((chain.max_degree(), chain.height()), (1, 3));
    assert_eq!(inter_group_edges(&chain, &levels), vec![1]);
    // ...but not for 40, which would need 39 base-2 digits: the error names the limit.
    let many = GroupLevels::contiguous(&[vec![20, 20]]).unwrap();
    let e = hierarchical_knomial(&many, 2, Some(1), 0).unwrap_err();
    assert!(e.message().contains("degree limit 1"), "{e}");
    assert!(Tree::from_parents(0, &[None, Some(2), Some(1)]).is_err());
    assert!(Tree::from_parents(0, &[None, None]).is_err());
    assert!(Tree::from_parents(1, &[None, Some(0)]).is_err());
}

#[test]
fn single_rank_trees() {
    for t in [
        kary(1, 2, 0).unwrap(),
        knomial(1, 5, 0).unwrap(),
        hierarchical_knomial(&GroupLevels::new(vec![vec![7]]).unwrap(), 2, Some(0), 0).unwrap(),
    ] {
        assert_spanning(&t);
        assert_eq!(t.height(), 0);
        assert_eq!(t.max_degree(), 0);
    }
}

/// Random nested contiguous groups: up to 3 levels.
fn levels_strategy() -> impl Strategy<Value = GroupLevels> {
    (
        prop::collection::vec(1u32..9, 1..24),
        prop::collection::vec(1u32..5, 1..12),
        any::<bool>(),
    )
        .prop_map(|(inner, outer_counts, two)| {
            if !two {
                return GroupLevels::contiguous(&[inner]).unwrap();
            }
            // Cut the inner groups into consecutive runs of the given counts.
            let mut counts = Vec::new();
            let mut left = inner.len() as u32;
            for c in outer_counts {
                if left == 0 {
                    break;
                }
                let c = c.min(left);
                counts.push(c);
                left -= c;
            }
            if left > 0 {
                counts.push(left);
            }
            GroupLevels::contiguous(&[inner, counts]).unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn kary_and_knomial_span(size in 1u32..300, k in 2u32..9, root_pick in 0u32..1000) {
        let root = root_pick % size;
        let t = kary(size, k, root).unwrap();
        assert_spanning(&t);
        prop_assert!(t.max_degree() <= k);
        let t = knomial(size, k, root).unwrap();
        assert_spanning(&t);
        prop_assert_eq!(t.root(), root);
        // The k-nomial root has at most (k-1)·ceil(log_k P) children, and height ≤ ceil(log_k P).
        prop_assert!(t.children(root).len() as u32 <= (k - 1) * ceil_log(k, size));
        prop_assert!(t.height() <= ceil_log(k, size));
    }

    #[test]
    fn hierarchical_trees_keep_groups_together(
        levels in levels_strategy(), k in 2u32..6, root_pick in 0u32..1000,
    ) {
        let root = root_pick % levels.size();
        let layout = hierarchical_layout(&levels, k, None, root).unwrap();
        let tree = layout.tree().unwrap();
        assert_spanning(&tree);
        prop_assert_eq!(tree.root(), root);
        prop_assert_eq!(layout.slot(root), Some(0));
        prop_assert_eq!(tree.height(), layout.height());
        let naive = naive_layout(&levels, k, root).unwrap();
        let naive_tree = naive.tree().unwrap();
        assert_spanning(&naive_tree);
        prop_assert!(layout.order() <= naive.order(), "order {} > naive {}", layout.order(), naive.order());
        let expected: Vec<u64> =
            (0..levels.depth()).map(|i| levels.group_count(i) as u64 - 1).collect();
        prop_assert_eq!(inter_group_edges(&tree, &levels), expected.clone());
        prop_assert_eq!(inter_group_edges(&naive_tree, &levels), expected);
        // The plain k-nomial fits in ceil(log_k P) levels; grouping may cost more, never less.
        prop_assert!(layout.order() >= ceil_log(k, levels.size()));
    }

    #[test]
    fn degree_limit_holds(
        levels in levels_strategy(), k in 2u32..6, limit in 1u32..10, root_pick in 0u32..1000,
    ) {
        let root = root_pick % levels.size();
        match hierarchical_knomial(&levels, k, Some(limit), root) {
            Ok(tree) => {
                assert_spanning(&tree);
                prop_assert!(tree.max_degree() <= limit, "{} > {limit}", tree.max_degree());
                let expected: Vec<u64> =
                    (0..levels.depth()).map(|i| levels.group_count(i) as u64 - 1).collect();
                prop_assert_eq!(inter_group_edges(&tree, &levels), expected);
            }
            Err(e) => {
                prop_assert_eq!(e.kind(), ErrorKind::InvalidArgument);
                prop_assert!(e.message().contains("degree limit"));
                // The unlimited tree must then need more than the limit.
                let free = hierarchical_knomial(&levels, k, None, root).unwrap();
                prop_assert!(free.max_degree() > limit);
            }
        }
    }
}

#[test]
fn generous_degree_limit_never_fails() {
    // The unlimited tree's own maximum degree is always an acceptable limit.
    for sizes in [vec![8u32, 8, 8, 8], vec![5, 3, 7, 1, 2], vec![32; 20]] {
        let levels = GroupLevels::contiguous(&[sizes]).unwrap();
        for k in 2..6 {
            let free = hierarchical_knomial(&levels, k, None, 0).unwrap();
            let limited = hierarchical_knomial(&levels, k, Some(free.max_degree()), 0).unwrap();
            assert!(limited.max_degree() <= free.max_degree());
        }
    }
}

#[test]
fn limits_below_the_natural_fan_out_can_be_met() {
    // Six groups of 3, k = 4: the unlimited tree gives some rank more than 3 children; the
    // widest-slot variant fits the limit by going one level deeper.
    let levels = GroupLevels::contiguous(&[vec![3; 6]]).unwrap();
    let free = hierarchical_knomial(&levels, 4, None, 0).unwrap();
    assert!(free.max_degree() > 3);
    let limited = hierarchical_knomial(&levels, 4, Some(3), 0).unwrap();
    assert_spanning(&limited);
    assert!(limited.max_degree() <= 3);
    assert_eq!(inter_group_edges(&limited, &levels), vec![5]);
}
