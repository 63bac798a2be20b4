//! Base types shared by every weft crate: ranks and tags, the error type, byte-size parsing,
//! the knob registry, the job secret's proofs (`auth`) and the handshake on them (`handshake`).
//!
//! This crate sits at the bottom of the layer stack: it depends on no other weft crate, does
//! no I/O beyond reading the environment and the system's random source when asked to and
//! writing diagnostic lines to stderr ([`mod@diag`], [`logging`]), and holds no global state
//! but the logger `logging` installs.

pub mod auth;
pub mod diag;
pub mod error;
pub mod handshake;
pub mod knob;
pub mod logging;
pub mod units;

pub use error::{Error, ErrorKind, Result};

/// A process's index inside a communicator or job, `0..size`.
pub type Rank = u32;

/// A message tag. Non-negative values are user tags; negative values are reserved.
pub type Tag = i32;

/// Wildcard source for receives and probes (MPI_ANY_SOURCE).
pub const ANY_SOURCE: i32 = -1;

/// Wildcard tag for receives and probes (MPI_ANY_TAG).
pub const ANY_TAG: Tag = -1;

/// Largest user tag weft accepts (reported as MPI_TAG_UB).
pub const TAG_UB: Tag = i32::MAX;
