//! The algorithms of MPI_Alltoallv: the table the selector, `weft info --explain`, the
//! tests and the cost model read, over the files here and the pairwise exchange's
//! (`alltoall::pairwise`). Its ranks know only their own counts, so their sizes differ: the
//! message algorithms work against each other (both post one message per peer pair, matched
//! by source and tag) and are chosen by the rank's own size, the area one only by what
//! every rank of the node shares (`select::Tuning::select`). A row's order matters only for
//! ties: the model prefers the earlier row at equal cost.

pub(crate) mod linear;
pub(crate) mod shm;

use super::alltoall;
use super::SHM;
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "pairwise",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| {
            Ok(alltoall::pairwise::plan(
                c.rank,
                c.size,
                c.send_blocks,
                c.recv_blocks,
            ))
        },
        cost: alltoall::pairwise::cost,
    },
    Algorithm {
        name: "linear",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(linear::plan(c.rank, c.size, c.send_blocks, c.recv_blocks)),
        cost: linear::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| shm::plan(c.rank, c.size, c.send_blocks, c.recv_blocks, c.slot_bytes),
        cost: shm::cost,
    },
];
