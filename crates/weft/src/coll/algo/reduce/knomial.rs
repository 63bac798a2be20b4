//! k-nomial reduce: contributions flow up a `weft_model::tree::knomial` tree; each rank
//! receives all its children's partial results at once, combines them with its own, and
//! sends the result to its parent.
//!
//! With a commutative operation the tree is rooted at the root. Otherwise it is rooted at
//! rank 0, where every subtree is a contiguous range of ranks above its parent, so combining
//! `own ∘ child₁ ∘ child₂ ...` in increasing child order keeps rank order; rank 0 then
//! forwards the result to the root.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::{KnomialLinks, TreeLinks};

/// Appends to `p` a reduce of `bytes` from the send buffer into the root's `out`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build(
    p: &mut Plan,
    rank: u32,
    size: u32,
    root: u32,
    radix: u32,
    bytes: usize,
    commutative: bool,
    out: Buf,
) -> Result<()> {
    let tree_root = if commutative { root } else { 0 };
    let tree = KnomialLinks::new(size, radix, tree_root)?;
    build_on(p, rank, size, root, &tree, bytes, out);
    Ok(())
}

/// Appends to `p` a reduce up `tree` into the root's `out`. With a tree rooted elsewhere
/// than `root`, its root forwards the result. Children are combined in increasing order of
/// their rank relative to the tree's root, which is rank order when every subtree is a
/// contiguous range of ranks above its parent (a k-nomial tree rooted at 0); other trees
/// (the hierarchical one) need a commutative operation.
pub(crate) fn build_on(
    p: &mut Plan,
    rank: u32,
    size: u32,
    root: u32,
    tree: &impl TreeLinks,
    bytes: usize,
    out: Buf,
) {
    let tree_root = tree.root();
    if rank != root && tree.children(rank).is_empty() {
        // A leaf sends its contribution straight from the send buffer: no copy, and clean
        // cache lines for the parent to read.
        if let Some(parent) = tree.parent(rank) {
            p.step();
            p.send(parent, Region::new(Buf::Send, 0, bytes));
        }
        return;
    }
    let acc_buf = if rank == root { out } else { p.tmp(bytes) };
    let acc = Region::new(acc_buf, 0, bytes);
    let mut children: Vec<u32> = tree.children(rank).into_owned();
    // Rank order of children is subtree order when the tree is rooted at 0.
    children.sort_unstable_by_key(|&c| (c + size - tree_root) % size);
    let slots: Vec<Region> = children
        .iter()
        .map(|_| Region::new(p.tmp(bytes), 0, bytes))
        .collect();
    p.step();
    for (&c, &slot) in children.iter().zip(&slots) {
        p.recv(c, slot);
    }
    p.step();
    // acc = own ∘ first child in one pass (no copy of the own contribution first), then
    // the other children in order.
    match slots.split_first() {
        Some((&first, rest)) => {
            p.reduce_into(Region::new(Buf::Send, 0, bytes), first, acc);
            for &slot in rest {
                p.reduce(slot, acc, false);
            }
        }
        None => p.copy(Region::new(Buf::Send, 0, bytes), acc),
    }
    if let Some(parent) = tree.parent(rank) {
        p.send(parent, acc);
    }
    if tree_root != root {
        if rank == tree_root {
            p.step();
            p.send(root, acc);
        } else if rank == root {
            p.step();
            p.recv(tree_root, acc);
        }
    }
}

/// The reduce of `bytes` into the root's receive buffer up a k-nomial tree of `radix`.
pub(crate) fn plan(
    rank: u32,
    size: u32,
    root: u32,
    radix: u32,
    bytes: usize,
    commutative: bool,
) -> Result<Plan> {
    let mut p = Plan::new();
    build(
        &mut p,
        rank,
        size,
        root,
        radix,
        bytes,
        commutative,
        Buf::Recv,
    )?;
    Ok(p)
}

/// ceil(log_k n) levels of k − 1 messages of the whole buffer, each combined.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.knomial(m.radix(), m.gamma(), |_| m.bytes())
}
