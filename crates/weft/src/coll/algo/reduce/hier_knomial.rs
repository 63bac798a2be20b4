//! Hierarchical k-nomial reduce: the k-nomial reduce's schedule on the hierarchical tree of
//! `bcast::hier_knomial` (every node's ranks one subtree, one edge into each node). It
//! combines children in tree order, which is not rank order, so it needs a commutative
//! operation.

use super::knomial as knomial_reduce;
use crate::coll::algo::bcast::hier_knomial::tree;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;

/// Appends to `p` the reduce of `bytes` from the send buffer into the root's `out`.
pub(crate) fn build(
    p: &mut Plan,
    rank: u32,
    nodes: &[u32],
    root: u32,
    radix: u32,
    bytes: usize,
    out: Buf,
) -> Result<()> {
    let size = nodes.len() as u32;
    knomial_reduce::build_on(p, rank, size, root, &tree(nodes, radix, root)?, bytes, out);
    Ok(())
}

/// The reduce of `bytes` into the root's receive buffer.
pub(crate) fn plan(rank: u32, nodes: &[u32], root: u32, radix: u32, bytes: usize) -> Result<Plan> {
    let mut p = Plan::new();
    build(&mut p, rank, nodes, root, radix, bytes, Buf::Recv)?;
    Ok(p)
}

/// A k-nomial fan-in inside the busiest node, then across the node leaders, combining.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.hier_fan(m.radix(), m.bytes(), m.gamma())
}
