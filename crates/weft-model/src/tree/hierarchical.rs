//! Hierarchical k-nomial trees over nested groups (seed 001 §3.3): the minimum-height merge
//! (Algorithms 2-4) and the naive "k-nomial per group, then over leaders" tree it improves on.
//!
//! Both are slot layouts in a k-nomial slot space (see `slots`): occupied slots are
//! ancestor-closed and every group is connected below its leader, so exactly one edge leaves
//! each group. The minimum-height layout minimises first the order (the number of k-nomial
//! levels, the paper's "height", which the cost model charges for), then the height in edges
//! at that order, in three passes: the paper's merge of aligned blocks (exact for the order
//! on every input we enumerated), the capacity greedy of `place` (lower trees at the same or
//! a smaller order), and for one level of at most 64 ranks an exact search (`exact`).
//! Pure code over `weft-core`; no I/O.

use super::exact::lowest_layout;
use super::groups::GroupLevels;
use super::knomial::{slot_depth, slot_parent};
use super::place::{improve, Plan};
use super::slots::{paper_merge, pow, Cell, GroupLayout};
use super::Tree;
use std::collections::HashMap;
use weft_core::{bail, Error, ErrorKind, Result};

/// Where every rank sits in a k-nomial slot space, with the figures the planner compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotLayout {
    k: u32,
    order: u32,
    height: u32,
    root: u32,
    slots: Vec<u64>,
}

impl SlotLayout {
    /// Wraps the slot of every rank; the order is that of the smallest slot space holding
    /// every rank, whatever block sizes the construction reserved on the way.
    fn from_slots(k: u32, root: u32, slots: Vec<u64>) -> SlotLayout {
        let kk = k as u64;
        let height = slots.iter().map(|&s| slot_depth(s, kk)).max().unwrap_or(0);
        let mut last = slots.iter().copied().max().unwrap_or(0);
        let mut order = 0;
        while last > 0 {
            last /= kk;
            order += 1;
        }
        SlotLayout {
            k,
            order,
            height,
            root,
            slots,
        }
    }

    /// The radix.
    pub fn k(&self) -> u32 {
        self.k
    }

    /// The slot space is `[0, k^order)`: the number of k-nomial levels the cost model
    /// `F(k) = (a + b·k)·log_k P` charges for (the seed paper's "height" of a group).
    pub fn order(&self) -> u32 {
        self.order
    }

    /// Edges on the longest root-to-leaf path of the tree.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// The root rank (always in slot 0).
    pub fn root(&self) -> u32 {
        self.root
    }

    /// Slot of `rank`, `None` out of range.
    pub fn slot(&self, rank: u32) -> Option<u64> {
        self.slots.get(rank as usize).copied()
    }

    /// The tree this layout defines: each rank's parent sits in its slot's k-nomial parent.
    pub fn tree(&self) -> Result<Tree> {
        let k = self.k as u64;
        let rank_at: HashMap<u64, u32> = self
            .slots
            .iter()
            .enumerate()
            .map(|(r, &s)| (s, r as u32))
            .collect();
        let parents: Vec<Option<u32>> = self
            .slots
            .iter()
            .enumerate()
            .map(|(r, &s)| {
                if s == 0 {
                    return Ok(None);
                }
                match rank_at.get(&slot_parent(s, k)) {
                    Some(&p) => Ok(Some(p)),
                    None => Err(Error::new(
                        ErrorKind::Internal,
                        format!("slot layout: rank {r} in slot {s} has an empty parent slot"),
                    )),
                }
            })
            .collect::<Result<_>>()?;
        Tree::from_parents(self.root, &parents)
    }
}

/// The group hierarchy, innermost level first, as compact indices.
struct Hierarchy {
    /// `members[0][g]` are the ranks of level-0 group g in rank order; `members[i][g]` are
    /// the level-(i-1) groups of level-i group g in order of their lowest rank. The last entry
    /// is the implicit all-ranks group.
    members: Vec<Vec<Vec<u32>>>,
}

impl Hierarchy {
    fn new(levels: &GroupLevels) -> Hierarchy {
        let size = levels.size() as usize;
        let mut members: Vec<Vec<Vec<u32>>> = Vec::new();
        // Compact index of each rank's group at the previous level.
        let mut below: Vec<u32> = (0..size as u32).collect();
        for i in 0..=levels.depth() {
            let ids = if i < levels.depth() {
                levels.level(i).to_vec()
            } else {
                vec![0; size]
            };
            let mut index_of: HashMap<u32, u32> = HashMap::new();
            let mut groups: Vec<Vec<u32>> = Vec::new();
            let mut seen_below: Vec<bool> = vec![false; members.last().map_or(size, |m| m.len())];
            let mut next_below = vec![0u32; size];
            for rank in 0..size {
                let g = *index_of.entry(ids[rank]).or_insert_with(|| {
                    groups.push(Vec::new());
                    (groups.len() - 1) as u32
                });
                next_below[rank] = g;
                let child = below[rank];
                if !seen_below[child as usize] {
                    seen_below[child as usize] = true;
                    groups[g as usize].push(child);
                }
            }
            members.push(groups);
            below = next_below;
        }
        Hierarchy { members }
    }

    /// Index, at each level, of the group holding `rank`.
    fn path_of(&self, rank: u32) -> Vec<u32> {
        // Walk up: find the level-0 group containing rank, then its parents.
        let mut path = Vec::with_capacity(self.members.len());
        let mut child = rank;
        for level in &self.members {
            let g = level
                .iter()
                .position(|m| m.contains(&child))
                .expect("every rank and group has a parent group") as u32;
            path.push(g);
            child = g;
        }
        path
    }
}

fn check_args(what: &str, levels: &GroupLevels, k: u32, root: u32) -> Result<()> {
    if k < 2 {
        bail!(InvalidArgument, "{what}: radix k = {k} (need k >= 2)");
    }
    if root >= levels.size() {
        bail!(
            InvalidRoot,
            "{what}: root {root} not in 0..{}",
            levels.size()
        );
    }
    Ok(())
}

/// Builds the bottom-up layouts, calling `combine` on each group's parts (the part holding
/// the root first when there is one).
fn build(
    levels: &GroupLevels,
    root: u32,
    k: u32,
    mut combine: impl FnMut(Vec<GroupLayout>, bool) -> Result<GroupLayout>,
) -> Result<SlotLayout> {
    let hierarchy = Hierarchy::new(levels);
    let root_path = hierarchy.path_of(root);
    let mut below: Vec<GroupLayout> = Vec::new();
    for (i, groups) in hierarchy.members.iter().enumerate() {
        let mut built = Vec::with_capacity(groups.len());
        for (g, members) in groups.iter().enumerate() {
            let holds_root = root_path[i] == g as u32;
            let mut parts: Vec<GroupLayout> = if i == 0 {
                members.iter().map(|&r| GroupLayout::single(r)).collect()
            } else {
                members
                    .iter()
                    .map(|&c| std::mem::replace(&mut below[c as usize], GroupLayout::single(0)))
                    .collect()
            };
            if holds_root {
                let pos = if i == 0 {
                    members.iter().position(|&r| r == root)
                } else {
                    members.iter().position(|&c| c == root_path[i - 1])
                }
                .expect("root's group is a member");
                let p = parts.remove(pos);
                parts.insert(0, p);
            }
            built.push(combine(parts, holds_root)?);
        }
        below = built;
    }
    let top = below.pop().expect("one top group");
    let mut slots = vec![0u64; levels.size() as usize];
    for c in &top.cells {
        slots[c.rank as usize] = c.slot;
    }
    Ok(SlotLayout::from_slots(k, root, slots))
}

/// The minimum-height hierarchical k-nomial layout (Algorithms 2-4, see `place`): the
/// fewest k-nomial levels (order), then the lowest height at that order, with every group
/// connected below its leader. The root's groups are placed first, so the root leads every
/// group it belongs to. With `degree_limit`, no rank gets more children; when the greedy
/// cannot honour the limit the call fails with `InvalidArgument`.
pub fn hierarchical_layout(
    levels: &GroupLevels,
    k: u32,
    degree_limit: Option<u32>,
    root: u32,
) -> Result<SlotLayout> {
    check_args("hierarchical knomial", levels, k, root)?;
    if degree_limit == Some(0) && levels.size() > 1 {
        bail!(
            InvalidArgument,
            "hierarchical knomial: degree limit 0 with {} ranks (need at least 1)",
            levels.size()
        );
    }
    let effective = constraining_levels(levels)?;
    let levels = &effective;
    let hierarchy = Hierarchy::new(levels);
    let root_path = hierarchy.path_of(root);
    let mut sizes: Vec<Vec<u64>> = Vec::with_capacity(hierarchy.members.len());
    let mut parts: Vec<Vec<Vec<u32>>> = Vec::with_capacity(hierarchy.members.len());
    for (i, groups) in hierarchy.members.iter().enumerate() {
        let mut level_sizes = Vec::with_capacity(groups.len());
        let mut level_parts = Vec::with_capacity(groups.len());
        for (g, members) in groups.iter().enumerate() {
            let mut ordered = members.clone();
            if i == 0 {
                level_sizes.push(members.len() as u64);
                if root_path[0] == g as u32 {
                    let pos = ordered
                        .iter()
                        .position(|&r| r == root)
                        .expect("root member");
                    let r = ordered.remove(pos);
                    ordered.insert(0, r);
                }
            } else {
                let below = &sizes[i - 1];
                level_sizes.push(members.iter().map(|&c| below[c as usize]).sum());
                // Largest first (the paper's g0 and first-fit decreasing), ties by lowest
                // rank; then the root's part, if any, moves to the front.
                ordered.sort_by(|&a, &b| below[b as usize].cmp(&below[a as usize]));
                if root_path[i] == g as u32 {
                    let pos = ordered
                        .iter()
                        .position(|&c| c == root_path[i - 1])
                        .expect("root's group member");
                    let c = ordered.remove(pos);
                    ordered.insert(0, c);
                }
            }
            level_parts.push(ordered);
        }
        sizes.push(level_sizes);
        parts.push(level_parts);
    }
    let plan = Plan {
        k: k as u64,
        size: levels.size(),
        parts,
        sizes,
    };
    let degree = degree_limit.unwrap_or(u32::MAX);
    let kk = k as u64;
    let paper = build(levels, root, k, |mut parts, holds_root| {
        if !holds_root {
            // The paper's g0: the largest part opens the space.
            let best = (0..parts.len())
                .max_by(|&a, &b| {
                    let (pa, pb) = (&parts[a], &parts[b]);
                    pa.order
                        .cmp(&pb.order)
                        .then(pa.cells.len().cmp(&pb.cells.len()))
                        .then(pb.leader().cmp(&pa.leader()))
                })
                .expect("groups are not empty");
            let p = parts.remove(best);
            parts.insert(0, p);
        }
        paper_merge(kk, parts, degree)
    });
    // Under a degree limit the paper's merge may fail where the capacity greedy, which can
    // leave a full slot's holes to others, still succeeds; search a few orders beyond the
    // plain k-nomial's before giving up.
    let plain_order = {
        let mut e = 0u32;
        while kk.checked_pow(e).is_some_and(|c| c < levels.size() as u64) {
            e += 1;
        }
        e
    };
    let start = paper
        .as_ref()
        .ok()
        .map(|p| (p.order, p.height, p.slots.clone()));
    let Some((_, _, slots)) = improve(&plan, degree_limit, start, plain_order + EXTRA_ORDERS)
    else {
        return Err(paper.expect_err("improve keeps the paper's layout when there is one"));
    };
    let greedy = SlotLayout::from_slots(k, root, slots);
    if levels.depth() == 1 && greedy.height > 0 && levels.size() <= EXACT_MAX_RANKS {
        // One level of groups: an exact search finds a lower tree at the same order when
        // the greedy missed one, as long as the instance is small.
        let mut groups = vec![plan.parts[0][root_path[0] as usize].clone()];
        for (g, members) in plan.parts[0].iter().enumerate() {
            if g as u32 != root_path[0] {
                groups.push(members.clone());
            }
        }
        if let Some((_, per_group)) =
            lowest_layout(k as u64, greedy.order, &groups, greedy.height, EXACT_BUDGET)
        {
            let mut slots = vec![0u64; levels.size() as usize];
            for (members, group_slots) in groups.iter().zip(&per_group) {
                for (&r, &s) in members.iter().zip(group_slots) {
                    slots[r as usize] = s;
                }
            }
            let exact = SlotLayout::from_slots(k, root, slots);
            let fits = match degree_limit {
                Some(d) => exact.tree()?.max_degree() <= d,
                None => true,
            };
            if fits && exact.order <= greedy.order {
                return Ok(exact);
            }
        }
    }
    Ok(greedy)
}

/// Orders beyond the plain k-nomial's tried when the paper's merge fails a degree limit.
const EXTRA_ORDERS: u32 = 8;

/// Search steps the exact pass may take per height before giving up on it.
const EXACT_BUDGET: usize = 200_000;

/// Largest communicator the exact pass is tried on (the search grows with the number of
/// distinct group-size combinations, so it is for small communicators only).
const EXACT_MAX_RANKS: u32 = 64;

/// The levels that constrain the tree: a level of one-rank groups, a level with a single
/// group, or a level that repeats the partition below it adds no condition, and dropping it
/// lets a two-level description that is really one level take the one-level exact pass.
fn constraining_levels(levels: &GroupLevels) -> Result<GroupLevels> {
    let size = levels.size() as usize;
    let mut kept: Vec<Vec<u32>> = Vec::new();
    let mut last_count = size;
    for i in 0..levels.depth() {
        let count = levels.group_count(i);
        // Levels nest, so an equal group count means the same partition.
        if count == size || count == 1 || count == last_count {
            continue;
        }
        kept.push(levels.level(i).to_vec());
        last_count = count;
    }
    if kept.is_empty() {
        kept.push(vec![0; size]);
    }
    GroupLevels::new(kept)
}

/// The minimum-height hierarchical k-nomial tree: see [`hierarchical_layout`].
pub fn hierarchical_knomial(
    levels: &GroupLevels,
    k: u32,
    degree_limit: Option<u32>,
    root: u32,
) -> Result<Tree> {
    hierarchical_layout(levels, k, degree_limit, root)?.tree()
}

/// The naive hierarchical layout: a k-nomial tree inside each innermost group, then at each
/// level a k-nomial tree over the groups' leaders (root's group first, the others in order of
/// their lowest rank). Every part gets a block as large as the largest part's.
pub fn naive_layout(levels: &GroupLevels, k: u32, root: u32) -> Result<SlotLayout> {
    check_args("naive hierarchical", levels, k, root)?;
    let kk = k as u64;
    build(levels, root, k, |parts, _| {
        let widest = parts.iter().map(|p| p.order).max().unwrap_or(0);
        let block = pow(kk, widest)?;
        let n = parts.len() as u64;
        let mut leader_order = 0;
        while pow(kk, leader_order)? < n {
            leader_order += 1;
        }
        pow(kk, widest + leader_order)?;
        let mut children_of: HashMap<u64, u32> = HashMap::new();
        for i in 1..n {
            *children_of.entry(slot_parent(i, kk)).or_insert(0) += 1;
        }
        let mut cells = Vec::new();
        let mut height = 0;
        for (i, part) in parts.iter().enumerate() {
            let base = i as u64 * block;
            height = height.max(slot_depth(i as u64, kk) + part.height);
            for c in &part.cells {
                let extra = if c.slot == 0 {
                    children_of.get(&(i as u64)).copied().unwrap_or(0)
                } else {
                    0
                };
                cells.push(Cell {
                    slot: base + c.slot,
                    rank: c.rank,
                    children: c.children + extra,
                });
            }
        }
        Ok(GroupLayout {
            order: widest + leader_order,
            height,
            cells,
        })
    })
}

/// The naive hierarchical tree: see [`naive_layout`].
pub fn naive_hierarchical(levels: &GroupLevels, k: u32, root: u32) -> Result<Tree> {
    naive_layout(levels, k, root)?.tree()
}
