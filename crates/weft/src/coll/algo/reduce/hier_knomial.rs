//! Hierarchical k-nomial reduce: the k-nomial reduce's schedule on the hierarchical tree of
//! `bcast::hier_knomial` (every group's ranks one subtree, one edge into each group). It
//! combines children in tree order, which is not rank order, so it needs a commutative
//! operation.

use super::knomial as knomial_reduce;
use crate::coll::algo::bcast::hier_knomial::tree;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::GroupLevels;

/// Appends to `p` the reduce of `bytes` from the send buffer into the root's `out`.
pub(crate) fn build(
    p: &mut Plan,
    rank: u32,
    levels: &GroupLevels,
    root: u32,
    radix: u32,
    bytes: usize,
    out: Buf,
) -> Result<()> {
    let size = levels.size();
    knomial_reduce::build_on(p, rank, size, root, &tree(levels, radix, root)?, bytes, out);
    Ok(())
}

/// The reduce of `bytes` into the root's receive buffer.
pub(crate) fn plan(
    rank: u32,
    levels: &GroupLevels,
    root: u32,
    radix: u32,
    bytes: usize,
) -> Result<Plan> {
    let mut p = Plan::new();
    build(&mut p, rank, levels, root, radix, bytes, Buf::Recv)?;
    Ok(p)
}

/// A k-nomial fan-in inside the busiest node, then across the node leaders, combining (the
/// model prices the node level only).
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.hier_fan(m.radix(), m.bytes(), m.gamma())
}
