//! Knobs of the synchronisation engine, declared once; read through [`crate::Config`]'s values.
//! Depends on nothing but the knob registry.

use weft_core::knob::{Knob, KnobKind};

/// Every knob of `weft::sync`.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "WEFT_SYNC_SETS",
        kind: KnobKind::Uint,
        default: "1024",
        help: "sets of 4 tagged words in the node synchronisation engine's table (rounded up to a power of two)",
    },
    Knob {
        name: "WEFT_SYNC_OVERFLOW_ENTRIES",
        kind: KnobKind::Uint,
        default: "4096",
        help: "tagged words in the engine's overflow area, used when an address's 4-way set is full",
    },
    Knob {
        name: "WEFT_SYNC_BURST_BYTES",
        kind: KnobKind::Bytes,
        default: "256K",
        help: "per-rank staging buffer of the engine's burst reduce (longer buffers go in chunks of this size)",
    },
    Knob {
        name: "WEFT_SYNC_SPIN_NS",
        kind: KnobKind::Uint,
        default: "20000",
        help: "how long a sync engine waiter spins before yielding the core when every local rank has a core (an oversubscribed node yields after a few checks)",
    },
    Knob {
        name: "WEFT_SYNC_YIELD_US",
        kind: KnobKind::Uint,
        default: "100",
        help: "how long a sync engine waiter keeps yielding the core before it sleeps on a futex, on a node with more local ranks than cores",
    },
    Knob {
        name: "WEFT_SYNC_OWN_CORE_YIELD_US",
        kind: KnobKind::Uint,
        default: "2000",
        help: "how long a sync engine waiter keeps yielding the core (after spinning) before it sleeps on a futex, when every local rank has a core",
    },
    Knob {
        name: "WEFT_SYNC_SLEEP_MS",
        kind: KnobKind::Uint,
        default: "100",
        help: "longest single sleep of a sync engine waiter on its futex before it checks that its peers live (a wake-up ends it at once)",
    },
];
