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
//! Over a network transport (peers on other nodes, or every peer when `WEFT_TRANSPORTS`
//! leaves out shared memory), through the [`NetEndpoint`] the lane choice picked (TCP, UCX,
//! ...), one ordered message stream per direction:
//! - eager messages up to the endpoint's eager limit, matched on arrival or buffered as
//!   unexpected;
//! - larger (and synchronous) messages are announced; the receiver, once matched, hands the
//!   endpoint its buffer (or refuses the data when it would not fit) and the endpoint moves
//!   the bytes its own way (TCP: `CTS` and fragments read straight into the buffer; UCX:
//!   its rendezvous protocol). The answer to an announcement goes out ahead of what is
//!   queued for that peer, so both directions of an exchange move at once.
//! - A peer the endpoint reports lost is dead: its operations fail with `PeerDead`. The
//!   endpoint is polled only every few progress calls while shared-memory peers exist and
//!   nothing is pending on it, and rarely while it has no connection, so the shared-memory
//!   path stays as fast as without a network; it is polled on every call while traffic
//!   moved within the last few polls (the next step of an exchange).
//!
//! The short-message path (blocking send or receive of at most the eager limit, nothing
//! queued) allocates nothing and makes no system call: one ring write or one ring read.
//! The engine is single-threaded; the runtime wraps it in a `RefCell` per process.
//!
//! Started collectives register their schedules with the engine, and every progress call
//! advances them (MPI's progress rule: any blocking call moves every pending operation), with
//! a guard so progress made from inside a schedule never re-enters one. With none started,
//! this costs one length check per progress call.
//!
//! The code is split by concern: `post` (starting sends, receives and probes), `request`
//! (the request table and completing receives), `proto_shm` and `proto_net` (the two
//! protocols), `queue` (queued work and the loop that sends it), `wait` (spinning,
//! yielding and sleeping until a peer's delivery wakes the rank), `liveness` (dead peers), `ctx` (context ids and nonblocking duplications) and
//! `colls` (collective schedules, tuning and cached verdicts); this module holds the state
//! and the progress loop.

mod colls;
mod ctx;
pub(crate) mod instances;
mod io;
mod liveness;
mod post;
mod proto_net;
mod proto_shm;
mod queue;
mod request;
mod wait;

pub(crate) use io::IoSlot;
pub use request::Status;

use crate::coll::request::ActivePtr;
use crate::coll::Tuning;
use crate::config::{BlockMode, CmaMode, Config, YieldMode};
use crate::matching::Matching;
use ctx::IdupSlot;
use liveness::LIVENESS_PERIOD;
use proto_net::NetOut;
pub use proto_shm::shm_rendezvous;
use proto_shm::{Cma, DeferredRead};
use queue::Outgoing;
use request::Request;
use std::collections::VecDeque;
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::net::NetEndpoint;
use weft_transport::shm::ShmNode;

/// Index of a request in the engine's table.
pub(crate) type ReqId = u32;

/// Largest body of a control message.
const CONTROL_BODY_BYTES: usize = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Myself,
    /// A local rank, over the shared-memory rings.
    Local(u32),
    /// A world rank over the network endpoint.
    Net(u32),
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
    /// A rendezvous announcement over a network endpoint: the endpoint moves the data once
    /// the receive that matches it fetches it with `handle`.
    NetRts {
        len: usize,
        handle: weft_transport::net::Handle,
    },
    /// A synchronous send to oneself (a copy of its data): its send request `sreq`
    /// completes when a receive takes it.
    SelfSync {
        data: Vec<u8>,
        sreq: u32,
    },
}

impl Unexpected {
    fn len(&self) -> usize {
        match self {
            Unexpected::Eager(v) | Unexpected::SelfSync { data: v, .. } => v.len(),
            Unexpected::Rts { len, .. } | Unexpected::NetRts { len, .. } => *len,
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
    /// Per local peer: single-copy rendezvous messages of at least this many bytes are
    /// copied by both sides (chosen at start-up, [`shm_rendezvous`]).
    coop_bytes: Vec<usize>,
    /// Per local peer: rendezvous messages below this many bytes stream fragments even
    /// where CMA works (chosen at start-up, [`shm_rendezvous`]).
    cma_min_bytes: Vec<usize>,
    /// Network peers: work queued per world rank, its total, dead peers (by world rank) and
    /// the endpoint's eager limit.
    net_outq: Vec<VecDeque<NetOut>>,
    net_outq_len: usize,
    net_dead: Vec<bool>,
    /// Per world rank: why the network transport lost it (empty until then).
    net_why: Vec<String>,
    net_eager_bytes: usize,
    /// Larger sends up to this go eagerly from the caller's buffer (`NetEndpoint::start_push`).
    net_push_bytes: usize,
    /// Buffers of unexpected eager messages already delivered, kept for the next ones so
    /// that a message arriving before its receive costs no allocation
    /// ([`Core::unexpected_copy`]).
    spare_bufs: Vec<Vec<u8>>,
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
    /// When a wait sleeps in the kernel (`WEFT_BLOCK`).
    block_mode: BlockMode,
    /// `WEFT_BLOCK=auto`: how long a wait yields before it sleeps (`WEFT_BLOCK_AFTER_US`, or
    /// this rank's default: `node_load::block_after`).
    block_after: std::time::Duration,
    /// The longest sleep before the wait looks at its peers again (`WEFT_BLOCK_SLEEP_MS`).
    sleep_max: std::time::Duration,
    /// `WEFT_BLOCK=auto`: the node's load, read in the slow part of a wait to decide whether
    /// sleeping helps (`crate::node_load`; None under `off`/`on` or without `/proc/loadavg`).
    load_probe: Option<crate::node_load::LoadProbe>,
    /// The last reading's answer (whether other programs compete for the cores) and when
    /// the next reading is due.
    others_compete: bool,
    next_load_sample: Option<std::time::Instant>,
    /// `WEFT_BLOCK=auto`, a rank with a core of its own: how long a wait yields before it
    /// sleeps, learned from its sleeps (`node_load::learned_block_after`), from
    /// `block_after` up.
    block_after_learned: std::time::Duration,
    /// Until when this rank's core is taken as lost to a yield (`node_load::auto_sleeps`).
    core_lost_until: Option<std::time::Instant>,
    /// Cores this process may use and cores online (`crate::node_load::NodeLoad`).
    usable_cores: u32,
    online_cores: u32,
    /// Blocking point-to-point receives whose message was already here and was taken
    /// without a request ([`Engine::recv_p2p_now`]; for tests and tools).
    p2p_received_at_once: u64,
    /// Calls of [`Engine::progress`] so far (wrapping): whether a blocking call polled.
    progress_passes: u64,
    /// `WEFT_YIELD=auto` on a node with more ranks than cores: point-to-point waits spin for
    /// a learned time before they yield ([`Engine::wait_p2p_until`]).
    adaptive_spin: bool,
    /// A rank that yields at once (`WEFT_YIELD=on`, or `auto` on an oversubscribed node)
    /// with network peers: its point-to-point waits on a network peer spin for the learned
    /// time before they yield ([`Engine::wait_p2p_until`]), as the adaptive spin does.
    net_spin: bool,
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
    /// Core group of every world rank within its node (`NodeSetup::core_group_of`).
    core_group_of: Vec<u32>,
    /// The job's torus of nodes (`weft run --map`), numbered as node indices are.
    node_torus: Option<weft_model::mapping::Torus>,
    /// The network endpoint (None when no peer is reached over a network).
    net: Option<Box<dyn NetEndpoint>>,
    /// Progress calls between polls of the network endpoint while shared-memory peers exist
    /// and it is idle (`WEFT_TCP_POLL_EVERY`).
    net_poll_every: u32,
    net_tick: u32,
    /// True when no peer is on the shared-memory rings: the network is polled on every call.
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
    /// Nonblocking collective file accesses (`weft::io`), advanced like the collectives.
    io_ops: Vec<io::IoSlot>,
    /// True while the file accesses are being advanced (no re-entry from their own waits).
    io_busy: bool,
    /// Context id ranges `[first, end)` taken (reserved, claimed or agreed) on this process
    /// while duplications are in flight: their checks look for overlaps here.
    ctx_taken: Vec<(u32, u32)>,
    /// Blocking communicator creations in progress: a duplication takes no decision on
    /// context ids while one reads and sets them (see `Comm::idup`).
    creating: u32,
    /// The process's other weft instances (the universes of its spawns), which every
    /// progress call polls too; None while this is its only one ([`instances`]).
    instances: Option<instances::Instances>,
}

/// A rank in no core group (`NodeSetup::core_group_of`).
pub(crate) const NO_CORE_GROUP: u32 = u32::MAX;

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
    /// Core group (L3 / NUMA / package, `crate::topology`) of every world rank within its
    /// node; [`NO_CORE_GROUP`] where the rank is in none (empty: none anywhere).
    pub core_group_of: Vec<u32>,
    /// The network endpoint, ready to reach its peers, when some peer is reached over a
    /// network.
    pub net: Option<Box<dyn NetEndpoint>>,
    /// Whether the ranks of this node are reached over the network rather than shared
    /// memory (`WEFT_TRANSPORTS` without `shm`).
    pub net_local: bool,
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
            } else if node.net_local {
                Route::Net(w)
            } else {
                Route::Local(local as u32)
            };
        }
        let net_peers = routes.iter().filter(|r| matches!(r, Route::Net(_))).count();
        if net_peers > 0 && node.net.is_none() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "rank {world_rank}: {net_peers} of {world_size} ranks need a network transport (other nodes, or WEFT_TRANSPORTS without shm) but none is enabled (WEFT_TRANSPORTS)"
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
        // Each pair's rendezvous thresholds, from the lanes' figures (the same for every pair
        // the CMA probe passed for, the knobs over them).
        let rdv = shm_rendezvous(config, nlocal as u32, true)?;
        let clamp = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let (cma_min_bytes, coop_bytes): (Vec<usize>, Vec<usize>) = cma_vec
            .iter()
            .map(|c| match c {
                Cma::No => (usize::MAX, usize::MAX),
                _ => (
                    clamp(rdv.single_copy_from_bytes),
                    clamp(rdv.split_from_bytes),
                ),
            })
            .unzip();
        let oversubscribed = nlocal > crate::bind::usable_cores();
        let yield_when_idle = match config.yield_mode {
            YieldMode::Always => true,
            YieldMode::Never => false,
            YieldMode::Auto => oversubscribed,
        };
        let mut shm = node.shm;
        if let Some(shm) = shm.as_mut() {
            shm.set_wakes(config.block_mode != BlockMode::Never);
        }
        let block_after = crate::node_load::block_after(
            config.block_after_us.map(std::time::Duration::from_micros),
            yield_when_idle,
        );
        Ok(Engine {
            world_rank,
            routes,
            shm,
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
                coop_bytes,
                cma_min_bytes,
                net_outq: (0..world_size).map(|_| VecDeque::new()).collect(),
                net_outq_len: 0,
                net_dead: vec![false; world_size as usize],
                net_why: vec![String::new(); world_size as usize],
                net_eager_bytes: node.net.as_ref().map_or(0, |n| n.eager_bytes()),
                net_push_bytes: node.net.as_ref().map_or(0, |n| n.push_bytes()),
                spare_bufs: Vec::new(),
            },
            yield_when_idle,
            oversubscribed,
            never_yield: matches!(config.yield_mode, YieldMode::Never),
            colocated: Vec::new(),
            spin_window: std::time::Duration::from_micros(config.yield_after_us),
            idle_yields: 0,
            block_mode: config.block_mode,
            block_after,
            sleep_max: std::time::Duration::from_millis(config.block_sleep_ms.max(1)),
            load_probe: (config.block_mode == BlockMode::Auto)
                .then(crate::node_load::LoadProbe::open)
                .flatten(),
            others_compete: false,
            next_load_sample: None,
            core_lost_until: None,
            block_after_learned: block_after,
            usable_cores: crate::node_load::usable_cores(),
            online_cores: crate::node_load::online_cores(),
            p2p_received_at_once: 0,
            progress_passes: 0,
            adaptive_spin: matches!(config.yield_mode, YieldMode::Auto) && oversubscribed,
            net_spin: yield_when_idle && net_peers > 0,
            p2p_spin_ns: 0,
            p2p_waits: 0,
            next_ctx: 4,
            tuning: Rc::new(
                Tuning::from_values(&config.values)?
                    .with_inter_rails(node.net.as_ref().map_or(1, |n| n.rails())),
            ),
            tuning_gen: 0,
            cma_verdict: None,
            cma_voted: false,
            node_of: node.node_of,
            core_group_of: node.core_group_of,
            node_torus: config.node_torus.clone(),
            net: node.net,
            net_poll_every: config.tcp_poll_every.max(1),
            net_tick: 0,
            net_only,
            colls: Vec::new(),
            colls_busy: false,
            coll_state: crate::coll::CallState::default(),
            idups: Vec::new(),
            idups_busy: false,
            next_idup_key: 0,
            io_ops: Vec::new(),
            io_busy: false,
            ctx_taken: Vec::new(),
            creating: 0,
            instances: None,
        })
    }

    /// Pushes out everything queued for peers, over TCP and the shared-memory rings, and runs
    /// the deferred reads (finalize: a rank that stops polling must not keep bytes its peers
    /// wait for — a `FIN` queued behind a full ring leaves the sender's rendezvous send
    /// pending for ever). Gives up on peers found dead, and after `timeout`.
    pub(crate) fn drain(&mut self, timeout: std::time::Duration) {
        let start = std::time::Instant::now();
        let mut last_check = start;
        while self.unsent() {
            // Polling the rings also lets a peer's consumption be seen and frees room.
            self.progress_net(true);
            self.progress_shm();
            let now = std::time::Instant::now();
            if now.duration_since(start) > timeout {
                return;
            }
            if now.duration_since(last_check) >= LIVENESS_PERIOD {
                // A dead peer's queue is never consumed: `check_peers` drops it.
                last_check = now;
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
        self.net.as_ref().is_some_and(|n| n.unsent())
            || self.core.net_outq_len > 0
            || self.core.outq_len > 0
            || !self.core.deferred_reads.is_empty()
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

    /// Core group of every world rank within its node, [`NO_CORE_GROUP`] for none (empty
    /// when no rank has one): with the node, what the hierarchical collectives group by.
    pub(crate) fn core_group_of(&self) -> &[u32] {
        &self.core_group_of
    }

    /// The job's torus of nodes, node `k` at torus position `k`, when the launcher gave one.
    pub(crate) fn node_torus(&self) -> Option<&weft_model::mapping::Torus> {
        self.node_torus.as_ref()
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

    /// Times this rank slept in the kernel while waiting (`WEFT_BLOCK`), until a peer's
    /// delivery woke it or the sleep's timeout passed.
    pub(crate) fn futex_sleeps(&self) -> u64 {
        self.shm.as_ref().map_or(0, ShmNode::sleeps)
    }

    /// Of those sleeps, the ones a peer's delivery ended (not the timeout).
    pub(crate) fn futex_sleeps_woken(&self) -> u64 {
        self.shm.as_ref().map_or(0, ShmNode::sleeps_woken)
    }

    /// Whether world rank `w`, a rank of this node, announced that it sleeps in a wait.
    pub(crate) fn peer_sleeping(&self, w: u32) -> bool {
        match (self.routes.get(w as usize), self.shm.as_ref()) {
            (Some(Route::Local(l)), Some(shm)) => shm.asleep(*l),
            _ => false,
        }
    }

    /// Polls every inbound ring, flushes queued outbound work and advances the started
    /// collectives (unless called from inside one), then, in a process of several weft
    /// instances, polls the others once ([`instances`]). True if anything moved.
    #[inline]
    pub(crate) fn progress(&mut self) -> bool {
        let moved = self.progress_self();
        if self.instances.is_some() {
            return self.progress_other_instances() | moved;
        }
        moved
    }

    /// [`Engine::progress`] of this instance alone.
    fn progress_self(&mut self) -> bool {
        self.progress_passes = self.progress_passes.wrapping_add(1);
        let mut moved = self.progress_transports();
        if !self.idups.is_empty() && !self.idups_busy && self.creating == 0 {
            moved |= self.advance_idups();
        }
        if self.io_pending() {
            moved |= self.advance_io();
        }
        if self.colls.is_empty() || self.colls_busy {
            return moved;
        }
        self.advance_colls() | moved
    }

    /// Polls every inbound ring and flushes queued outbound work. True if anything moved.
    fn progress_transports(&mut self) -> bool {
        let moved = self.progress_net(false);
        self.progress_shm() | moved
    }

    /// Sends what matching queued, then runs deferred rendezvous reads and sends their
    /// acknowledgements.
    fn flush_all(&mut self) {
        if self.core.net_outq_len > 0 {
            if let Some(net) = self.net.as_mut() {
                self.core.flush_net(net.as_mut());
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
}
