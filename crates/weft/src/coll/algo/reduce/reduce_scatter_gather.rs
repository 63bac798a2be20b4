//! Rabenseifner's reduce ("reduce_scatter_gather"): the recursive-halving reduce-scatter of
//! Rabenseifner's allreduce (`allreduce::rabenseifner`, which builds both), then a gather
//! of the finished chunks at the root instead of the allgather. For large messages;
//! commutative operations only.

use crate::coll::algo::allreduce::rabenseifner::{self, Finish};
use crate::coll::schedule::Plan;
use weft_model::cost::CollModel;

pub(crate) fn plan(
    rank: u32,
    size: u32,
    root: u32,
    count: usize,
    elem_bytes: usize,
    near_first: bool,
) -> Plan {
    rabenseifner::plan(
        rank,
        size,
        count,
        elem_bytes,
        Finish::Root(root),
        near_first,
    )
}

/// A recursive-halving reduce-scatter, then a binomial gather of the chunks.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.halving_reduce_scatter(m.bytes()) + m.gather_binomial(m.bytes())
}
