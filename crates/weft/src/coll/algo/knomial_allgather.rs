//! k-nomial allgather: a k-nomial gather of every block to rank 0 (whole subtrees per
//! message, straight into rank 0's receive buffer), then a k-nomial broadcast of the whole
//! buffer from it. 2·ceil(log_k n) levels: few messages, for small blocks on many ranks.
//! Equal blocks only.

use super::{knomial_bcast, knomial_gather};
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;

pub(crate) fn plan(rank: u32, size: u32, radix: u32, block: usize) -> Result<Plan> {
    // Rank 0 gathers in place; the others take the whole buffer from the broadcast.
    let mut p = knomial_gather::gather(rank, size, 0, radix, block)?;
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
