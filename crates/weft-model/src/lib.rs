//! Pure models of weft: tree builders, cost models, fabrics and the aggregation planner.
//!
//! Everything here is deterministic and does no I/O and no `unsafe`: the same code builds the
//! tree a live communicator uses and the trees `weft plan` evaluates for whole machines.
//! It depends only on `weft-core`.

#![forbid(unsafe_code)]

pub mod cost;
pub mod fabric;
pub mod lanes;
pub mod mapping;
pub mod plan;
pub mod sim;
pub mod tree;
