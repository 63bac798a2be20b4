//! Hierarchical k-nomial allreduce: a reduce to rank 0 up the hierarchical tree of
//! `bcast::hier_knomial` (every group's ranks one subtree, one edge into each group), then a
//! broadcast down the same tree. Children are combined in tree order: commutative
//! operations only.

use crate::coll::algo::bcast::knomial as knomial_bcast;
use crate::coll::algo::reduce::knomial as knomial_reduce;
use crate::coll::schedule::{Buf, Plan};
use weft_model::cost::CollModel;
use weft_model::tree::Tree;

/// The reduce to rank 0 up `tree` (rooted at 0) over `size` ranks, then the broadcast down it.
pub(crate) fn plan(rank: u32, size: u32, tree: &Tree, bytes: usize) -> Plan {
    let mut p = Plan::new();
    knomial_reduce::build_on(&mut p, rank, size, 0, tree, bytes, Buf::Recv);
    knomial_bcast::build_on(&mut p, rank, tree, Buf::Recv, bytes);
    p
}

/// The hierarchical reduce (combining on the way up), then the hierarchical broadcast.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let t = m.hier_fan(m.radix(), m.bytes(), m.gamma()) + m.hier_fan(m.radix(), m.bytes(), 0.0);
    t * m.all_ranks_busy()
}
