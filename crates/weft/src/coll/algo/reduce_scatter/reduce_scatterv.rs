//! Reduce, then scatter: a k-nomial reduce of the whole vector to rank 0 (in rank order,
//! so any operation), then a linear scatter of its blocks. Any block sizes, any operation;
//! the algorithm for non-commutative operations off the node's area.

use crate::coll::algo::reduce::knomial as knomial_reduce;
use crate::coll::algo::scatter::linear as linear_scatter;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;

/// `blocks[i]`: (offset, length) of rank i's block of the vector.
pub(crate) fn plan(
    rank: u32,
    size: u32,
    radix: u32,
    blocks: &[(usize, usize)],
    commutative: bool,
) -> Result<Plan> {
    let total = blocks.last().map_or(0, |&(off, len)| off + len);
    let mut p = Plan::new();
    let full = if rank == 0 { p.tmp(total) } else { Buf::Recv };
    knomial_reduce::build(&mut p, rank, size, 0, radix, total, commutative, full)?;
    linear_scatter::build(&mut p, rank, 0, blocks, blocks[rank as usize].1, full);
    Ok(p)
}

/// A k-nomial reduce of the whole vector (n blocks), then the root's n − 1 sends.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let all = m.procs() * m.bytes();
    let t = m.knomial(m.radix(), m.gamma(), |_| all) + linear_scatter::cost(m);
    t * m.all_ranks_busy()
}
