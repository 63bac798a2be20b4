//! The algorithms of MPI_Allgatherv: the table the selector, `weft info --explain`, the
//! tests and the cost model read, over the area's own file here and the ring allgather's
//! (`allgather::ring`). Every rank chooses by the largest block, which all of them know. A
//! row's order matters only for ties: the model prefers the earlier row at equal cost.

pub(crate) mod shm;

use super::allgather;
use super::SHM;
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "ring",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(allgather::ring::plan(c.rank, c.size, c.recv_blocks)),
        cost: allgather::ring::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| Ok(shm::plan(c.rank, c.recv_blocks, c.slot_bytes)),
        cost: shm::cost,
    },
];
