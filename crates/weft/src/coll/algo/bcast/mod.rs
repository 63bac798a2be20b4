//! The algorithms of MPI_Bcast: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod hier_knomial;
pub(crate) mod knomial;
pub(crate) mod scatter_allgather;
pub(crate) mod shm;
pub(crate) mod shm_direct;

use super::{SHM, SHM_CMA};
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "knomial",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| knomial::plan(c.rank, c.size, c.root, c.radix, c.bytes),
        cost: knomial::cost,
    },
    Algorithm {
        name: "hier_knomial",
        restrictions: &[],
        radix: true,
        hierarchical: true,
        plan: |c| Ok(hier_knomial::plan(c.rank, &*c.hier_tree(c.root)?, c.bytes)),
        cost: hier_knomial::cost,
    },
    Algorithm {
        name: "scatter_allgather",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(scatter_allgather::plan(c.rank, c.size, c.root, c.bytes)),
        cost: scatter_allgather::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| Ok(shm::plan(c.rank, c.root, c.bytes, c.slot_bytes)),
        cost: shm::cost,
    },
    Algorithm {
        name: "shm_direct",
        restrictions: SHM_CMA,
        radix: false,
        hierarchical: false,
        plan: |c| Ok(shm_direct::plan(c.rank, c.size, c.root, c.bytes)),
        cost: shm_direct::cost,
    },
];
