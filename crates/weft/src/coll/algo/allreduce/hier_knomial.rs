//! Hierarchical k-nomial allreduce: a reduce to rank 0 up the hierarchical tree of
//! `bcast::hier_knomial` (every group's ranks one subtree, one edge into each group), then a
//! broadcast down the same tree. Children are combined in tree order: commutative
//! operations only.

use crate::coll::algo::bcast::hier_knomial::tree;
use crate::coll::algo::bcast::knomial as knomial_bcast;
use crate::coll::algo::reduce::knomial as knomial_reduce;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::GroupLevels;

pub(crate) fn plan(rank: u32, levels: &GroupLevels, radix: u32, bytes: usize) -> Result<Plan> {
    let mut p = Plan::new();
    let t = tree(levels, radix, 0)?;
    knomial_reduce::build_on(&mut p, rank, levels.size(), 0, &t, bytes, Buf::Recv);
    knomial_bcast::build_on(&mut p, rank, &t, Buf::Recv, bytes);
    Ok(p)
}

/// The hierarchical reduce (combining on the way up), then the hierarchical broadcast.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.hier_fan(m.radix(), m.bytes(), m.gamma()) + m.hier_fan(m.radix(), m.bytes(), 0.0)
}
