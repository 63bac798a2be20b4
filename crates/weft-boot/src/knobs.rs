//! Knobs of the bootstrap store, declared once for the registry and `weft info --knobs`.
//!
//! Only declarations; depends only on weft-core.

use weft_core::knob::{Knob, KnobKind};

/// Name of the knob bounding how long a rank keeps retrying to reach the store.
pub const BOOT_CONNECT_TIMEOUT_MS: &str = "WEFT_BOOT_CONNECT_TIMEOUT_MS";
/// Its default, in milliseconds.
pub const BOOT_CONNECT_TIMEOUT_MS_DEFAULT: u64 = 10_000;

/// Every knob this crate reads.
pub static KNOBS: &[Knob] = &[Knob {
    name: BOOT_CONNECT_TIMEOUT_MS,
    kind: KnobKind::Uint,
    default: "10000",
    help: "how long a rank retries connecting to the job's bootstrap store, in ms",
}];
