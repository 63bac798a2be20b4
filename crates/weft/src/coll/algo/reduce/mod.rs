//! The algorithms of MPI_Reduce: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod hier_knomial;
pub(crate) mod knomial;
pub(crate) mod reduce_scatter_gather;
pub(crate) mod shm;
pub(crate) mod shm_direct;

use super::{SHM, SHM_CMA};
use crate::coll::select::{Algorithm, Restriction};

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "knomial",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| knomial::plan(c.rank, c.size, c.root, c.radix, c.bytes, c.commutative),
        cost: knomial::cost,
    },
    Algorithm {
        name: "hier_knomial",
        restrictions: &[Restriction::Commutative],
        radix: true,
        hierarchical: true,
        plan: |c| {
            Ok(hier_knomial::plan(
                c.rank,
                c.size,
                c.root,
                &*c.hier_tree(c.root)?,
                c.bytes,
            ))
        },
        cost: hier_knomial::cost,
    },
    Algorithm {
        name: "reduce_scatter_gather",
        restrictions: &[Restriction::Commutative],
        radix: false,
        hierarchical: false,
        plan: |c| {
            let (count, es) = (c.count(), c.elem_bytes);
            Ok(reduce_scatter_gather::plan(
                c.rank,
                c.size,
                c.root,
                count,
                es,
                c.near_first,
            ))
        },
        cost: reduce_scatter_gather::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| {
            let (count, es) = (c.count(), c.elem_bytes);
            Ok(shm::plan(c.rank, c.size, c.root, count, es, c.slot_bytes))
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
                c.root,
                c.count(),
                c.elem_bytes,
            ))
        },
        cost: shm_direct::cost,
    },
];
