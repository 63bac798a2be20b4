//! Knobs of the bootstrap, declared once for the registry and `weft info --knobs`.
//!
//! Only declarations; depends only on weft-core.

use weft_core::knob::{Knob, KnobKind};

/// Name of the knob bounding how long a rank keeps retrying to reach the store, and how long
/// a start-up request to a PMI or PMIx server may wait for its answer.
pub const BOOT_CONNECT_TIMEOUT_MS: &str = "WEFT_BOOT_CONNECT_TIMEOUT_MS";
/// Its default, in milliseconds.
pub const BOOT_CONNECT_TIMEOUT_MS_DEFAULT: u64 = 10_000;
/// Name of the knob choosing the bootstrap back end.
pub const BOOT: &str = "WEFT_BOOT";
/// Name of the knob naming the PMIx library loaded at run time.
pub const PMIX_LIBRARY: &str = "WEFT_PMIX_LIBRARY";

/// Every knob this crate reads.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: BOOT_CONNECT_TIMEOUT_MS,
        kind: KnobKind::Uint,
        default: "10000",
        help: "how long a rank retries connecting to the job's bootstrap store, and waits for a PMI/PMIx start-up answer, in ms",
    },
    Knob {
        name: BOOT,
        kind: KnobKind::Choice(&["auto", "weft", "pmix", "pmi2", "pmi1", "single"]),
        default: "auto",
        help: "bootstrap back end: auto picks from the launcher's variables (weft run, PMIx, PMI-2/PMI-1); `weft info` says which and why",
    },
    Knob {
        name: PMIX_LIBRARY,
        kind: KnobKind::Text,
        default: "libpmix.so.2",
        help: "the PMIx client library loaded (dlopen) when a PMIx launcher started the rank",
    },
];
