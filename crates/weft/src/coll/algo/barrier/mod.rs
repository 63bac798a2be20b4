//! The algorithms of MPI_Barrier: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod dissemination;
pub(crate) mod knomial;
pub(crate) mod shm_counter;
pub(crate) mod shm_leader;

use super::SHM;
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "dissemination",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(dissemination::plan(c.rank, c.size)),
        cost: dissemination::cost,
    },
    Algorithm {
        name: "knomial",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| knomial::plan(c.rank, c.size, c.radix),
        cost: knomial::cost,
    },
    Algorithm {
        name: "shm_counter",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |_| Ok(shm_counter::plan()),
        cost: shm_counter::cost,
    },
    Algorithm {
        name: "shm_leader",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |_| Ok(shm_leader::plan()),
        cost: shm_leader::cost,
    },
];
