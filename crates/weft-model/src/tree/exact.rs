//! Exact search for the lowest hierarchical k-nomial tree of one level of groups at a given
//! order, used when the greedy of `place` may miss the lowest height and the instance is
//! small enough (a bounded number of search states).
//!
//! Why a search at all: at a fixed order, cutting the depth-bounded k-nomial tree into
//! connected groups of given sizes is a packing problem (subset sums hide in it), and the
//! greedy, which is exact for the order on every input we enumerated, misses the lowest
//! height on a few percent of small inputs. Groups of equal size are interchangeable, so the
//! search runs over multisets of sizes with memoisation.
//!
//! Pure code; no I/O.

use std::collections::HashMap;

/// Multiset of whole groups, as sorted sizes.
type Items = Vec<u32>;

/// All ways to split a sorted multiset in two (each split once).
fn splits(items: &[u32]) -> Vec<(Items, Items)> {
    let mut runs: Vec<(u32, usize)> = Vec::new();
    for &x in items {
        match runs.last_mut() {
            Some((v, c)) if *v == x => *c += 1,
            _ => runs.push((x, 1)),
        }
    }
    let mut out = vec![(Vec::new(), Vec::new())];
    for &(v, c) in &runs {
        let mut next = Vec::with_capacity(out.len() * (c + 1));
        for (a, b) in &out {
            for t in 0..=c {
                let mut a2 = a.clone();
                let mut b2 = b.clone();
                a2.resize(a.len() + t, v);
                b2.resize(b.len() + c - t, v);
                next.push((a2, b2));
            }
        }
        out = next;
    }
    out
}

/// Memoised feasibility for a fixed radix and height bound.
struct Search {
    k: u64,
    height: u32,
    budget: usize,
    steps: usize,
    fill_memo: HashMap<(u32, u32, u32, Items), bool>,
    dist_memo: HashMap<(u32, u32, u64, u32, Items), bool>,
}

/// Slot decisions gathered while rebuilding a feasible layout: (slot, group index).
struct Builder<'a> {
    out: Vec<(u64, u32)>,
    /// Unused group indices per size.
    pool: &'a mut HashMap<u32, Vec<u32>>,
}

impl Search {
    fn over_budget(&mut self) -> bool {
        self.steps += 1;
        self.steps > self.budget
    }

    /// Can a block of order `e`, first slot at depth `p` holding a member of group X, take
    /// `r` more members of X (connected through X) and the whole groups `items`?
    fn fill(&mut self, e: u32, p: u32, r: u32, items: &[u32]) -> bool {
        if p > self.height || self.over_budget() {
            return false;
        }
        let need = 1 + r as u64 + items.iter().map(|&x| x as u64).sum::<u64>();
        if self.k.checked_pow(e).is_some_and(|c| need > c) {
            return false;
        }
        if e == 0 {
            return r == 0 && items.is_empty();
        }
        let key = (e, p, r, items.to_vec());
        if let Some(&v) = self.fill_memo.get(&key) {
            return v;
        }
        let v = self.fill_choice(e, p, r, items).is_some();
        self.fill_memo.insert(key, v);
        v
    }

    /// A feasible split for `fill`: (items kept in sub-block 0, X members there).
    fn fill_choice(&mut self, e: u32, p: u32, r: u32, items: &[u32]) -> Option<(Items, u32)> {
        for (inner, rest) in splits(items) {
            for r0 in 0..=r {
                if self.fill(e - 1, p, r0, &inner)
                    && self.dist(e - 1, p + 1, self.k - 1, r - r0, &rest)
                {
                    return Some((inner, r0));
                }
            }
        }
        None
    }

    /// Can `j` interchangeable blocks of order `e` (first slots at depth `p`, children of an
    /// X member) take `r` members of X and the whole groups `items`?
    fn dist(&mut self, e: u32, p: u32, j: u64, r: u32, items: &[u32]) -> bool {
        if r == 0 && items.is_empty() {
            return true;
        }
        if j == 0 || p > self.height || self.over_budget() {
            return false;
        }
        let key = (e, p, j, r, items.to_vec());
        if let Some(&v) = self.dist_memo.get(&key) {
            return v;
        }
        let v = self.dist_choice(e, p, j, r, items).is_some();
        self.dist_memo.insert(key, v);
        v
    }

    /// A feasible choice for the next block in `dist`.
    fn dist_choice(&mut self, e: u32, p: u32, j: u64, r: u32, items: &[u32]) -> Option<Lead> {
        for (inside, rest) in splits(items) {
            for c in 1..=r {
                if self.fill(e, p, c - 1, &inside) && self.dist(e, p, j - 1, r - c, &rest) {
                    return Some(Lead::Continue {
                        count: c,
                        inside,
                        rest,
                    });
                }
            }
            let mut last = 0;
            for (i, &y) in inside.iter().enumerate() {
                if y == last {
                    continue;
                }
                last = y;
                let mut others = inside.clone();
                others.remove(i);
                if self.fill(e, p, y - 1, &others) && self.dist(e, p, j - 1, r, &rest) {
                    return Some(Lead::Group {
                        size: y,
                        inside: others,
                        rest,
                    });
                }
            }
        }
        None
    }

    /// Writes the slots of a feasible `fill` whose block starts at `base`.
    #[allow(clippy::too_many_arguments)]
    fn build_fill(
        &mut self,
        b: &mut Builder,
        e: u32,
        base: u64,
        p: u32,
        r: u32,
        items: &[u32],
        x: u32,
    ) {
        if e == 0 {
            b.out.push((base, x));
            return;
        }
        let (inner, r0) = self
            .fill_choice(e, p, r, items)
            .expect("rebuilding a feasible block");
        let rest = minus(items, &inner);
        self.build_fill(b, e - 1, base, p, r0, &inner, x);
        let unit = self.k.pow(e - 1);
        self.build_dist(b, e - 1, base, unit, 1, p + 1, self.k - 1, r - r0, &rest, x);
    }

    /// Writes the slots of a feasible `dist`; sub-block `d` starts at `base + d·unit`.
    #[allow(clippy::too_many_arguments)]
    fn build_dist(
        &mut self,
        b: &mut Builder,
        e: u32,
        base: u64,
        unit: u64,
        d: u64,
        p: u32,
        j: u64,
        r: u32,
        items: &[u32],
        x: u32,
    ) {
        if r == 0 && items.is_empty() {
            return;
        }
        let start = base + d * unit;
        match self
            .dist_choice(e, p, j, r, items)
            .expect("rebuilding a feasible split")
        {
            Lead::Continue {
                count,
                inside,
                rest,
            } => {
                self.build_fill(b, e, start, p, count - 1, &inside, x);
                self.build_dist(b, e, base, unit, d + 1, p, j - 1, r - count, &rest, x);
            }
            Lead::Group { size, inside, rest } => {
                let g = b
                    .pool
                    .get_mut(&size)
                    .and_then(|v| v.pop())
                    .expect("a group of this size is left");
                self.build_fill(b, e, start, p, size - 1, &inside, g);
                self.build_dist(b, e, base, unit, d + 1, p, j - 1, r, &rest, x);
            }
        }
    }
}

enum Lead {
    /// The block continues group X with `count` members.
    Continue {
        count: u32,
        inside: Items,
        rest: Items,
    },
    /// The block is led by a group of `size`.
    Group {
        size: u32,
        inside: Items,
        rest: Items,
    },
}

fn minus(all: &[u32], part: &[u32]) -> Items {
    let mut rest = all.to_vec();
    for x in part {
        let i = rest
            .iter()
            .position(|y| y == x)
            .expect("part of the multiset");
        rest.remove(i);
    }
    rest
}

/// Lowest-height layout of `order` for one level of groups, found by exhaustive search:
/// `groups[0]` holds the root (its first rank) and goes to slot 0. Returns the slot of each
/// member of each group (in the groups' rank order) and the height, or `None` when no height
/// below `below_height` fits or the search would exceed `budget` states.
pub(crate) fn lowest_layout(
    k: u64,
    order: u32,
    groups: &[Vec<u32>],
    below_height: u32,
    budget: usize,
) -> Option<(u32, Vec<Vec<u64>>)> {
    let x_size = groups[0].len() as u32;
    let mut items: Items = groups[1..].iter().map(|g| g.len() as u32).collect();
    items.sort_unstable();
    let mut found = None;
    for height in 0..below_height {
        let mut s = Search {
            k,
            height,
            budget,
            steps: 0,
            fill_memo: HashMap::new(),
            dist_memo: HashMap::new(),
        };
        let ok = s.fill(order, 0, x_size - 1, &items);
        if s.steps > budget {
            return None;
        }
        if ok {
            found = Some((height, s));
            break;
        }
    }
    let (height, mut s) = found?;
    // Rebuilding only revisits states already proven feasible.
    s.budget = usize::MAX;
    let mut pool: HashMap<u32, Vec<u32>> = HashMap::new();
    for (g, members) in groups.iter().enumerate().skip(1).rev() {
        pool.entry(members.len() as u32).or_default().push(g as u32);
    }
    let mut b = Builder {
        out: Vec::new(),
        pool: &mut pool,
    };
    s.build_fill(&mut b, order, 0, 0, x_size - 1, &items, 0);
    let mut per_group: Vec<Vec<u64>> = vec![Vec::new(); groups.len()];
    for (slot, g) in b.out {
        per_group[g as usize].push(slot);
    }
    for slots in &mut per_group {
        // The lowest slot of a connected group is its leader (ancestors are smaller).
        slots.sort_unstable();
    }
    Some((height, per_group))
}
