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

pub mod agg;
mod bind;
pub mod coll;
pub mod comm;
mod config;
pub mod dtype;
mod engine;
mod hwloc;
pub mod io;
mod knobs;
pub mod lanes;
mod matching;
pub mod node_load;
mod p2p;
pub mod port;
pub mod raw;
pub mod rma;
mod startup;
pub mod sync;
mod topology;
pub mod wait;

pub use coll::{CollRequest, Datatype, Op, F32I32, F64I32, I32I32, I64I32};
pub use comm::{Comm, UNDEFINED};
pub use config::{
    knob_groups, knob_tables, BindMode, BlockMode, CmaMode, Config, KnobGroup, YieldMode,
};
pub use engine::shm_rendezvous;
pub use engine::Status;
pub use p2p::{Request, Scope};
pub use weft_core::{Error, ErrorKind, Rank, Result, Tag, ANY_SOURCE, ANY_TAG, TAG_UB};

use engine::{Engine, NodeSetup, NO_CORE_GROUP};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use weft_boot::{Backend, Boot, JobInfo, Store, StoreBoot};
use weft_model::lanes::{LaneDesc, LanePolicy, TransportKind};
use weft_transport::shm::heap::Region;
use weft_transport::shm::ShmNode;

/// An initialised weft process: the world and self communicators and the progress engine.
/// One per process (per thread in in-process tests); not `Send`.
pub struct Weft {
    engine: Rc<RefCell<Engine>>,
    world: Comm,
    myself: Comm,
    /// The launcher's bootstrap (None for a job of one rank).
    boot: Option<Arc<dyn Boot>>,
    config: Config,
    job_id: String,
    node_id: String,
    local_rank: u32,
    local_size: u32,
    /// The liveness watch under a foreign launcher with several ranks on this node.
    watch: Option<startup::Watch>,
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
/// bootstrap records under `init<n>/` (see [`weft_boot::select::connect`]). A failed init does not count, so
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
    weft_core::logging::init(config.log_filter.as_deref());
    // The secret proves membership of the job (bootstrap store, TCP handshakes). It is read
    // and then leaves the environment, so whatever this rank starts (a shell, a tool, an
    // `exec`) does not inherit it; this process keeps it for a later init. Done here, at
    // start-up, because changing the environment races with other threads reading it.
    let secret_hex = {
        let mut kept = JOB_SECRET_HEX.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(hex) = config.values.text("WEFT_JOB_SECRET") {
            *kept = Some(hex);
        } else if kept.is_none() {
            // Another copy of weft in this process (another library's) took it out first.
            *kept = initial_environment_var("WEFT_JOB_SECRET");
        }
        kept.clone()
    };
    std::env::remove_var("WEFT_JOB_SECRET");
    // A spawned rank's link to its parents carries their universe's secret (port.rs).
    std::env::remove_var(port::SPAWN_VAR);
    if config.job_secret.is_none() {
        if let Some(hex) = secret_hex.as_deref().filter(|h| !h.is_empty()) {
            config.job_secret = Some(weft_boot::auth::decode_hex("WEFT_JOB_SECRET", hex)?);
        }
    }
    let generation = INITS.load(Ordering::Relaxed);
    #[allow(
        clippy::disallowed_methods,
        reason = "the bootstrap reads its launcher's variables (WEFT_BOOT_ADDR, PMI_*, PMIX_*, SLURM_*): the job's description, not settings"
    )]
    let var = |name: &str| {
        if name == "WEFT_JOB_SECRET" {
            secret_hex.clone()
        } else {
            std::env::var(name).ok()
        }
    };
    let boot = weft_boot::select::connect(&var, generation, layer)?;
    let v = &config.values;
    let given_node = v.text("WEFT_NODE_ID");
    let node_id = given_node.clone().unwrap_or_else(hostname);
    let (rank, size, job_id) = match &boot {
        None => (
            0,
            1,
            v.text("WEFT_JOB_ID")
                .unwrap_or_else(|| format!("single{}", std::process::id())),
        ),
        Some(b) => {
            let j = b.job();
            // weft run names its jobs (and removes their segments by that name); under
            // another launcher the id is derived from the launcher's job name.
            let id = match b.backend() {
                Backend::Weft => v
                    .text("WEFT_JOB_ID")
                    .unwrap_or_else(|| format!("single{}", std::process::id())),
                _ => startup::foreign_job_id(j, v.text("WEFT_JOB_ID").as_deref())?,
            };
            (j.rank, j.size, id)
        }
    };
    // A launched process is one rank: its log lines say which (in-process ranks, threads
    // of one test, share a process and are not named).
    weft_core::logging::set_rank(rank);
    start(
        Start {
            rank,
            size,
            job_id,
            node_id,
            names_given: given_node.is_some(),
            boot,
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

/// Initialises weft for an explicitly described rank (in-process tests use a `MemStore`).
pub fn init_with(launch: Launch, config: Config) -> Result<Weft> {
    weft_core::logging::init(config.log_filter.as_deref());
    let Launch {
        rank,
        size,
        job_id,
        node_id,
        store,
    } = launch;
    let boot = match store {
        Some(store) => {
            let job = JobInfo {
                rank,
                size,
                launcher_job: job_id.clone(),
                node_of: None,
            };
            Some(Arc::new(StoreBoot::new(store, job, "")?) as Arc<dyn Boot>)
        }
        None => None,
    };
    start(
        Start {
            rank,
            size,
            job_id,
            node_id,
            names_given: true,
            boot,
        },
        config,
    )
}

/// Who a starting rank is and how it reaches the others.
struct Start {
    rank: u32,
    size: u32,
    job_id: String,
    node_id: String,
    /// The node id was given (WEFT_NODE_ID, in-process tests): ranks exchange node names
    /// instead of trusting the launcher's node map.
    names_given: bool,
    boot: Option<Arc<dyn Boot>>,
}

/// Brings a rank up: the node map (from the launcher, or exchanged), the node's segment
/// (created by local rank 0 before a fence, mapped by the others after it, unlinked once all
/// have mapped it), the network endpoint (each rank publishes its records before the fence,
/// reads its peers' after it), the engine. A job whose launcher knows the node map and has a
/// job secret needs one fence; exchanging node names or the network key adds one each.
fn start(st: Start, config: Config) -> Result<Weft> {
    let Start {
        rank,
        size,
        job_id,
        node_id,
        names_given,
        boot,
    } = st;
    let timeout = Duration::from_secs(config.boot_timeout_s);
    let at = |what: String| move |e: Error| e.context(format!("rank {rank}: start-up: {what}"));
    let Some(boot) = &boot else {
        return finish_start(
            rank,
            size,
            NodeSetup {
                local_world: vec![rank],
                my_local: 0,
                shm: None,
                node_of: vec![0],
                core_group_of: Vec::new(),
                net: None,
                net_local: !config.transports.contains(&TransportKind::SHM),
            },
            None,
            None,
            config,
            job_id,
            node_id,
            &[],
        );
    };
    let everyone: Vec<u32> = (0..size).collect();
    // The TCP key, when the launcher gave no job secret (foreign launchers, in-process
    // jobs): made by rank 0 and shared through the bootstrap, which only the job reads.
    if rank == 0 && config.job_secret.is_none() && size > 1 {
        let k = weft_boot::auth::new_secret()?;
        boot.put("tcp-key", weft_boot::auth::encode_hex(&k).as_bytes())
            .map_err(at("publishing the TCP key".into()))?;
    }
    // The ranks' host names, when exchanged: the aggregation manager maps them to the
    // fabric's endpoints.
    let mut hosts: Vec<String> = Vec::new();
    let node_of = match (&boot.job().node_of, names_given) {
        (Some(map), false) if !agg::configured(&config) => map.clone(),
        _ => {
            boot.put("node", node_id.as_bytes())
                .map_err(at("publishing the node name".into()))?;
            boot.fence(timeout)
                .map_err(at("exchanging node names".into()))?;
            let names = boot
                .get_all(&everyone, "node", timeout)
                .map_err(at("reading node names".into()))?;
            hosts = names
                .iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect();
            startup::node_indices(&names)
        }
    };
    let mine = node_of[rank as usize];
    let local_world: Vec<u32> = everyone
        .iter()
        .copied()
        .filter(|&r| node_of[r as usize] == mine)
        .collect();
    let my_local = local_world
        .iter()
        .position(|&r| r == rank)
        .expect("own rank is local") as u32;
    let local_size = local_world.len() as u32;
    let shared_node = {
        let mut per_node = std::collections::HashMap::new();
        node_of.iter().any(|&n| {
            let c = per_node.entry(n).or_insert(0u32);
            *c += 1;
            *c == 2
        })
    };
    let foreign = boot.backend() != Backend::Weft;
    let use_shm = config.transports.contains(&TransportKind::SHM);
    let net_local = !use_shm;
    // Forced TCP (WEFT_TRANSPORTS without shm) makes no segment: nothing, not even a
    // collective, may then go through shared memory.
    let shm_here = use_shm && local_size > 1;
    let watch_here = foreign && local_size > 1 && config.liveness_ms > 0;
    let seg_name = format!("/weft-{job_id}-{:08x}", fnv1a(node_id.as_bytes()));
    let live_name = format!("{seg_name}-live");
    let mut guard = startup::UnlinkGuard(None);
    let mut live_guard = startup::UnlinkGuard(None);
    let mut created = None;
    let mut live_created = None;
    if my_local == 0 {
        if shm_here {
            // Every pair starts on a small ring; the busiest peers move to large ones.
            let (layout, modes) = config
                .shm_layout(local_size)
                .map_err(|e| e.context(format!("rank {rank}")))?;
            if foreign {
                // A launcher's job name may come back after a crash left its segment.
                weft_transport::shm::segment::Segment::unlink(&seg_name)?;
            }
            created = Some(
                ShmNode::create_with(&seg_name, layout, modes, 0)
                    .map_err(|e| e.context(format!("rank {rank}")))?,
            );
            guard.0 = Some(seg_name.clone());
        }
        if watch_here {
            weft_transport::shm::segment::Segment::unlink(&live_name)?;
            live_created = Some(
                Region::create(&live_name, local_size, 0, 0)
                    .map_err(|e| e.context(format!("rank {rank}")))?,
            );
            live_guard.0 = Some(live_name.clone());
        }
    }
    // The network: its transport and the peers it serves follow from the lane choice, which
    // every rank makes alone; the fence below lets each check the others made the same.
    let placement = lanes::Placement {
        rank,
        size,
        node_of: &node_of,
        local_size,
    };
    lanes::log_choices(&placement, &config);
    let net_plan = lanes::plan_network(&placement, &config)?;
    let net_needed = net_plan.is_some();
    let mut net_plan = net_plan;
    let mut opening = None;
    if let Some(key) = &config.job_secret {
        if let Some(plan) = net_plan.take() {
            opening = Some(lanes::open_network(
                plan,
                &placement,
                &config,
                boot.as_ref(),
                key.clone(),
            )?);
        }
    }
    // The core groups (L3 / NUMA / package) the hierarchical collectives nest inside the
    // nodes: only a node of two or more ranks can be split, so only there is the topology
    // loaded (hwloc takes milliseconds, docs/topology.md); a topology the user gives is
    // checked even where there is nothing to split.
    let mine = if local_size > 1 || !config.topology.is_empty() {
        let g = my_core_group(rank, &config, my_local, local_size)?;
        if local_size > 1 {
            g
        } else {
            NO_CORE_GROUP
        }
    } else {
        NO_CORE_GROUP
    };
    if shared_node {
        let text = if mine == NO_CORE_GROUP {
            "-".to_string()
        } else {
            mine.to_string()
        };
        boot.put("core-group", text.as_bytes())
            .map_err(at("publishing the core group".into()))?;
    }
    if shared_node || net_needed {
        boot.fence(timeout)
            .map_err(at("waiting for the node segments and addresses".into()))?;
    }
    let core_group_of = if shared_node {
        boot.get_all(&everyone, "core-group", timeout)
            .map_err(at("reading the core groups".into()))?
            .iter()
            .map(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .unwrap_or(NO_CORE_GROUP)
            })
            .collect()
    } else {
        Vec::new()
    };
    if let Some(plan) = net_plan {
        let hex = boot
            .get(0, "tcp-key", timeout)
            .map_err(at("reading the network key".into()))?;
        let key = weft_boot::auth::decode_hex("tcp-key", &String::from_utf8_lossy(&hex))?;
        opening = Some(lanes::open_network(
            plan,
            &placement,
            &config,
            boot.as_ref(),
            key,
        )?);
        boot.fence(timeout)
            .map_err(at("exchanging network addresses".into()))?;
    }
    let shm = if shm_here {
        let node = match created {
            Some(n) => n,
            None => ShmNode::attach(&seg_name, my_local)
                .map_err(|e| e.context(format!("rank {rank}")))?,
        };
        startup::wait_node(rank, &seg_name, || node.attached(), local_size, timeout)?;
        // Whoever sees the node complete first removes the name (the others find it gone):
        // a job killed right after start-up leaves nothing behind.
        node.unlink()?;
        guard.0 = None;
        Some(node)
    } else {
        None
    };
    let live = if watch_here {
        let region = match live_created {
            Some(r) => r,
            None => Region::attach(&live_name, my_local)
                .map_err(|e| e.context(format!("rank {rank}")))?,
        };
        startup::wait_node(rank, &live_name, || region.attached(), local_size, timeout)?;
        region.unlink()?;
        live_guard.0 = None;
        Some(region)
    } else {
        None
    };
    let net = match opening {
        Some(o) => Some(o.connect(&placement, &config, boot.as_ref())?),
        None => None,
    };
    let watch = match live {
        Some(region) => Some(startup::Watch::start(
            region,
            startup::WatchTarget {
                boot: Arc::clone(boot),
                local_world: local_world.clone(),
                node_id: node_id.clone(),
                period: Duration::from_millis(config.liveness_ms),
                grace: Duration::from_millis(config.liveness_ms.saturating_mul(3).min(500)),
            },
        )?),
        None => None,
    };
    finish_start(
        rank,
        size,
        NodeSetup {
            local_world,
            my_local,
            shm,
            node_of,
            core_group_of,
            net,
            net_local,
        },
        Some(Arc::clone(boot)),
        watch,
        config,
        job_id,
        node_id,
        &hosts,
    )
}

/// This rank's core group within its node (`topology`), [`NO_CORE_GROUP`] when it has none;
/// says at debug level which, and why none. A topology given by `WEFT_TOPOLOGY` that hwloc
/// cannot read is an error.
fn my_core_group(rank: u32, config: &Config, local: u32, local_size: u32) -> Result<u32> {
    match topology::core_group(config, local, local_size) {
        Ok(g) => {
            log::debug!(
                "rank {rank}: core group {} {} of {} (WEFT_TOPOLOGY={:?})",
                g.kind,
                g.index,
                g.count,
                config.topology
            );
            Ok(g.index)
        }
        Err(topology::NoGroup::BadTopology(why)) => {
            Err(Error::new(ErrorKind::InvalidArgument, why))
        }
        Err(topology::NoGroup::None(why)) => {
            log::debug!(
                "rank {rank}: in no core group ({why}): the hierarchical collectives group \
                 this node's ranks as one"
            );
            Ok(NO_CORE_GROUP)
        }
    }
}

/// The engine and the world, once the node and the network are set up.
#[allow(clippy::too_many_arguments)]
fn finish_start(
    rank: u32,
    size: u32,
    node: NodeSetup,
    boot: Option<Arc<dyn Boot>>,
    watch: Option<startup::Watch>,
    config: Config,
    job_id: String,
    node_id: String,
    hosts: &[String],
) -> Result<Weft> {
    let my_local = node.my_local;
    let local_size = node.local_world.len() as u32;
    let engine = Engine::new(rank, size, node, &config)?;
    let engine = Rc::new(RefCell::new(engine));
    let world = Comm::new(engine.clone(), 0, rank, (0..size).collect(), "world".into());
    let myself = Comm::new(engine.clone(), 2, 0, Rc::from(vec![rank]), "self".into());
    if size > 1 && !hosts.is_empty() {
        agg::attach_world(&world, &config, hosts)?;
    }
    Ok(Weft {
        engine,
        world,
        myself,
        boot,
        config,
        job_id,
        node_id,
        local_rank: my_local,
        local_size,
        watch,
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

    /// Whether `WEFT_BIND=auto` pinned this rank because other programs competed for the
    /// cores when the process started (a job of 2+ ranks with a core per rank): the
    /// decision `Weft::pin_to_core` carried out at init, read back.
    pub fn pinned_beside_others(&self) -> bool {
        bind::pinned_for() == Some(bind::PinReason::BesideOthers)
    }

    /// Pins this process to its core under `WEFT_BIND` (launched ranks only: [`init`]
    /// calls it; in-process ranks are threads of one test). A refusal is reported once on
    /// standard error and the rank runs unpinned.
    fn pin_to_core(&self) {
        let Some(place) = bind::placement(self.config.bind, self.local_rank, self.local_size)
        else {
            self.report_binding(None);
            return;
        };
        let cpu = place.cpu;
        if let Err(e) = bind::pin(place) {
            log::warn!(
                "rank {}: WEFT_BIND: could not pin to CPU {cpu} ({e}); running unpinned",
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

    /// Times this rank slept in the kernel while waiting until a peer's delivery woke it, or
    /// the sleep's timeout passed (`WEFT_BLOCK`; never under `off`).
    pub fn futex_sleeps(&self) -> u64 {
        self.engine.borrow().futex_sleeps()
    }

    /// Of [`Weft::futex_sleeps`], those that a peer's delivery ended (its bell rung), not
    /// the timeout.
    pub fn futex_sleeps_woken(&self) -> u64 {
        self.engine.borrow().futex_sleeps_woken()
    }

    /// Whether world rank `rank`, a rank of this node, is asleep in a wait (or about to be);
    /// false for ranks of other nodes. For tests and tools: a test makes a rank deliver only
    /// once its partner sleeps.
    pub fn peer_sleeping(&self, rank: u32) -> bool {
        self.engine.borrow().peer_sleeping(rank)
    }

    /// Ends the job abnormally with `code` (MPI_Abort): the launcher kills every rank.
    pub fn abort(&self, code: i32, message: &str) -> ! {
        // The line first, and read by the launcher before it hears of the abort: it may
        // kill the job at once, and Hydra then drops what is still queued in the pipe.
        weft_core::diag!(
            "weft: rank {} aborting with code {code}: {message}",
            self.world.rank()
        );
        if let Some(b) = &self.boot {
            startup::stderr_taken(startup::STDERR_TAKEN_LIMIT);
            let _ = b.abort(code, message);
        }
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

    /// Network rails between nodes this rank's messages can be pinned to (1 without a
    /// network, or with a transport that cannot pin): what the collectives' selector
    /// prices the multi-rail algorithms on.
    pub fn network_rails(&self) -> u32 {
        self.engine.borrow().net_rails()
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

    /// The bootstrap's fence, once this rank's queued network sends have left: a rank
    /// blocked in a fence makes no progress, so a peer still waiting for one of its messages
    /// (a UCX send whose endpoint is still being wired up, a TCP write behind a full socket)
    /// would never reach the fence.
    pub(crate) fn boot_fence(&self, boot: &dyn Boot, timeout: Duration) -> Result<()> {
        self.engine.borrow_mut().drain(timeout);
        boot.fence(timeout)
    }

    /// The network transport this rank's peers beyond shared memory are reached by (`tcp`,
    /// `ucx`, ...), or None when it needs none.
    pub fn network_transport(&self) -> Option<&'static str> {
        self.engine.borrow().net_transport()
    }

    /// Waits for every rank to reach finalize, then shuts down (MPI_Finalize).
    pub fn finalize(mut self) -> Result<()> {
        // Bytes still queued for peers (TCP data, shared-memory acknowledgements behind a full
        // ring) must leave before this rank stops polling.
        self.engine
            .borrow_mut()
            .drain(Duration::from_secs(self.config.boot_timeout_s));
        if let Some(b) = &self.boot {
            b.finalize(Duration::from_secs(self.config.boot_timeout_s.max(600)))
                .map_err(|e| e.context(format!("rank {}: finalize", self.world.rank())))?;
        }
        // Every rank has reached finalize: its peers may exit now.
        if let Some(mut w) = self.watch.take() {
            w.finish();
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
