//! Knobs of one-sided communication, declared once; read through [`crate::Config`]'s values.
//! Depends on nothing but the knob registry.

use weft_core::knob::{Knob, KnobKind};

/// Every knob of `weft::rma`.
pub static KNOBS: &[Knob] = &[Knob {
    name: "WEFT_SYMMETRIC_SIZE",
    kind: KnobKind::Bytes,
    default: "64M",
    help: "bytes of each PE's symmetric heap (shmem_malloc); pages are only backed once touched",
}];
