//! k-nomial allreduce: a k-nomial reduce to rank 0, then a k-nomial broadcast from it:
//! 2·ceil(log_k n) levels. Any operation (the reduce keeps rank order when the operation
//! does not commute).

use crate::coll::algo::bcast::knomial as knomial_bcast;
use crate::coll::algo::reduce::knomial as knomial_reduce;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;

pub(crate) fn plan(
    rank: u32,
    size: u32,
    radix: u32,
    bytes: usize,
    commutative: bool,
) -> Result<Plan> {
    let mut p = Plan::new();
    knomial_reduce::build(&mut p, rank, size, 0, radix, bytes, commutative, Buf::Recv)?;
    knomial_bcast::build(&mut p, rank, size, 0, radix, Buf::Recv, bytes)?;
    Ok(p)
}

/// The k-nomial reduce (combining on the way up), then the k-nomial broadcast.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let n = m.bytes();
    let t = m.knomial(m.radix(), m.gamma(), |_| n) + m.knomial(m.radix(), 0.0, |_| n);
    t * m.all_ranks_busy()
}
