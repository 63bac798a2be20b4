//! Exhaustive check of the hierarchical k-nomial builder against every hierarchical k-nomial
//! tree on small inputs, and the seed paper's 14-process example.
//!
//! Definition used here (ALGORITHMS.md §2, seed 001 §3.3.1): a *hierarchical k-nomial tree of
//! order n* puts each rank in a slot of `[0, k^n)`; a slot's parent is the slot with its lowest
//! non-zero base-k digit cleared, so a slot's depth is its number of non-zero digits. Occupied
//! slots are ancestor-closed (the tree is the k-nomial tree restricted to them), the root is in
//! slot 0, and every group is connected: each member other than the group's leader has its
//! parent in the same group (the paper's condition 2). Then all of a group sits in the aligned
//! block below its leader (the leader's slot is a multiple of the block size), and other
//! groups may fill the holes of that block. Exactly (groups - 1) edges cross group boundaries.
//! The builder must reach the smallest order (the paper's "height": k-nomial levels), and at
//! that order the smallest height (edges on the longest path).

use std::collections::{HashMap, HashSet};
use weft_model::tree::{
    hierarchical_knomial, hierarchical_layout, inter_group_edges, naive_layout, GroupLevels,
};

/// Multiset of whole groups still to place, as sorted sizes (groups of one level are
/// interchangeable when their sizes are equal).
type Items = Vec<u32>;

/// All sub-multisets of `items` (sorted input, sorted outputs, each once).
fn sub_multisets(items: &[u32]) -> Vec<(Items, Items)> {
    let mut distinct: Vec<(u32, usize)> = Vec::new();
    for &x in items {
        match distinct.last_mut() {
            Some((v, c)) if *v == x => *c += 1,
            _ => distinct.push((x, 1)),
        }
    }
    let mut out = vec![(Vec::new(), Vec::new())];
    for &(v, c) in &distinct {
        let mut next = Vec::new();
        for (taken, left) in &out {
            for t in 0..=c {
                let mut a = taken.clone();
                let mut b = left.clone();
                a.extend(std::iter::repeat_n(v, t));
                b.extend(std::iter::repeat_n(v, c - t));
                next.push((a, b));
            }
        }
        out = next;
    }
    out
}

struct Search {
    k: u64,
    height: u32,
    fill_memo: HashMap<(u32, u32, u32, Items), bool>,
    dist_memo: HashMap<(u32, u32, u64, u32, Items), bool>,
}

impl Search {
    /// Can a block of order `e`, whose first slot (depth `p`) holds a member of group X, take
    /// `r` more members of X (connected to that slot) and the whole groups `items`?
    fn fill(&mut self, e: u32, p: u32, r: u32, items: Items) -> bool {
        if p > self.height {
            return false;
        }
        let need = 1 + r as u64 + items.iter().map(|&x| x as u64).sum::<u64>();
        if need > self.k.pow(e) {
            return false;
        }
        if e == 0 {
            return r == 0 && items.is_empty();
        }
        let key = (e, p, r, items.clone());
        if let Some(&v) = self.fill_memo.get(&key) {
            return v;
        }
        // Split off the top digit: sub-block 0 keeps the first slot; the k-1 others are
        // rooted at children of the first slot, one digit deeper.
        let mut v = false;
        'outer: for (inner, rest) in sub_multisets(&items) {
            for r0 in 0..=r {
                if self.fill(e - 1, p, r0, inner.clone())
                    && self.dist(e - 1, p + 1, self.k - 1, r - r0, rest.clone())
                {
                    v = true;
                    break 'outer;
                }
            }
        }
        self.fill_memo.insert(key, v);
        v
    }

    /// Can `j` interchangeable blocks of order `e` with first slots at depth `p` (children of
    /// an X member) take `r` members of X and the whole groups `items`? Each non-empty block
    /// starts with an X member or with the leader of one of the groups.
    fn dist(&mut self, e: u32, p: u32, j: u64, r: u32, items: Items) -> bool {
        if r == 0 && items.is_empty() {
            return true;
        }
        if j == 0 || p > self.height {
            return false;
        }
        let key = (e, p, j, r, items.clone());
        if let Some(&v) = self.dist_memo.get(&key) {
            return v;
        }
        let mut v = false;
        'outer: for (inside, rest) in sub_multisets(&items) {
            // This block continues X with c members.
            for c in 1..=r {
                if self.fill(e, p, c - 1, inside.clone())
                    && self.dist(e, p, j - 1, r - c, rest.clone())
                {
                    v = true;
                    break 'outer;
                }
            }
            // This block is led by group y (taken from `inside`).
            let mut last = 0;
            for (i, &y) in inside.iter().enumerate() {
                if y == last {
                    continue;
                }
                last = y;
                let mut others = inside.clone();
                others.remove(i);
                if self.fill(e, p, y - 1, others) && self.dist(e, p, j - 1, r, rest.clone()) {
                    v = true;
                    break 'outer;
                }
            }
        }
        self.dist_memo.insert(key, v);
        v
    }
}

/// Smallest (order, height) over all hierarchical k-nomial trees of one level of groups with
/// `sizes`, the root in group `root_group`.
fn exhaustive_best(k: u64, sizes: &[u32], root_group: usize) -> (u32, u32) {
    let mut others: Items = sizes.to_vec();
    let x = others.remove(root_group);
    others.sort_unstable();
    for n in 0..64 {
        for h in 0..=n {
            let mut s = Search {
                k,
                height: h,
                fill_memo: HashMap::new(),
                dist_memo: HashMap::new(),
            };
            if s.fill(n, 0, x - 1, others.clone()) {
                return (n, h);
            }
        }
    }
    unreachable!("every input fits in some order")
}

/// Integer partitions of `total` into at most `parts` parts, non-increasing.
fn partitions(total: u32, parts: usize, max: u32, out: &mut Vec<Vec<u32>>, cur: &mut Vec<u32>) {
    if total == 0 {
        out.push(cur.clone());
        return;
    }
    if cur.len() == parts {
        return;
    }
    for s in (1..=max.min(total)).rev() {
        cur.push(s);
        partitions(total - s, parts, s, out, cur);
        cur.pop();
    }
}

fn first_rank_of(sizes: &[u32], g: usize) -> u32 {
    sizes[..g].iter().sum()
}

#[test]
fn exhaustive_search_knows_simple_cases() {
    // One group of 4 ranks, k=2: slots 0..3, order 2, height 2 (slot 3 = 0b11).
    assert_eq!(exhaustive_best(2, &[4], 0), (2, 2));
    // Two singleton groups: order 1, height 1.
    assert_eq!(exhaustive_best(2, &[1, 1], 0), (1, 1));
    // Root alone, a group of 3 elsewhere: the 3-group's leader needs a slot with two free
    // low digits other than 0, so order 3; leader at 4 puts its members at depth 2.
    assert_eq!(exhaustive_best(2, &[1, 3], 0), (3, 2));
    // A group of 3 holding the root and a singleton: the singleton fills slot 3, in the
    // hole of the 3-group's block.
    assert_eq!(exhaustive_best(2, &[3, 1], 0), (2, 2));
}

/// The builder's (order, height) for one level of contiguous groups.
fn built(sizes: &[u32], k: u32, root: u32) -> (u32, u32) {
    let levels = GroupLevels::contiguous(&[sizes.to_vec()]).unwrap();
    let layout = hierarchical_layout(&levels, k, None, root).unwrap();
    let tree = layout.tree().unwrap();
    tree.validate().unwrap();
    assert_eq!(tree.height(), layout.height());
    (layout.order(), layout.height())
}

#[test]
fn greedy_matches_exhaustive_on_all_small_inputs() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for k in 2..=4u32 {
        for p in 1..=16u32 {
            let mut parts = Vec::new();
            partitions(p, 5, p, &mut parts, &mut Vec::new());
            for sizes in parts {
                let mut roots_done = HashSet::new();
                for g in 0..sizes.len() {
                    if !roots_done.insert(sizes[g]) {
                        continue;
                    }
                    let best = exhaustive_best(k as u64, &sizes, g);
                    // The root as group leader, and as the group's last rank.
                    for root in [
                        first_rank_of(&sizes, g),
                        first_rank_of(&sizes, g) + sizes[g] - 1,
                    ] {
                        let got = built(&sizes, k, root);
                        checked += 1;
                        if got != best {
                            failures.push(format!(
                                "k={k} sizes={sizes:?} root={root}: built {got:?}, best {best:?}"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 1000, "only {checked} cases");
    eprintln!("checked {checked} (sizes, root, k) cases against the exhaustive search");
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn never_more_levels_than_naive() {
    let mut worse_height = Vec::new();
    let mut slower = Vec::new();
    let mut total = 0;
    for k in 2..=4u32 {
        for p in 1..=16u32 {
            let mut parts = Vec::new();
            partitions(p, 5, p, &mut parts, &mut Vec::new());
            for sizes in parts {
                let levels = GroupLevels::contiguous(std::slice::from_ref(&sizes)).unwrap();
                let ours = hierarchical_layout(&levels, k, None, 0).unwrap();
                let naive = naive_layout(&levels, k, 0).unwrap();
                assert!(
                    ours.order() <= naive.order(),
                    "k={k} sizes={sizes:?}: order {} > naive {}",
                    ours.order(),
                    naive.order()
                );
                if ours.height() > naive.height() {
                    worse_height.push((k, sizes.clone()));
                }
                let tree = ours.tree().unwrap();
                let (ours_rounds, naive_rounds) = (rounds(&tree), rounds(&naive.tree().unwrap()));
                total += 1;
                if ours_rounds > naive_rounds {
                    slower.push((k, sizes.clone(), ours_rounds, naive_rounds));
                }
                let groups = sizes.len() as u64;
                assert_eq!(inter_group_edges(&tree, &levels), vec![groups - 1]);
            }
        }
    }
    // Naive trees may have fewer edges on the longest path, but only by spending more
    // k-nomial levels (the root sends to more children in sequence): see the order assert.
    eprintln!(
        "{} of {total} inputs have a naive tree with fewer edges on its longest path, e.g. {:?}",
        worse_height.len(),
        &worse_height[..worse_height.len().min(8)]
    );
    eprintln!(
        "{} of {total} inputs broadcast in fewer rounds with the naive tree, e.g. {:?}",
        slower.len(),
        &slower[..slower.len().min(8)]
    );
}

/// Broadcast rounds when every send takes one round and a rank sends to its children one
/// after another in the tree's order: the latency measure behind the paper's F(k).
fn rounds(tree: &weft_model::tree::Tree) -> u32 {
    let mut at = vec![0u32; tree.size() as usize];
    let mut stack = vec![tree.root()];
    let mut worst = 0;
    while let Some(r) = stack.pop() {
        for (i, &c) in tree.children(r).iter().enumerate() {
            at[c as usize] = at[r as usize] + i as u32 + 1;
            worst = worst.max(at[c as usize]);
            stack.push(c);
        }
    }
    worst
}

#[test]
fn paper_example_fourteen_processes_four_groups() {
    let mut found = Vec::new();
    for a in 1..=11u32 {
        for b in 1..=(13 - a) {
            for c in 1..=(13 - a - b) {
                let d = 14 - a - b - c;
                if d == 0 {
                    continue;
                }
                let sizes = vec![a, b, c, d];
                let levels = GroupLevels::contiguous(std::slice::from_ref(&sizes)).unwrap();
                let naive = naive_layout(&levels, 2, 0).unwrap();
                let ours = hierarchical_knomial(&levels, 2, None, 0).unwrap();
                if naive.height() == 4 && ours.height() == 3 {
                    found.push(sizes);
                }
            }
        }
    }
    eprintln!("group sizes reproducing naive 4 / ours 3: {found:?}");
    // Four nearly equal groups, as drawn in the paper's Figure 9, reproduce it.
    assert!(found.contains(&vec![4, 4, 2, 4]), "{found:?}");
    assert!(found.contains(&vec![3, 3, 4, 4]), "{found:?}");
    let levels = GroupLevels::contiguous(&[vec![4, 4, 2, 4]]).unwrap();
    assert_eq!(
        naive_layout(&levels, 2, 0)
            .unwrap()
            .tree()
            .unwrap()
            .height(),
        4
    );
    assert_eq!(
        hierarchical_knomial(&levels, 2, None, 0).unwrap().height(),
        3
    );
}
