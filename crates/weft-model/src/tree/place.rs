//! Placement of nested groups into a k-nomial slot space: the minimum-height hierarchical
//! k-nomial construction (seed 001 §3.3, Algorithms 2-4, generalised; ALGORITHMS.md §2).
//!
//! Rules every layout keeps: occupied slots are ancestor-closed, the root is in slot 0, and
//! every group is connected (each member but the leader has its parent in the group), so
//! exactly one edge leaves each group. Because occupied slots are ancestor-closed, a free
//! slot's whole subtree is free; a free slot with an occupied parent is a *hole* that can
//! take a whole group, and its capacity under a height bound H is the number of slots of
//! depth <= H in its subtree, which depends only on its trailing zero digits and its depth.
//!
//! One attempt, for a fixed order n and height bound H, places the root's group chain at
//! slot 0 and then, inside each group, its parts largest first into the lowest hole (inside
//! the group's own subtree) whose capacity fits them: the paper's greedy merge, with the
//! paper's "aligned free block" read as "hole with enough capacity". The smallest order is
//! found first, then the smallest height at that order.
//!
//! Pure code over `weft-core`; no I/O.

use super::knomial::{slot_depth, slot_parent};
use std::collections::{BTreeSet, HashMap};

/// The group hierarchy with parts in placement order.
pub(crate) struct Plan {
    pub k: u64,
    pub size: u32,
    /// `parts[0][g]`: ranks of level-0 group g, its leader first. `parts[i][g]` (i ≥ 1):
    /// level-(i-1) groups of level-i group g, the first one placed at the group's slot. The
    /// last level is the single all-ranks group.
    pub parts: Vec<Vec<Vec<u32>>>,
    /// Ranks per group, same indexing as `parts`.
    pub sizes: Vec<Vec<u64>>,
}

/// Trailing zero base-k digits of `x` (> 0).
fn trailing(mut x: u64, k: u64) -> u32 {
    let mut t = 0;
    while x.is_multiple_of(k) {
        x /= k;
        t += 1;
    }
    t
}

/// `Σ_{j ≤ h} C(t, j)·(k-1)^j`: slots of depth ≤ h below (and including) a slot with `t`
/// free digits, saturating.
fn capacity(k: u64, t: u32, h: u32) -> u64 {
    let mut total: u64 = 0;
    let mut binom: u128 = 1;
    let mut power: u128 = 1;
    for j in 0..=t.min(h) {
        if j > 0 {
            binom = binom * (t - j + 1) as u128 / j as u128;
            power = power.saturating_mul(k as u128 - 1);
        }
        let term = binom.saturating_mul(power).min(u64::MAX as u128) as u64;
        total = total.saturating_add(term);
    }
    total
}

/// Why an attempt failed.
enum Fail {
    /// Nothing fits under these bounds; a larger height or order may.
    Bounds,
    /// Slot 0 is full under the degree limit: no larger order helps.
    RootFull,
}

struct Attempt<'a> {
    plan: &'a Plan,
    n: u32,
    h: u32,
    degree: u32,
    /// Capacity of a hole per class `t * (h + 1) + depth`.
    cap: Vec<u64>,
    /// Holes per class, ordered by slot.
    holes: Vec<BTreeSet<u64>>,
    /// Occupied slot -> number of occupied children.
    children: HashMap<u64, u32>,
    slot_of: Vec<u64>,
    /// Place a level-1 group's first part's ranks after its other parts.
    defer_first: bool,
    /// At every level, place only the leader of the chain of first parts, then the other
    /// parts from the outermost level in, then the first part's ranks.
    defer_all: bool,
    /// Occupied slot -> rank (kept for `defer_all`).
    owner: HashMap<u64, u32>,
    /// `group_of[l][rank]`: the rank's group at level l (for `defer_all`).
    group_of: Vec<Vec<u32>>,
    /// Under a degree limit, give each rank its widest child slots (highest digit first)
    /// and fill groups breadth-first, so a limited fan-out still reaches far.
    wide: bool,
}

impl<'a> Attempt<'a> {
    fn new(plan: &'a Plan, n: u32, h: u32, degree: u32, variant: Variant) -> Attempt<'a> {
        let classes = (n as usize + 1) * (h as usize + 1);
        let mut cap = vec![0; classes];
        for t in 0..=n {
            for d in 0..=h {
                cap[(t * (h + 1) + d) as usize] = if variant.wide {
                    capacity_limited(plan.k, t, h - d, degree)
                } else {
                    capacity(plan.k, t, h - d)
                };
            }
        }
        Attempt {
            plan,
            n,
            h,
            degree,
            cap,
            holes: vec![BTreeSet::new(); classes],
            children: HashMap::with_capacity(plan.size as usize),
            slot_of: vec![0; plan.size as usize],
            defer_first: variant.defer_first,
            defer_all: variant.defer_all,
            owner: HashMap::new(),
            wide: variant.wide,
            group_of: if variant.defer_all {
                group_index(plan)
            } else {
                Vec::new()
            },
        }
    }

    fn class(&self, t: u32, depth: u32) -> usize {
        (t * (self.h + 1) + depth) as usize
    }

    /// Free digits below `x`: its trailing zeros, or the whole order for slot 0.
    fn free_digits(&self, x: u64) -> u32 {
        if x == 0 {
            self.n
        } else {
            trailing(x, self.plan.k)
        }
    }

    /// Children slots of `x` with their class, in increasing slot order.
    fn child_slots(&self, x: u64) -> impl Iterator<Item = (u64, u32)> + '_ {
        let k = self.plan.k;
        let t = self.free_digits(x);
        (0..t).flat_map(move |m| {
            let unit = k.pow(m);
            (1..k).map(move |d| (x + d * unit, m))
        })
    }

    fn occupy(&mut self, x: u64, depth: u32, rank: u32) {
        let k = self.plan.k;
        if x != 0 {
            let t = trailing(x, k);
            let c = self.class(t, depth);
            self.holes[c].remove(&x);
            let p = slot_parent(x, k);
            let count = self.children.get_mut(&p).expect("parent occupied");
            *count += 1;
            if *count >= self.degree {
                // The parent is full: its remaining holes can no longer take anyone.
                let gone: Vec<(u64, u32)> = self.child_slots(p).collect();
                for (c, m) in gone {
                    let cls = self.class(m, depth);
                    self.holes[cls].remove(&c);
                }
            }
        }
        self.children.insert(x, 0);
        if self.defer_all {
            self.owner.insert(x, rank);
        }
        self.slot_of[rank as usize] = x;
        if depth < self.h && self.degree > 0 {
            let new: Vec<(u64, u32)> = self.child_slots(x).collect();
            for (c, m) in new {
                let cls = self.class(m, depth + 1);
                self.holes[cls].insert(c);
            }
        }
    }

    /// The lowest hole in `[lo, hi)` with capacity ≥ `need` (and, with `within`, whose
    /// parent belongs to group `within.1` of level `within.0`).
    fn find_hole(&self, lo: u64, hi: u64, need: u64, within: Option<(usize, u32)>) -> Option<u64> {
        let k = self.plan.k;
        let mut best: Option<u64> = None;
        for t in 0..=self.n {
            for d in 1..=self.h {
                let c = self.class(t, d);
                if self.cap[c] < need {
                    continue;
                }
                let end = best.unwrap_or(hi).min(hi);
                let hit = self.holes[c]
                    .range(lo..end)
                    .copied()
                    .find(|&x| match within {
                        None => true,
                        Some((level, group)) => {
                            let rank = self.owner[&slot_parent(x, k)];
                            self.group_of[level][rank as usize] == group
                        }
                    });
                if let Some(x) = hit {
                    best = Some(x);
                }
            }
        }
        best
    }

    /// `defer_all` placement of group `g` of level `level` (≥ 1) at `b`.
    fn place_deferred(&mut self, level: usize, g: usize, b: u64) -> std::result::Result<(), Fail> {
        let plan = self.plan;
        let mut chain = Vec::with_capacity(level);
        let mut c = g;
        for l in (1..=level).rev() {
            chain.push((l, c));
            c = plan.parts[l][c][0] as usize;
        }
        self.occupy(b, slot_depth(b, plan.k), plan.parts[0][c][0]);
        let block = plan.k.pow(self.free_digits(b));
        for &(l, group) in &chain {
            for &q in &plan.parts[l][group][1..] {
                let need = plan.sizes[l - 1][q as usize];
                match self.find_hole(b, b + block, need, Some((l, group as u32))) {
                    Some(hole) => self.place(l - 1, q as usize, hole)?,
                    None => return Err(self.failure()),
                }
            }
        }
        self.fill_leaf(c, b)
    }

    /// Places group `g` of level `level` with its leader in the free slot `b`.
    fn place(&mut self, level: usize, g: usize, b: u64) -> std::result::Result<(), Fail> {
        let plan = self.plan;
        if level == 0 {
            self.occupy(b, slot_depth(b, plan.k), plan.parts[0][g][0]);
            return self.fill_leaf(g, b);
        }
        if self.defer_all {
            return self.place_deferred(level, g, b);
        }
        let parts = &plan.parts[level][g];
        if self.defer_first && level == 1 {
            // Only the leader of the first part now; its other ranks take what the other
            // parts leave, so a large first group does not use up the shallow holes.
            self.occupy(
                b,
                slot_depth(b, plan.k),
                plan.parts[0][parts[0] as usize][0],
            );
            self.place_rest(level, g, b)?;
            return self.fill_leaf(parts[0] as usize, b);
        }
        self.place(level - 1, parts[0] as usize, b)?;
        self.place_rest(level, g, b)
    }

    /// Places the parts of group `g` after the first, largest first, each into the lowest
    /// hole of the group's block with room for it.
    fn place_rest(&mut self, level: usize, g: usize, b: u64) -> std::result::Result<(), Fail> {
        let plan = self.plan;
        let block = plan.k.pow(self.free_digits(b));
        for &q in &plan.parts[level][g][1..] {
            let need = plan.sizes[level - 1][q as usize];
            match self.find_hole(b, b + block, need, None) {
                Some(c) => self.place(level - 1, q as usize, c)?,
                None => return Err(self.failure()),
            }
        }
        Ok(())
    }

    /// Places the ranks of level-0 group `g` after its leader (already in `b`): lowest
    /// offsets first inside the leader's block, skipping whole subtrees that are too deep,
    /// whose parent is full, or that belong to another group.
    fn fill_leaf(&mut self, g: usize, b: u64) -> std::result::Result<(), Fail> {
        if self.wide {
            return self.fill_leaf_wide(g, b);
        }
        let k = self.plan.k;
        let ranks = &self.plan.parts[0][g];
        let depth_b = slot_depth(b, k);
        let block = k.pow(self.free_digits(b));
        let mut next = 1usize;
        let mut rel = 1u64;
        while next < ranks.len() {
            if rel >= block {
                return Err(self.failure());
            }
            let unit = k.pow(trailing(rel, k));
            let depth = depth_b + slot_depth(rel, k);
            let parent = b + slot_parent(rel, k);
            if depth > self.h
                || self.children.contains_key(&(b + rel))
                || self.children[&parent] >= self.degree
            {
                rel += unit;
                continue;
            }
            self.occupy(b + rel, depth, ranks[next]);
            next += 1;
            rel += 1;
        }
        Ok(())
    }

    /// `fill_leaf` for the `wide` variant: breadth-first from the leader, each member taking
    /// children in its widest free slots (highest digit first) up to the degree limit.
    fn fill_leaf_wide(&mut self, g: usize, b: u64) -> std::result::Result<(), Fail> {
        let k = self.plan.k;
        let ranks = &self.plan.parts[0][g];
        let mut next = 1usize;
        let mut queue = std::collections::VecDeque::from([b]);
        while next < ranks.len() {
            let Some(x) = queue.pop_front() else {
                return Err(self.failure());
            };
            let depth = slot_depth(x, k) + 1;
            if depth > self.h {
                continue;
            }
            'widest: for m in (0..self.free_digits(x)).rev() {
                for d in 1..k {
                    if next == ranks.len() || self.children[&x] >= self.degree {
                        break 'widest;
                    }
                    let c = x + d * k.pow(m);
                    if self.children.contains_key(&c) {
                        continue;
                    }
                    self.occupy(c, depth, ranks[next]);
                    next += 1;
                    queue.push_back(c);
                }
            }
        }
        Ok(())
    }

    fn failure(&self) -> Fail {
        if self.children.get(&0).copied().unwrap_or(0) >= self.degree {
            Fail::RootFull
        } else {
            Fail::Bounds
        }
    }
}

/// Runs one attempt; the slot of every rank on success.
fn attempt(
    plan: &Plan,
    n: u32,
    h: u32,
    degree: u32,
    variant: Variant,
) -> std::result::Result<Vec<u64>, Fail> {
    let mut a = Attempt::new(plan, n, h, degree, variant);
    let top = plan.parts.len() - 1;
    a.place(top, 0, 0)?;
    Ok(a.slot_of)
}

/// The smallest order up to `max_order`, then the smallest height at that order, that one
/// variant of the greedy reaches: `(order, height, slots)`.
fn search(
    plan: &Plan,
    degree: u32,
    variant: Variant,
    max_order: u32,
) -> Option<(u32, u32, Vec<u64>)> {
    let k = plan.k;
    let p = plan.size as u64;
    let mut n = 0u32;
    while k.checked_pow(n).is_some_and(|s| s < p) {
        n += 1;
    }
    while n <= max_order {
        match attempt(plan, n, n, degree, variant) {
            Ok(unbounded) => {
                // Bisect the height between the capacity bound and the order.
                let mut lo = 0;
                while capacity(k, n, lo) < p {
                    lo += 1;
                }
                let mut best = unbounded;
                let mut hi = n;
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    match attempt(plan, n, mid, degree, variant) {
                        Ok(s) => {
                            best = s;
                            hi = mid;
                        }
                        Err(_) => lo = mid + 1,
                    }
                }
                let height = best.iter().map(|&s| slot_depth(s, k)).max().unwrap_or(0);
                return Some((n, height, best));
            }
            // Lowest-first variants behave the same at every larger order once slot 0 is
            // full; the widest-first one gives slot 0 wider children at a larger order.
            Err(Fail::RootFull) if !variant.wide => return None,
            Err(_) => n += 1,
        }
    }
    None
}

/// One way of running the greedy.
#[derive(Clone, Copy)]
struct Variant {
    defer_first: bool,
    defer_all: bool,
    wide: bool,
}

/// Slots of depth ≤ h below a slot with `t` free digits when every slot keeps only its
/// `degree` widest children (highest digit first), saturating.
fn capacity_limited(k: u64, t: u32, h: u32, degree: u32) -> u64 {
    let mut memo = HashMap::new();
    capacity_limited_memo(k, t, h, degree, &mut memo)
}

fn capacity_limited_memo(
    k: u64,
    t: u32,
    h: u32,
    degree: u32,
    memo: &mut HashMap<(u32, u32), u64>,
) -> u64 {
    if h == 0 || t == 0 {
        return 1;
    }
    if let Some(&v) = memo.get(&(t, h)) {
        return v;
    }
    let mut total: u64 = 1;
    let mut left = degree as u64;
    for m in (0..t).rev() {
        if left == 0 {
            break;
        }
        let take = left.min(k - 1);
        let below = capacity_limited_memo(k, m, h - 1, degree, memo);
        total = total.saturating_add(take.saturating_mul(below));
        left -= take;
    }
    memo.insert((t, h), total);
    total
}

/// `group_of[l][rank]`: index of the rank's group at level l.
fn group_index(plan: &Plan) -> Vec<Vec<u32>> {
    let mut out: Vec<Vec<u32>> = Vec::with_capacity(plan.parts.len());
    let mut level0 = vec![0u32; plan.size as usize];
    for (g, ranks) in plan.parts[0].iter().enumerate() {
        for &r in ranks {
            level0[r as usize] = g as u32;
        }
    }
    out.push(level0);
    for l in 1..plan.parts.len() {
        let mut up = vec![0u32; plan.parts[l - 1].len()];
        for (g, members) in plan.parts[l].iter().enumerate() {
            for &c in members {
                up[c as usize] = g as u32;
            }
        }
        let row: Vec<u32> = out[l - 1].iter().map(|&c| up[c as usize]).collect();
        out.push(row);
    }
    out
}

/// Improves on the paper's layout `(order, height, slots)`, when there is one, with the
/// capacity greedy variants; keeps the best (order, height), the earliest on ties. Orders
/// above the paper's, or above `max_order` without one, are not tried.
pub(crate) fn improve(
    plan: &Plan,
    degree_limit: Option<u32>,
    paper: Option<(u32, u32, Vec<u64>)>,
    max_order: u32,
) -> Option<(u32, u32, Vec<u64>)> {
    let degree = degree_limit.unwrap_or(u32::MAX);
    let mut best = paper;
    let plain = |defer_first, defer_all| Variant {
        defer_first,
        defer_all,
        wide: false,
    };
    let mut variants = vec![plain(false, false), plain(true, false)];
    // With one explicit level the two deferring variants are the same.
    if plan.parts.len() > 2 {
        variants.push(plain(false, true));
    }
    if degree_limit.is_some() {
        variants.push(Variant {
            defer_first: false,
            defer_all: false,
            wide: true,
        });
        variants.push(Variant {
            defer_first: true,
            defer_all: false,
            wide: true,
        });
    }
    for &variant in &variants {
        let limit = best.as_ref().map_or(max_order, |b| b.0);
        if let Some(found) = search(plan, degree, variant, limit) {
            if best
                .as_ref()
                .is_none_or(|b| (found.0, found.1) < (b.0, b.1))
            {
                best = Some(found);
            }
        }
    }
    best
}
