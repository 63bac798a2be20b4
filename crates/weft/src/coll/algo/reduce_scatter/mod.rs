//! The algorithms of MPI_Reduce_scatter and MPI_Reduce_scatter_block (the block form is the
//! case of equal counts): one file each, and the table the selector, `weft info --explain`,
//! the tests and the cost model read. A row's order matters only for ties: the model
//! prefers the earlier row at equal cost.

pub(crate) mod recursive_halving;
pub(crate) mod reduce_scatterv;
pub(crate) mod ring;
pub(crate) mod shm;
pub(crate) mod shm_direct;

use super::{SHM, SHM_CMA};
use crate::coll::select::{Algorithm, Restriction};

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "ring",
        restrictions: &[Restriction::Commutative],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(ring::plan(c.rank, c.size, c.send_blocks, c.total())),
        cost: ring::cost,
    },
    Algorithm {
        name: "reduce_scatterv",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| reduce_scatterv::plan(c.rank, c.size, c.radix, c.send_blocks, c.commutative),
        cost: reduce_scatterv::cost,
    },
    Algorithm {
        name: "recursive_halving",
        restrictions: &[Restriction::Commutative, Restriction::PowerOfTwo],
        radix: false,
        hierarchical: false,
        plan: |c| {
            Ok(recursive_halving::plan(
                c.rank,
                c.size,
                c.send_blocks,
                c.total(),
            ))
        },
        cost: recursive_halving::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| {
            let (blocks, total, es) = (c.send_blocks, c.total(), c.elem_bytes);
            Ok(shm::plan(c.rank, c.size, blocks, total, es, c.slot_bytes))
        },
        cost: shm::cost,
    },
    Algorithm {
        name: "shm_direct",
        restrictions: SHM_CMA,
        radix: false,
        hierarchical: false,
        plan: |c| {
            Ok(shm_direct::plan(
                c.rank,
                c.size,
                c.send_blocks,
                c.elem_bytes,
            ))
        },
        cost: shm_direct::cost,
    },
];
