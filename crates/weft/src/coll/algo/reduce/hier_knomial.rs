//! Hierarchical k-nomial reduce: the k-nomial reduce's schedule on the hierarchical tree of
//! `bcast::hier_knomial` (every group's ranks one subtree, one edge into each group). It
//! combines children in tree order, which is not rank order, so it needs a commutative
//! operation.

use super::knomial as knomial_reduce;
use crate::coll::schedule::{Buf, Plan};
use weft_model::cost::CollModel;
use weft_model::tree::Tree;

/// The reduce of `bytes` into the root's receive buffer up `tree` ([`tree`], rooted at
/// the root) over `size` ranks.
pub(crate) fn plan(rank: u32, size: u32, root: u32, tree: &Tree, bytes: usize) -> Plan {
    let mut p = Plan::new();
    knomial_reduce::build_on(&mut p, rank, size, root, tree, bytes, Buf::Recv);
    p
}

/// A k-nomial fan-in inside the busiest node, then across the node leaders, combining (the
/// model prices the node level only).
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.hier_fan(m.radix(), m.bytes(), m.gamma())
}
