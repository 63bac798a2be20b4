//! The algorithm of MPI_Gatherv: the linear gather (`gather::linear`) only, since the
//! leaves know only their own count. The table the selector, `weft info --explain`, the
//! tests and the cost model read.

use super::gather;
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[Algorithm {
    name: "linear",
    restrictions: &[],
    radix: false,
    hierarchical: false,
    plan: |c| Ok(gather::linear::plan(c.rank, c.root, c.recv_blocks, c.bytes)),
    cost: gather::linear::cost,
}];
