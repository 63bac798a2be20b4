//! weft's MPI C interface on the MPI 5.0 standard ABI: `libmpi_abi.so.1` (plus the
//! `libmpi.so` and `libmpi_abi.so` links made by `install.sh`) and a static library, with
//! `include/mpi.h`. Programs built against the standard ABI run on weft by swapping the
//! library.
//!
//! The crate is thin (ARCHITECTURE.md, "C ABI crates"): it turns handles into weft objects,
//! checks arguments and maps weft errors onto MPI error classes; the logic stays in weft.
//! Every function of the standard ABI is exported: those weft does not implement yet
//! report MPI_ERR_UNSUPPORTED_OPERATION through the error handler ([`UNSUPPORTED`]); the
//! real ones are listed in [`IMPLEMENTED`] (what `weft info --mpi` prints).
//!
//! Thread support: up to MPI_THREAD_SERIALIZED with no locking; MPI_THREAD_MULTIPLE (unless
//! the `WEFT_MPI_THREAD_MULTIPLE=0` knob caps the level) with one lock around the library
//! that the blocking calls release while they wait ([`threads`] says what still holds it).
//! Depends on weft and weft-core; nothing depends on it but C programs.

#![allow(clippy::missing_safety_doc)]
#![allow(non_snake_case)]

pub mod buffer;
pub mod coll;
pub mod comm;
pub mod compound;
pub mod consts;
pub mod contents;
pub mod datarep;
pub mod dtype;
pub mod dynamic;
pub mod env;
pub mod error;
pub mod external;
pub mod fast;
pub mod file;
pub mod file_data;
pub mod fortran;
pub mod greq;
pub mod groups;
pub mod icoll;
pub mod inter;
pub mod inter_coll;
pub mod inter_leader;
pub mod large;
pub mod misc;
pub mod mpit;
pub mod mprobe;
pub mod p2p;
pub mod partitioned;
pub mod session;
pub mod spawn;
pub mod stage;
pub mod state;
pub mod tattr;
pub mod threads;
pub mod topo;
pub mod user_reduce;
pub mod win;

mod generated {
    include!(concat!(env!("OUT_DIR"), "/abi_stubs.rs"));
}

pub use generated::{IMPLEMENTED, UNSUPPORTED};

/// The standard ABI functions with their status, for `weft info --mpi`: each name and
/// whether weft implements it.
pub fn function_table() -> Vec<(&'static str, bool)> {
    let mut v: Vec<(&'static str, bool)> = IMPLEMENTED
        .iter()
        .map(|n| (*n, true))
        .chain(UNSUPPORTED.iter().map(|n| (*n, false)))
        .collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_abi_function_is_listed_once() {
        let t = super::function_table();
        assert!(t.len() > 600, "{} functions", t.len());
        assert!(t.iter().any(|(n, real)| *n == "MPI_Send" && *real));
        assert!(t.iter().any(|(n, real)| *n == "MPI_Win_create" && *real));
        let mut names: Vec<_> = t.iter().map(|(n, _)| *n).collect();
        names.dedup();
        assert_eq!(names.len(), t.len());
    }
}
