//! The [`Transport`] trait: what every transport of weft says about itself, and the
//! registry of transports ([`registry`]).
//!
//! A transport describes its lanes (one way to reach peers: shared memory, TCP over one
//! interface, UCX over one device): which peers they reach, their eager and rendezvous
//! limits, whether large messages move with one copy, whether one-sided traffic and atomics
//! can use them, and what they cost (latency, per-message overhead, bandwidth dedicated to
//! each process and shared by the node's processes, registration cost per byte), in the
//! terms of seed 000 (UCX's own lane model). The figures come from, in order: a lane file
//! (`WEFT_LANE_FILE`, tuning data), a quick probe the transport runs at first use when it can
//! measure alone, what the machine reports (a NIC's speed), and the transport's defaults
//! ([`Origin`] says which). The runtime turns the descriptions into `weft_model` lane
//! descriptions and scores them there: no figure is written in the runtime.
//!
//! Network transports also open an endpoint ([`Transport::open`]) that carries the engine's
//! messages ([`NetEndpoint`]). Same-node transports (shared memory, CMA) are the engine's own
//! shared-memory protocol and open nothing here.
//!
//! Adding a transport: one module implementing [`Transport`] (and, for a network,
//! [`NetEndpoint`]), and one line in [`registry`].

use crate::net::NetEndpoint;
use std::net::IpAddr;
use weft_core::knob::KnobValues;
use weft_core::{Error, ErrorKind, Result};

/// Which peers a lane reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Only processes on the same node.
    SameNode,
    /// Any process (including the same node).
    AnyNode,
}

/// Where a lane's cost figures came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Measured by the transport's probe at first use in this process (what was measured;
    /// the other figures are its defaults).
    Probe(String),
    /// Read from a lane file (`WEFT_LANE_FILE`), named here.
    Tuning(String),
    /// Reported by the machine (a NIC's speed in /sys), the rest from the defaults.
    System,
    /// The transport's own defaults.
    Default,
}

impl Origin {
    /// A short word for tables.
    pub fn label(&self) -> String {
        match self {
            Origin::Probe(what) => format!("probe ({what})"),
            Origin::Tuning(f) => format!("tuning file {f}"),
            Origin::System => "system".into(),
            Origin::Default => "transport default".into(),
        }
    }
}

/// What a lane can do.
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    /// Which peers it reaches.
    pub reach: Reach,
    /// Largest message sent eagerly (0: rendezvous only).
    pub eager_bytes: usize,
    /// Largest piece a rendezvous message moves in at once (None: the whole message).
    pub rendezvous_piece_bytes: Option<usize>,
    /// Whether large messages move with one copy.
    pub single_copy: bool,
    /// Whether one-sided traffic (put, get) can use it.
    pub rma: bool,
    /// Whether remote atomics can use it.
    pub atomics: bool,
}

/// What a lane costs, in the terms of seed 000.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// One-way latency of a small message.
    pub latency_ns: f64,
    /// Fixed software cost per message.
    pub overhead_ns: f64,
    /// Bandwidth each process gets whatever the others do.
    pub dedicated_bytes_per_s: f64,
    /// Bandwidth shared by all processes of the node.
    pub shared_bytes_per_s: f64,
    /// Cost per byte beyond the bandwidth term (registration, extra copies).
    pub registration_ns_per_byte: f64,
}

/// One lane of a transport.
#[derive(Clone, Debug, PartialEq)]
pub struct Lane {
    /// Printable name (`shm`, `tcp:eth0(10.0.0.1)`, `ucx:eth0`).
    pub name: String,
    /// The transport's name (as in `WEFT_TRANSPORTS`).
    pub transport: &'static str,
    /// The device it leaves by (an interface name), when it has one.
    pub device: Option<String>,
    /// Its local address, when it has one (the source of a TCP rail).
    pub address: Option<IpAddr>,
    /// What it can do.
    pub caps: Capabilities,
    /// What it costs.
    pub costs: Costs,
    /// Where the costs came from.
    pub origin: Origin,
    /// Whether the device is on this process's NUMA node (None: unknown).
    pub numa_near: Option<bool>,
}

/// What a transport needs to describe its lanes.
pub struct LaneQuery<'a> {
    /// The job's knob values.
    pub values: &'a KnobValues,
    /// Whether the transport may measure what it can at first use (a few milliseconds; the
    /// runtime's start-up does not ask, `weft info --transports` does).
    pub probe: bool,
}

/// The job's bootstrap, as far as opening an endpoint needs it, with its rules: every rank
/// publishes its own records ([`publish`](Exchange::publish)), the runtime runs one
/// collective fence, and only then are the peers' records read ([`fetch`](Exchange::fetch)).
/// Bootstrap back ends such as PMI cannot answer a read before that fence, so an exchange
/// refuses one ([`Transport::open`] publishes, [`Opening::connect`] reads).
pub trait Exchange {
    /// Publishes this rank's `value` under `key` (once per key); the other ranks can read it
    /// after the job's next fence.
    fn publish(&self, key: &str, value: &[u8]) -> Result<()>;
    /// What `rank` published under `key` before the last fence.
    fn fetch(&self, rank: u32, key: &str) -> Result<Vec<u8>> {
        self.fetch_all(&[rank], key)?.pop().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("the bootstrap returned nothing for rank {rank}'s {key}"),
            )
        })
    }
    /// What each of `ranks` published under `key` before the last fence, in their order (in
    /// one round trip where the bootstrap can).
    fn fetch_all(&self, ranks: &[u32], key: &str) -> Result<Vec<Vec<u8>>>;
}

/// What opening a network endpoint needs to know about the job.
pub struct Job<'a> {
    /// This process's rank and the job's size.
    pub rank: u32,
    pub size: u32,
    /// Node index of every world rank.
    pub node_of: &'a [u32],
    /// Which world ranks the endpoint must reach (the others it never talks to).
    pub peers: &'a [bool],
    /// The job key every connection proves (at least 16 bytes).
    pub key: &'a [u8],
    /// The job's knob values.
    pub values: &'a KnobValues,
    /// The lanes of this transport the lane choice picked, best first (rails).
    pub lanes: &'a [Lane],
    /// The bootstrap store.
    pub exchange: &'a dyn Exchange,
}

/// A transport of weft.
pub trait Transport: Sync {
    /// Its name in `WEFT_TRANSPORTS` and tables.
    fn name(&self) -> &'static str;
    /// What it is, in a few words.
    fn summary(&self) -> &'static str;
    /// Whether it is a network transport (opens a [`NetEndpoint`]); same-node transports
    /// are the engine's shared-memory protocol.
    fn network(&self) -> bool {
        true
    }
    /// Whether it can be used here, or why not (a library that is absent, a feature not
    /// built).
    fn available(&self, q: &LaneQuery) -> std::result::Result<(), String>;
    /// Its lanes on this machine, with capabilities and costs (the figures before a lane
    /// file overrides them).
    fn lanes(&self, q: &LaneQuery) -> Vec<Lane>;
    /// Opens this process's endpoint for the peers of `job` and publishes what they need to
    /// reach it (network transports), before the job's fence; [`Opening::connect`] finishes
    /// it after the fence. A same-node transport opens nothing (the engine's shared-memory
    /// protocol drives it).
    fn open(&self, job: &Job) -> Result<Box<dyn Opening>> {
        Err(Error::new(
            ErrorKind::Internal,
            format!(
                "transport {} has no network endpoint (rank {})",
                self.name(),
                job.rank
            ),
        ))
    }
}

/// A network endpoint that is open and has published its records, waiting for the job's
/// fence to learn its peers'.
pub trait Opening {
    /// Reads the peers' records (after the fence that followed [`Transport::open`]) and
    /// returns the endpoint, ready to carry the engine's messages.
    fn connect(self: Box<Self>, job: &Job) -> Result<Box<dyn NetEndpoint>>;
}

/// Every transport weft knows, in order of preference where scores tie: adding a transport
/// is one line here.
static REGISTRY: &[&dyn Transport] = &[
    &crate::shm::lanes::SHM,
    &crate::shm::lanes::CMA,
    &crate::tcp::lanes::TCP,
    &crate::ucx::UCX,
];

/// Every transport weft knows (the `REGISTRY` of this module).
pub fn registry() -> &'static [&'static dyn Transport] {
    REGISTRY
}

/// The transport called `name`.
pub fn find(name: &str) -> Option<&'static dyn Transport> {
    registry().iter().copied().find(|t| t.name() == name)
}
