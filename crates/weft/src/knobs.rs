//! Knobs of the runtime, declared once; read by [`crate::Config::from_env`].

use weft_core::knob::{Knob, KnobKind};

/// Every knob of the weft runtime crate.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "WEFT_YIELD",
        kind: KnobKind::Choice(&["auto", "on", "off"]),
        default: "auto",
        help: "yield the CPU (sched_yield) while waiting with nothing to do: auto = when the node has more ranks than cores",
    },
    Knob {
        name: "WEFT_BOOT_TIMEOUT_S",
        kind: KnobKind::Uint,
        default: "60",
        help: "seconds a rank waits for the others during start-up before giving up",
    },
];
