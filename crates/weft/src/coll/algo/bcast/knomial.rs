//! k-nomial broadcast: the root's data flows down a `weft_model::tree::knomial` tree; each
//! rank receives from its parent, then sends to all its children at once (largest subtree
//! first). ceil(log_k n) levels, k − 1 messages per level. Any n, any root.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::{KnomialLinks, TreeLinks};

/// Appends to `p` a broadcast of the first `bytes` of `buf` (the root's holds the data).
pub(crate) fn build(
    p: &mut Plan,
    rank: u32,
    size: u32,
    root: u32,
    radix: u32,
    buf: Buf,
    bytes: usize,
) -> Result<()> {
    build_on(p, rank, &KnomialLinks::new(size, radix, root)?, buf, bytes);
    Ok(())
}

/// Appends to `p` a broadcast down `tree` (rooted at the root) of the first `bytes` of
/// `buf`; the hierarchical broadcast uses it with its own tree.
pub(crate) fn build_on(p: &mut Plan, rank: u32, tree: &impl TreeLinks, buf: Buf, bytes: usize) {
    let all = Region::new(buf, 0, bytes);
    if let Some(parent) = tree.parent(rank) {
        p.step();
        p.recv(parent, all);
    }
    let children = tree.children(rank);
    if !children.is_empty() {
        p.step();
        for &c in children.iter() {
            p.send(c, all);
        }
    }
}

/// The broadcast of `bytes` from `root` down a k-nomial tree of `radix`.
pub(crate) fn plan(rank: u32, size: u32, root: u32, radix: u32, bytes: usize) -> Result<Plan> {
    let mut p = Plan::new();
    build(&mut p, rank, size, root, radix, Buf::Recv, bytes)?;
    Ok(p)
}

/// ceil(log_k n) levels of k − 1 messages of the whole buffer.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.knomial(m.radix(), 0.0, |_| m.bytes())
}
