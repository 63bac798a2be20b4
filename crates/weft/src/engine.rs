//! The progress engine: owns the transports, the matching queues and the requests of one
//! process, and moves every operation forward when polled.
//!
//! Protocols over the shared-memory rings (one ring per ordered pair of local ranks, FIFO):
//! - `EAGER`: the payload travels in the ring; matched on arrival or buffered as unexpected.
//! - `RTS` (request to send) for messages above the eager limit: carries the sender's buffer
//!   address and length. The receiver, once matched, reads the data with one CMA copy and
//!   answers `FIN`; when CMA is off or refused it answers `CTS` and the sender streams `FRAG`s
//!   through the ring (pipelined copy-in/copy-out), which the receiver copies out in place.
//! - Messages to oneself are matched directly and never touch a ring.
//!
//! Protocols over TCP (peers on other nodes, or every peer with `WEFT_TRANSPORTS=tcp`), one
//! ordered frame stream per direction (see `weft_transport::tcp`):
//! - `EAGER` up to the TCP eager limit, matched on arrival or buffered as unexpected.
//! - `RTS` carries the length of a larger message; the receiver, once matched, answers `CTS`
//!   naming its request and the fragment size (or asking for nothing when the message would
//!   not fit), and the sender streams `FRAG`s, which the endpoint reads straight into the
//!   receive buffer (a small one, or one that arrived whole, is copied there). A `CTS` goes
//!   out ahead of fragments queued to the same peer, so both directions of an exchange
//!   stream at once. The send completes once its last fragment is handed to the kernel.
//! - A connection reset or closed by a peer marks it dead: its operations fail with
//!   `PeerDead`. The epoll set is polled with timeout 0 only every few progress calls while
//!   shared-memory peers exist and nothing is pending on TCP, and rarely while no connection
//!   exists, so the shared-memory path stays as fast as without TCP; it is polled on every
//!   call while frames moved within the last few polls (the next step of an exchange).
//!
//! The short-message path (blocking send or receive of at most the eager limit, nothing
//! queued) allocates nothing and makes no system call: one ring write or one ring read.
//! The engine is single-threaded; the runtime wraps it in a `RefCell` per process.
//!
//! Started collectives register their schedules with the engine, and every progress call
//! advances them (MPI's progress rule: any blocking call moves every pending operation), with
//! a guard so progress made from inside a schedule never re-enters one. With none started,
//! this costs one length check per progress call.

use crate::coll::request::{self as coll_request, ActivePtr};
use crate::coll::Tuning;
use crate::config::{CmaMode, Config, YieldMode};
use crate::matching::{Envelope, Matching, Oldest, Pattern};
use std::collections::VecDeque;
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::buf::{RawBuf, RawBufMut};
use weft_transport::shm::{cma, Header, ShmNode};
use weft_transport::tcp::frame as net;
use weft_transport::tcp::Endpoint;

/// Index of a request in the engine's table.
pub(crate) type ReqId = u32;

const KIND_EAGER: u8 = 1;
const KIND_RTS: u8 = 2;
const KIND_CTS: u8 = 3;
const KIND_FIN: u8 = 4;
const KIND_FRAG: u8 = 5;
const KIND_CTS_COOP: u8 = 6;
const KIND_FIN_COOP: u8 = 7;

/// Largest body of a control message.
const CONTROL_BODY_BYTES: usize = 24;
/// Buffers of delivered unexpected messages kept for reuse: a burst of small messages ahead
/// of their receives (a collective's early arrivals) then costs no allocation.
const SPARE_BUFS: usize = 64;
/// The largest such buffer kept (so at most 1 MiB stays held).
const SPARE_BUF_MAX_BYTES: usize = 16 << 10;
/// Body of a shared-memory `RTS`: the sender's address and length (8 bytes each) and its
/// `solo` flag (1 byte).
const RTS_BODY_BYTES: u8 = 17;

/// Idle polls of a wait made without a pause instruction before the next poll. A pause
/// costs about 24 ns on the machines measured here (AMD family 26: a C loop of 10^7
/// `_mm_pause`), where an idle poll of the rings is 80-100 instructions (callgrind), so
/// pausing on every idle poll made an answer wait for half a pause on average before it
/// was seen; a wait longer than these
/// polls (a microsecond or two) pauses on every poll again, as a spin should for its
/// hyperthread sibling.
const POLLS_BEFORE_PAUSING: u32 = 128;

/// The ring header of an eager message of `len` bytes.
#[inline]
fn eager_header(src_in_comm: u32, ctx: u32, tag: i32, len: usize) -> Header {
    Header {
        kind: KIND_EAGER,
        src: src_in_comm,
        ctx,
        tag,
        len: len as u32,
        ..Header::default()
    }
}

/// The pause of an idle poll, after the first [`POLLS_BEFORE_PAUSING`] of a stretch.
#[inline]
fn idle_pause(idle: u32) {
    if idle > POLLS_BEFORE_PAUSING {
        std::hint::spin_loop();
    }
}

/// Idle polls between two readings of the clock while a rank spins through its spin window
/// (about 25 us): a wait answered sooner never reads it.
const POLLS_PER_CLOCK_READ: u32 = 1 << 10;
/// Longest spin of a point-to-point wait on an oversubscribed node before it yields (see
/// [`Engine::wait_p2p_until`]).
const P2P_SPIN_MAX_NS: u32 = 50_000;
/// The spin of a probing wait while the learned spin is nothing, and how often such a wait
/// probes.
const P2P_SPIN_PROBE_NS: u32 = 4_000;
const P2P_PROBE_EVERY_WAITS: u32 = 8;
/// Idle polls between two readings of the clock in a point-to-point spin.
const P2P_POLLS_PER_CLOCK_READ: u32 = 32;
/// Idle yields between checks that the awaited peers are still alive.
const LIVENESS_EVERY_YIELDS: u32 = 1 << 9;
/// Idle polls between liveness checks while spinning (a spin window, or `WEFT_YIELD=off`,
/// which never yields): a rank that keeps its core must not hand it to a compiler or a peer
/// on a loaded machine (each yield can cost a whole time slice), but a dead peer must still
/// be found. A multiple of [`POLLS_PER_CLOCK_READ`].
const LIVENESS_EVERY_SPINS: u32 = 1 << 21;
/// Longest a wait keeps its core because no co-located rank is needed
/// ([`Engine::wait_until_sharing`]): a co-located rank might still have work for a peer
/// that the wait cannot see (a pipelined send), which then waits this long at most before
/// the rank yields again.
const KEEP_CORE_MAX: std::time::Duration = std::time::Duration::from_micros(50);
/// Smallest fragment a TCP rendezvous message is cut into to have two of them in flight.
const NET_MIN_SPLIT_BYTES: usize = 64 * 1024;
/// Progress calls between epoll polls while no TCP connection exists (only to accept the
/// first connection of a peer: its handshake waits at most this long).
const TCP_IDLE_POLL_EVERY: u32 = 256;

/// The result of a completed receive or probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// Rank of the sender in the communicator.
    pub source: i32,
    /// Tag of the message.
    pub tag: i32,
    /// Length of the message in bytes (may exceed the buffer when truncated).
    pub bytes: usize,
    /// True when the operation was cancelled.
    pub cancelled: bool,
}

impl Status {
    /// Number of whole elements of `T` in the message.
    pub fn count<T>(&self) -> usize {
        match std::mem::size_of::<T>() {
            0 => 0,
            n => self.bytes / n,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Myself,
    /// A local rank, over the shared-memory rings.
    Local(u32),
    /// A world rank over TCP.
    Net(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cma {
    Unknown,
    Yes,
    No,
}

/// A message that arrived before its receive was posted.
enum Unexpected {
    Eager(Vec<u8>),
    Rts {
        addr: u64,
        len: usize,
        sreq: u32,
        /// The sender will not copy its share ([`Engine::start_send_mode`]'s `solo`).
        solo: bool,
    },
    /// A TCP rendezvous: the data follows the receiver's `CTS`.
    NetRts {
        len: usize,
        sreq: u32,
    },
}

impl Unexpected {
    fn len(&self) -> usize {
        match self {
            Unexpected::Eager(v) => v.len(),
            Unexpected::Rts { len, .. } | Unexpected::NetRts { len, .. } => *len,
        }
    }
}

/// Work queued for a peer's ring because the ring was full or order required waiting.
enum Outgoing {
    /// A message with a payload borrowed from a request's buffer (eager data or nothing).
    Data {
        header: Header,
        data: RawBuf,
        req: Option<ReqId>,
    },
    /// A control message with a small inline body.
    Control {
        header: Header,
        body: [u8; CONTROL_BODY_BYTES],
        body_len: u8,
    },
    /// Fragments of a send request's buffer still to be streamed (fallback rendezvous).
    Fragments { req: ReqId },
}

/// A CMA read to do after the control messages queued with it have gone out.
struct DeferredRead {
    req: ReqId,
    from_local: u32,
    addr: u64,
    /// Bytes to read from the start of the message.
    len: usize,
    /// The sender's request, acknowledged with `FIN` once this read is over: only then may the
    /// sender reuse its buffer.
    sreq: u32,
    /// True when the sender writes the rest of the message itself (cooperative rendezvous);
    /// such a read cannot fall back to fragment streaming.
    cooperative: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReqKind {
    Free,
    Send,
    Recv,
    /// A send given up before the peer took it (see [`Engine::abandon_send`]): its buffer
    /// is forgotten and the peer's later answers to it are ignored; the slot is reused only
    /// after the peer's `FIN` says it is done with it.
    Abandoned,
}

struct Request {
    kind: ReqKind,
    done: bool,
    status: Status,
    error: Option<Error>,
    /// Receive: where the data goes and what it accepts.
    rbuf: RawBufMut,
    pattern: Pattern,
    /// Receive by fragments: bytes expected and received so far.
    frag_total: usize,
    frag_received: usize,
    /// Receive by CMA: parts still to arrive (ours and the cooperating sender's). Receive
    /// over TCP: fragments being read straight into the buffer (at most one per connection).
    parts_left: u8,
    /// Send: the data, the peer, and for fragment streaming the receiver's request and progress.
    sbuf: RawBuf,
    remote_req: u32,
    frag_sent: usize,
    /// TCP send: the fragment size the receiver asked for in its `CTS`.
    frag_bytes: usize,
    /// The world ranks that could satisfy an `ANY_SOURCE` receive (for failure detection).
    any_source_members: Option<Rc<[u32]>>,
    /// World rank this request depends on, when one.
    peer_world: Option<u32>,
}

impl Request {
    fn empty() -> Request {
        Request {
            kind: ReqKind::Free,
            done: false,
            status: Status::default(),
            error: None,
            rbuf: RawBufMut::new(&mut []),
            pattern: Pattern {
                ctx: 0,
                src: 0,
                tag: 0,
            },
            frag_total: 0,
            frag_received: 0,
            parts_left: 0,
            sbuf: RawBuf::new(&[]),
            remote_req: 0,
            frag_sent: 0,
            frag_bytes: 0,
            any_source_members: None,
            peer_world: None,
        }
    }
}

/// Everything but the shared-memory node, so ring callbacks can borrow it separately.
struct Core {
    my_local: u32,
    eager_bytes: usize,
    fragment_bytes: usize,
    cma_mode: CmaMode,
    local_world: Vec<u32>,
    pids: Vec<i32>,
    cma: Vec<Cma>,
    dead: Vec<bool>,
    matching: Matching<ReqId, (Unexpected, u32)>,
    reqs: Vec<Request>,
    free_reqs: Vec<ReqId>,
    outq: Vec<VecDeque<Outgoing>>,
    outq_len: usize,
    deferred_reads: VecDeque<DeferredRead>,
    /// Rendezvous messages of at least this many bytes are copied by both sides.
    coop_bytes: usize,
    /// Rendezvous messages below this many bytes stream fragments even where CMA works.
    cma_min_bytes: usize,
    /// TCP: work queued per world rank, its total, dead peers (by world rank) and limits.
    net_outq: Vec<VecDeque<Outgoing>>,
    net_outq_len: usize,
    net_dead: Vec<bool>,
    net_eager_bytes: usize,
    net_fragment_bytes: usize,
    /// Fragment size asked of a TCP peer in memory-saving mode, and which peers are in
    /// high-speed mode (the endpoint decides; mirrored here for `CTS`).
    net_small_fragment_bytes: usize,
    net_fast: Vec<bool>,
    /// Buffers of unexpected eager messages already delivered, kept for the next ones so
    /// that a message arriving before its receive costs no allocation
    /// ([`Core::unexpected_copy`]).
    spare_bufs: Vec<Vec<u8>>,
}

/// How a wait went ([`Engine::wait_p2p_until`] learns from it).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Spun {
    /// Done before any idle poll.
    Never,
    /// Done within the spin.
    Enough,
    /// It yielded.
    Yielded,
}

/// The spin of the next point-to-point wait, after one that spun `budget_ns` (the learned
/// `spin_ns`, or a probe) and went `got`.
fn learned_spin_ns(spin_ns: u32, budget_ns: u32, got: Spun) -> u32 {
    match got {
        Spun::Never => spin_ns,
        Spun::Enough => (budget_ns * 2).clamp(P2P_SPIN_PROBE_NS, P2P_SPIN_MAX_NS),
        Spun::Yielded => match budget_ns / 2 {
            b if b < P2P_SPIN_PROBE_NS => 0,
            b => b,
        },
    }
}

/// Whether a request waiting on these peers (None: any source) could be completed by a rank
/// not pinned to this rank's core (`colocated`: the local ranks that are).
fn waits_off_my_core(
    mut waited_on: impl Iterator<Item = Option<Route>>,
    colocated: &[u32],
) -> bool {
    waited_on.any(|peer| match peer {
        Some(Route::Local(l)) => !colocated.contains(&l),
        _ => true,
    })
}

/// The per-process progress engine.
pub(crate) struct Engine {
    world_rank: u32,
    routes: Vec<Route>,
    shm: Option<ShmNode>,
    core: Core,
    yield_when_idle: bool,
    /// The node runs more local ranks than the process may use cores (as it started).
    oversubscribed: bool,
    /// `WEFT_YIELD=off`: spin while idle and never yield the CPU.
    never_yield: bool,
    /// How long a rank that does not yield at once spins in one idle stretch before it
    /// starts yielding (`WEFT_YIELD_AFTER_US`).
    spin_window: std::time::Duration,
    /// Times this rank yielded the CPU while waiting (for tests and `weft info`).
    idle_yields: u64,
    /// Blocking point-to-point receives whose message was already here and was taken
    /// without a request ([`Engine::recv_p2p_now`]; for tests and tools).
    p2p_received_at_once: u64,
    /// Calls of [`Engine::progress`] so far (wrapping): whether a blocking call polled.
    progress_passes: u64,
    /// `WEFT_YIELD=auto` on a node with more ranks than cores: point-to-point waits spin for
    /// a learned time before they yield ([`Engine::wait_p2p_until`]).
    adaptive_spin: bool,
    /// The learned spin of point-to-point waits (0 ..= P2P_SPIN_MAX_NS).
    p2p_spin_ns: u32,
    /// The local ranks pinned to this rank's core, when this rank is pinned (`WEFT_BIND`):
    /// a collective wait that needs none of them to run keeps the core instead of yielding
    /// it ([`Engine::wait_until_sharing`]).
    colocated: Vec<u32>,
    /// Point-to-point waits so far (every P2P_PROBE_EVERY_WAITS-th probes when the learned
    /// spin is nothing).
    p2p_waits: u32,
    next_ctx: u32,
    /// Collective tuning, read from the knobs at init.
    tuning: Rc<Tuning>,
    /// Bumped by every tuning change.
    tuning_gen: u64,
    /// The node's final verdict on Cross Memory Attach, once known.
    cma_verdict: Option<bool>,
    /// Whether this rank's vote on Cross Memory Attach is in the node's area.
    cma_voted: bool,
    /// Node index of every world rank.
    node_of: Vec<u32>,
    /// The TCP endpoint (None when no peer is reached over TCP).
    tcp: Option<Endpoint>,
    /// Progress calls between epoll polls while shared-memory peers exist and TCP is idle.
    tcp_poll_every: u32,
    tcp_tick: u32,
    /// True when no peer is on the shared-memory rings: TCP is polled on every call.
    net_only: bool,
    /// Started collectives not finished yet, advanced on every progress call (MPI's progress
    /// rule: a rank blocked in a receive must still play its part in a pending barrier).
    /// Kept allocated across calls, so registering costs nothing once it has grown.
    colls: Vec<ActivePtr>,
    /// True while a collective is being advanced: progress made from inside it (its own
    /// polls, or waits after an error) must not advance collectives again.
    colls_busy: bool,
    /// The collectives' own bookkeeping: unfinished calls' tags, plans, scratch.
    pub(crate) coll_state: crate::coll::CallState,
    /// Nonblocking duplications (`Comm::idup`) not taken by their request yet, advanced on
    /// every progress call like the collectives (see `comm::IdupState`).
    idups: Vec<IdupSlot>,
    /// True while the duplications are being advanced (no re-entry from their own sends).
    idups_busy: bool,
    /// Key of the next duplication.
    next_idup_key: u64,
    /// Context id ranges `[first, end)` taken (reserved, claimed or agreed) on this process
    /// while duplications are in flight: their checks look for overlaps here.
    ctx_taken: Vec<(u32, u32)>,
    /// Blocking communicator creations in progress: a duplication takes no decision on
    /// context ids while one reads and sets them (see `Comm::idup`).
    creating: u32,
}

/// A duplication in flight and whether its request was dropped (it is removed once its
/// messages are done).
struct IdupSlot {
    key: u64,
    state: crate::comm::IdupState,
    dropped: bool,
}

/// How a local node was set up, handed to [`Engine::new`].
pub(crate) struct NodeSetup {
    /// World rank of each local rank, in local-rank order.
    pub local_world: Vec<u32>,
    /// This process's local rank.
    pub my_local: u32,
    /// The attached segment (None for a job of one rank).
    pub shm: Option<ShmNode>,
    /// Node index of every world rank (nodes numbered in order of their lowest world rank).
    pub node_of: Vec<u32>,
    /// The TCP endpoint, with peer addresses set, when some peer is reached over TCP.
    pub tcp: Option<Endpoint>,
    /// World ranks of this node reached over TCP rather than shared memory (forced TCP).
    pub tcp_local: bool,
}

impl Engine {
    pub(crate) fn new(
        world_rank: u32,
        world_size: u32,
        node: NodeSetup,
        config: &Config,
    ) -> Result<Engine> {
        let nlocal = node.local_world.len();
        let mut routes: Vec<Route> = (0..world_size).map(Route::Net).collect();
        for (local, &w) in node.local_world.iter().enumerate() {
            if w >= world_size {
                return Err(Error::new(
                    ErrorKind::Internal,
                    format!("local rank {local} maps to world rank {w} of {world_size}"),
                ));
            }
            routes[w as usize] = if w == world_rank {
                Route::Myself
            } else if node.tcp_local {
                Route::Net(w)
            } else {
                Route::Local(local as u32)
            };
        }
        let net_peers = routes.iter().filter(|r| matches!(r, Route::Net(_))).count();
        if net_peers > 0 && node.tcp.is_none() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "rank {world_rank}: {net_peers} of {world_size} ranks need TCP (other nodes or WEFT_TRANSPORTS=tcp) but TCP is not enabled (WEFT_TRANSPORTS)"
                ),
            ));
        }
        let net_only = !routes.iter().any(|r| matches!(r, Route::Local(_)));
        let pids = match &node.shm {
            Some(shm) => (0..nlocal as u32).map(|l| shm.pid(l)).collect(),
            None => vec![std::process::id() as i32; nlocal],
        };
        let cma_state = match config.cma {
            CmaMode::Off => Cma::No,
            _ => Cma::Unknown,
        };
        let mut cma_vec = vec![cma_state; nlocal];
        if config.cma != CmaMode::Off {
            if let Some(shm) = &node.shm {
                for l in 0..nlocal as u32 {
                    if l == node.my_local {
                        continue;
                    }
                    let allowed = shm.probe_cma(l);
                    if !allowed && config.cma == CmaMode::Auto {
                        cma_vec[l as usize] = Cma::No;
                        continue;
                    }
                    if !allowed {
                        return Err(Error::new(
                            ErrorKind::Unsupported,
                            format!("rank {world_rank}: WEFT_SHM_CMA=on but process_vm_readv from local rank {l} (pid {}) is refused", pids[l as usize]),
                        ));
                    }
                    cma_vec[l as usize] = Cma::Yes;
                }
            }
        }
        let oversubscribed = nlocal > crate::bind::usable_cores();
        let yield_when_idle = match config.yield_mode {
            YieldMode::Always => true,
            YieldMode::Never => false,
            YieldMode::Auto => oversubscribed,
        };
        Ok(Engine {
            world_rank,
            routes,
            shm: node.shm,
            core: Core {
                my_local: node.my_local,
                eager_bytes: config.shm_eager_bytes,
                fragment_bytes: config.shm_fragment_bytes,
                cma_mode: config.cma,
                local_world: node.local_world,
                pids,
                cma: cma_vec,
                dead: vec![false; nlocal],
                matching: Matching::default(),
                reqs: Vec::new(),
                free_reqs: Vec::new(),
                outq: (0..nlocal).map(|_| VecDeque::new()).collect(),
                outq_len: 0,
                deferred_reads: VecDeque::new(),
                coop_bytes: config.shm_coop_bytes,
                cma_min_bytes: config.shm_cma_min_bytes,
                net_outq: (0..world_size).map(|_| VecDeque::new()).collect(),
                net_outq_len: 0,
                net_dead: vec![false; world_size as usize],
                net_eager_bytes: config.tcp_eager_bytes,
                net_fragment_bytes: config.tcp_fragment_bytes,
                net_small_fragment_bytes: config.tcp_small_fragment_bytes(),
                net_fast: vec![false; world_size as usize],
                spare_bufs: Vec::new(),
            },
            yield_when_idle,
            oversubscribed,
            never_yield: matches!(config.yield_mode, YieldMode::Never),
            colocated: Vec::new(),
            spin_window: std::time::Duration::from_micros(config.yield_after_us),
            idle_yields: 0,
            p2p_received_at_once: 0,
            progress_passes: 0,
            adaptive_spin: matches!(config.yield_mode, YieldMode::Auto) && oversubscribed,
            p2p_spin_ns: 0,
            p2p_waits: 0,
            next_ctx: 4,
            tuning: Rc::new(Tuning::from_values(&config.values)?),
            tuning_gen: 0,
            cma_verdict: None,
            cma_voted: false,
            node_of: node.node_of,
            tcp: node.tcp,
            tcp_poll_every: config.tcp_poll_every.max(1),
            tcp_tick: 0,
            net_only,
            colls: Vec::new(),
            colls_busy: false,
            coll_state: crate::coll::CallState::default(),
            idups: Vec::new(),
            idups_busy: false,
            next_idup_key: 0,
            ctx_taken: Vec::new(),
            creating: 0,
        })
    }

    /// Fragments sent over extra TCP rails.
    pub(crate) fn tcp_striped(&self) -> u64 {
        self.tcp.as_ref().map_or(0, Endpoint::striped_count)
    }

    /// Bytes of TCP connection buffers and peers in high-speed mode.
    pub(crate) fn tcp_memory(&self) -> (usize, u32) {
        self.tcp
            .as_ref()
            .map_or((0, 0), |t| (t.buffer_bytes(), t.fast_peer_count()))
    }

    /// Open TCP connections and the largest receive buffer among them (bytes).
    pub(crate) fn tcp_connections(&self) -> (usize, usize) {
        self.tcp.as_ref().map_or((0, 0), |t| {
            (t.connection_count(), t.largest_receive_buffer())
        })
    }

    /// Inbound TCP connections refused because they did not prove the job key.
    pub(crate) fn tcp_refused(&self) -> u64 {
        self.tcp.as_ref().map_or(0, Endpoint::refused_count)
    }

    /// Pushes out everything queued for peers, over TCP and the shared-memory rings, and runs
    /// the deferred reads (finalize: a rank that stops polling must not keep bytes its peers
    /// wait for — a `FIN` queued behind a full ring leaves the sender's rendezvous send
    /// pending for ever). Gives up on peers found dead, and after `timeout`.
    pub(crate) fn drain(&mut self, timeout: std::time::Duration) {
        let start = std::time::Instant::now();
        let mut idle: u32 = 0;
        while self.unsent() {
            // Polling the rings also lets a peer's consumption be seen and frees room.
            self.progress_net(true);
            self.progress_shm();
            if start.elapsed() > timeout {
                return;
            }
            idle = idle.saturating_add(1);
            if idle.is_multiple_of(LIVENESS_EVERY_YIELDS) {
                // A dead peer's queue is never consumed: `check_peers` drops it.
                self.check_peers();
            }
            if self.never_yield {
                std::hint::spin_loop();
            } else {
                self.idle_yields += 1;
                std::thread::yield_now();
            }
        }
    }

    /// True while some of our own bytes wait to be sent. A stranger's half-open TCP
    /// handshake does not count: it must not hold us up.
    fn unsent(&self) -> bool {
        self.tcp.as_ref().is_some_and(Endpoint::unsent)
            || self.core.net_outq_len > 0
            || self.core.outq_len > 0
            || !self.core.deferred_reads.is_empty()
    }

    /// The next free context id (see `comm`: new communicators agree on the maximum).
    pub(crate) fn next_ctx(&self) -> u32 {
        self.next_ctx
    }

    pub(crate) fn set_next_ctx(&mut self, ctx: u32) {
        self.next_ctx = self.next_ctx.max(ctx);
    }

    /// Takes `width` fresh context ids on this process, `skip` ids above the next free one
    /// (they are below `next_ctx` from now on, so no later creation here picks them), and
    /// returns the first. Only duplications reserve, so the ids are recorded for their
    /// checks (see `ctx_taken`).
    pub(crate) fn reserve_ctx(&mut self, width: u32, skip: u32) -> u32 {
        let p = self.next_ctx + skip;
        self.ctx_taken.push((p, p + width));
        self.next_ctx = p + width;
        p
    }

    /// A new communicator of this process takes ids `first..first + width` (a creation's
    /// agreed context): later ones start above them.
    pub(crate) fn take_ctx(&mut self, first: u32, width: u32) {
        if !self.idups.is_empty() || self.idups_busy {
            self.ctx_taken.push((first, first + width));
        }
        self.set_next_ctx(first + width);
    }

    /// Whether ids `first..first + width` overlap ids this process took since its oldest
    /// duplication in flight started, apart from one range `own` (the asking duplication's
    /// proposal).
    pub(crate) fn ctx_overlaps(&self, first: u32, width: u32, own: (u32, u32)) -> bool {
        let mut own_seen = false;
        self.ctx_taken.iter().any(|&(a, b)| {
            if (a, b) == own && !own_seen {
                own_seen = true;
                return false;
            }
            a < first + width && first < b
        })
    }

    /// A blocking communicator creation starts (`end_creation` when it has set `next_ctx`).
    pub(crate) fn begin_creation(&mut self) {
        self.creating += 1;
    }

    pub(crate) fn end_creation(&mut self) {
        self.creating -= 1;
    }

    /// Whether a blocking communicator creation is between reading and setting `next_ctx`.
    pub(crate) fn creating(&self) -> bool {
        self.creating > 0
    }

    /// Files a started duplication; progress advances it from now on. Returns its key.
    pub(crate) fn add_idup(&mut self, state: crate::comm::IdupState) -> u64 {
        if self.idups.is_empty() {
            // Ids taken before lie below every proposal of the new duplication.
            self.ctx_taken.clear();
        }
        let key = self.next_idup_key;
        self.next_idup_key += 1;
        self.idups.push(IdupSlot {
            key,
            state,
            dropped: false,
        });
        key
    }

    /// Whether duplication `key` has an outcome (a context id or an error).
    pub(crate) fn idup_finished(&self, key: u64) -> bool {
        self.idups
            .iter()
            .find(|s| s.key == key)
            .is_none_or(|s| s.state.outcome.is_some())
    }

    /// The outcome of duplication `key` once it has one; the slot goes (or stays, marked
    /// dropped, until messages it still has in flight are done).
    pub(crate) fn take_idup(&mut self, key: u64) -> Option<Result<u32>> {
        let i = self.idups.iter().position(|s| s.key == key)?;
        let out = self.idups[i].state.outcome.take()?;
        self.drop_idup_at(i);
        Some(out)
    }

    /// Forgets duplication `key` (its request was dropped unfinished or has taken the outcome).
    pub(crate) fn drop_idup(&mut self, key: u64) {
        if let Some(i) = self.idups.iter().position(|s| s.key == key) {
            self.drop_idup_at(i);
        }
    }

    fn drop_idup_at(&mut self, i: usize) {
        let mut slot = self.idups.swap_remove(i);
        slot.state.abandon(self);
        // A dropped agreement posts nothing more: only its messages in flight are waited for.
        slot.state.outcome.get_or_insert_with(|| {
            Err(Error::new(
                ErrorKind::InvalidRequest,
                "the duplication was dropped",
            ))
        });
        if slot.state.in_flight() {
            slot.dropped = true;
            self.idups.push(slot);
        }
    }

    /// Advances every duplication once; true if any moved.
    fn advance_idups(&mut self) -> bool {
        self.idups_busy = true;
        let mut slots = std::mem::take(&mut self.idups);
        let mut moved = false;
        for s in slots.iter_mut() {
            moved |= s.state.step(self);
        }
        slots.retain(|s| !s.dropped || s.state.in_flight());
        // Duplications filed meanwhile (none today: filing is a user call) are kept.
        slots.append(&mut self.idups);
        self.idups = slots;
        self.idups_busy = false;
        moved
    }

    /// The collective tuning of this process.
    pub(crate) fn tuning(&self) -> Rc<Tuning> {
        self.tuning.clone()
    }

    /// Replaces the collective tuning.
    pub(crate) fn set_tuning(&mut self, tuning: Tuning) {
        self.tuning = Rc::new(tuning);
        self.tuning_gen += 1;
    }

    /// Changes with every [`Engine::set_tuning`]: what communicators derived from the tuning
    /// (ranks per node) is stale when it differs.
    pub(crate) fn tuning_gen(&self) -> u64 {
        self.tuning_gen
    }

    /// The node's verdict on Cross Memory Attach once every local rank has voted (it never
    /// changes after that); None before.
    pub(crate) fn cma_verdict(&self) -> Option<bool> {
        self.cma_verdict
    }

    /// Whether this rank has voted on Cross Memory Attach (see [`Engine::set_cma_voted`]).
    pub(crate) fn cma_voted(&self) -> bool {
        self.cma_voted
    }

    /// Records that this rank's vote is in the node's area (it stays for the segment's life).
    pub(crate) fn set_cma_voted(&mut self) {
        self.cma_voted = true;
    }

    /// Records the node's final verdict on Cross Memory Attach.
    pub(crate) fn set_cma_verdict(&mut self, usable: bool) {
        self.cma_verdict = Some(usable);
    }

    /// The node's shared-memory segment (None for a job of one rank on its node).
    pub(crate) fn shm(&self) -> Option<&ShmNode> {
        self.shm.as_ref()
    }

    /// World ranks of this node's ranks, in local-rank order, and this process's local rank.
    pub(crate) fn local_ranks(&self) -> (&[u32], u32) {
        (&self.core.local_world, self.core.my_local)
    }

    /// Node index of every world rank (nodes numbered in order of their lowest world rank):
    /// what hierarchical collectives group by.
    pub(crate) fn node_of(&self) -> &[u32] {
        &self.node_of
    }

    /// Whether the engine yields the CPU when idle.
    pub(crate) fn yields_when_idle(&self) -> bool {
        self.yield_when_idle
    }

    /// Whether the node runs more local ranks than the process may use cores.
    pub(crate) fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    /// Records the local ranks pinned to this rank's core (after pinning it).
    pub(crate) fn set_colocated(&mut self, local_ranks: Vec<u32>) {
        self.colocated = local_ranks;
    }

    /// Whether world rank `w` is a rank of this node pinned to this rank's core, as far as
    /// the engine knows: the co-located ranks are recorded under `WEFT_YIELD=auto` only (the
    /// only mode that uses them), so under `on` or `off` this says false.
    #[inline(always)]
    pub(crate) fn shares_my_core(&self, w: u32) -> bool {
        match self.routes[w as usize] {
            Route::Local(l) => self.colocated.contains(&l),
            _ => false,
        }
    }

    /// The local ranks pinned to this rank's core (empty when it is not pinned).
    pub(crate) fn colocated(&self) -> &[u32] {
        &self.colocated
    }

    /// Times this rank yielded the CPU while waiting.
    pub(crate) fn idle_yields(&self) -> u64 {
        self.idle_yields
    }

    // ---------------------------------------------------------------- requests

    fn alloc_req(&mut self, kind: ReqKind) -> ReqId {
        let id = match self.core.free_reqs.pop() {
            Some(id) => id,
            None => {
                self.core.reqs.push(Request::empty());
                (self.core.reqs.len() - 1) as ReqId
            }
        };
        let r = &mut self.core.reqs[id as usize];
        r.kind = kind;
        r.done = false;
        r.error = None;
        r.status = Status::default();
        r.frag_total = 0;
        r.frag_received = 0;
        r.frag_sent = 0;
        r.parts_left = 0;
        r.any_source_members = None;
        r.peer_world = None;
        id
    }

    /// Releases a completed request's slot.
    pub(crate) fn free_req(&mut self, id: ReqId) {
        let r = &mut self.core.reqs[id as usize];
        debug_assert!(r.kind != ReqKind::Free);
        r.kind = ReqKind::Free;
        r.any_source_members = None;
        r.rbuf = RawBufMut::new(&mut []);
        r.sbuf = RawBuf::new(&[]);
        self.core.free_reqs.push(id);
    }

    /// True once the request has completed (successfully or not).
    pub(crate) fn is_done(&self, id: ReqId) -> bool {
        self.core.reqs[id as usize].done
    }

    /// What the engine knows of a finished request's message even when it failed: a
    /// truncated receive still names the source and tag of the message that matched.
    pub(crate) fn status_of(&self, id: ReqId) -> Status {
        self.core.reqs[id as usize].status
    }

    /// The outcome of a completed request.
    pub(crate) fn outcome(&self, id: ReqId) -> Result<Status> {
        let r = &self.core.reqs[id as usize];
        match &r.error {
            Some(e) => Err(e.clone()),
            None => Ok(r.status),
        }
    }

    /// Cancels a receive that has not matched yet; true if it was cancelled.
    pub(crate) fn cancel_recv(&mut self, id: ReqId) -> bool {
        let r = &self.core.reqs[id as usize];
        if r.kind != ReqKind::Recv || r.done {
            return false;
        }
        if self.core.matching.cancel_posted(|&p| p == id) {
            let r = &mut self.core.reqs[id as usize];
            r.done = true;
            r.status.cancelled = true;
            true
        } else {
            false
        }
    }

    /// Gives up a send the peer has not taken yet, so its buffer may be released without
    /// waiting for a receive that will never come (a collective whose ranks disagree).
    /// True if it was pending: the request then belongs to the engine (do not wait for or
    /// free it). Work still queued for it is withdrawn (its request to send, eager data,
    /// fragments); a peer that had already matched it gets no data (the program is
    /// erroneous by then), and a cooperative copy it asks for is refused.
    pub(crate) fn abandon_send(&mut self, id: ReqId) -> bool {
        let core = &mut self.core;
        let r = &mut core.reqs[id as usize];
        if r.kind != ReqKind::Send || r.done {
            return false;
        }
        r.kind = ReqKind::Abandoned;
        r.done = true;
        r.sbuf = RawBuf::new(&[]);
        let refers = |item: &Outgoing, rts: u8| match item {
            Outgoing::Data { req, .. } => *req == Some(id),
            Outgoing::Fragments { req } => *req == id,
            Outgoing::Control { header, .. } => header.kind == rts && header.aux == id,
        };
        for q in core.outq.iter_mut() {
            let before = q.len();
            q.retain(|item| !refers(item, KIND_RTS));
            core.outq_len -= before - q.len();
        }
        for q in core.net_outq.iter_mut() {
            let before = q.len();
            q.retain(|item| !refers(item, net::KIND_RTS));
            core.net_outq_len -= before - q.len();
        }
        true
    }

    // ---------------------------------------------------------------- sends

    /// Starts a send of `data` to world rank `dst`. Returns `Ok(None)` when it completed on
    /// the spot (the common small-message case), or the request to wait on.
    pub(crate) fn start_send(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
    ) -> Result<Option<ReqId>> {
        self.start_send_mode(data, dst_world, src_in_comm, ctx, tag, false, false)
    }

    /// Starts a send; a `synchronous` one (MPI_Ssend) goes by rendezvous whatever its size,
    /// so it completes only once a receive has matched it and taken the data. To oneself it
    /// is buffered like any send (a synchronous send to oneself with no receive posted is
    /// erroneous in MPI). A `solo` send tells a shared-memory receiver of a large message
    /// to read all of it: the sender has other work (a collective step with more than this
    /// send) and would be late with its share of a cooperative copy
    /// (`WEFT_SHM_COOP_BYTES`), which the receiver would wait for.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn start_send_mode(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
        synchronous: bool,
        solo: bool,
    ) -> Result<Option<ReqId>> {
        // The usual small send to a live rank of the node with nothing queued before it:
        // straight into its ring, complete at once (the rest below handles every other case,
        // this one included when the ring is full).
        if let (Route::Local(peer), Some(shm), false) = (
            self.routes[dst_world as usize],
            self.shm.as_mut(),
            synchronous,
        ) {
            let p = peer as usize;
            if data.len() <= self.core.eager_bytes.min(shm.ring_bytes(peer) / 4)
                && !self.core.dead[p]
                && self.core.outq[p].is_empty()
            {
                let header = eager_header(src_in_comm, ctx, tag, data.len());
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                if shm.try_send(peer, &header, &[bytes]) {
                    return Ok(None);
                }
            }
        }
        self.start_send_queued(data, dst_world, src_in_comm, ctx, tag, synchronous, solo)
    }

    /// [`Engine::start_send_mode`] past its fast case.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn start_send_queued(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
        synchronous: bool,
        solo: bool,
    ) -> Result<Option<ReqId>> {
        let header = eager_header(src_in_comm, ctx, tag, data.len());
        match self.routes[dst_world as usize] {
            Route::Myself => {
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                self.core.deliver_to_self(
                    Envelope {
                        ctx,
                        src: src_in_comm,
                        tag,
                    },
                    bytes,
                );
                Ok(None)
            }
            Route::Local(peer) => {
                if self.core.dead[peer as usize] {
                    return Err(dead_peer_error(self.world_rank, dst_world, "send to"));
                }
                let shm = self.shm.as_mut().expect("local peer without a segment");
                // A pair still on its small ring takes eager messages up to a quarter of it
                // (rings only grow, so a message queued now still fits when it goes).
                let eager_bytes = self.core.eager_bytes.min(shm.ring_bytes(peer) / 4);
                if data.len() <= eager_bytes && !synchronous {
                    if self.core.outq[peer as usize].is_empty() {
                        // SAFETY: the caller keeps `data` alive for this call.
                        let bytes = unsafe { data.slice(0, data.len()) };
                        if shm.try_send(peer, &header, &[bytes]) {
                            return Ok(None);
                        }
                    }
                    let id = self.alloc_req(ReqKind::Send);
                    let r = &mut self.core.reqs[id as usize];
                    r.sbuf = data;
                    r.peer_world = Some(dst_world);
                    self.core.enqueue(
                        peer,
                        Outgoing::Data {
                            header,
                            data,
                            req: Some(id),
                        },
                    );
                    Ok(Some(id))
                } else {
                    let id = self.alloc_req(ReqKind::Send);
                    let r = &mut self.core.reqs[id as usize];
                    r.sbuf = data;
                    r.peer_world = Some(dst_world);
                    let mut body = [0u8; CONTROL_BODY_BYTES];
                    body[..8].copy_from_slice(&data.addr().to_le_bytes());
                    body[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
                    body[16] = u8::from(solo);
                    let rts = Header {
                        kind: KIND_RTS,
                        len: RTS_BODY_BYTES.into(),
                        aux: id,
                        ..header
                    };
                    self.core.enqueue(
                        peer,
                        Outgoing::Control {
                            header: rts,
                            body,
                            body_len: RTS_BODY_BYTES,
                        },
                    );
                    self.flush_all();
                    Ok(Some(id))
                }
            }
            Route::Net(w) => self.start_net_send(data, w, header, synchronous),
        }
    }

    fn start_net_send(
        &mut self,
        data: RawBuf,
        w: u32,
        header: Header,
        synchronous: bool,
    ) -> Result<Option<ReqId>> {
        if self.core.net_dead[w as usize] {
            return Err(dead_peer_error(self.world_rank, w, "send to"));
        }
        let id = if data.len() <= self.core.net_eager_bytes && !synchronous {
            if self.core.net_outq[w as usize].is_empty() {
                let tcp = self.tcp.as_mut().expect("TCP route without an endpoint");
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                if tcp.try_send(w, &header, &[bytes]) {
                    return Ok(None);
                }
            }
            let id = self.alloc_req(ReqKind::Send);
            self.core.net_enqueue(
                w,
                Outgoing::Data {
                    header,
                    data,
                    req: Some(id),
                },
            );
            id
        } else {
            let id = self.alloc_req(ReqKind::Send);
            let mut body = [0u8; CONTROL_BODY_BYTES];
            body[..8].copy_from_slice(&(data.len() as u64).to_le_bytes());
            let rts = Header {
                kind: net::KIND_RTS,
                len: net::RTS_BODY_BYTES as u32,
                aux: id,
                ..header
            };
            self.core.net_enqueue(
                w,
                Outgoing::Control {
                    header: rts,
                    body,
                    body_len: net::RTS_BODY_BYTES as u8,
                },
            );
            id
        };
        let r = &mut self.core.reqs[id as usize];
        r.sbuf = data;
        r.peer_world = Some(w);
        self.progress_net(true);
        Ok(Some(id))
    }

    // ---------------------------------------------------------------- receives

    /// Starts a receive into `buf` matching `pattern`. `src_world` is the world rank of a
    /// specific source (None for `ANY_SOURCE`, then `members` lists who could send).
    pub(crate) fn start_recv(
        &mut self,
        buf: RawBufMut,
        pattern: Pattern,
        src_world: Option<u32>,
        members: &Rc<[u32]>,
    ) -> Result<ReqId> {
        let id = self.alloc_req(ReqKind::Recv);
        {
            let r = &mut self.core.reqs[id as usize];
            r.rbuf = buf;
            r.pattern = pattern;
            r.peer_world = src_world;
            if src_world.is_none() {
                r.any_source_members = Some(members.clone());
            }
        }
        match self.core.matching.take_unexpected(&pattern) {
            Some((env, (msg, from_local))) => {
                match msg {
                    Unexpected::Eager(data) => {
                        self.core.fill_recv(id, &env, &data, &[]);
                        self.core.keep_spare(data);
                    }
                    Unexpected::Rts {
                        addr,
                        len,
                        sreq,
                        solo,
                    } => self
                        .core
                        .start_rendezvous(id, &env, from_local, addr, len, sreq, solo),
                    Unexpected::NetRts { len, sreq } => self
                        .core
                        .start_net_rendezvous(id, &env, from_local, len, sreq),
                }
                self.flush_all();
            }
            None => {
                if let Some(w) = src_world {
                    let dead = match self.routes[w as usize] {
                        Route::Local(l) => self.core.dead[l as usize],
                        Route::Net(w) => self.core.net_dead[w as usize],
                        Route::Myself => false,
                    };
                    if dead {
                        self.core
                            .fail(id, dead_peer_error(self.world_rank, w, "receive from"));
                        return Ok(id);
                    }
                }
                self.core.matching.post(pattern, id);
            }
        }
        Ok(id)
    }

    /// Receives into `buf` at once when the message a receive from `src_world` (a live rank
    /// of this node) matching `pattern` (a named source) would get is already here, eager
    /// and of exactly `buf.len()` bytes, while no receive is posted: the oldest matching
    /// message among those waiting unmatched (a progress pass, in another call's wait,
    /// took it off the ring; its buffer goes back to the spare ones), or, when none
    /// matches, the next message in the rank's ring. Nothing else could take that message
    /// or come before it, so this is what posting the receive and polling would do,
    /// without a request or a pass through the posted queue. False, having taken nothing,
    /// otherwise (the caller posts the receive).
    #[inline]
    pub(crate) fn recv_eager_now(
        &mut self,
        buf: &mut [u8],
        pattern: &Pattern,
        src_world: u32,
    ) -> bool {
        let len = buf.len();
        self.take_here(buf, pattern, src_world, |n| n == len)
            .is_some()
    }

    /// [`Engine::recv_eager_now`] for a blocking point-to-point receive: a message of at
    /// most `buf.len()` bytes (a longer one, which the receive must report as truncated,
    /// is left for the usual way), with any tag `pattern` accepts; its status.
    #[inline]
    pub(crate) fn recv_p2p_now(
        &mut self,
        buf: &mut [u8],
        pattern: &Pattern,
        src_world: u32,
    ) -> Option<Status> {
        let len = buf.len();
        let (env, bytes) = self.take_here(buf, pattern, src_world, |n| n <= len)?;
        self.p2p_received_at_once += 1;
        Some(Status {
            source: env.src as i32,
            tag: env.tag,
            bytes,
            cancelled: false,
        })
    }

    /// What [`Engine::recv_eager_now`] and [`Engine::recv_p2p_now`] share: takes the
    /// message when its length `fits`, copying it to the front of `buf`; its envelope and
    /// length.
    #[inline(always)]
    fn take_here(
        &mut self,
        buf: &mut [u8],
        pattern: &Pattern,
        src_world: u32,
        fits: impl Fn(usize) -> bool,
    ) -> Option<(Envelope, usize)> {
        let Route::Local(peer) = self.routes[src_world as usize] else {
            return None;
        };
        let shm = self.shm.as_mut()?;
        let core = &mut self.core;
        if core.dead[peer as usize] || core.matching.posted_len() != 0 {
            return None;
        }
        if core.matching.unexpected_len() != 0 {
            let eager_fits =
                |u: &(Unexpected, u32)| matches!(&u.0, Unexpected::Eager(v) if fits(v.len()));
            match core.matching.take_unexpected_if(pattern, eager_fits) {
                Oldest::Taken(env, (Unexpected::Eager(v), _)) => {
                    let n = v.len();
                    buf[..n].copy_from_slice(&v);
                    core.keep_spare(v);
                    return Some((env, n));
                }
                Oldest::Taken(..) => unreachable!("only an eager message that fits is taken"),
                Oldest::Kept => return None,
                Oldest::None => {}
            }
        }
        let want = |h: &Header| {
            h.kind == KIND_EAGER
                && fits(h.len as usize)
                && pattern.matches(&Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                })
        };
        let copy = |h: &Header, a: &[u8], b: &[u8]| {
            buf[..a.len()].copy_from_slice(a);
            if !b.is_empty() {
                buf[a.len()..a.len() + b.len()].copy_from_slice(b);
            }
            let env = Envelope {
                ctx: h.ctx,
                src: h.src,
                tag: h.tag,
            };
            (env, a.len() + b.len())
        };
        shm.poll_if(peer, want, copy)
    }

    /// Calls of [`Engine::progress`] so far (wrapping); a caller compares two readings.
    pub(crate) fn progress_passes(&self) -> u64 {
        self.progress_passes
    }

    /// [`Engine::recv_p2p_now`]'s receives so far.
    pub(crate) fn p2p_received_at_once(&self) -> u64 {
        self.p2p_received_at_once
    }

    /// Starts bringing the next message from world rank `src_world` into this core's cache
    /// when it comes through this node's shared memory (a hint; nothing is taken): a
    /// receive that will look for it after its setup overlaps the transfer of the line from
    /// the sender's core with that setup.
    #[inline]
    pub(crate) fn prefetch_from(&self, src_world: u32) {
        if let (Route::Local(peer), Some(shm)) = (self.routes[src_world as usize], &self.shm) {
            shm.prefetch(peer);
        }
    }

    /// Whether [`Engine::recv_eager_now`] could take a message of `bytes` from `src_world`
    /// now that one lands: a live rank of this node, no receive posted, no message waiting
    /// unmatched, and not longer than the eager limit (a longer one comes by rendezvous,
    /// which only a posted receive takes). A caller about to wait on that rank's ring alone
    /// asks first.
    pub(crate) fn may_recv_eager_now(&self, src_world: u32, bytes: usize) -> bool {
        let Route::Local(peer) = self.routes[src_world as usize] else {
            return false;
        };
        let core = &self.core;
        self.shm.is_some()
            && bytes <= core.eager_bytes
            && !core.dead[peer as usize]
            && core.matching.posted_len() == 0
            && core.matching.unexpected_len() == 0
    }

    /// Probe: polls once, then reports the oldest unexpected message matching `pattern`.
    pub(crate) fn iprobe(&mut self, pattern: &Pattern) -> Option<Status> {
        self.progress();
        self.peek(pattern)
    }

    /// The oldest unexpected message matching `pattern`, without polling.
    pub(crate) fn peek(&self, pattern: &Pattern) -> Option<Status> {
        self.core
            .matching
            .peek_unexpected(pattern)
            .map(|(e, (u, _))| Status {
                source: e.src as i32,
                tag: e.tag,
                bytes: u.len(),
                cancelled: false,
            })
    }

    // ---------------------------------------------------------------- progress

    /// Polls every inbound ring, flushes queued outbound work and advances the started
    /// collectives (unless called from inside one). True if anything moved.
    pub(crate) fn progress(&mut self) -> bool {
        self.progress_passes = self.progress_passes.wrapping_add(1);
        let mut moved = self.progress_transports();
        if !self.idups.is_empty() && !self.idups_busy && self.creating == 0 {
            moved |= self.advance_idups();
        }
        if self.colls.is_empty() || self.colls_busy {
            return moved;
        }
        self.advance_colls() | moved
    }

    // ---------------------------------------------------------------- collectives

    /// Records a started collective, to be advanced by every progress call until it
    /// finishes.
    pub(crate) fn register_coll(&mut self, p: ActivePtr) {
        self.colls.push(p);
    }

    /// Forgets a collective (finished, or about to be freed); nothing if already forgotten.
    pub(crate) fn deregister_coll(&mut self, p: ActivePtr) {
        if let Some(i) = self.colls.iter().position(|&q| q == p) {
            self.colls.swap_remove(i);
        }
    }

    /// Advances one collective on its owner's behalf (test or wait), forgetting it once it
    /// has finished.
    ///
    /// # Safety
    /// `p` points to a live registered collective whose owner holds no reference to it
    /// during the call.
    pub(crate) unsafe fn drive_coll(&mut self, p: ActivePtr) {
        // SAFETY: per the contract; the guard keeps progress made inside from advancing
        // `p` (or any other collective) a second time.
        let (finished, _) = self.advancing_coll(|e| unsafe { coll_request::advance(p, e) });
        if finished {
            self.deregister_coll(p);
        }
    }

    /// Runs `f`, which advances a blocking collective that is not registered, under the
    /// same guard as [`Engine::drive_coll`]: progress made inside advances no collective.
    /// A panic inside `f` (a user reduction operation) leaves the guard set: catching it
    /// here cost 15-50 ns per small blocking collective (measured). The engine's callers
    /// clear it instead ([`Engine::clear_advancing`]) where they take the engine afresh,
    /// which no advance can be in progress at.
    pub(crate) fn advancing_coll<R>(&mut self, f: impl FnOnce(&mut Engine) -> R) -> R {
        debug_assert!(!self.colls_busy, "a collective driven from inside another");
        self.colls_busy = true;
        let r = f(self);
        self.colls_busy = false;
        r
    }

    /// Clears the guard [`Engine::advancing_coll`] set: for a caller that has just borrowed
    /// the engine (so nothing is being advanced: a set guard was left by a panic that
    /// unwound through an advance), or that a panic unwinds through.
    pub(crate) fn clear_advancing(&mut self) {
        self.colls_busy = false;
    }

    /// Advances every registered collective once; forgets the finished ones. True if one
    /// started a step or finished.
    fn advance_colls(&mut self) -> bool {
        self.advancing_coll(|e| {
            let mut moved = false;
            let mut i = 0;
            while i < e.colls.len() {
                let p = e.colls[i];
                // SAFETY: a registered collective is live (its request deregisters before
                // freeing it) and its owner holds no reference to it while it calls into
                // the engine; `colls_busy` keeps it from being advanced again from inside.
                let (finished, started) = unsafe { coll_request::advance(p, e) };
                moved |= started;
                if finished {
                    e.colls.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            moved
        })
    }

    /// Polls every inbound ring and flushes queued outbound work. True if anything moved.
    fn progress_transports(&mut self) -> bool {
        let moved = self.progress_net(false);
        self.progress_shm() | moved
    }

    /// Polls every inbound ring, flushes what is queued for local peers and runs deferred
    /// reads. True if anything moved.
    fn progress_shm(&mut self) -> bool {
        let mut moved = false;
        let Some(shm) = self.shm.as_mut() else {
            return moved;
        };
        let core = &mut self.core;
        let n = core.local_world.len() as u32;
        for peer in 0..n {
            if peer == core.my_local {
                continue;
            }
            while shm
                .poll(peer, |h, a, b| core.on_message(peer, h, a, b))
                .is_some()
            {
                moved = true;
            }
        }
        if core.outq_len > 0 {
            moved |= core.flush(shm);
        }
        if core.run_deferred_reads() {
            core.flush(shm);
            moved = true;
        }
        moved
    }

    /// Polls the TCP endpoint (when `now`, or when due: see the module comment), hands
    /// inbound frames to matching, fails the operations of peers found dead and sends what
    /// is queued. True if anything moved.
    fn progress_net(&mut self, now: bool) -> bool {
        let Some(tcp) = self.tcp.as_mut() else {
            return false;
        };
        self.tcp_tick = self.tcp_tick.wrapping_add(1);
        let due =
            now || self.net_only || self.core.net_outq_len > 0 || tcp.busy() || tcp.active() || {
                let every = if tcp.connection_count() == 0 {
                    TCP_IDLE_POLL_EVERY
                } else {
                    self.tcp_poll_every
                };
                self.tcp_tick.is_multiple_of(every)
            };
        if !due {
            return false;
        }
        let core = &mut self.core;
        let mut moved = tcp.poll_into(&mut NetSink(core));
        let lost = tcp.take_lost();
        for w in tcp.take_promoted() {
            core.net_fast[w as usize] = true;
        }
        if core.net_outq_len > 0 {
            moved |= core.flush_net(tcp);
        }
        if !lost.is_empty() {
            for (w, why) in lost {
                self.net_peer_lost(w, &why);
            }
            moved = true;
        }
        moved
    }

    /// Records that TCP peer `w` is gone and fails what waits on it.
    fn net_peer_lost(&mut self, w: u32, why: &str) {
        let core = &mut self.core;
        if core.net_dead[w as usize] {
            return;
        }
        core.net_dead[w as usize] = true;
        let dropped = core.net_outq[w as usize].len();
        core.net_outq[w as usize].clear();
        core.net_outq_len -= dropped;
        if self.world_rank != w {
            weft_core::diag!("weft: rank {}: lost rank {w}: {why}", self.world_rank);
        }
        self.fail_dead_requests();
    }

    /// Sends what matching queued, then runs deferred rendezvous reads and sends their
    /// acknowledgements.
    fn flush_all(&mut self) {
        if self.core.net_outq_len > 0 {
            if let Some(tcp) = self.tcp.as_mut() {
                self.core.flush_net(tcp);
            }
        }
        if let Some(shm) = self.shm.as_mut() {
            if self.core.outq_len > 0 {
                self.core.flush(shm);
            }
            if self.core.run_deferred_reads() {
                self.core.flush(shm);
            }
        }
    }

    /// Drives progress until `done(self)` holds, yielding when configured and checking now
    /// and then that the peers the pending requests wait for are alive.
    pub(crate) fn wait_until(&mut self, done: impl FnMut(&Engine) -> bool) {
        self.wait_spinning(done, 0, |_| false);
    }

    /// [`Engine::wait_until`] for a wait that knows whom it waits for: where the rank would
    /// yield, it keeps polling instead while `keep_core` says that no rank pinned to its
    /// core is needed for the wait to end (a collective area wait whose co-located ranks
    /// have all arrived: yielding would only switch to one of them, which has nothing to do
    /// but wait too, and back), for at most [`KEEP_CORE_MAX`] of the wait. np=4 on 2 cores,
    /// 8 B, p50 us, 4 jobs each: allgather 2.13-2.21 -> 1.94-2.06, alltoall 2.18-2.26 ->
    /// 1.95-2.10, reduce_scatter 2.28-2.33 -> 2.07-2.20.
    pub(crate) fn wait_until_sharing(
        &mut self,
        done: impl FnMut(&Engine) -> bool,
        keep_core: impl Fn(&Engine) -> bool,
    ) {
        self.wait_spinning(done, 0, keep_core);
    }

    /// [`Engine::wait_until`] for point-to-point completions. On a node with more ranks
    /// than cores (`WEFT_YIELD=auto`) it spins a learned time before it yields, as an
    /// adaptive lock does: the spin doubles (up to 50 us) after a wait that ended within it,
    /// and halves after one that had to yield (below 4 us it is nothing); at nothing, every
    /// 8th wait probes with a 4 us spin ([`learned_spin_ns`]). Two partners that run at the same time (a
    /// ping-pong) then answer each other without a trip through the scheduler, while a wait
    /// on a rank that is not running soon goes back to yielding at once. Collectives keep
    /// yielding at once: their waits depend on every rank being scheduled. A pinned rank
    /// whose unfinished requests all wait on ranks pinned to its own core yields at once
    /// and learns nothing from the wait: those ranks cannot run while it spins (a root
    /// receiving from its 3 leaves in turn, np=4 on 2 cores, spun its whole learned 50 us
    /// before the leaf on its core could send: 56 -> 5.3 us per round).
    pub(crate) fn wait_p2p_until(&mut self, mut done: impl FnMut(&Engine) -> bool) {
        if !self.adaptive_spin {
            self.wait_spinning(done, 0, |_| false);
            return;
        }
        if !self.colocated.is_empty() && !done(self) && !self.spin_may_help() {
            self.wait_spinning(done, 0, |_| false);
            return;
        }
        self.p2p_waits = self.p2p_waits.wrapping_add(1);
        let budget = if self.p2p_spin_ns == 0 {
            if self.p2p_waits.is_multiple_of(P2P_PROBE_EVERY_WAITS) {
                P2P_SPIN_PROBE_NS
            } else {
                0
            }
        } else {
            self.p2p_spin_ns
        };
        let got = self.wait_spinning(done, budget, |_| false);
        self.p2p_spin_ns = learned_spin_ns(self.p2p_spin_ns, budget, got);
    }

    /// Whether a rank not pinned to this rank's core could complete one of its unfinished
    /// requests (a receive from any source could be).
    fn spin_may_help(&self) -> bool {
        let waited_on = self
            .core
            .reqs
            .iter()
            .filter(|r| r.kind != ReqKind::Free && !r.done)
            .map(|r| r.peer_world.map(|w| self.routes[w as usize]));
        waits_off_my_core(waited_on, &self.colocated)
    }

    /// The wait loop. An idle stretch is the polls since the last progress. A rank that
    /// yields when idle first spins for `spin_ns` of each stretch. A rank with a
    /// core of its own spins through the spin window (`WEFT_YIELD_AFTER_US`): a reply is
    /// likely near, and on a loaded machine each yield can hand the core to another program
    /// for a whole time slice. After the window, or at once when the node has more ranks
    /// than cores, it yields on every idle poll. The clock is read only every few hundred
    /// idle polls (every 32 in a yielding rank's spin), so a short wait never reads it.
    fn wait_spinning(
        &mut self,
        mut done: impl FnMut(&Engine) -> bool,
        spin_ns: u32,
        keep_core: impl Fn(&Engine) -> bool,
    ) -> Spun {
        let mut idle: u32 = 0;
        let mut spun = Spun::Never;
        // The end of this stretch's spin (a yielding rank's), once the clock was read.
        let mut spin_end: Option<std::time::Instant> = None;
        let mut spinning = spin_ns > 0;
        let mut spin_until: Option<std::time::Instant> = None;
        let mut yielding = self.yield_when_idle;
        // Keeping the core (`keep_core`) ends for good after KEEP_CORE_MAX of one wait.
        let mut keeping = true;
        let mut keep_until: Option<std::time::Instant> = None;
        while !done(self) {
            if self.progress() {
                idle = 0;
                spin_until = None;
                spin_end = None;
                spinning = spin_ns > 0;
                yielding = self.yield_when_idle;
                continue;
            }
            idle = idle.wrapping_add(1);
            if yielding && spinning {
                if spun == Spun::Never {
                    spun = Spun::Enough;
                }
                idle_pause(idle);
                if idle.is_multiple_of(P2P_POLLS_PER_CLOCK_READ) {
                    let now = std::time::Instant::now();
                    match spin_end {
                        None => {
                            spin_end = Some(now + std::time::Duration::from_nanos(spin_ns.into()))
                        }
                        Some(t) if now >= t => spinning = false,
                        Some(_) => {}
                    }
                }
                continue;
            }
            if !yielding {
                idle_pause(idle);
                if idle.is_multiple_of(POLLS_PER_CLOCK_READ) {
                    if !self.never_yield {
                        let now = std::time::Instant::now();
                        match spin_until {
                            None => spin_until = Some(now + self.spin_window),
                            Some(t) if now >= t => yielding = true,
                            Some(_) => {}
                        }
                    }
                    if idle.is_multiple_of(LIVENESS_EVERY_SPINS) {
                        self.check_peers();
                    }
                }
                continue;
            }
            if keeping && keep_core(self) {
                idle_pause(idle);
                if idle.is_multiple_of(P2P_POLLS_PER_CLOCK_READ) {
                    let now = std::time::Instant::now();
                    match keep_until {
                        None => keep_until = Some(now + KEEP_CORE_MAX),
                        Some(t) if now >= t => keeping = false,
                        Some(_) => {}
                    }
                }
                continue;
            }
            spun = Spun::Yielded;
            self.idle_yields += 1;
            std::thread::yield_now();
            if idle.is_multiple_of(LIVENESS_EVERY_YIELDS) {
                self.check_peers();
            }
        }
        spun
    }

    /// Waits for one request to complete.
    pub(crate) fn wait(&mut self, id: ReqId) -> Result<Status> {
        self.wait_p2p_until(|e| e.is_done(id));
        self.outcome(id)
    }

    /// Marks dead local peers and fails the requests that can no longer complete. TCP peers
    /// that pending requests wait on get a connection, so one that died before ever sending
    /// is found (its connect is refused).
    fn check_peers(&mut self) {
        if let Some(tcp) = self.tcp.as_mut() {
            for r in &self.core.reqs {
                if r.kind == ReqKind::Free || r.done {
                    continue;
                }
                let waits_on = |w: u32| matches!(self.routes[w as usize], Route::Net(_));
                if let Some(w) = r.peer_world.filter(|&w| waits_on(w)) {
                    tcp.connect(w);
                } else if let Some(m) = &r.any_source_members {
                    for &w in m.iter().filter(|&&w| waits_on(w)) {
                        tcp.connect(w);
                    }
                }
            }
        }
        let mut any_dead = self.core.net_dead.iter().any(|&d| d);
        if let Some(shm) = self.shm.as_ref() {
            let mut newly_dead = false;
            for l in 0..self.core.local_world.len() as u32 {
                if l != self.core.my_local && !self.core.dead[l as usize] && !shm.peer_alive(l) {
                    self.core.dead[l as usize] = true;
                    newly_dead = true;
                }
            }
            if newly_dead {
                // Take whatever the dead peers managed to send before failing anything;
                // what is queued for them nobody will read.
                self.progress();
                let core = &mut self.core;
                for (l, q) in core.outq.iter_mut().enumerate() {
                    if core.dead[l] && !q.is_empty() {
                        core.outq_len -= q.len();
                        q.clear();
                    }
                }
            }
            any_dead |= self.core.dead.iter().any(|&d| d);
        }
        if any_dead {
            self.fail_dead_requests();
        }
    }

    /// Fails every pending request that depends on a dead peer (shared memory or TCP).
    fn fail_dead_requests(&mut self) {
        let me = self.world_rank;
        let routes = &self.routes;
        let dead_world = |w: u32| match routes[w as usize] {
            Route::Local(l) => self.core.dead[l as usize],
            Route::Net(w) => self.core.net_dead[w as usize],
            Route::Myself => false,
        };
        let mut to_fail = Vec::new();
        for (id, r) in self.core.reqs.iter().enumerate() {
            if r.kind == ReqKind::Free || r.done {
                continue;
            }
            if let Some(w) = r.peer_world {
                if dead_world(w) {
                    to_fail.push((id as ReqId, w, r.kind));
                }
            } else if let Some(m) = &r.any_source_members {
                if let Some(&w) = m.iter().find(|&&w| dead_world(w)) {
                    to_fail.push((id as ReqId, w, r.kind));
                }
            }
        }
        for (id, w, kind) in to_fail {
            let op = if kind == ReqKind::Send {
                "send to"
            } else {
                "receive from"
            };
            self.core.matching.cancel_posted(|&p| p == id);
            self.core.fail(id, dead_peer_error(me, w, op));
        }
    }
}

fn dead_peer_error(me: u32, peer: u32, op: &str) -> Error {
    Error::new(
        ErrorKind::PeerDead,
        format!("rank {me} {op} rank {peer}: rank {peer} is no longer running"),
    )
}

impl Core {
    fn enqueue(&mut self, peer: u32, item: Outgoing) {
        self.outq[peer as usize].push_back(item);
        self.outq_len += 1;
    }

    fn net_enqueue(&mut self, w: u32, item: Outgoing) {
        self.net_outq[w as usize].push_back(item);
        self.net_outq_len += 1;
    }

    /// Queues a TCP control frame (a `CTS`) for world rank `w`, ahead of everything queued
    /// for it: a `CTS` takes part in no matching order, and a peer that waits for it while
    /// our own fragments to it go out first would send nothing until they are all written
    /// (an exchange of two large messages would run one direction after the other).
    fn net_control(&mut self, w: u32, kind: u8, aux: u32, flags: u8, body_bytes: &[u8]) {
        let mut body = [0u8; CONTROL_BODY_BYTES];
        body[..body_bytes.len()].copy_from_slice(body_bytes);
        let header = Header {
            kind,
            aux,
            flags,
            ..Header::default()
        };
        self.net_outq[w as usize].push_front(Outgoing::Control {
            header,
            body,
            body_len: body_bytes.len() as u8,
        });
        self.net_outq_len += 1;
    }

    /// A matched TCP rendezvous: ask the sender for the data (or for nothing, when the
    /// message does not fit and the receive fails with truncation).
    fn start_net_rendezvous(&mut self, id: ReqId, env: &Envelope, w: u32, len: usize, sreq: u32) {
        if !self.matched(id, env, len) {
            self.net_control(
                w,
                net::KIND_CTS,
                sreq,
                net::CTS_DISCARD,
                &[0u8; net::CTS_BODY_BYTES],
            );
            return;
        }
        let r = &mut self.reqs[id as usize];
        r.frag_total = len;
        r.frag_received = 0;
        // Matched: only `w` may deliver the fragments (and only its death fails the receive).
        r.peer_world = Some(w);
        r.any_source_members = None;
        if len == 0 {
            r.done = true;
        }
        // A peer in memory-saving mode is asked for small fragments, which its connection's
        // small receive buffer holds. A message of at most two full fragments comes in two
        // halves (not below NET_MIN_SPLIT_BYTES): we read the first while the peer writes
        // the second, where one fragment would make us wait for all of it.
        let frag = if self.net_fast[w as usize] {
            self.net_fragment_bytes
                .min(len.div_ceil(2).max(NET_MIN_SPLIT_BYTES))
        } else {
            self.net_small_fragment_bytes
        };
        let mut body = [0u8; net::CTS_BODY_BYTES];
        body[..4].copy_from_slice(&id.to_le_bytes());
        body[4..].copy_from_slice(&(frag as u32).to_le_bytes());
        self.net_control(w, net::KIND_CTS, sreq, 0, &body);
    }

    /// Handles one frame from world rank `w` (its kind and length were checked by the codec).
    fn on_net_message(&mut self, w: u32, h: &Header, body: &[u8]) {
        match h.kind {
            net::KIND_EAGER => {
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                match self.matching.take_posted(&env) {
                    Some(id) => self.fill_recv(id, &env, body, &[]),
                    None => {
                        let msg = self.unexpected_copy(body, &[]);
                        self.matching.push_unexpected(env, (msg, w));
                    }
                }
            }
            net::KIND_RTS => {
                let len = u64::from_le_bytes(body[..8].try_into().expect("RTS body is 8 bytes"));
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                match self.matching.take_posted(&env) {
                    Some(id) => self.start_net_rendezvous(id, &env, w, len, h.aux),
                    None => self
                        .matching
                        .push_unexpected(env, (Unexpected::NetRts { len, sreq: h.aux }, w)),
                }
            }
            net::KIND_CTS => {
                let rreq = u32::from_le_bytes(body[..4].try_into().expect("CTS body is 8 bytes"));
                let frag = u32::from_le_bytes(body[4..8].try_into().expect("CTS body is 8 bytes"));
                let frag_bytes = (frag as usize).clamp(1, self.net_fragment_bytes);
                let discard = h.flags & net::CTS_DISCARD != 0;
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    if r.kind == ReqKind::Send && !r.done && r.peer_world == Some(w) {
                        if discard {
                            r.done = true;
                        } else {
                            r.remote_req = rreq;
                            r.frag_sent = 0;
                            r.frag_bytes = frag_bytes;
                            self.net_enqueue(w, Outgoing::Fragments { req: h.aux });
                        }
                    }
                }
            }
            net::KIND_FRAG => {
                if let Some((r, offset)) = self.net_fragment_target(w, h) {
                    // SAFETY: the receive buffer is alive and exclusively ours until
                    // completion; frag_total ≤ buffer length was checked when it matched.
                    let dst = unsafe { r.rbuf.slice_mut(offset, body.len()) };
                    dst.copy_from_slice(body);
                    r.frag_received += body.len();
                    if r.frag_received == r.frag_total && r.parts_left == 0 {
                        r.done = true;
                    }
                }
            }
            other => {
                weft_core::diag!(
                    "weft: ignoring TCP frame of kind {other} from rank {w} (the codec admits no such kind)"
                );
            }
        }
    }

    /// The receive a `FRAG` from world rank `w` belongs to and the fragment's offset in it,
    /// if it is one that may take it (a matched rendezvous from `w`, not complete, with room
    /// for the fragment where its offset says).
    fn net_fragment_target(&mut self, w: u32, h: &Header) -> Option<(&mut Request, usize)> {
        let r = self.reqs.get_mut(h.aux as usize)?;
        let len = h.len as usize;
        // Fragments may arrive out of order over several rails: each carries its offset (low
        // word in ctx, high word in tag).
        let offset = (h.ctx as u64 | (h.tag as u32 as u64) << 32) as usize;
        let fits = r.kind == ReqKind::Recv
            && !r.done
            && r.peer_world == Some(w)
            && r.frag_received + len <= r.frag_total
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= r.frag_total);
        fits.then_some((r, offset))
    }

    /// Sends queued TCP work while the connections take it. True if anything was sent.
    fn flush_net(&mut self, tcp: &mut Endpoint) -> bool {
        flush_queues(
            &mut self.net_outq,
            &mut self.net_outq_len,
            &mut self.reqs,
            tcp,
        )
    }

    fn fail(&mut self, id: ReqId, err: Error) {
        let r = &mut self.reqs[id as usize];
        if !r.done {
            r.error = Some(err);
            r.done = true;
        }
    }

    /// An unexpected eager message holding `a` then `b`, in a spare buffer when one is
    /// kept and the message is small (at most [`SPARE_BUF_MAX_BYTES`]).
    fn unexpected_copy(&mut self, a: &[u8], b: &[u8]) -> Unexpected {
        let len = a.len() + b.len();
        let mut v = match self.spare_bufs.pop() {
            Some(v) if len <= SPARE_BUF_MAX_BYTES => v,
            other => {
                self.spare_bufs.extend(other);
                Vec::with_capacity(len)
            }
        };
        v.clear();
        v.extend_from_slice(a);
        if !b.is_empty() {
            v.extend_from_slice(b);
        }
        Unexpected::Eager(v)
    }

    /// Keeps the buffer of a delivered unexpected message for the next one, while fewer
    /// than [`SPARE_BUFS`] are kept and it is small.
    fn keep_spare(&mut self, v: Vec<u8>) {
        // An empty one (a zero-length message's) would save no allocation.
        if self.spare_bufs.len() < SPARE_BUFS && (1..=SPARE_BUF_MAX_BYTES).contains(&v.capacity()) {
            self.spare_bufs.push(v);
        }
    }

    fn deliver_to_self(&mut self, env: Envelope, bytes: &[u8]) {
        match self.matching.take_posted(&env) {
            Some(id) => self.fill_recv(id, &env, bytes, &[]),
            None => {
                let msg = self.unexpected_copy(bytes, &[]);
                let me = self.my_local;
                self.matching.push_unexpected(env, (msg, me));
            }
        }
    }

    /// Records that receive `id` matched a message of `len` bytes; on truncation records the
    /// error and completes the request. Returns whether the message fits.
    fn matched(&mut self, id: ReqId, env: &Envelope, len: usize) -> bool {
        let r = &mut self.reqs[id as usize];
        r.status = Status {
            source: env.src as i32,
            tag: env.tag,
            bytes: len,
            cancelled: false,
        };
        if len > r.rbuf.len() {
            r.error = Some(truncation_error(env, len, r.rbuf.len()));
            r.done = true;
            return false;
        }
        true
    }

    /// Completes receive `id` with a message whose payload is `a` followed by `b`.
    fn fill_recv(&mut self, id: ReqId, env: &Envelope, a: &[u8], b: &[u8]) {
        let len = a.len() + b.len();
        if self.matched(id, env, len) {
            let r = &mut self.reqs[id as usize];
            // SAFETY: the receive's owner keeps the buffer alive until the request completes,
            // and nothing else writes it meanwhile.
            let dst = unsafe { r.rbuf.slice_mut(0, len) };
            dst[..a.len()].copy_from_slice(a);
            if !b.is_empty() {
                dst[a.len()..].copy_from_slice(b);
            }
            r.done = true;
        }
    }

    /// Queues a control message with a small body for local rank `peer`.
    fn control(&mut self, peer: u32, kind: u8, aux: u32, flags: u8, body_bytes: &[u8]) {
        let mut body = [0u8; CONTROL_BODY_BYTES];
        body[..body_bytes.len()].copy_from_slice(body_bytes);
        let header = Header {
            kind,
            aux,
            flags,
            ..Header::default()
        };
        self.enqueue(
            peer,
            Outgoing::Control {
                header,
                body,
                body_len: body_bytes.len() as u8,
            },
        );
    }

    /// A matched rendezvous: pull the data with CMA (sharing the copy with the sender for
    /// large messages unless it sent `solo`), or ask the sender to stream fragments when CMA
    /// is not allowed or the message is below `cma_min_bytes`.
    #[allow(clippy::too_many_arguments)]
    fn start_rendezvous(
        &mut self,
        id: ReqId,
        env: &Envelope,
        from_local: u32,
        addr: u64,
        len: usize,
        sreq: u32,
        solo: bool,
    ) {
        if !self.matched(id, env, len) {
            self.control(from_local, KIND_FIN, sreq, 0, &[]);
            return;
        }
        if self.cma[from_local as usize] == Cma::Unknown {
            // Not probed (a job of one rank has no segment to probe through): try it.
            self.cma[from_local as usize] = Cma::Yes;
        }
        // Below `cma_min_bytes` two copies through the segment beat CMA here: a CMA call
        // pins the peer's pages every time. np=2 ping-pong, 64 KiB 5.5 us with CMA against
        // 3.8-4.0 streamed, 128 KiB 9.7 against 5.9 (from 256 KiB, where both processes
        // share the copy, CMA is level: 1 MiB 35.8-36.3 against 35.7-36.8, 4 MiB 166-170
        // against 167-170, CMA from 256 KiB against this default); windowed bandwidth 64
        // KiB 10.2 against 27.5 GB/s, 1 MiB 12.4-14.8 against 16.7; collectives built on
        // messages (coll_lat p50, 3 jobs) np=2 1 MiB scatter 71 against 41 us, alltoallv 97
        // against 63, np=4 1 MiB gatherv 116 against 79, 4 MiB 873 against 591.
        if self.cma[from_local as usize] == Cma::Yes && len >= self.cma_min_bytes {
            if len >= self.coop_bytes && !solo {
                // Both sides copy: the sender writes the upper part into our buffer while we
                // read the lower part. Send the request first, read after (deferred), so the
                // two copies overlap.
                let split = (len / 2) & !4095;
                let r = &mut self.reqs[id as usize];
                r.parts_left = 2;
                let mut body = [0u8; CONTROL_BODY_BYTES];
                body[..4].copy_from_slice(&id.to_le_bytes());
                body[8..16].copy_from_slice(&r.rbuf.addr().to_le_bytes());
                body[16..24].copy_from_slice(&(split as u64).to_le_bytes());
                self.control(from_local, KIND_CTS_COOP, sreq, 0, &body);
                self.deferred_reads.push_back(DeferredRead {
                    req: id,
                    from_local,
                    addr,
                    len: split,
                    sreq,
                    cooperative: true,
                });
                return;
            }
            self.reqs[id as usize].parts_left = 1;
            self.read_part(DeferredRead {
                req: id,
                from_local,
                addr,
                len,
                sreq,
                cooperative: false,
            });
            return;
        }
        if len == 0 {
            // Nothing to stream (a synchronous send of no bytes): matching was the point.
            self.reqs[id as usize].done = true;
            self.control(from_local, KIND_FIN, sreq, 0, &[]);
            return;
        }
        let r = &mut self.reqs[id as usize];
        r.frag_total = len;
        r.frag_received = 0;
        self.control(from_local, KIND_CTS, sreq, 0, &id.to_le_bytes());
    }

    /// Performs the CMA reads queued by matched rendezvous. True if any ran.
    fn run_deferred_reads(&mut self) -> bool {
        let mut ran = false;
        while let Some(d) = self.deferred_reads.pop_front() {
            self.read_part(d);
            ran = true;
        }
        ran
    }

    /// Reads one rendezvous part with CMA and completes what it can.
    fn read_part(&mut self, d: DeferredRead) {
        let pid = self.pids[d.from_local as usize];
        let r = &mut self.reqs[d.req as usize];
        // SAFETY: the receive buffer is alive and exclusively ours until completion; a
        // cooperating sender writes only bytes at or above `d.len` (the split).
        let dst = unsafe { r.rbuf.slice_mut(0, d.len) };
        let result = cma::read(pid, d.addr, dst);
        let source = r.status.source;
        match result {
            Ok(()) => {}
            Err(e) if !d.cooperative && self.cma_mode == CmaMode::Auto && cma_refused(&e) => {
                // Refused although the probe passed (policy changed): stream instead.
                self.cma[d.from_local as usize] = Cma::No;
                let r = &mut self.reqs[d.req as usize];
                r.frag_total = d.len;
                r.frag_received = 0;
                r.parts_left = 0;
                self.control(d.from_local, KIND_CTS, d.sreq, 0, &d.req.to_le_bytes());
                return;
            }
            Err(e) => {
                if r.error.is_none() {
                    r.error = Some(Error::io(
                        format!("receive of {} bytes from rank {source} (pid {pid}) with process_vm_readv", d.len),
                        e,
                    ));
                }
            }
        }
        let r = &mut self.reqs[d.req as usize];
        r.parts_left = r.parts_left.saturating_sub(1);
        if r.parts_left == 0 {
            r.done = true;
        }
        self.control(d.from_local, KIND_FIN, d.sreq, 0, &[]);
    }

    /// Handles one message from local rank `peer`.
    fn on_message(&mut self, peer: u32, h: &Header, a: &[u8], b: &[u8]) {
        match h.kind {
            KIND_EAGER => {
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                match self.matching.take_posted(&env) {
                    Some(id) => self.fill_recv(id, &env, a, b),
                    None => {
                        let msg = self.unexpected_copy(a, b);
                        self.matching.push_unexpected(env, (msg, peer));
                    }
                }
            }
            KIND_RTS => {
                let mut body = [0u8; CONTROL_BODY_BYTES];
                copy_body(&mut body, a, b);
                let addr = u64::from_le_bytes(body[..8].try_into().unwrap());
                let len = u64::from_le_bytes(body[8..16].try_into().unwrap()) as usize;
                let solo = body[16] != 0;
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                match self.matching.take_posted(&env) {
                    Some(id) => self.start_rendezvous(id, &env, peer, addr, len, h.aux, solo),
                    None => self.matching.push_unexpected(
                        env,
                        (
                            Unexpected::Rts {
                                addr,
                                len,
                                sreq: h.aux,
                                solo,
                            },
                            peer,
                        ),
                    ),
                }
            }
            KIND_FIN => {
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    match r.kind {
                        ReqKind::Send => r.done = true,
                        // The peer is done with an abandoned send: its slot is free again.
                        ReqKind::Abandoned => {
                            r.kind = ReqKind::Free;
                            r.any_source_members = None;
                            r.rbuf = RawBufMut::new(&mut []);
                            self.free_reqs.push(h.aux);
                        }
                        _ => {}
                    }
                }
            }
            KIND_CTS_COOP => {
                let mut body = [0u8; CONTROL_BODY_BYTES];
                copy_body(&mut body, a, b);
                let rreq = u32::from_le_bytes(body[..4].try_into().unwrap());
                let raddr = u64::from_le_bytes(body[8..16].try_into().unwrap());
                let split = u64::from_le_bytes(body[16..24].try_into().unwrap()) as usize;
                let pid = self.pids[peer as usize];
                let Some(r) = self.reqs.get_mut(h.aux as usize) else {
                    return;
                };
                if r.kind == ReqKind::Abandoned {
                    // Our buffer is gone: tell the receiver its upper half failed rather than
                    // leave it waiting for it.
                    self.control(peer, KIND_FIN_COOP, rreq, 1, &[]);
                    return;
                }
                if r.kind != ReqKind::Send || r.done || split > r.sbuf.len() {
                    return;
                }
                // SAFETY: the send buffer stays alive until its request completes.
                let upper = unsafe { r.sbuf.slice(split, r.sbuf.len() - split) };
                let failed = cma::write(pid, raddr + split as u64, upper).is_err();
                // Not done yet: the receiver may still be reading the lower half from our
                // buffer; its FIN (which follows this CTS_COOP in the ring) completes the send.
                self.control(peer, KIND_FIN_COOP, rreq, u8::from(failed), &[]);
            }
            KIND_FIN_COOP => {
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    if r.kind == ReqKind::Recv && !r.done && r.parts_left > 0 {
                        if h.flags != 0 && r.error.is_none() {
                            r.error = Some(Error::new(
                                ErrorKind::Io,
                                format!("rank {} could not write its part of a {}-byte message with process_vm_writev", r.status.source, r.status.bytes),
                            ));
                        }
                        r.parts_left -= 1;
                        if r.parts_left == 0 {
                            r.done = true;
                        }
                    }
                }
            }
            KIND_CTS => {
                let mut body = [0u8; CONTROL_BODY_BYTES];
                copy_body(&mut body, a, b);
                let rreq = u32::from_le_bytes(body[..4].try_into().unwrap());
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    if r.kind == ReqKind::Send && !r.done {
                        r.remote_req = rreq;
                        r.frag_sent = 0;
                        self.enqueue(peer, Outgoing::Fragments { req: h.aux });
                    }
                }
            }
            KIND_FRAG => {
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    let len = a.len() + b.len();
                    if r.kind == ReqKind::Recv && !r.done && r.frag_received + len <= r.frag_total {
                        // SAFETY: the receive buffer is alive and exclusively ours until completion;
                        // frag_total ≤ buffer length was checked when the rendezvous matched.
                        let dst = unsafe { r.rbuf.slice_mut(r.frag_received, len) };
                        dst[..a.len()].copy_from_slice(a);
                        dst[a.len()..].copy_from_slice(b);
                        r.frag_received += len;
                        if r.frag_received == r.frag_total {
                            r.done = true;
                        }
                    }
                }
            }
            other => {
                weft_core::diag!("weft: rank local {}: ignoring message of unknown kind {other} from local rank {peer}", self.my_local);
            }
        }
    }

    /// Sends queued work while the rings have room. True if anything was sent.
    fn flush(&mut self, shm: &mut ShmNode) -> bool {
        let mut link = ShmLink {
            shm,
            fragment_bytes: self.fragment_bytes,
        };
        flush_queues(
            &mut self.outq,
            &mut self.outq_len,
            &mut self.reqs,
            &mut link,
        )
    }
}

/// What the TCP endpoint reads goes to matching; the rest of a large fragment's body is read
/// straight into its receive buffer.
struct NetSink<'a>(&'a mut Core);

// SAFETY: `place` hands out the part of a matched, incomplete rendezvous receive's buffer that
// one fragment fills, and counts the placement in the receive's `parts_left`. The receive
// completes only with every byte counted and no placement left (`placed` takes it back), so
// its buffer stays alive and is not handed back to the program while the endpoint writes into
// it; it fails early only when its peer is lost, which the endpoint reports after closing
// every connection of that peer (ending their placements).
unsafe impl weft_transport::tcp::Sink for NetSink<'_> {
    fn frame(&mut self, peer: u32, h: &Header, body: &[u8]) {
        self.0.on_net_message(peer, h, body);
    }

    fn place(&mut self, peer: u32, h: &Header) -> Option<RawBufMut> {
        let (r, offset) = self.0.net_fragment_target(peer, h)?;
        if r.parts_left == u8::MAX {
            return None;
        }
        // Counted now, so bytes claimed twice (by a confused peer) find no room left.
        r.frag_received += h.len as usize;
        r.parts_left += 1;
        // SAFETY: as in `on_net_message` for `FRAG`: the receive buffer is alive and ours.
        Some(RawBufMut::new(unsafe {
            r.rbuf.slice_mut(offset, h.len as usize)
        }))
    }

    fn placed(&mut self, _peer: u32, h: &Header) {
        let Some(r) = self.0.reqs.get_mut(h.aux as usize) else {
            return;
        };
        if r.kind != ReqKind::Recv || r.done || r.parts_left == 0 {
            return;
        }
        r.parts_left -= 1;
        if r.frag_received == r.frag_total && r.parts_left == 0 {
            r.done = true;
        }
    }
}

/// Where queued work goes: the shared-memory rings or the TCP endpoint. [`flush_queues`] is
/// the one loop over the queues; a link sends one message and cuts the next fragment of a
/// send streamed by fragments.
trait Link {
    /// Sends one message to `peer` (local rank or world rank, as the queues are indexed);
    /// false when it has no room now.
    fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool;
    /// The header and length of the next fragment of send `r` to `peer` (from `r.frag_sent`).
    fn fragment(&self, peer: u32, r: &Request) -> (Header, usize);
}

/// The shared-memory rings: fragments as large as the knob and the peer's ring allow, in
/// order (one ring per pair), so they carry no offset.
struct ShmLink<'a> {
    shm: &'a mut ShmNode,
    fragment_bytes: usize,
}

impl Link for ShmLink<'_> {
    #[inline]
    fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool {
        self.shm.try_send(peer, header, parts)
    }

    fn fragment(&self, peer: u32, r: &Request) -> (Header, usize) {
        let n = (r.sbuf.len() - r.frag_sent)
            .min(self.fragment_bytes)
            .min(self.shm.max_payload(peer));
        let h = Header {
            kind: KIND_FRAG,
            aux: r.remote_req,
            len: n as u32,
            ..Header::default()
        };
        (h, n)
    }
}

/// TCP: fragments of the size the receiver asked for, each carrying its offset (low word in
/// `ctx`, high word in `tag`) because rails may deliver them out of order.
impl Link for Endpoint {
    #[inline]
    fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool {
        Endpoint::try_send(self, peer, header, parts)
    }

    fn fragment(&self, _peer: u32, r: &Request) -> (Header, usize) {
        let n = (r.sbuf.len() - r.frag_sent).min(r.frag_bytes);
        let offset = r.frag_sent as u64;
        let h = Header {
            kind: net::KIND_FRAG,
            aux: r.remote_req,
            len: n as u32,
            ctx: offset as u32,
            tag: (offset >> 32) as u32 as i32,
            ..Header::default()
        };
        (h, n)
    }
}

/// Sends queued work, peer by peer and in each peer's order, while `link` takes it; counts
/// what leaves `queued` and completes eager sends and finished fragment streams. True if
/// anything was sent.
fn flush_queues(
    queues: &mut [VecDeque<Outgoing>],
    queued: &mut usize,
    reqs: &mut [Request],
    link: &mut impl Link,
) -> bool {
    let mut moved = false;
    for (peer, q) in queues.iter_mut().enumerate() {
        let peer = peer as u32;
        while let Some(item) = q.front_mut() {
            let sent_whole = match item {
                Outgoing::Data { header, data, req } => {
                    // SAFETY: a queued send's buffer stays alive until its request completes.
                    let bytes = unsafe { data.slice(0, data.len()) };
                    if link.try_send(peer, header, &[bytes]) {
                        if let Some(id) = req {
                            reqs[*id as usize].done = true;
                        }
                        true
                    } else {
                        false
                    }
                }
                Outgoing::Control {
                    header,
                    body,
                    body_len,
                } => {
                    let h = Header {
                        len: *body_len as u32,
                        ..*header
                    };
                    link.try_send(peer, &h, &[&body[..*body_len as usize]])
                }
                Outgoing::Fragments { req } => {
                    let r = &mut reqs[*req as usize];
                    loop {
                        if r.frag_sent >= r.sbuf.len() {
                            r.done = true;
                            break true;
                        }
                        let (h, n) = link.fragment(peer, r);
                        // SAFETY: the send buffer stays alive until its request completes.
                        let chunk = unsafe { r.sbuf.slice(r.frag_sent, n) };
                        if !link.try_send(peer, &h, &[chunk]) {
                            break false;
                        }
                        r.frag_sent += n;
                        moved = true;
                    }
                }
            };
            if !sent_whole {
                break;
            }
            q.pop_front();
            *queued -= 1;
            moved = true;
        }
    }
    moved
}

fn cma_refused(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPERM) | Some(libc::ENOSYS) | Some(libc::EACCES)
    )
}

fn copy_body(body: &mut [u8; CONTROL_BODY_BYTES], a: &[u8], b: &[u8]) {
    let n1 = a.len().min(CONTROL_BODY_BYTES);
    body[..n1].copy_from_slice(&a[..n1]);
    let n2 = b.len().min(CONTROL_BODY_BYTES - n1);
    body[n1..n1 + n2].copy_from_slice(&b[..n2]);
}

fn truncation_error(env: &Envelope, len: usize, cap: usize) -> Error {
    Error::new(
        ErrorKind::Truncate,
        format!(
            "message from rank {} with tag {} is {len} bytes but the receive buffer holds {cap}",
            env.src, env.tag
        ),
    )
}

#[cfg(test)]
mod spin_tests {
    use super::*;

    #[test]
    fn the_learned_spin_grows_on_success_and_falls_to_nothing_on_failures() {
        // A probe that ended within its spin starts the learning; successes double it up to
        // the cap; a wait that had to yield halves it, and below a probe it is nothing.
        let mut s = learned_spin_ns(0, P2P_SPIN_PROBE_NS, Spun::Enough);
        assert_eq!(s, 2 * P2P_SPIN_PROBE_NS);
        for _ in 0..10 {
            s = learned_spin_ns(s, s, Spun::Enough);
        }
        assert_eq!(s, P2P_SPIN_MAX_NS);
        assert_eq!(learned_spin_ns(s, s, Spun::Never), s, "nothing learned");
        s = learned_spin_ns(s, s, Spun::Yielded);
        assert_eq!(s, P2P_SPIN_MAX_NS / 2);
        while s > 0 {
            let next = learned_spin_ns(s, s, Spun::Yielded);
            assert!(next < s);
            s = next;
        }
        assert_eq!(learned_spin_ns(0, 0, Spun::Yielded), 0);
        assert_eq!(learned_spin_ns(0, P2P_SPIN_PROBE_NS, Spun::Yielded), 0);
    }

    #[test]
    fn spinning_helps_only_a_wait_on_a_rank_off_this_core() {
        // Local ranks 2 and 4 share this rank's core.
        let colocated = [2, 4];
        let local = |l| Some(Route::Local(l));
        assert!(!waits_off_my_core(
            [local(2), local(4)].into_iter(),
            &colocated
        ));
        assert!(
            !waits_off_my_core(std::iter::empty(), &colocated),
            "nothing waited on"
        );
        assert!(waits_off_my_core(
            [local(2), local(1)].into_iter(),
            &colocated
        ));
        assert!(
            waits_off_my_core([local(2), None].into_iter(), &colocated),
            "any source"
        );
        assert!(
            waits_off_my_core([Some(Route::Net(9))].into_iter(), &colocated),
            "a node away"
        );
    }
}
