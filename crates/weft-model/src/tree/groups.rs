//! Nested rank groups (node ⊂ leaf switch ⊂ pod ⊂ ...) that the hierarchical trees follow,
//! and the count of tree edges that cross each level's group boundaries.
//! Pure data; depends only on `weft-core` and [`Tree`].

use super::Tree;
use std::collections::HashMap;
use weft_core::{bail, Result};

/// Group levels, innermost first: `level(0)[rank]` is the node id of `rank`, `level(1)[rank]`
/// its leaf switch id, and so on. Ids are arbitrary `u32`; each level nests in the next (two
/// ranks in the same inner group are in the same outer group). Above the last level all ranks
/// form one implicit group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupLevels {
    levels: Vec<Vec<u32>>,
}

impl GroupLevels {
    /// Validates and wraps `levels`: at least one level, at least one rank, every level of the
    /// same length, and each level nested in the next.
    pub fn new(levels: Vec<Vec<u32>>) -> Result<GroupLevels> {
        let Some(first) = levels.first() else {
            bail!(
                InvalidArgument,
                "group levels: no level given (need at least one)"
            );
        };
        let size = first.len();
        if size == 0 {
            bail!(InvalidArgument, "group levels: level 0 has 0 ranks");
        }
        if size > u32::MAX as usize - 1 {
            bail!(InvalidArgument, "group levels: {size} ranks is too many");
        }
        for (i, level) in levels.iter().enumerate() {
            if level.len() != size {
                bail!(
                    InvalidArgument,
                    "group levels: level {i} has {} ranks but level 0 has {size}",
                    level.len()
                );
            }
        }
        for i in 1..levels.len() {
            let mut outer_of: HashMap<u32, (u32, usize)> = HashMap::new();
            for (rank, (&inner, &outer)) in levels[i - 1].iter().zip(&levels[i]).enumerate() {
                match outer_of.get(&inner) {
                    Some(&(o, first_rank)) if o != outer => bail!(
                        InvalidArgument,
                        "group levels: level {} group {inner} is split between level {i} groups \
                         {o} (rank {first_rank}) and {outer} (rank {rank})",
                        i - 1
                    ),
                    Some(_) => {}
                    None => {
                        outer_of.insert(inner, (outer, rank));
                    }
                }
            }
        }
        Ok(GroupLevels { levels })
    }

    /// Builds levels of contiguous groups from sizes: `sizes[0]` are the innermost groups'
    /// rank counts in rank order, `sizes[i]` (i ≥ 1) count how many consecutive level `i-1`
    /// groups form each level `i` group. Each level's counts must cover the level below.
    pub fn contiguous(sizes: &[Vec<u32>]) -> Result<GroupLevels> {
        let Some(inner) = sizes.first() else {
            bail!(InvalidArgument, "group sizes: no level given");
        };
        if inner.contains(&0) {
            bail!(
                InvalidArgument,
                "group sizes: level 0 has a group of 0 ranks"
            );
        }
        let mut ids: Vec<u32> = Vec::new();
        for (g, &s) in inner.iter().enumerate() {
            ids.resize(ids.len() + s as usize, g as u32);
        }
        let mut levels = vec![ids];
        // Number of level-(i-1) groups is the length of sizes[i-1].
        for i in 1..sizes.len() {
            let below = sizes[i - 1].len();
            let total: u64 = sizes[i].iter().map(|&c| c as u64).sum();
            if total != below as u64 || sizes[i].contains(&0) {
                bail!(
                    InvalidArgument,
                    "group sizes: level {i} counts sum to {total} (none may be 0) but level {} \
                     has {below} groups",
                    i - 1
                );
            }
            let mut outer_of_inner = Vec::with_capacity(below);
            for (g, &c) in sizes[i].iter().enumerate() {
                outer_of_inner.resize(outer_of_inner.len() + c as usize, g as u32);
            }
            let prev = &levels[i - 1];
            let next: Vec<u32> = prev.iter().map(|&g| outer_of_inner[g as usize]).collect();
            levels.push(next);
        }
        GroupLevels::new(levels)
    }

    /// Validates `levels` as [`GroupLevels::new`] does, then leaves out each level that adds
    /// nothing to the tree: one of a single group, and one whose groups are those of the
    /// next level (splits none of them). When every level goes, the outermost one stays
    /// (one group of all ranks).
    pub fn pruned(levels: Vec<Vec<u32>>) -> Result<GroupLevels> {
        let all = GroupLevels::new(levels)?;
        let depth = all.depth();
        let keep: Vec<Vec<u32>> = (0..depth)
            .filter(|&i| {
                let n = all.group_count(i);
                n > 1 && (i + 1 == depth || n > all.group_count(i + 1))
            })
            .map(|i| all.levels[i].clone())
            .collect();
        if keep.is_empty() {
            let last = all.levels.into_iter().next_back().expect("one level");
            return Ok(GroupLevels { levels: vec![last] });
        }
        Ok(GroupLevels { levels: keep })
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.levels[0].len() as u32
    }

    /// Number of explicit levels (the implicit all-ranks group is not counted).
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// Group id of every rank at level `i` (innermost is 0); empty when `i` is out of range.
    pub fn level(&self, i: usize) -> &[u32] {
        self.levels.get(i).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Number of distinct groups at level `i`.
    pub fn group_count(&self, i: usize) -> usize {
        let mut ids: Vec<u32> = self.level(i).to_vec();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    }
}

/// Ids of the groups `inner` makes inside each group of `outer` (one entry per rank each):
/// rank `r` gets the number of the pair `(outer[r], inner[r])`, pairs numbered in order of
/// first appearance, so the result nests in `outer` whatever `inner` is.
pub fn nest_in(outer: &[u32], inner: &[u32]) -> Vec<u32> {
    let mut ids: HashMap<(u32, u32), u32> = HashMap::new();
    outer
        .iter()
        .zip(inner)
        .map(|(&o, &i)| {
            let next = ids.len() as u32;
            *ids.entry((o, i)).or_insert(next)
        })
        .collect()
}

/// The edges of `tree` whose endpoints lie in different groups, per level (index `i` counts
/// crossings of level `i` boundaries). Ranks beyond the shorter of the two sizes are ignored.
pub fn inter_group_edges(tree: &Tree, levels: &GroupLevels) -> Vec<u64> {
    let n = tree.size().min(levels.size());
    (0..levels.depth())
        .map(|i| {
            let ids = levels.level(i);
            (0..n)
                .filter_map(|r| tree.parent(r).map(|p| (r, p)))
                .filter(|&(r, p)| p < n && ids[r as usize] != ids[p as usize])
                .count() as u64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_groups_are_pruned_to_the_levels_that_split() {
        // Packages 0,0,1,1 on each of two nodes: the pairs nest in the nodes.
        let nodes = vec![0, 0, 0, 0, 1, 1, 1, 1];
        let packages = nest_in(&nodes, &[0, 0, 1, 1, 0, 0, 1, 1]);
        assert_eq!(packages, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        let l = GroupLevels::pruned(vec![packages.clone(), nodes.clone()]).unwrap();
        assert_eq!(l.depth(), 2);
        // One node: its level is a single group and goes.
        let one = vec![0; 8];
        let l = GroupLevels::pruned(vec![nest_in(&one, &[0, 0, 0, 0, 1, 1, 1, 1]), one]).unwrap();
        assert_eq!((l.depth(), l.group_count(0)), (1, 2));
        // Packages that split no node (one package per node) go; the nodes stay.
        let l = GroupLevels::pruned(vec![nest_in(&nodes, &[0; 8]), nodes.clone()]).unwrap();
        assert_eq!((l.depth(), l.level(0)), (1, &nodes[..]));
        // Nothing splits: one level of one group remains.
        let l = GroupLevels::pruned(vec![vec![0; 3], vec![5; 3]]).unwrap();
        assert_eq!((l.depth(), l.group_count(0)), (1, 1));
        // Levels that do not nest are refused.
        assert!(GroupLevels::pruned(vec![vec![0, 0], vec![0, 1]]).is_err());
    }
}
