//! The algorithm of MPI_Scatterv: the linear scatter (`scatter::linear`) only, since the
//! leaves know only their own count. The table the selector, `weft info --explain`, the
//! tests and the cost model read.

use super::scatter;
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[Algorithm {
    name: "linear",
    restrictions: &[],
    radix: false,
    hierarchical: false,
    plan: |c| {
        Ok(scatter::linear::plan(
            c.rank,
            c.root,
            c.send_blocks,
            c.bytes,
        ))
    },
    cost: scatter::linear::cost,
}];
