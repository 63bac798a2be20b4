//! The algorithms of MPI_Exscan: the table the selector, `weft info --explain`, the tests
//! and the cost model read, over the files of scan (`scan::linear`, `scan::fan_out`), which
//! build both forms. A row's order matters only for ties: the model prefers the earlier row
//! at equal cost.

use super::scan;
use crate::coll::select::Algorithm;

/// One row per algorithm (see `algo` for what a row holds).
pub(crate) static ALGORITHMS: &[Algorithm] = &[
    Algorithm {
        name: "linear",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| {
            Ok(scan::linear::exclusive(
                c.rank,
                c.size,
                c.bytes,
                c.commutative,
            ))
        },
        cost: scan::linear::cost,
    },
    Algorithm {
        name: "fan_out",
        restrictions: &[],
        radix: false,
        hierarchical: false,
        plan: |c| Ok(scan::fan_out::exclusive(c.rank, c.size, c.bytes)),
        cost: scan::fan_out::cost,
    },
];
