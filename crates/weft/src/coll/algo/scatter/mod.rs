//! The algorithms of MPI_Scatter: one file each, and the table the selector, `weft info
//! --explain`, the tests and the cost model read. A row's order matters only for ties: the
//! model prefers the earlier row at equal cost.

pub(crate) mod knomial;
pub(crate) mod linear;

use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "linear",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(linear::plan(c.rank, c.root, &c.equal_blocks(), c.bytes)),
        cost: linear::cost,
    },
    Algorithm {
        name: "knomial",
        restrictions: &[],
        radix: true,
        hierarchical: false,
        plan: |c| knomial::plan(c.rank, c.size, c.root, c.radix, c.bytes),
        cost: knomial::cost,
    },
];
