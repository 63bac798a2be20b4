//! The algorithms of MPI_Allreduce: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod hier_knomial;
pub(crate) mod knomial;
pub(crate) mod multi_rail;
pub(crate) mod rabenseifner;
pub(crate) mod recursive_doubling;
pub(crate) mod ring;
pub(crate) mod shm;
pub(crate) mod shm_one_shot;

use super::SHM;
use crate::coll::select::{Algorithm, Restriction};

/// The restrictions of the multi-rail algorithm.
const MULTI_RAIL: &[Restriction] = &[Restriction::Commutative, Restriction::Rails];

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "recursive_doubling",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| {
            Ok(recursive_doubling::plan(
                c.rank,
                c.size,
                c.bytes,
                c.commutative,
            ))
        },
        cost: recursive_doubling::cost,
    },
    Algorithm {
        name: "ring",
        restrictions: &[Restriction::Commutative],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(ring::plan(c.rank, c.size, c.count(), c.elem_bytes)),
        cost: ring::cost,
    },
    Algorithm {
        name: "knomial",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| knomial::plan(c.rank, c.size, c.radix, c.bytes, c.commutative),
        cost: knomial::cost,
    },
    Algorithm {
        name: "rabenseifner",
        restrictions: &[Restriction::Commutative],
        radix: false,
        hierarchical: false,
        plan: |c| {
            let (count, es) = (c.count(), c.elem_bytes);
            let finish = rabenseifner::Finish::Everyone;
            Ok(rabenseifner::plan(
                c.rank,
                c.size,
                count,
                es,
                finish,
                c.near_first,
            ))
        },
        cost: rabenseifner::cost,
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
                &*c.hier_tree(0)?,
                c.bytes,
            ))
        },
        cost: hier_knomial::cost,
    },
    Algorithm {
        name: "multi_rail",
        restrictions: MULTI_RAIL,
        radix: false,
        hierarchical: false,
        plan: |c| {
            let (count, es) = (c.count(), c.elem_bytes);
            Ok(multi_rail::plan(c.rank, c.size, count, es, c.rails))
        },
        cost: multi_rail::cost,
    },
    Algorithm {
        name: "shm",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| {
            Ok(shm::plan(
                c.rank,
                c.size,
                c.count(),
                c.elem_bytes,
                c.slot_bytes,
            ))
        },
        cost: shm::cost,
    },
    Algorithm {
        name: "shm_one_shot",
        restrictions: SHM,
        radix: false,
        hierarchical: false,
        plan: |c| {
            let (count, es) = (c.count(), c.elem_bytes);
            Ok(shm_one_shot::plan(c.rank, c.size, count, es, c.slot_bytes))
        },
        cost: shm_one_shot::cost,
    },
];
