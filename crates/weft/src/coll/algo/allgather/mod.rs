//! The algorithms of MPI_Allgather: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod bruck;
pub(crate) mod knomial;
pub(crate) mod recursive_doubling;
pub(crate) mod ring;
pub(crate) mod shm;

use super::SHM;
use crate::coll::select::{Algorithm, Restriction};

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "ring",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(ring::plan(c.rank, c.size, &c.equal_blocks())),
        cost: ring::cost,
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
        name: "recursive_doubling",
        restrictions: &[Restriction::PowerOfTwo],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(recursive_doubling::plan(c.rank, c.size, c.bytes)),
        cost: recursive_doubling::cost,
    },
    Algorithm {
        name: "knomial",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| knomial::plan(c.rank, c.size, c.radix, c.bytes),
        cost: knomial::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| Ok(shm::plan(c.rank, c.size, c.bytes, c.slot_bytes)),
        cost: shm::cost,
    },
];
