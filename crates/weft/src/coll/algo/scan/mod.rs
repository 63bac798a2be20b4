//! The algorithms of MPI_Scan: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod fan_out;
pub(crate) mod linear;

use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "linear",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(linear::inclusive(c.rank, c.size, c.bytes, c.commutative)),
        cost: linear::cost,
    },
    Algorithm {
        name: "fan_out",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(fan_out::inclusive(c.rank, c.size, c.bytes)),
        cost: fan_out::cost,
    },
];
