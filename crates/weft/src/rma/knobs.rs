//! Knobs of one-sided communication, declared once; read through [`crate::Config`]'s values.
//! Depends on nothing but the knob registry.

use weft_core::knob::{Knob, KnobKind};

/// Every knob of `weft::rma`.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "WEFT_SYMMETRIC_SIZE",
        kind: KnobKind::Bytes,
        default: "512M",
        help: "bytes of each PE's symmetric heap (shmem_malloc), reserved in /dev/shm at init; its largest power-of-two divisor (up to 1G) is the largest shmem_align alignment",
    },
    Knob {
        name: "SHMEM_SYMMETRIC_SIZE",
        kind: KnobKind::Bytes,
        default: "",
        help: "OpenSHMEM's name for the heap size (1.5G, 512M, ...); when set it wins over WEFT_SYMMETRIC_SIZE",
    },
    Knob {
        name: "SHMEM_VERSION",
        kind: KnobKind::Text,
        default: "",
        help: "OpenSHMEM: set to anything, PE 0 prints the library's version at shmem_init",
    },
    Knob {
        name: "SHMEM_INFO",
        kind: KnobKind::Text,
        default: "",
        help: "OpenSHMEM: set to anything, PE 0 prints the version and the OpenSHMEM variables with their values at shmem_init",
    },
    Knob {
        name: "WEFT_SYMMETRIC_GLOBALS",
        kind: KnobKind::Choice(&["map", "cma"]),
        default: "map",
        help: "map: libshmem moves the program's globals into a shared file at load, so the PEs of a node reach them like the heap; cma: through process_vm_readv/writev (no atomics on other PEs' globals)",
    },
    Knob {
        name: "WEFT_RMA_COALESCE",
        kind: KnobKind::Bool,
        default: "1",
        help: "merge a put to another node's PE that continues the previous one into one frame",
    },
    Knob {
        name: "WEFT_RMA_PROXY",
        kind: KnobKind::Bool,
        default: "0",
        help: "hand every one-sided operation to one proxy thread (the single-proxy design of seed 002, kept for comparison)",
    },
    Knob {
        name: "WEFT_RMA_FLUSH_BYTES",
        kind: KnobKind::Bytes,
        default: "64K",
        help: "bytes of puts a lane to another node's PE buffers before sending (64 B to 1 MiB)",
    },
    Knob {
        name: "WEFT_RMA_TIMEOUT_S",
        kind: KnobKind::Uint,
        default: "60",
        help: "seconds a one-sided call waits for another node's PE before declaring it dead",
    },
];
