//! Rooted spanning trees over the ranks of a communicator, and the builders for the shapes
//! weft uses: k-ary, k-nomial, naive hierarchical and minimum-height hierarchical k-nomial
//! (ALGORITHMS.md §1-2, seed 001 §3.2-3.3).
//!
//! Pure code: no I/O, no transport, no knowledge of how a tree is used. It depends only on
//! `weft-core`, so a live collective and `weft plan` build exactly the same tree.

mod exact;
mod groups;
mod hierarchical;
mod kary;
mod knomial;
mod place;
mod slots;

pub use groups::{inter_group_edges, nest_in, GroupLevels};
pub use hierarchical::{
    hierarchical_knomial, hierarchical_layout, naive_hierarchical, naive_layout, SlotLayout,
};
pub use kary::kary;
pub use knomial::{knomial, KnomialLinks};

use std::borrow::Cow;
use weft_core::{bail, Error, ErrorKind, Result};

/// What a rank needs of a tree to build its part of a collective: its parent, its children
/// in broadcast order (largest subtree first, equal subtrees by rank) and subtree sizes.
/// [`Tree`] answers from its arrays; [`KnomialLinks`] computes a k-nomial tree's answers for
/// one rank in O(k log n), so a rank of a large communicator need not build the whole tree.
pub trait TreeLinks {
    /// The root rank.
    fn root(&self) -> u32;
    /// Parent of `rank`, `None` for the root (and for ranks out of range).
    fn parent(&self, rank: u32) -> Option<u32>;
    /// Children of `rank` in broadcast order (empty for ranks out of range).
    fn children(&self, rank: u32) -> Cow<'_, [u32]>;
    /// Ranks in the subtree rooted at `rank`, itself included (0 out of range).
    fn subtree_size(&self, rank: u32) -> u32;
}

impl TreeLinks for Tree {
    fn root(&self) -> u32 {
        Tree::root(self)
    }
    fn parent(&self, rank: u32) -> Option<u32> {
        Tree::parent(self, rank)
    }
    fn children(&self, rank: u32) -> Cow<'_, [u32]> {
        Cow::Borrowed(Tree::children(self, rank))
    }
    fn subtree_size(&self, rank: u32) -> u32 {
        Tree::subtree_size(self, rank)
    }
}

/// Marks "no parent" in the packed parent array.
const NO_PARENT: u32 = u32::MAX;

/// A rooted spanning tree over ranks `0..size`.
///
/// Children of each rank are stored in the order a broadcast sends to them: largest subtree
/// first, so the deepest work starts earliest; a reduction receives in the reverse order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    root: u32,
    parent: Vec<u32>,
    /// `children_flat[child_start[r]..child_start[r + 1]]` are the children of `r`.
    child_start: Vec<u32>,
    children_flat: Vec<u32>,
    subtree: Vec<u32>,
    height: u32,
}

impl Tree {
    /// Builds a tree from a parent per rank (`None` for the root only). Fails when the root is
    /// out of range, a parent is out of range, another rank has no parent, or there is a cycle.
    pub fn from_parents(root: u32, parents: &[Option<u32>]) -> Result<Tree> {
        let size = parents.len();
        if size == 0 {
            bail!(InvalidArgument, "tree: size 0 (need at least one rank)");
        }
        if size > NO_PARENT as usize {
            bail!(InvalidArgument, "tree: size {size} exceeds {}", NO_PARENT);
        }
        if root as usize >= size {
            bail!(InvalidRoot, "tree: root {root} not in 0..{size}");
        }
        let mut parent = vec![NO_PARENT; size];
        for (rank, p) in parents.iter().enumerate() {
            match (*p, rank as u32 == root) {
                (None, true) => {}
                (Some(_), true) => bail!(InvalidArgument, "tree: root {root} has a parent"),
                (None, false) => bail!(InvalidArgument, "tree: rank {rank} has no parent"),
                (Some(q), false) => {
                    if q as usize >= size {
                        bail!(
                            InvalidArgument,
                            "tree: rank {rank} has parent {q} outside 0..{size}"
                        );
                    }
                    if q as usize == rank {
                        bail!(InvalidArgument, "tree: rank {rank} is its own parent");
                    }
                    parent[rank] = q;
                }
            }
        }
        // Order ranks so every parent precedes its children (breadth-first from the root);
        // ranks never reached sit on a cycle.
        let mut count = vec![0u32; size + 1];
        for &p in &parent {
            if p != NO_PARENT {
                count[p as usize + 1] += 1;
            }
        }
        for i in 0..size {
            count[i + 1] += count[i];
        }
        let child_start_raw = count.clone();
        let mut fill = count;
        let mut flat = vec![0u32; size - 1];
        for (rank, &p) in parent.iter().enumerate() {
            if p != NO_PARENT {
                flat[fill[p as usize] as usize] = rank as u32;
                fill[p as usize] += 1;
            }
        }
        let mut order = Vec::with_capacity(size);
        let mut depth = vec![0u32; size];
        order.push(root);
        let mut head = 0;
        while head < order.len() {
            let r = order[head] as usize;
            head += 1;
            for &c in &flat[child_start_raw[r] as usize..child_start_raw[r + 1] as usize] {
                depth[c as usize] = depth[r] + 1;
                order.push(c);
            }
        }
        if order.len() != size {
            let lost = (0..size)
                .find(|&r| {
                    let mut seen = false;
                    let mut x = r as u32;
                    for _ in 0..=size {
                        if x == root {
                            seen = true;
                            break;
                        }
                        x = parent[x as usize];
                    }
                    !seen
                })
                .unwrap_or(0);
            bail!(
                InvalidArgument,
                "tree: rank {lost} has no path to root {root} (cycle in parents)"
            );
        }
        let mut subtree = vec![1u32; size];
        for &r in order.iter().rev() {
            let p = parent[r as usize];
            if p != NO_PARENT {
                subtree[p as usize] += subtree[r as usize];
            }
        }
        // Largest subtree first; equal subtrees by rank so every rank derives the same order.
        for r in 0..size {
            let s = &mut flat[child_start_raw[r] as usize..child_start_raw[r + 1] as usize];
            s.sort_by(|&a, &b| {
                subtree[b as usize]
                    .cmp(&subtree[a as usize])
                    .then(a.cmp(&b))
            });
        }
        let height = depth.iter().copied().max().unwrap_or(0);
        Ok(Tree {
            root,
            parent,
            child_start: child_start_raw,
            children_flat: flat,
            subtree,
            height,
        })
    }

    /// Number of ranks.
    pub fn size(&self) -> u32 {
        self.parent.len() as u32
    }

    /// The root rank.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// Parent of `rank`, `None` for the root (and for ranks out of range).
    pub fn parent(&self, rank: u32) -> Option<u32> {
        match self.parent.get(rank as usize) {
            Some(&p) if p != NO_PARENT => Some(p),
            _ => None,
        }
    }

    /// Children in the order a broadcast should send to them: the child with the largest
    /// subtree first (so deep subtrees start early). Reductions receive in reverse order.
    /// Empty for ranks out of range.
    pub fn children(&self, rank: u32) -> &[u32] {
        let r = rank as usize;
        if r >= self.parent.len() {
            return &[];
        }
        &self.children_flat[self.child_start[r] as usize..self.child_start[r + 1] as usize]
    }

    /// Edges on the longest root-to-leaf path.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Number of ranks in the subtree rooted at `rank` (itself included; 0 out of range).
    pub fn subtree_size(&self, rank: u32) -> u32 {
        self.subtree.get(rank as usize).copied().unwrap_or(0)
    }

    /// Most children of any rank.
    pub fn max_degree(&self) -> u32 {
        (0..self.parent.len())
            .map(|r| self.child_start[r + 1] - self.child_start[r])
            .max()
            .unwrap_or(0)
    }

    /// Edges from `rank` up to the root (0 for the root; `None` out of range).
    pub fn depth(&self, rank: u32) -> Option<u32> {
        if rank as usize >= self.parent.len() {
            return None;
        }
        let mut d = 0;
        let mut x = rank;
        while let Some(p) = self.parent(x) {
            d += 1;
            x = p;
        }
        Some(d)
    }

    /// Checks the invariants: exactly one root, every rank reaches it by one path with no
    /// cycle, and parent and children lists agree.
    pub fn validate(&self) -> Result<()> {
        let size = self.parent.len();
        if size == 0 {
            bail!(Internal, "tree: size 0");
        }
        if self.root as usize >= size || self.parent[self.root as usize] != NO_PARENT {
            bail!(Internal, "tree: root {} invalid or has a parent", self.root);
        }
        let mut steps = vec![u32::MAX; size];
        steps[self.root as usize] = 0;
        for start in 0..size {
            let mut path = Vec::new();
            let mut x = start;
            while steps[x] == u32::MAX {
                if path.len() > size {
                    bail!(Internal, "tree: rank {start} is on a cycle");
                }
                path.push(x);
                let p = self.parent[x];
                if p == NO_PARENT || p as usize >= size {
                    bail!(Internal, "tree: rank {x} has no valid parent ({p})");
                }
                x = p as usize;
            }
            let mut d = steps[x];
            for &y in path.iter().rev() {
                d += 1;
                steps[y] = d;
            }
        }
        let mut seen = 0usize;
        for r in 0..size as u32 {
            for &c in self.children(r) {
                if self.parent(c) != Some(r) {
                    bail!(
                        Internal,
                        "tree: rank {c} listed as child of {r} but parent differs"
                    );
                }
                seen += 1;
            }
        }
        if seen != size - 1 {
            bail!(
                Internal,
                "tree: {seen} child entries for {} edges",
                size - 1
            );
        }
        let height = steps.iter().copied().max().unwrap_or(0);
        if height != self.height {
            bail!(
                Internal,
                "tree: cached height {} but paths say {height}",
                self.height
            );
        }
        Ok(())
    }

    /// Parent per rank, `None` for the root (for tests and printing).
    pub fn parents(&self) -> Vec<Option<u32>> {
        (0..self.size()).map(|r| self.parent(r)).collect()
    }
}

/// Shared argument checks of the builders.
fn check_common(what: &str, size: u32, k: u32, root: u32) -> Result<()> {
    if size == 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what}: size 0 (need at least one rank)"),
        ));
    }
    if k < 2 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{what}: radix k = {k} (need k >= 2)"),
        ));
    }
    if root >= size {
        return Err(Error::new(
            ErrorKind::InvalidRoot,
            format!("{what}: root {root} not in 0..{size}"),
        ));
    }
    Ok(())
}
