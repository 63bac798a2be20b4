//! The weft runtime: configuration, the progress engine, point-to-point messaging and
//! communicators, on top of the data path in `weft-transport` and the bootstrap store of
//! `weft-boot`.
//!
//! ```no_run
//! let weft = weft::init()?;
//! let world = weft.world();
//! if world.rank() == 0 {
//!     world.send(&[1u64, 2, 3], 1, 7)?;
//! } else if world.rank() == 1 {
//!     let mut buf = [0u64; 3];
//!     let status = world.recv(&mut buf, 0, 7)?;
//!     assert_eq!(status.count::<u64>(), 3);
//! }
//! weft.finalize()?;
//! # Ok::<(), weft::Error>(())
//! ```
//!
//! Start programs with `weft run -n N program`; run directly, a program is a job of one rank.
//! This crate must not depend on the surfaces above it (CLI, launcher, C ABI); its `unsafe`
//! is confined to the transport crate's buffer views.

mod bind;
pub mod coll;
pub mod comm;
pub mod config;
pub mod dtype;
mod engine;
pub mod knobs;
pub mod lanes;
pub mod matching;
mod p2p;
pub mod raw;
pub mod rma;
pub mod sync;

pub use coll::{CollRequest, Datatype, Op, F32I32, F64I32, I32I32, I64I32};
pub use comm::{Comm, UNDEFINED};
pub use config::Config;
pub use engine::Status;
pub use p2p::{Request, Scope};
pub use weft_core::{Error, ErrorKind, Rank, Result, Tag, ANY_SOURCE, ANY_TAG, TAG_UB};

use engine::{Engine, NodeSetup};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_boot::Store;
use weft_model::lanes::{LaneDesc, LanePolicy, TransportKind};
use weft_transport::shm::ShmNode;

/// An initialised weft process: the world and self communicators and the progress engine.
/// One per process (per thread in in-process tests); not `Send`.
pub struct Weft {
    engine: Rc<RefCell<Engine>>,
    world: Comm,
    myself: Comm,
    store: Option<Arc<dyn Store>>,
    config: Config,
    job_id: String,
    node_id: String,
    local_rank: u32,
    local_size: u32,
}

/// Where a rank learns who it is: from the launcher's environment, or given explicitly.
pub struct Launch {
    /// Rank in the job.
    pub rank: u32,
    /// Ranks in the job.
    pub size: u32,
    /// Job id (names the shared-memory segment).
    pub job_id: String,
    /// This rank's node identity.
    pub node_id: String,
    /// The job's bootstrap store (None for a job of one rank).
    pub store: Option<Arc<dyn Store>>,
}

/// The job secret (hex) of a launched rank, kept in this process's memory once the first
/// [`init`] took it out of the environment, so a later init still proves membership of the
/// job. It never goes back into the environment.
static JOB_SECRET_HEX: Mutex<Option<String>> = Mutex::new(None);

/// Successful calls of [`init`] in this process so far; the n-th (counting from 0) keeps its
/// bootstrap records under `init<n>/` (see [`InitStore`]). A failed init does not count, so
/// a rank that retries after fixing its settings meets its peers' attempt.
static INITS: AtomicU32 = AtomicU32::new(0);

/// Initialises weft from the environment `weft run` sets (or as a job of one rank when run
/// directly). Reads every knob once; unknown `WEFT_*` variables get a warning.
///
/// A process may init again after dropping (or finalizing) its [`Weft`], as a program that
/// restarts its communication or a test that inits twice does. Launched by `weft run`, that
/// is collective like the first init: every rank of the job must init the same number of
/// times (a rank that inits alone waits `WEFT_BOOT_TIMEOUT_S` for the others, then fails
/// saying so). MPI programs cannot: MPI forbids `MPI_Init` after `MPI_Finalize`.
pub fn init() -> Result<Weft> {
    init_layer(None)
}

/// [`init`] for a programming model that shares the process with another one on its own
/// weft instance, e.g. OpenSHMEM beside MPI (each library holds its own copy of weft):
/// every bootstrap record of this instance is kept under `<layer>/`, so the two instances of
/// a rank, started in either order, never read each other's records. Rank and size are the
/// launcher's, so both instances number the processes alike. The job secret is taken from
/// the process's initial environment when the other instance has already taken it out of
/// the environment.
pub fn init_for(layer: &str) -> Result<Weft> {
    init_layer(Some(layer))
}

/// The value of `name` in the environment this process was started with
/// (`/proc/self/environ`, which later changes of the environment leave alone).
fn initial_environment_var(name: &str) -> Option<String> {
    let environ = std::fs::read("/proc/self/environ").ok()?;
    environ.split(|&b| b == 0).find_map(|entry| {
        let value = entry.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
        String::from_utf8(value.to_vec()).ok()
    })
}

fn init_layer(layer: Option<&str>) -> Result<Weft> {
    let mut config = Config::from_env()?;
    // The secret proves membership of the job (bootstrap store, TCP handshakes). It is read
    // and then leaves the environment, so whatever this rank starts (a shell, a tool, an
    // `exec`) does not inherit it; this process keeps it for a later init. Done here, at
    // start-up, because changing the environment races with other threads reading it.
    let secret_hex = {
        let mut kept = JOB_SECRET_HEX.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(hex) = std::env::var("WEFT_JOB_SECRET") {
            *kept = Some(hex);
        } else if kept.is_none() {
            // Another copy of weft in this process (another library's) took it out first.
            *kept = initial_environment_var("WEFT_JOB_SECRET");
        }
        kept.clone()
    };
    std::env::remove_var("WEFT_JOB_SECRET");
    if config.job_secret.is_none() {
        if let Some(hex) = secret_hex.as_deref().filter(|h| !h.is_empty()) {
            config.job_secret = Some(weft_boot::auth::decode_hex("WEFT_JOB_SECRET", hex)?);
        }
    }
    let generation = INITS.load(Ordering::Relaxed);
    let client = weft_boot::client_from_vars(|name| {
        if name == "WEFT_JOB_SECRET" {
            secret_hex.clone()
        } else {
            std::env::var(name).ok()
        }
    })?;
    let prefix = match (layer, generation) {
        (None, 0) => String::new(),
        (None, g) => format!("init{g}/"),
        (Some(l), 0) => format!("{l}/"),
        (Some(l), g) => format!("{l}/init{g}/"),
    };
    let store: Option<Arc<dyn Store>> = match client {
        Some(c) if prefix.is_empty() => Some(Arc::new(c)),
        Some(c) => Some(Arc::new(InitStore { inner: c, prefix })),
        None => None,
    };
    let v = &config.values;
    let (rank, size) = match &store {
        Some(_) => {
            let rank = v.uint("WEFT_RANK").ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    "WEFT_BOOT_ADDR is set but WEFT_RANK is not",
                )
            })?;
            let size = v.uint("WEFT_SIZE").ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    "WEFT_BOOT_ADDR is set but WEFT_SIZE is not",
                )
            })?;
            if size == 0 || rank >= size || size > u32::MAX as u64 {
                return Err(Error::new(
                    ErrorKind::Config,
                    format!("WEFT_RANK={rank} WEFT_SIZE={size}: rank must be below size"),
                ));
            }
            (rank as u32, size as u32)
        }
        None => (0, 1),
    };
    let job_id = v
        .text("WEFT_JOB_ID")
        .unwrap_or_else(|| format!("single{}", std::process::id()));
    let node_id = v.text("WEFT_NODE_ID").unwrap_or_else(hostname);
    init_with(
        Launch {
            rank,
            size,
            job_id,
            node_id,
            store,
        },
        config,
    )
    .inspect(|weft| {
        INITS.store(generation + 1, Ordering::Relaxed);
        weft.pin_to_core();
    })
    .map_err(|e| match generation {
        0 => e,
        n => e.context(format!(
            "init number {} of this process (every rank of the job must init as often)",
            n + 1
        )),
    })
}

/// The bootstrap store of a process's second and later [`init`], and of an [`init_for`]: the
/// same job store, with every key and barrier name under a prefix of its own, so start-up
/// does not read what an earlier init, or another layer's, left there (a segment's "ready"
/// mark, old TCP addresses). Every rank of the job inits the same number of times, so the
/// prefixes agree.
struct InitStore {
    inner: weft_boot::TcpStoreClient,
    prefix: String,
}

impl Store for InitStore {
    fn put(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.put(&format!("{}{key}", self.prefix), value)
    }

    fn get(&self, key: &str, timeout: Duration) -> Result<Vec<u8>> {
        self.inner.get(&format!("{}{key}", self.prefix), timeout)
    }

    fn barrier(&self, name: &str, count: u32, timeout: Duration) -> Result<()> {
        self.inner
            .barrier(&format!("{}{name}", self.prefix), count, timeout)
    }

    fn abort(&self, code: i32, message: &str) -> Result<()> {
        self.inner.abort(code, message)
    }
}

/// Initialises weft for an explicitly described rank (in-process tests use a `MemStore`).
pub fn init_with(launch: Launch, config: Config) -> Result<Weft> {
    let Launch {
        rank,
        size,
        job_id,
        node_id,
        store,
    } = launch;
    let timeout = Duration::from_secs(config.boot_timeout_s);
    let (local_world, my_local, shm, node_of) = match &store {
        None => (vec![rank], 0, None, vec![0]),
        Some(store) => {
            store
                .put(&format!("node/{rank}"), node_id.as_bytes())
                .map_err(|e| e.context(format!("rank {rank}: start-up")))?;
            let mut local_world = Vec::new();
            let mut node_names: Vec<Vec<u8>> = Vec::new();
            let mut node_of = Vec::with_capacity(size as usize);
            for r in 0..size {
                let n = store.get(&format!("node/{r}"), timeout).map_err(|e| {
                    e.context(format!("rank {rank}: start-up, waiting for rank {r}"))
                })?;
                if n == node_id.as_bytes() {
                    local_world.push(r);
                }
                let index = match node_names.iter().position(|k| *k == n) {
                    Some(i) => i,
                    None => {
                        node_names.push(n);
                        node_names.len() - 1
                    }
                };
                node_of.push(index as u32);
            }
            let my_local = local_world
                .iter()
                .position(|&r| r == rank)
                .expect("own rank is local") as u32;
            // Forced TCP (WEFT_TRANSPORTS without shm) makes no segment: nothing, not even
            // a collective, may then go through shared memory.
            let shm = if local_world.len() > 1 && config.transports.contains(&TransportKind::SHM) {
                let name = format!("/weft-{job_id}-{:08x}", fnv1a(node_id.as_bytes()));
                // Every pair starts on a small ring; the busiest peers move to large ones.
                let (layout, modes) = config
                    .shm_layout(local_world.len() as u32)
                    .map_err(|e| e.context(format!("rank {rank}")))?;
                let ready_key = format!("shm/{node_id}");
                let node = if my_local == 0 {
                    let node = ShmNode::create_with(&name, layout, modes, 0)
                        .map_err(|e| e.context(format!("rank {rank}")))?;
                    // On any failure before everyone attached, the creator removes the name.
                    store
                        .put(&ready_key, b"1")
                        .inspect_err(|_| drop(node.unlink()))?;
                    node
                } else {
                    store.get(&ready_key, timeout)?;
                    ShmNode::attach(&name, my_local)
                        .map_err(|e| e.context(format!("rank {rank}")))?
                };
                store
                    .barrier(
                        &format!("shm-attached/{node_id}"),
                        layout.local_size,
                        timeout,
                    )
                    .inspect_err(|_| {
                        if my_local == 0 {
                            drop(node.unlink());
                        }
                    })?;
                if my_local == 0 {
                    node.unlink()?;
                }
                Some(node)
            } else {
                None
            };
            (local_world, my_local, shm, node_of)
        }
    };
    let local_size = local_world.len() as u32;
    let net_local = !config.transports.contains(&TransportKind::SHM);
    let net = match &store {
        Some(store) => lanes::open_network(
            &lanes::Placement {
                rank,
                size,
                node_of: &node_of,
                local_size,
            },
            &config,
            store,
        )?,
        None => None,
    };
    let engine = Engine::new(
        rank,
        size,
        NodeSetup {
            local_world,
            my_local,
            shm,
            node_of,
            net,
            net_local,
        },
        &config,
    )?;
    let engine = Rc::new(RefCell::new(engine));
    let world = Comm::new(engine.clone(), 0, rank, (0..size).collect(), "world".into());
    let myself = Comm::new(engine.clone(), 2, 0, Rc::from(vec![rank]), "self".into());
    Ok(Weft {
        engine,
        world,
        myself,
        store,
        config,
        job_id,
        node_id,
        local_rank: my_local,
        local_size,
    })
}

/// The lanes this process could use, as each transport describes itself (with the lane
/// file's figures over them), in the model's terms: what the lane choice scores.
pub fn lane_candidates(config: &Config) -> Result<Vec<LaneDesc>> {
    Ok(lanes::candidates(config, false)?
        .iter()
        .map(lanes::to_model)
        .collect())
}

/// The lane policy the knobs describe.
pub fn lane_policy(config: &Config) -> LanePolicy {
    lanes::policy(config)
}

impl Weft {
    /// The communicator of every rank in the job (MPI_COMM_WORLD).
    pub fn world(&self) -> Comm {
        self.world.clone()
    }

    /// The communicator of this rank alone (MPI_COMM_SELF).
    pub fn self_comm(&self) -> Comm {
        self.myself.clone()
    }

    /// The configuration read at init.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The job id.
    pub fn job_id(&self) -> &str {
        &self.job_id
    }

    /// This rank's node identity.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// Rank among the job's ranks on this node, and how many there are.
    pub fn local(&self) -> (u32, u32) {
        (self.local_rank, self.local_size)
    }

    /// Pins this process to its core under `WEFT_BIND` (launched ranks only: [`init`]
    /// calls it; in-process ranks are threads of one test). A refusal is reported once on
    /// standard error and the rank runs unpinned.
    fn pin_to_core(&self) {
        let Some(cpu) = bind::cpu_for(self.config.bind, self.local_rank, self.local_size) else {
            self.report_binding(None);
            return;
        };
        if let Err(e) = bind::pin(cpu) {
            weft_core::diag!(
                "weft: rank {}: WEFT_BIND: could not pin to CPU {cpu} ({e}); running unpinned",
                self.world.rank()
            );
            self.report_binding(None);
            return;
        }
        self.report_binding(Some(cpu));
        let colocated = (0..self.local_size)
            .filter(|&l| {
                l != self.local_rank
                    && bind::cpu_for(self.config.bind, l, self.local_size) == Some(cpu)
            })
            .collect();
        let mut e = self.engine.borrow_mut();
        // `WEFT_YIELD=on` yields at once, always: only `auto` keeps a core.
        if self.config.yield_mode == config::YieldMode::Auto {
            e.set_colocated(colocated);
        }
    }

    /// With `WEFT_REPORT_BINDINGS`: one line on stderr saying where this rank runs (`cpu`,
    /// or every CPU it may use when not pinned), like `mpirun --report-bindings`.
    fn report_binding(&self, cpu: Option<usize>) {
        if !self.config.report_bindings {
            return;
        }
        let mode = match self.config.bind {
            config::BindMode::Auto => "auto",
            config::BindMode::Core => "core",
            config::BindMode::None => "none",
        };
        let place = match cpu {
            Some(c) => format!("bound to CPU {c}"),
            None => format!("not bound (CPUs {})", bind::allowed_cpus_text()),
        };
        eprintln!(
            "weft: rank {} (local rank {} of {}) on {} pid {}: {place} (WEFT_BIND={mode})",
            self.world.rank(),
            self.local_rank,
            self.local_size,
            self.node_id,
            std::process::id()
        );
    }

    /// Whether the engine yields the CPU when idle (oversubscribed node or `WEFT_YIELD=on`).
    pub fn yields_when_idle(&self) -> bool {
        self.engine.borrow().yields_when_idle()
    }

    /// Times this rank gave its CPU away while waiting (never under `WEFT_YIELD=off`).
    pub fn idle_yields(&self) -> u64 {
        self.engine.borrow().idle_yields()
    }

    /// Ends the job abnormally with `code` (MPI_Abort): the launcher kills every rank.
    pub fn abort(&self, code: i32, message: &str) -> ! {
        if let Some(s) = &self.store {
            let _ = s.abort(code, message);
        }
        weft_core::diag!(
            "weft: rank {} aborting with code {code}: {message}",
            self.world.rank()
        );
        std::process::exit(code)
    }

    /// Memory this rank holds for its TCP peers (connection buffers, bytes) and how many
    /// peers switched to high-speed buffers (at most `WEFT_MAX_FAST_PEERS`).
    pub fn tcp_peer_memory(&self) -> (usize, u32) {
        self.engine.borrow().tcp_memory()
    }

    /// Memory reserved for this rank's shared-memory peers (bytes of the rings it sends
    /// into: a small ring per local peer, a large one per peer in high-speed mode) and how
    /// many peers it sends to in high-speed mode (at most `WEFT_MAX_FAST_PEERS`). Reserved,
    /// not used: see [`Weft::shm_peer_touched_bytes`].
    pub fn shm_peer_memory(&self) -> (usize, u32) {
        self.engine
            .borrow()
            .shm()
            .map_or((0, 0), |s| (s.ring_memory_bytes(), s.fast_peer_count()))
    }

    /// Bytes of the rings this rank sends into that its traffic has touched so far (at most
    /// [`Weft::shm_peer_memory`]'s reservation): the shared memory its sending really takes,
    /// give or take a page per ring.
    pub fn shm_peer_touched_bytes(&self) -> usize {
        self.engine
            .borrow()
            .shm()
            .map_or(0, |s| s.ring_touched_bytes())
    }

    /// Memory this rank holds for all its peers, in bytes: shared-memory rings reserved for
    /// what it sends plus TCP connection buffers.
    pub fn peer_memory_bytes(&self) -> usize {
        self.shm_peer_memory().0 + self.tcp_peer_memory().0
    }

    /// Rendezvous fragments this rank sent over extra TCP rails (striping).
    pub fn tcp_striped_fragments(&self) -> u64 {
        self.engine.borrow().tcp_striped()
    }

    /// TCP connections this rank holds open (two to one peer when both dialled at once:
    /// each side keeps what it accepted) and the largest receive buffer among them, in
    /// bytes: a large fragment that was not read straight into its receive grows one past
    /// the size of its peer's mode.
    pub fn tcp_connections(&self) -> (usize, usize) {
        self.engine.borrow().tcp_connections()
    }

    /// Inbound TCP connections this rank dropped because they did not prove the job key.
    pub fn tcp_refused(&self) -> u64 {
        self.engine.borrow().tcp_refused()
    }

    /// The network transport this rank's peers beyond shared memory are reached by (`tcp`,
    /// `ucx`, ...), or None when it needs none.
    pub fn network_transport(&self) -> Option<&'static str> {
        self.engine.borrow().net_transport()
    }

    /// Waits for every rank to reach finalize, then shuts down (MPI_Finalize).
    pub fn finalize(self) -> Result<()> {
        // Bytes still queued for peers (TCP data, shared-memory acknowledgements behind a full
        // ring) must leave before this rank stops polling.
        self.engine
            .borrow_mut()
            .drain(Duration::from_secs(self.config.boot_timeout_s));
        if let Some(s) = &self.store {
            let size = self.world.size();
            s.barrier(
                "finalize",
                size,
                Duration::from_secs(self.config.boot_timeout_s.max(600)),
            )
            .map_err(|e| e.context(format!("rank {}: finalize", self.world.rank())))?;
        }
        Ok(())
    }
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is writable for its whole length; gethostname NUL-terminates within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// FNV-1a, to give each node's segment a short stable name.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ b as u32).wrapping_mul(0x0100_0193)
    })
}
