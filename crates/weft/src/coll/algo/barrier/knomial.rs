//! k-nomial barrier: empty messages up a k-nomial tree to rank 0, then back down it.
//! 2·ceil(log_k n) levels.

use crate::coll::algo::bcast::knomial as knomial_bcast;
use crate::coll::algo::reduce::knomial as knomial_reduce;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, radix: u32) -> Result<Plan> {
    let mut p = Plan::new();
    knomial_reduce::build(&mut p, rank, size, 0, radix, 0, true, Buf::Recv)?;
    knomial_bcast::build(&mut p, rank, size, 0, radix, Buf::Recv, 0)?;
    Ok(p)
}

/// Two k-nomial passes of empty messages.
pub(crate) fn cost(m: &CollModel) -> f64 {
    2.0 * m.knomial(m.radix(), 0.0, |_| 0.0)
}
