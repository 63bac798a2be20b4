//! Cost models: the Hockney (alpha-beta) lane model, the aggregation-tree model with its
//! radix selection (seed 001 §2.2, §3.1; ALGORITHMS.md §3), and the step costs the
//! runtime's collective algorithms state their modelled times in.
//!
//! Pure arithmetic: no I/O, no clocks, no transport; the same inputs give the same numbers
//! on every rank, so every rank's selector decides the same. Depends only on `weft-core`.

pub mod aggregation;
pub mod alpha_beta;
pub mod coll;

pub use aggregation::{
    checked_optimal_radix, f_us, format_radix_table, optimal_radix, optimal_radix_eps,
    AggregationParams, RadixChoice, RadixRow, DEFAULT_EPSILON_US,
};
pub use alpha_beta::AlphaBeta;
pub use coll::{CollModel, CollShape, Lanes};
