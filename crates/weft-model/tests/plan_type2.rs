//! Type II trees: the minimum-cost derivation against exhaustive search on every small
//! instance, the paper's 13-switch example, root selection and physical trees on fabrics.

use weft_model::fabric::Fabric;
use weft_model::plan::{cost_lower_bound, feasible, min_cost_tree, PhysicalTree, Type2Planner};

/// Brute force: the fewest kept switches over every subset containing the root and every
/// assignment of items (members, kept non-root switches) to kept ancestors within capacity.
fn brute_force(parent: &[Option<u32>], member_switch: &[u32], cap: &[u32]) -> Option<u32> {
    let n = parent.len();
    let ancestors = |x: usize, include_self: bool| -> Vec<usize> {
        let mut out = Vec::new();
        if include_self {
            out.push(x);
        }
        let mut y = x;
        while let Some(p) = parent[y] {
            out.push(p as usize);
            y = p as usize;
        }
        out
    };
    let root = (0..n).find(|&i| parent[i].is_none()).unwrap();
    let mut best: Option<u32> = None;
    for mask in 0u32..(1 << n) {
        if mask & (1 << root) == 0 {
            continue;
        }
        let size = mask.count_ones();
        if best.is_some_and(|b| size >= b) {
            continue;
        }
        let kept = |i: usize| mask & (1 << i) != 0;
        // Items: each member's options; each kept non-root switch's options.
        let mut options: Vec<Vec<usize>> = Vec::new();
        for &s in member_switch {
            options.push(
                ancestors(s as usize, true)
                    .into_iter()
                    .filter(|&a| kept(a))
                    .collect(),
            );
        }
        for i in 0..n {
            if kept(i) && i != root {
                options.push(
                    ancestors(i, false)
                        .into_iter()
                        .filter(|&a| kept(a))
                        .collect(),
                );
            }
        }
        let mut load = vec![0u32; n];
        if assign(&options, 0, &mut load, cap) {
            best = Some(size);
        }
    }
    best
}

fn assign(options: &[Vec<usize>], i: usize, load: &mut [u32], cap: &[u32]) -> bool {
    if i == options.len() {
        return true;
    }
    for &a in &options[i] {
        if load[a] < cap[a] {
            load[a] += 1;
            if assign(options, i + 1, load, cap) {
                return true;
            }
            load[a] -= 1;
        }
    }
    false
}

fn check_instance(parent: &[Option<u32>], member_switch: &[u32], cap: &[u32]) {
    let t = PhysicalTree::from_parents(parent, member_switch.to_vec()).unwrap();
    // from_parents renumbers so the root is local 0; map capacities the same way.
    let local_cap: Vec<u32> = (0..t.switch_count())
        .map(|i| cap[t.switch(i) as usize])
        .collect();
    let dp = min_cost_tree(&t, &local_cap);
    let bf = brute_force(parent, member_switch, cap);
    assert_eq!(
        feasible(&t, &local_cap),
        bf.is_some(),
        "feasibility {parent:?} {member_switch:?} {cap:?}"
    );
    assert_eq!(
        dp.as_ref().map(|a| a.cost()),
        bf,
        "parent {parent:?} members {member_switch:?} cap {cap:?}"
    );
    if let Some(a) = dp {
        a.check(&t, &local_cap).unwrap_or_else(|e| {
            panic!("{e}: parent {parent:?} members {member_switch:?} cap {cap:?}")
        });
    }
}

/// Every rooted tree on n ≤ 4 switches (parent[i] < i), every multiset of 1..=4 members,
/// every capacity vector in {0,1,2,3}: the DP equals exhaustive search.
#[test]
fn min_cost_matches_exhaustive_search_on_all_small_instances() {
    let mut instances = 0;
    for n in 1..=4usize {
        let tree_count: usize = (1..n).product();
        for t in 0..tree_count {
            let mut parent = vec![None; n];
            let mut code = t;
            for (i, p) in parent.iter_mut().enumerate().skip(1) {
                *p = Some((code % i) as u32);
                code /= i;
            }
            for m in 1..=4usize {
                let mut members = vec![0u32; m];
                loop {
                    for capcode in 0..4usize.pow(n as u32) {
                        let cap: Vec<u32> = (0..n)
                            .map(|i| ((capcode / 4usize.pow(i as u32)) % 4) as u32)
                            .collect();
                        check_instance(&parent, &members, &cap);
                        instances += 1;
                    }
                    // Next non-decreasing member sequence.
                    let mut i = m;
                    while i > 0 && members[i - 1] as usize == n - 1 {
                        i -= 1;
                    }
                    if i == 0 {
                        break;
                    }
                    members[i - 1] += 1;
                    let v = members[i - 1];
                    for x in members.iter_mut().skip(i) {
                        *x = v;
                    }
                }
            }
        }
    }
    assert!(instances > 10_000, "{instances}");
}

/// Larger random instances (up to 7 switches, 7 members) with a fixed seed.
#[test]
fn min_cost_matches_exhaustive_search_on_random_instances() {
    let mut rng = weft_model::plan::rng::SplitMix64::new(42);
    for _ in 0..1500 {
        let n = 1 + rng.below(7) as usize;
        let parent: Vec<Option<u32>> = (0..n)
            .map(|i| {
                if i == 0 {
                    None
                } else {
                    Some(rng.below(i as u64) as u32)
                }
            })
            .collect();
        let m = 1 + rng.below(7) as usize;
        let members: Vec<u32> = (0..m).map(|_| rng.below(n as u64) as u32).collect();
        let cap: Vec<u32> = (0..n).map(|_| rng.below(5) as u32).collect();
        check_instance(&parent, &members, &cap);
    }
}

/// Seed 001, Fig. 11: a 13-switch physical tree for 16 processes with K = 5 reduces to 4
/// switches (the lower bound).
#[test]
fn paper_example_thirteen_switches_to_four() {
    let mut parent = vec![None];
    for _ in 0..3 {
        parent.push(Some(0));
    }
    for mid in 1..=3u32 {
        for _ in 0..3 {
            parent.push(Some(mid));
        }
    }
    assert_eq!(parent.len(), 13);
    let per_leaf = [2, 2, 2, 2, 2, 2, 2, 1, 1];
    let mut members = Vec::new();
    for (i, &c) in per_leaf.iter().enumerate() {
        for _ in 0..c {
            members.push(4 + i as u32);
        }
    }
    assert_eq!(members.len(), 16);
    let t = PhysicalTree::from_parents(&parent, members).unwrap();
    assert_eq!(t.as_derived().cost(), 13);
    let cap = vec![5; 13];
    let a = min_cost_tree(&t, &cap).unwrap();
    a.check(&t, &cap).unwrap();
    assert_eq!(a.cost(), 4);
    assert_eq!(cost_lower_bound(16, 5), 4);
    assert!(a.max_children() <= 5);
}

#[test]
fn root_selection_and_physical_tree_on_fat_tree() {
    let f = Fabric::generate("fat-tree:leaves=4,spines=2,endpoints-per-leaf=4", &[]).unwrap();
    let mut planner = Type2Planner::new(&f, 1 << 20);
    let load = vec![0u32; f.switch_count() as usize];
    // All members on leaf 0: the leaf itself is the root, one hop from every NIC.
    let (hops, cands) = planner.root_candidates(&[0, 1, 2], &load);
    assert_eq!((hops, cands.clone()), (1, vec![0]));
    let t = planner.physical_tree(cands[0], &[0, 1, 2]);
    assert_eq!(t.switch_count(), 1);
    // Members on leaves 0 and 3: both spines are 2 hops from every NIC; less loaded first.
    let mut load2 = load.clone();
    load2[4] = 3;
    let (hops, cands) = planner.root_candidates(&[0, 12], &load2);
    assert_eq!(hops, 2);
    assert_eq!(cands, vec![5, 4]);
    let t = planner.physical_tree(5, &[0, 12, 13]);
    assert_eq!(t.switch_count(), 3);
    assert_eq!(t.max_hops(), 2);
    assert_eq!(t.switch(0), 5);
    let cap = vec![2; 3];
    let a = min_cost_tree(&t, &cap).unwrap();
    a.check(&t, &cap).unwrap();
    // 3 members, degree 2: root takes one leaf switch and one member, or similar: 2 switches.
    assert_eq!(a.cost(), 2);
    // A full root (capacity 0) makes derivation impossible.
    assert!(min_cost_tree(&t, &[0, 2, 2]).is_none());
}

#[test]
fn full_switches_are_lifted_over() {
    // Chain root - s1 - s2 with 3 members on s2; s2 full (capacity 0): members lift to s1.
    let t = PhysicalTree::from_parents(&[None, Some(0), Some(1)], vec![2, 2, 2]).unwrap();
    let a = min_cost_tree(&t, &[4, 4, 0]).unwrap();
    assert_eq!(a.cost(), 1);
    assert!(!a.kept(2));
    assert_eq!(a.member_parent(0), 0);
    assert_eq!(a.height(), 1);
    let a = min_cost_tree(&t, &[1, 3, 0]).unwrap();
    assert_eq!(a.cost(), 2);
    assert_eq!(a.height(), 2);
}

/// On every fabric family and random member sets: the physical tree reaches every member,
/// its depth is the root's hop count, and the derived tree is valid, no larger than the
/// physical tree and no smaller than the lower bound.
#[test]
fn derived_trees_on_all_fabric_families() {
    let specs = [
        "fat-tree:leaves=6,spines=3,endpoints-per-leaf=4",
        "fat-tree:leaves=3,spines=2,endpoints-per-leaf=3,pods=3,cores=4",
        "fat-tree:leaves=6,spines=4,endpoints-per-leaf=4,uplinks-per-leaf=2",
        "torus:dims=4x3x2",
        "dragonfly:groups=4,routers=3,endpoints-per-router=2",
    ];
    let mut rng = weft_model::plan::rng::SplitMix64::new(9);
    for spec in specs {
        let f = Fabric::generate(spec, &[]).unwrap();
        let mut planner = Type2Planner::new(&f, 1 << 20);
        let load = vec![0u32; f.switch_count() as usize];
        for _ in 0..40 {
            let n = f.endpoint_count();
            let size = 2 + rng.below(n as u64 - 1) as usize;
            let mut all: Vec<u32> = (0..n).collect();
            rng.shuffle(&mut all);
            all.truncate(size);
            let (hops, cands) = planner.root_candidates(&all, &load);
            let t = planner.physical_tree(cands[0], &all);
            assert_eq!(t.max_hops(), hops, "{spec}");
            assert_eq!(t.members(), &all[..]);
            for m in 0..all.len() as u32 {
                assert_eq!(
                    t.switch(t.member_switch(m)),
                    f.endpoint_switch(all[m as usize])
                );
            }
            let degree = 2 + rng.below(6) as u32;
            let cap = vec![degree; t.switch_count() as usize];
            match min_cost_tree(&t, &cap) {
                Some(a) => {
                    a.check(&t, &cap).unwrap();
                    assert!(a.cost() <= t.switch_count());
                    assert!(
                        a.cost() >= cost_lower_bound(all.len() as u32, degree),
                        "{spec}"
                    );
                    assert!(a.max_children() <= degree);
                }
                None => assert!(!feasible(&t, &cap)),
            }
        }
    }
}
