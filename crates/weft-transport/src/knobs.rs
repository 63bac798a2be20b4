//! Knobs of the data path, declared once; read by `weft::Config`.

use weft_core::knob::{Knob, KnobKind};

/// Every knob of weft-transport.
pub static KNOBS: &[Knob] = &[
    Knob {
        name: "WEFT_SHM_EAGER_BYTES",
        kind: KnobKind::Bytes,
        default: "16K",
        help: "largest message sent inline through the shared-memory ring; larger ones use rendezvous",
    },
    Knob {
        name: "WEFT_SHM_RING_BYTES",
        kind: KnobKind::Bytes,
        default: "256K",
        help: "size of a high-speed shared-memory ring, used by a pair once its sender switched it (power of two, at least 4x the eager limit)",
    },
    Knob {
        name: "WEFT_SHM_SMALL_RING_BYTES",
        kind: KnobKind::Bytes,
        default: "64K",
        help: "size of the memory-saving shared-memory ring every pair of local ranks starts with (power of two, 4K up to WEFT_SHM_RING_BYTES; equal to it = no switching); eager messages through it are at most a quarter of it",
    },
    Knob {
        name: "WEFT_SHM_CMA",
        kind: KnobKind::Choice(&["auto", "on", "off"]),
        default: "auto",
        help: "single-copy rendezvous with process_vm_readv: auto (probe), on (fail if refused), off (pipelined copy through the segment)",
    },
    Knob {
        name: "WEFT_SHM_CMA_MIN_BYTES",
        kind: KnobKind::Bytes,
        default: "",
        help: "rendezvous messages of at least this size take the single copy (CMA) where it works, smaller ones the pipelined copy through the segment; unset = chosen at start-up per peer pair by the lane model from the shm and cma lanes' figures (the size from which CMA moves the message sooner; WEFT_LANE_FILE replaces the figures; weft info and weft info --transports show the choice and why)",
    },
    Knob {
        name: "WEFT_SHM_COOP_BYTES",
        kind: KnobKind::Bytes,
        default: "",
        help: "single-copy rendezvous messages of at least this size are copied by both processes at once (receiver reads the lower half, sender writes the upper half); unset = chosen at start-up by the lane model (the size from which halving the copy pays for the extra ring message to the sender)",
    },
    Knob {
        name: "WEFT_SHM_COLL_BYTES",
        kind: KnobKind::Bytes,
        default: "4M",
        help: "size of the node-wide shared-memory area used by shared-memory-native collectives",
    },
    Knob {
        name: "WEFT_SHM_FRAGMENT_BYTES",
        kind: KnobKind::Bytes,
        default: "32K",
        help: "fragment size of the pipelined copy-in/copy-out rendezvous used when CMA is off or refused (at most half of WEFT_SHM_RING_BYTES; a pair still on its small ring sends fragments of at most half of that ring)",
    },
    Knob {
        name: "WEFT_TCP_EAGER_BYTES",
        kind: KnobKind::Bytes,
        default: "64K",
        help: "largest message sent whole over TCP; larger ones use rendezvous (RTS, CTS, then pipelined fragments)",
    },
    Knob {
        name: "WEFT_TCP_FRAGMENT_BYTES",
        kind: KnobKind::Bytes,
        default: "256K",
        help: "largest fragment of TCP rendezvous messages once the peer is in high-speed mode; a message of at most two fragments goes in two halves (each at least 64 KiB, never more than this) so its receiver reads one while the other is written; fragments are read straight into the receive buffer",
    },
    Knob {
        name: "WEFT_TCP_IFACES",
        kind: KnobKind::Text,
        default: "",
        help: "comma-separated interface names or addresses a rank publishes for TCP (empty = every interface that is up, loopback last)",
    },
    Knob {
        name: "WEFT_TCP_POLL_EVERY",
        kind: KnobKind::Uint,
        default: "16",
        help: "progress calls between two epoll polls while shared-memory peers exist too (TCP work pending polls every call)",
    },
    Knob {
        name: "WEFT_UCX_LIB",
        kind: KnobKind::Text,
        default: "libucp.so.0",
        help: "the UCX library the ucx transport loads at run time (a name the dynamic loader searches for, or a path); where it does not load, the ucx lane is not offered and weft info --transports says why",
    },
    Knob {
        name: "WEFT_UCX_EAGER_BYTES",
        kind: KnobKind::Bytes,
        default: "64K",
        help: "largest message the ucx transport sends eagerly; larger and synchronous ones are announced, and their data goes by UCX's tag rendezvous into the matched receive buffer (striped ones over several rails by its active-message rendezvous)",
    },
    Knob {
        name: "WEFT_UCX_COPY_BYTES",
        kind: KnobKind::Bytes,
        default: "8K",
        help: "largest eager message the ucx transport copies into a send slot (the send is complete on return); larger eager ones go from the sender's buffer, which the send holds until UCX has sent it",
    },
    Knob {
        name: "WEFT_MAX_FAST_PEERS",
        kind: KnobKind::Uint,
        default: "8",
        help: "peers per rank that may switch from memory-saving to high-speed buffers: TCP receive buffers and fragments, and shared-memory rings (each rank's segment share holds this many large rings)",
    },
    Knob {
        name: "WEFT_FAST_PEER_BYTES",
        kind: KnobKind::Bytes,
        default: "1M",
        help: "traffic with a peer after which it switches to high-speed buffers, while fewer than WEFT_MAX_FAST_PEERS have: bytes received over TCP, bytes a rank put into the peer's shared-memory ring",
    },
];
