//! k-nomial allgather: a k-nomial gather of every block to rank 0 (whole subtrees per
//! message, straight into rank 0's receive buffer), then a k-nomial broadcast of the whole
//! buffer from it. 2·ceil(log_k n) levels: few messages, for small blocks on many ranks.
//! Equal blocks only.

use crate::coll::algo::bcast::knomial as knomial_bcast;
use crate::coll::algo::gather::knomial as knomial_gather;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;

pub(crate) fn plan(rank: u32, size: u32, radix: u32, block: usize) -> Result<Plan> {
    // Rank 0 gathers in place; the others take the whole buffer from the broadcast.
    let mut p = knomial_gather::plan(rank, size, 0, radix, block)?;
    knomial_bcast::build(
        &mut p,
        rank,
        size,
        0,
        radix,
        Buf::Recv,
        size as usize * block,
    )?;
    Ok(p)
}

/// A k-nomial gather (whole subtrees per message) and a k-nomial broadcast of everything.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (k, pf, n) = (m.radix(), m.procs(), m.bytes());
    let t = m.knomial(k, 0.0, |l| (k.saturating_pow(l) as f64).min(pf) * n)
        + m.knomial(k, 0.0, |_| pf * n);
    t * m.all_ranks_busy()
}
