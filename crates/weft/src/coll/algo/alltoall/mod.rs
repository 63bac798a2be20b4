//! The algorithms of MPI_Alltoall: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod bruck;
pub(crate) mod pairwise;
pub(crate) mod shm;
pub(crate) mod shm_direct;

use super::{SHM, SHM_CMA};
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "pairwise",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| {
            let blocks = c.equal_blocks();
            Ok(pairwise::plan(c.rank, c.size, &blocks, &blocks))
        },
        cost: pairwise::cost,
    },
    Algorithm {
        name: "bruck",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(bruck::plan(c.rank, c.size, c.bytes)),
        cost: bruck::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| Ok(shm::plan(c.rank, c.size, c.bytes, c.slot_bytes)),
        cost: shm::cost,
    },
    Algorithm {
        name: "shm_direct",
        restrictions: SHM_CMA,
        radix: false,
        hierarchical: false,
        plan: |c| Ok(shm_direct::plan(c.rank, c.size, c.bytes)),
        cost: shm_direct::cost,
    },
];
