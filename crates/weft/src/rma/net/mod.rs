//! One-sided communication with PEs on other nodes: active messages over TCP.
//!
//! Target side: every PE runs one service thread (`service.rs`) on its own port (an
//! OpenSHMEM heap's published through the bootstrap as `rma/heap<k>` at the heap's
//! collective creation; an MPI process's exchanged over each window's communicator when the
//! window is created), which proves the job key with every connector and
//! then applies that connector's requests to the PE's heap in arrival order. Puts are memory
//! copies; atomics are CPU atomics on the mapped word, exactly like a same-node peer's
//! atomics, so local CPU atomics and remote atomics on one word stay consistent. The rule:
//! every concurrent update of a word must be an atomic (of the same width); a plain put
//! racing with an atomic on the same word is a data race whose result OpenSHMEM leaves
//! undefined. Globals of a remote PE work too: the request names an offset from the
//! executable's load base and the service applies it at the same offset from its own base
//! (initiator and target must run the same executable; checked with the image fingerprint
//! published next to the address).
//!
//! Initiator side: every initiating thread has its own lane (`lane.rs`: connection and send
//! buffer) to each remote PE, created on first use, and every OpenSHMEM context has its own
//! lanes too: no proxy serialises initiators. A thread works on its own default-context
//! lanes without taking a lock (`cell.rs`: a handshake with the rare other users, such as
//! another thread's quiet, whose cost those users pay). Puts (blocking and `_nbi` alike: both are
//! complete locally once the bytes are in the buffer) wait in the lane's buffer until it
//! holds `WEFT_RMA_FLUSH_BYTES` or a call needs an answer; a put contiguous with the previous
//! one to the same PE extends its frame (coalescing, `WEFT_RMA_COALESCE`). Gets, fetching
//! atomics and quiet send the buffer first, then wait for the answer, so one lane is one
//! ordered stream: fence needs no message. Quiet sends a sync and waits for its
//! acknowledgement on every lane of the context that has unacknowledged puts.
//!
//! A buffered put leaves at the latest when its thread waits: `SymmetricHeap::flush` (called
//! by libshmem's `wait_until`/`signal_wait_until`) sends the thread's buffers, and put-with-
//! signal sends at once. A thread that exits leaves its lanes registered until the next
//! quiet has their puts acknowledged; then they close.
//!
//! `WEFT_RMA_PROXY=1` is the deliberate single-proxy mode of seed 002, kept for the
//! comparison benchmark: every operation of every thread is handed to one proxy thread (one
//! queue) which owns the lanes.
//!
//! Depends on the wire format and the TCP handshake primitives; not on
//! the progress engine (the service has its own thread, the lanes block on their sockets).

pub(crate) mod cell;
pub(crate) mod lane;
pub(crate) mod service;
pub mod wire;

use cell::LaneCell;
use lane::{Lane, LaneConfig};
#[doc(hidden)]
pub use service::set_handshake_timeout as set_service_handshake_timeout;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use weft_core::{Error, ErrorKind, Result};
pub use wire::Amo;

/// Applies `amo` to a 64-bit word; returns the word's old value.
pub fn apply_amo64(w: &AtomicU64, amo: Amo, a: u64, b: u64) -> u64 {
    match amo {
        Amo::Fetch => w.load(SeqCst),
        Amo::Set | Amo::Swap => w.swap(a, SeqCst),
        Amo::CompareSwap => w
            .compare_exchange(a, b, SeqCst, SeqCst)
            .unwrap_or_else(|v| v),
        Amo::Add => w.fetch_add(a, SeqCst),
        Amo::And => w.fetch_and(a, SeqCst),
        Amo::Or => w.fetch_or(a, SeqCst),
        Amo::Xor => w.fetch_xor(a, SeqCst),
    }
}

/// Applies `amo` to a 32-bit word; returns the word's old value.
pub fn apply_amo32(w: &AtomicU32, amo: Amo, a: u32, b: u32) -> u32 {
    match amo {
        Amo::Fetch => w.load(SeqCst),
        Amo::Set | Amo::Swap => w.swap(a, SeqCst),
        Amo::CompareSwap => w
            .compare_exchange(a, b, SeqCst, SeqCst)
            .unwrap_or_else(|v| v),
        Amo::Add => w.fetch_add(a, SeqCst),
        Amo::And => w.fetch_and(a, SeqCst),
        Amo::Or => w.fetch_or(a, SeqCst),
        Amo::Xor => w.fetch_xor(a, SeqCst),
    }
}

/// Where a remote operation goes: PE, space ([`wire::SPACE_HEAP`] or [`wire::SPACE_IMAGE`])
/// and offset in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Target PE.
    pub pe: u32,
    /// Heap or image.
    pub space: u8,
    /// Offset in that space.
    pub offset: u64,
}

/// A lane as the registry and the thread caches hold it.
type SharedLane = Arc<LaneCell>;

struct LaneEntry {
    ctx: u64,
    pe: u32,
    lane: SharedLane,
}

/// What every lane of one heap shares.
struct Shared {
    id: u64,
    me: u32,
    key: Vec<u8>,
    /// Service addresses by PE (an empty entry: not known, so not reachable). MPI windows
    /// add those of their members at creation ([`Net::learn`]).
    addrs: Mutex<Vec<Vec<SocketAddr>>>,
    config: LaneConfig,
    lanes: Mutex<Vec<LaneEntry>>,
    /// Lanes of contexts other than the default one, by (context, PE): a context's lanes
    /// are shared by whichever threads use the context.
    ctx_lanes: Mutex<HashMap<(u64, u32), SharedLane>>,
    /// Contexts created and not yet destroyed (besides the default context 0): a use of
    /// any other id is refused, so it is as large as the contexts alive, however many were
    /// destroyed. A destroyed context's lanes are closed, and a thread's cached handles to
    /// them are dropped at its next cache miss.
    live: Mutex<HashSet<u64>>,
}

/// A thread's lane key: (heap id, context, PE).
type LaneKey = (u64, u64, u32);

thread_local! {
    /// The lane this thread used last.
    static LAST: RefCell<Option<(LaneKey, SharedLane)>> = const { RefCell::new(None) };
    /// This thread's lanes: (heap id, context, PE) → lane.
    static MINE: RefCell<HashMap<(u64, u64, u32), SharedLane>> = RefCell::new(HashMap::new());
}

impl Shared {
    fn new_lane(&self, pe: u32) -> Result<Lane> {
        let addrs = {
            let a = self.addrs.lock().unwrap_or_else(|p| p.into_inner());
            a.get(pe as usize).cloned().unwrap_or_default()
        };
        if addrs.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!("PE {}: PE {pe} has no one-sided service address", self.me),
            ));
        }
        Lane::connect(self.me, pe, &addrs, &self.key, self.config.clone())
    }

    /// Runs `f` on the calling thread's lane (context `ctx`) to `pe`, connecting first.
    fn with_lane<R>(&self, ctx: u64, pe: u32, f: impl FnOnce(&mut Lane) -> Result<R>) -> Result<R> {
        // Back-to-back operations of a thread mostly go to the lane it used last: no hashing,
        // and no reference count touched (the cache's handle keeps the lane alive while `f`
        // runs; lane calls never reach this cache), and a default-context lane is the
        // thread's own (cell.rs: no lock on the owner's path), so an 8-byte put does no
        // atomic read-modify-write at all.
        let mut f = Some(f);
        let hit = LAST.with(|l| {
            let l = l.borrow();
            match l.as_ref() {
                Some((k, lane)) if *k == (self.id, ctx, pe) => {
                    let f = f.take().expect("the lane call runs once");
                    Some(if ctx == 0 {
                        lane.with_owner(f)
                    } else {
                        lane.with_locked(f)
                    })
                }
                _ => None,
            }
        });
        if let Some(r) = hit {
            return r;
        }
        let f = f.take().expect("the lane call runs once");
        let lane = MINE.with(|m| -> Result<SharedLane> {
            let mut m = m.borrow_mut();
            if let Some(l) = m.get(&(self.id, ctx, pe)) {
                return Ok(l.clone());
            }
            {
                let live = self.live_contexts();
                if ctx != 0 && !live.contains(&ctx) {
                    return Err(self.destroyed_error(ctx));
                }
                m.retain(|k, _| k.0 != self.id || k.1 == 0 || live.contains(&k.1));
            }
            let l = if ctx == 0 {
                // A default-context lane is this thread's own: its fast path.
                let l = Arc::new(LaneCell::new(self.new_lane(pe)?, true));
                self.registry().push(LaneEntry {
                    ctx,
                    pe,
                    lane: l.clone(),
                });
                l
            } else {
                let mut shared = self.ctx_lanes.lock().unwrap_or_else(|p| p.into_inner());
                match shared.get(&(ctx, pe)) {
                    Some(l) => l.clone(),
                    None => {
                        let l = Arc::new(LaneCell::new(self.new_lane(pe)?, false));
                        shared.insert((ctx, pe), l.clone());
                        self.registry().push(LaneEntry {
                            ctx,
                            pe,
                            lane: l.clone(),
                        });
                        l
                    }
                }
            };
            m.insert((self.id, ctx, pe), l.clone());
            Ok(l)
        })?;
        LAST.with(|l| *l.borrow_mut() = Some(((self.id, ctx, pe), lane.clone())));
        if ctx == 0 {
            lane.with_owner(f)
        } else {
            lane.with_locked(f)
        }
    }

    fn registry(&self) -> MutexGuard<'_, Vec<LaneEntry>> {
        self.lanes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Completes every lane of context `ctx` (`None`: of every context); first error wins,
    /// every lane is still completed.
    fn quiet(&self, ctx: Option<u64>) -> Result<()> {
        self.quiet_where(ctx, None)
    }

    /// [`Self::quiet`] of the lanes to `pe` only (every thread's, when `pe` is some).
    fn quiet_where(&self, ctx: Option<u64>, pe: Option<u32>) -> Result<()> {
        let lanes: Vec<(u64, SharedLane)> = self
            .registry()
            .iter()
            .filter(|e| ctx.is_none_or(|c| c == e.ctx) && pe.is_none_or(|p| p == e.pe))
            .map(|e| (e.ctx, e.lane.clone()))
            .collect();
        let mut first = Ok(());
        let mut finished = Vec::new();
        for (c, l) in lanes {
            // A default-context lane held only by the registry and this list belongs to a
            // thread that has exited: once its puts are acknowledged it can close. Counted
            // before the quiet: a thread that put after the quiet and exited just before a
            // count taken after it would leave its last puts in a lane no quiet ever sees.
            let orphan = c == 0 && Arc::strong_count(&l) == 2;
            let r = l.with_any(|l| l.quiet());
            if orphan && r.is_ok() {
                finished.push(l.clone());
            }
            if first.is_ok() {
                first = r;
            }
        }
        if !finished.is_empty() {
            self.registry()
                .retain(|e| !finished.iter().any(|f| Arc::ptr_eq(f, &e.lane)));
        }
        first
    }

    /// Sends whatever the calling thread's lanes hold (before it waits on a word a remote PE
    /// is to update in answer).
    fn flush_mine(&self) -> Result<()> {
        let lanes: Vec<SharedLane> = MINE.with(|m| {
            m.borrow()
                .iter()
                .filter(|(k, _)| k.0 == self.id)
                .map(|(_, l)| l.clone())
                .collect()
        });
        for l in lanes {
            l.with_any(|l| l.flush())?;
        }
        Ok(())
    }

    fn live_contexts(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Refuses a use of context `ctx` unless it is the default one or alive (the proxy
    /// path, which has no per-context lanes to close, checks here).
    fn check_ctx(&self, ctx: u64) -> Result<()> {
        if ctx == 0 || self.live_contexts().contains(&ctx) {
            return Ok(());
        }
        Err(self.destroyed_error(ctx))
    }

    fn destroyed_error(&self, ctx: u64) -> Error {
        Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "PE {}: context {ctx} was destroyed (or never created)",
                self.me
            ),
        )
    }

    /// Closes every lane of context `ctx`, whichever threads used it (a context's lanes are
    /// shared by its threads, and each thread caches them): their connections close now,
    /// and a later use of the context fails.
    fn forget_ctx(&self, ctx: u64) {
        self.live_contexts().remove(&ctx);
        let mut closing = Vec::new();
        self.registry().retain(|e| {
            if e.ctx == ctx {
                closing.push(e.lane.clone());
            }
            e.ctx != ctx
        });
        self.ctx_lanes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| k.0 != ctx);
        for l in closing {
            l.with_locked(|l| l.close(self.destroyed_error(ctx)));
        }
        MINE.with(|m| {
            m.borrow_mut()
                .retain(|k, _| !(k.0 == self.id && k.1 == ctx))
        });
        LAST.with(|l| {
            let mut l = l.borrow_mut();
            if l.as_ref()
                .is_some_and(|(k, _)| k.0 == self.id && k.1 == ctx)
            {
                *l = None;
            }
        });
    }
}

enum Job {
    /// A put whose `usize` bytes wait in the proxy's staging buffer (appended in job order).
    Put(Remote, usize),
    Amo {
        at: Remote,
        width: u8,
        amo: Amo,
        a: u64,
        b: u64,
        reply: Option<mpsc::SyncSender<Result<u64>>>,
    },
    Get(Remote, usize, mpsc::SyncSender<Result<Vec<u8>>>),
    Quiet(mpsc::SyncSender<Result<()>>),
    Flush,
}

/// The network side of one symmetric heap.
pub(crate) struct Net {
    shared: Arc<Shared>,
    /// Proxy mode: the bytes of queued puts, appended by initiators in the order of their
    /// jobs; the proxy swaps the buffer with its own drained one, so a put allocates
    /// nothing once both buffers have grown.
    staging: Arc<Mutex<Vec<u8>>>,
    proxy: Option<(mpsc::Sender<Job>, std::thread::JoinHandle<()>)>,
    service: service::Service,
}

/// Settings of the lanes to other nodes' PEs (the `WEFT_RMA_*` knobs by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Merge a put that continues the previous one to the same PE into its frame.
    pub coalesce: bool,
    /// Hand every operation to one proxy thread (the single-proxy comparison mode).
    pub proxy: bool,
    /// Bytes of puts a lane buffers before sending (64 B to 1 MiB).
    pub flush_bytes: usize,
    /// How long a call waits for a PE before declaring it dead.
    pub timeout_s: u64,
}

impl Options {
    /// The values of the knobs `WEFT_RMA_COALESCE`, `WEFT_RMA_PROXY`, `WEFT_RMA_FLUSH_BYTES`
    /// and `WEFT_RMA_TIMEOUT_S`.
    pub fn from_config(weft: &crate::Weft) -> Result<Options> {
        let v = &weft.config.values;
        let text = |name: &str, default: &str| crate::sync::region::knob_text(v, name, default);
        let timeout = text("WEFT_RMA_TIMEOUT_S", "60");
        let o = Options {
            coalesce: parse_bool(&text("WEFT_RMA_COALESCE", "1"), "WEFT_RMA_COALESCE")?,
            proxy: parse_bool(&text("WEFT_RMA_PROXY", "0"), "WEFT_RMA_PROXY")?,
            flush_bytes: weft_core::units::parse_bytes(&text("WEFT_RMA_FLUSH_BYTES", "64K"))?
                as usize,
            timeout_s: timeout.trim().parse().map_err(|_| {
                Error::new(
                    ErrorKind::Config,
                    format!("WEFT_RMA_TIMEOUT_S={timeout}: expected a number of seconds"),
                )
            })?,
        };
        o.check()?;
        Ok(o)
    }

    /// Checks the ranges.
    pub fn check(&self) -> Result<()> {
        if !(64..=wire::MAX_PAYLOAD_BYTES).contains(&self.flush_bytes) {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "WEFT_RMA_FLUSH_BYTES={}: must be 64 bytes to 1 MiB",
                    self.flush_bytes
                ),
            ));
        }
        if self.timeout_s == 0 {
            return Err(Error::new(
                ErrorKind::Config,
                "WEFT_RMA_TIMEOUT_S=0: must be at least 1 second",
            ));
        }
        Ok(())
    }
}

fn parse_bool(text: &str, name: &str) -> Result<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        t => Err(Error::new(
            ErrorKind::Config,
            format!("{name}={t}: expected 0/1, true/false, yes/no or on/off"),
        )),
    }
}

impl Net {
    pub(crate) fn new(
        me: u32,
        key: Vec<u8>,
        addrs: Vec<Vec<SocketAddr>>,
        config: &Options,
        service: service::Service,
    ) -> Result<Net> {
        config.check()?;
        static IDS: AtomicU64 = AtomicU64::new(1);
        let shared = Arc::new(Shared {
            id: IDS.fetch_add(1, SeqCst),
            me,
            key,
            addrs: Mutex::new(addrs),
            config: LaneConfig {
                coalesce: config.coalesce,
                flush_bytes: config.flush_bytes,
                timeout: std::time::Duration::from_secs(config.timeout_s),
            },
            lanes: Mutex::new(Vec::new()),
            ctx_lanes: Mutex::new(HashMap::new()),
            live: Mutex::new(HashSet::new()),
        });
        let staging = Arc::new(Mutex::new(Vec::new()));
        let proxy = if config.proxy {
            let (tx, rx) = mpsc::channel::<Job>();
            let s = shared.clone();
            let st = staging.clone();
            let t = std::thread::Builder::new()
                .name(format!("weft-rma-proxy{me}"))
                .spawn(move || {
                    crate::bind::unpin_this_thread();
                    proxy_loop(&s, rx, &st)
                })
                .map_err(|e| Error::io("spawning the one-sided proxy thread", e))?;
            Some((tx, t))
        } else {
            None
        };
        Ok(Net {
            shared,
            staging,
            proxy,
            service,
        })
    }

    /// The service's port.
    /// Records `pe`'s service addresses (an MPI window learns its members' at creation);
    /// lanes connect to them when first used. A process's service keeps its addresses for
    /// its life, so a later window's copy replaces an equal one.
    pub(crate) fn learn(&self, pe: u32, addrs: Vec<SocketAddr>) {
        let mut all = self.shared.addrs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(slot) = all.get_mut(pe as usize) {
            *slot = addrs;
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.service.port()
    }

    /// Connections the service refused.
    pub(crate) fn refused(&self) -> u64 {
        self.service.refused()
    }

    /// Requests this PE's service applied.
    pub(crate) fn served(&self) -> u64 {
        self.service.served()
    }

    fn to_proxy(&self, job: Job) -> Result<()> {
        let (tx, _) = self.proxy.as_ref().expect("proxy mode");
        tx.send(job).map_err(|_| {
            Error::new(
                ErrorKind::Internal,
                format!("PE {}: the one-sided proxy thread is gone", self.shared.me),
            )
        })
    }

    fn proxy_answer<T>(&self, rx: mpsc::Receiver<Result<T>>) -> Result<T> {
        rx.recv().unwrap_or_else(|_| {
            Err(Error::new(
                ErrorKind::Internal,
                format!("PE {}: the one-sided proxy thread is gone", self.shared.me),
            ))
        })
    }

    pub(crate) fn put(&self, ctx: u64, at: Remote, data: &[u8]) -> Result<()> {
        if self.proxy.is_some() {
            self.shared.check_ctx(ctx)?;
            // The bytes go in before the job, under the staging lock, so the proxy finds
            // them in job order.
            let mut st = self.staging.lock().unwrap_or_else(|p| p.into_inner());
            st.extend_from_slice(data);
            return self.to_proxy(Job::Put(at, data.len()));
        }
        self.shared
            .with_lane(ctx, at.pe, |l| l.put(at.space, at.offset, data))
    }

    pub(crate) fn get(&self, ctx: u64, at: Remote, dst: &mut [u8]) -> Result<()> {
        if self.proxy.is_some() {
            self.shared.check_ctx(ctx)?;
            let (tx, rx) = mpsc::sync_channel(1);
            self.to_proxy(Job::Get(at, dst.len(), tx))?;
            let data = self.proxy_answer(rx)?;
            dst.copy_from_slice(&data);
            return Ok(());
        }
        self.shared
            .with_lane(ctx, at.pe, |l| l.get(at.space, at.offset, dst))
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn amo(
        &self,
        ctx: u64,
        at: Remote,
        width: u8,
        amo: Amo,
        a: u64,
        b: u64,
        reply: bool,
    ) -> Result<u64> {
        if self.proxy.is_some() {
            self.shared.check_ctx(ctx)?;
            if !reply {
                return self
                    .to_proxy(Job::Amo {
                        at,
                        width,
                        amo,
                        a,
                        b,
                        reply: None,
                    })
                    .map(|_| 0);
            }
            let (tx, rx) = mpsc::sync_channel(1);
            self.to_proxy(Job::Amo {
                at,
                width,
                amo,
                a,
                b,
                reply: Some(tx),
            })?;
            return self.proxy_answer(rx);
        }
        self.shared.with_lane(ctx, at.pe, |l| {
            l.amo(at.space, at.offset, width, amo, a, b, reply)
        })
    }

    /// Accumulates `data` into the elements at `at` (see [`Lane::acc`]); with `old`, waits
    /// for the old elements. Always on the calling thread's default-context lane (MPI
    /// windows do not use the proxy).
    pub(crate) fn acc(
        &self,
        at: Remote,
        kind: u8,
        op: u8,
        data: &[u8],
        old: Option<&mut [u8]>,
    ) -> Result<()> {
        self.shared.with_lane(0, at.pe, |l| {
            l.acc(at.space, at.offset, kind, op, data, old)
        })
    }

    /// Compare-and-swap of the element at `at` (see [`Lane::cas`]).
    pub(crate) fn cas(&self, at: Remote, compare: &[u8], new: &[u8], old: &mut [u8]) -> Result<()> {
        self.shared
            .with_lane(0, at.pe, |l| l.cas(at.space, at.offset, compare, new, old))
    }

    /// Completes every thread's default-context operations to `pe`.
    pub(crate) fn quiet_pe(&self, pe: u32) -> Result<()> {
        self.shared.quiet_where(Some(0), Some(pe))
    }

    /// Completes context `ctx`'s operations (`None`: every context's).
    pub(crate) fn quiet(&self, ctx: Option<u64>) -> Result<()> {
        if self.proxy.is_some() {
            let (tx, rx) = mpsc::sync_channel(1);
            self.to_proxy(Job::Quiet(tx))?;
            return self.proxy_answer(rx);
        }
        self.shared.quiet(ctx)
    }

    /// Sends what the calling thread's lane (context `ctx`) to `pe` has buffered.
    pub(crate) fn flush_pe(&self, ctx: u64, pe: u32) -> Result<()> {
        if self.proxy.is_some() {
            self.shared.check_ctx(ctx)?;
            return self.to_proxy(Job::Flush);
        }
        self.shared.with_lane(ctx, pe, |l| l.flush())
    }

    /// Sends what the calling thread has buffered.
    pub(crate) fn flush_mine(&self) -> Result<()> {
        if self.proxy.is_some() {
            return self.to_proxy(Job::Flush);
        }
        self.shared.flush_mine()
    }

    /// Lanes open to other nodes' PEs (every thread's and context's).
    pub(crate) fn lane_count(&self) -> usize {
        self.shared.registry().len()
    }

    /// Makes context `ctx` (new, from [`crate::rma::SymmetricHeap::ctx_create`]) usable.
    pub(crate) fn add_ctx(&self, ctx: u64) {
        self.shared.live_contexts().insert(ctx);
    }

    /// Contexts alive (created and not destroyed).
    pub(crate) fn live_ctx_count(&self) -> usize {
        self.shared.live_contexts().len()
    }

    /// Drops the lanes of a destroyed context (after its quiet).
    pub(crate) fn forget_ctx(&self, ctx: u64) {
        self.shared.forget_ctx(ctx);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some((tx, t)) = self.proxy.take() {
            drop(tx);
            let _ = t.join();
        }
    }
}

/// The proxy thread: executes every thread's operations, in arrival order, on its own lanes.
fn proxy_loop(s: &Shared, rx: mpsc::Receiver<Job>, staging: &Mutex<Vec<u8>>) {
    let mut put_error: Option<Error> = None;
    // Bytes of puts taken from `staging`, consumed from `pos` on in job order.
    let mut local: Vec<u8> = Vec::new();
    let mut pos = 0;
    while let Ok(job) = rx.recv() {
        match job {
            Job::Put(at, len) => {
                if pos == local.len() {
                    local.clear();
                    pos = 0;
                    let mut st = staging.lock().unwrap_or_else(|p| p.into_inner());
                    std::mem::swap(&mut local, &mut *st);
                }
                let Some(data) = local.get(pos..pos + len) else {
                    put_error.get_or_insert(Error::new(
                        ErrorKind::Internal,
                        format!(
                            "PE {}: the proxy's staging buffer lost a put of {len} bytes",
                            s.me
                        ),
                    ));
                    continue;
                };
                pos += len;
                if let Err(e) = s.with_lane(0, at.pe, |l| l.put(at.space, at.offset, data)) {
                    put_error.get_or_insert(e);
                }
            }
            Job::Amo {
                at,
                width,
                amo,
                a,
                b,
                reply,
            } => {
                let r = s.with_lane(0, at.pe, |l| {
                    l.amo(at.space, at.offset, width, amo, a, b, reply.is_some())
                });
                match reply {
                    Some(tx) => {
                        let _ = tx.send(r);
                    }
                    None => {
                        if let Err(e) = r {
                            put_error.get_or_insert(e);
                        }
                    }
                }
            }
            Job::Get(at, len, tx) => {
                let mut buf = vec![0u8; len];
                let r = s.with_lane(0, at.pe, |l| l.get(at.space, at.offset, &mut buf));
                let _ = tx.send(r.map(|_| buf));
            }
            Job::Quiet(tx) => {
                let r = s.quiet(None);
                let _ = tx.send(match put_error.take() {
                    Some(e) => Err(e),
                    None => r,
                });
            }
            Job::Flush => {
                let _ = s.flush_mine();
            }
        }
    }
}
