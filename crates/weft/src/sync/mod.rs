//! The node synchronisation engine (ALGORITHMS.md §7, seed 004): a node-wide table of tagged
//! words in shared memory. Each word carries a value, a lock bit, a full/empty bit and a
//! counter, and is found by an arbitrary 64-bit address (a tag every participant agrees on:
//! the same number in every process, not a pointer into one of them).
//!
//! - [`SyncEngine::put`] stores and marks full, after waiting for the word to be empty;
//!   [`SyncEngine::get`] waits until full, takes the value, and the last of the expected
//!   readers marks it empty again.
//! - [`SyncEngine::lock`] / [`SyncEngine::unlock`] on the lock bit.
//! - [`SyncEngine::barrier`] counts arrivals to `n`; [`SyncEngine::reduce`] combines one value
//!   per arrival and hands the result to all `n`; [`SyncEngine::burst_reduce`] does the same
//!   for whole buffers, each participant reducing one slice (bandwidth-bound).
//!
//! The table is set-associative (4 ways per set, chosen by a hash of the address) with an
//! overflow area probed linearly, so any address works until both are full. Entries are
//! claimed in probe order and never freed, which is what lets two processes claiming the same
//! new address agree on one entry without a lock. A waiter follows a [`WaitPolicy`]: it
//! spins while every local rank has a core, yields the core, then sleeps on a futex in the
//! entry, so a node with more processes than cores does not starve the process it waits for;
//! wakers make a system call only when a sleeper registered. While sleeping a waiter checks
//! now and then that the node's other ranks live.
//!
//! Participants are the processes (or threads, in in-process jobs) of one node: `n` in
//! [`SyncEngine::barrier`] and [`SyncEngine::reduce`] counts participants on this node.
//! Across nodes, [`JobSync`] completes each round on the node first and then between the
//! nodes' leaders over the runtime's collectives (see [`job`]). The engine depends on the
//! transport's [`Region`] (shared bytes, atomics, futex) and on the runtime only for its
//! creation; its `unsafe` lives in the transport.

pub mod job;
pub mod knobs;
pub(crate) mod region;

pub use job::JobSync;

use crate::Weft;
use region::{knob_text, node_region};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};
use weft_core::units::parse_bytes;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::heap::{futex_wait, futex_wake, Region};

const WAYS: usize = 4;
const ENTRY_BYTES: usize = 64;
/// ctl: bit 63 full, bit 62 being written, bits 32..62 readers still to take the value, low
/// 32 bits a generation that changes on every put (so a reader's compare-and-swap cannot
/// succeed against a later value: no ABA).
const FULL: u64 = 1 << 63;
const BUSY: u64 = 1 << 62;
const READERS_MASK: u64 = (1 << 30) - 1;
const MAX_READERS: u32 = (1 << 30) - 1;
const USER_LOCK: u32 = 1;
const REDUCE_LOCK: u32 = 2;
const DEATH_CHECK_AFTER: Duration = Duration::from_millis(300);
/// Checks of the condition between two readings of the clock while spinning (a clock
/// reading costs about as much as a few dozen checks).
const SPINS_PER_CLOCK: u32 = 64;
/// Checks a waiter makes before yielding when the node has more ranks than cores: the
/// process it waits for most likely needs this very core, so spinning longer only delays it.
const OVERSUBSCRIBED_SPINS: u32 = 16;

/// How a waiter waits (ALGORITHMS.md §7): spin, then give the core away with `sched_yield`,
/// then sleep on the entry's futex. Spinning answers fastest when every rank has a core;
/// yielding lets a process that shares our core run at once without the cost of a futex
/// wake-up (a sleeping waiter makes its waker pay a system call and itself a scheduler
/// wake-up of tens of microseconds, and once both sides of a barrier fall asleep by turns
/// every round pays it); sleeping keeps long waits from taking time slices and caches from
/// a process that computes on our core (the LU example's pivot waits), so the yield window
/// is short: about as long as a whole barrier round on an oversubscribed node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WaitPolicy {
    /// Condition checks before the first yield.
    pub spins: u32,
    /// Longest spin before yielding, in nanoseconds (whichever of this and `spins` ends
    /// first).
    pub spin_ns: u64,
    /// How long to keep yielding before sleeping on the futex, in microseconds.
    pub yield_us: u64,
}

impl WaitPolicy {
    /// The policy for a node that is `oversubscribed` (more local ranks than cores, or
    /// `WEFT_YIELD=on`), from the knobs `WEFT_SYNC_SPIN_NS`, `WEFT_SYNC_YIELD_US` (yield
    /// window when oversubscribed) and `WEFT_SYNC_OWN_CORE_YIELD_US` (when every rank has a
    /// core: yielding then only lets other programs run, and sleeping would make both sides
    /// of a barrier pay a futex wake-up per round under foreign load).
    pub fn new(
        oversubscribed: bool,
        spin_ns: u64,
        yield_us: u64,
        own_core_yield_us: u64,
    ) -> WaitPolicy {
        WaitPolicy {
            spins: if oversubscribed {
                OVERSUBSCRIBED_SPINS
            } else {
                u32::MAX
            },
            spin_ns: if oversubscribed { 0 } else { spin_ns },
            yield_us: if oversubscribed {
                yield_us
            } else {
                own_core_yield_us
            },
        }
    }
}

/// A reduction operation of [`SyncEngine::reduce`] and [`SyncEngine::burst_reduce`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers only).
    And,
    /// Bitwise or (integers only).
    Or,
    /// Bitwise exclusive or (integers only).
    Xor,
}

impl SyncOp {
    /// The operation named `name` (`sum`, `prod`, `min`, `max`, `and`, `or`, `xor`).
    pub fn parse(name: &str) -> Result<SyncOp> {
        Ok(match name {
            "sum" => SyncOp::Sum,
            "prod" => SyncOp::Prod,
            "min" => SyncOp::Min,
            "max" => SyncOp::Max,
            "and" => SyncOp::And,
            "or" => SyncOp::Or,
            "xor" => SyncOp::Xor,
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOp,
                    format!(
                    "sync reduce operation {name:?}: expected sum, prod, min, max, and, or or xor"
                ),
                ))
            }
        })
    }
}

/// A 64-bit value the engine can store and combine.
pub trait SyncValue: Copy + Send + Sync + 'static {
    /// The value's bits as stored in a tagged word.
    fn to_bits(self) -> u64;
    /// The value from a tagged word's bits.
    fn from_bits(bits: u64) -> Self;
    /// Whether `op` applies to this type.
    fn supports(op: SyncOp) -> bool;
    /// `a op b` (only called when [`SyncValue::supports`] says so).
    fn combine(op: SyncOp, a: Self, b: Self) -> Self;
}

macro_rules! int_value {
    ($t:ty) => {
        impl SyncValue for $t {
            fn to_bits(self) -> u64 {
                self as u64
            }
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            fn supports(_: SyncOp) -> bool {
                true
            }
            fn combine(op: SyncOp, a: Self, b: Self) -> Self {
                match op {
                    SyncOp::Sum => a.wrapping_add(b),
                    SyncOp::Prod => a.wrapping_mul(b),
                    SyncOp::Min => a.min(b),
                    SyncOp::Max => a.max(b),
                    SyncOp::And => a & b,
                    SyncOp::Or => a | b,
                    SyncOp::Xor => a ^ b,
                }
            }
        }
    };
}
int_value!(i64);
int_value!(u64);

impl SyncValue for f64 {
    fn to_bits(self) -> u64 {
        f64::to_bits(self)
    }
    fn from_bits(bits: u64) -> Self {
        f64::from_bits(bits)
    }
    fn supports(op: SyncOp) -> bool {
        matches!(op, SyncOp::Sum | SyncOp::Prod | SyncOp::Min | SyncOp::Max)
    }
    fn combine(op: SyncOp, a: Self, b: Self) -> Self {
        match op {
            SyncOp::Sum => a + b,
            SyncOp::Prod => a * b,
            SyncOp::Min => a.min(b),
            _ => a.max(b),
        }
    }
}

/// One tagged word's fields, borrowed from the region.
struct Entry<'a> {
    ctl: &'a AtomicU64,
    value: &'a AtomicU64,
    accum: &'a AtomicU64,
    result: &'a AtomicU64,
    /// High 32 bits: generation of the barrier/reduce round; low 32: arrivals in it.
    arrive: &'a AtomicU64,
    lock: &'a AtomicU32,
    wake: &'a AtomicU32,
    sleepers: &'a AtomicU32,
}

/// Table geometry, identical on every local rank (read from the same knobs).
#[derive(Clone, Copy, Debug)]
struct Geometry {
    sets: usize,
    overflow: usize,
    burst_bytes: usize,
    local_size: usize,
}

impl Geometry {
    fn entries(&self) -> usize {
        self.sets * WAYS + self.overflow
    }
    fn burst_tags_offset(&self) -> usize {
        self.entries() * ENTRY_BYTES
    }
    fn burst_slots_offset(&self) -> usize {
        (self.burst_tags_offset() + self.local_size * 8).next_multiple_of(4096)
    }
    fn body_bytes(&self) -> usize {
        self.burst_slots_offset() + self.local_size * self.burst_bytes
    }
}

/// The node synchronisation engine as seen by one rank. `Send` and `Sync`: threads of one
/// process may share it (they then count as separate participants).
pub struct SyncEngine {
    region: Region,
    geo: Geometry,
    policy: WaitPolicy,
    /// Longest single futex sleep of a waiter (`WEFT_SYNC_SLEEP_MS`): a wake-up ends it at
    /// once; its end only checks the peers (and bounds what a lost wake-up would cost).
    sleep: Duration,
}

impl SyncEngine {
    /// Creates the engine's table named `name` on this node (collective over the node's
    /// ranks; `name` must match on all of them and be unique in the job). Geometry comes from
    /// `WEFT_SYNC_SETS`, `WEFT_SYNC_OVERFLOW_ENTRIES` and `WEFT_SYNC_BURST_BYTES`.
    pub fn new(weft: &Weft, name: &str) -> Result<SyncEngine> {
        let v = &weft.config.values;
        let uint = |knob: &str, default: &str| -> Result<u64> {
            let text = knob_text(v, knob, default);
            text.trim().parse().map_err(|_| {
                Error::new(
                    ErrorKind::Config,
                    format!("{knob}={text}: expected an unsigned integer"),
                )
            })
        };
        let sets = uint("WEFT_SYNC_SETS", "1024")?;
        let overflow = uint("WEFT_SYNC_OVERFLOW_ENTRIES", "4096")?;
        let burst = parse_bytes(&knob_text(v, "WEFT_SYNC_BURST_BYTES", "256K"))?;
        if sets == 0 || sets > 1 << 24 || overflow > 1 << 24 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SYNC_SETS={sets} / WEFT_SYNC_OVERFLOW_ENTRIES={overflow}: must be 1..=16777216 and 0..=16777216"),
            ));
        }
        if !(64..=1 << 30).contains(&burst) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SYNC_BURST_BYTES={burst}: must be 64 bytes to 1 GiB"),
            ));
        }
        let geo = Geometry {
            sets: (sets as usize).next_power_of_two(),
            overflow: overflow as usize,
            burst_bytes: (burst as usize).next_multiple_of(64),
            local_size: weft.local_size as usize,
        };
        let policy = WaitPolicy::new(
            weft.yields_when_idle(),
            uint("WEFT_SYNC_SPIN_NS", "20000")?,
            uint("WEFT_SYNC_YIELD_US", "100")?,
            uint("WEFT_SYNC_OWN_CORE_YIELD_US", "2000")?,
        );
        let sleep = Duration::from_millis(uint("WEFT_SYNC_SLEEP_MS", "100")?.max(1));
        let region = node_region(weft, &format!("sync-{name}"), geo.body_bytes())?;
        Ok(SyncEngine {
            region,
            geo,
            policy,
            sleep,
        })
    }

    /// How this engine's waiters wait.
    pub fn wait_policy(&self) -> WaitPolicy {
        self.policy
    }

    /// Replaces how this engine's waiters wait (for benchmarks and tests; the knobs set it
    /// at creation).
    pub fn set_wait_policy(&mut self, policy: WaitPolicy) {
        self.policy = policy;
    }

    /// Tagged words the table holds (sets × 4 + overflow).
    pub fn capacity(&self) -> usize {
        self.geo.entries()
    }

    fn entry_at(&self, index: usize) -> Result<Entry<'_>> {
        let o = index * ENTRY_BYTES;
        let r = &self.region;
        Ok(Entry {
            ctl: r.u64_at(o + 8)?,
            value: r.u64_at(o + 16)?,
            accum: r.u64_at(o + 24)?,
            result: r.u64_at(o + 32)?,
            arrive: r.u64_at(o + 40)?,
            lock: r.u32_at(o + 48)?,
            wake: r.u32_at(o + 52)?,
            sleepers: r.u32_at(o + 56)?,
        })
    }

    /// Finds (or claims) the entry of `addr`: its set's 4 ways, then the overflow area.
    fn lookup(&self, addr: u64) -> Result<Entry<'_>> {
        if addr == u64::MAX {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "sync address 0xffffffffffffffff is reserved",
            ));
        }
        // Keys are stored plus one so that 0 marks a free entry and address 0 still works.
        let key = addr + 1;
        let h = mix(addr);
        let set = (h as usize) & (self.geo.sets - 1);
        let ways = (0..WAYS).map(|w| set * WAYS + w);
        let base = self.geo.sets * WAYS;
        let overflow =
            (0..self.geo.overflow).map(|i| base + ((h >> 32) as usize + i) % self.geo.overflow);
        for index in ways.chain(overflow) {
            let slot = self.region.u64_at(index * ENTRY_BYTES)?;
            let k = slot.load(SeqCst);
            if k == key {
                return self.entry_at(index);
            }
            if k == 0 {
                // Entries are claimed in probe order and never freed: whoever loses this
                // race finds either our key (same address) or must move on (another one).
                match slot.compare_exchange(0, key, SeqCst, SeqCst) {
                    Ok(_) => return self.entry_at(index),
                    Err(k) if k == key => return self.entry_at(index),
                    Err(_) => continue,
                }
            }
        }
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "sync address {addr:#x}: the engine's table is full ({} words); raise WEFT_SYNC_SETS or WEFT_SYNC_OVERFLOW_ENTRIES",
                self.geo.entries()
            ),
        ))
    }

    /// Tells sleepers on `e` that its state changed. The state change happened before (both
    /// sequentially consistent): a waiter that registered as a sleeper after our load of the
    /// sleeper count checks its condition after that and sees the change, so when nobody
    /// sleeps the notification is one load and no write or system call.
    fn notify(e: &Entry<'_>) {
        if e.sleepers.load(SeqCst) > 0 {
            e.wake.fetch_add(1, SeqCst);
            futex_wake(e.wake, i32::MAX);
        }
    }

    /// Waits until `ready()` by the engine's [`WaitPolicy`]: spins, then yields the core,
    /// then sleeps on the entry's futex; fails with `PeerDead` when a rank of the node died
    /// meanwhile.
    fn wait(
        &self,
        e: &Entry<'_>,
        what: &str,
        addr: u64,
        mut ready: impl FnMut() -> bool,
    ) -> Result<()> {
        // Ready at once is the common case of a barrier's last arriver: no clock read.
        if ready() {
            return Ok(());
        }
        let p = self.policy;
        let start = Instant::now();
        let spin_for = Duration::from_nanos(p.spin_ns);
        let mut checks = 0u32;
        while checks < p.spins {
            if ready() {
                return Ok(());
            }
            std::hint::spin_loop();
            checks += 1;
            if checks.is_multiple_of(SPINS_PER_CLOCK) && start.elapsed() >= spin_for {
                break;
            }
        }
        let yield_for = Duration::from_micros(p.yield_us);
        let mut yields = 0u32;
        loop {
            std::thread::yield_now();
            if ready() {
                return Ok(());
            }
            yields += 1;
            // The clock only now and then: a yield to nobody costs well under a microsecond.
            if yields.is_multiple_of(16) {
                let waited = start.elapsed();
                if waited >= yield_for {
                    break;
                }
                if waited > DEATH_CHECK_AFTER {
                    self.check_peers(what, addr)?;
                }
            }
        }
        loop {
            e.sleepers.fetch_add(1, SeqCst);
            let seen = e.wake.load(SeqCst);
            if ready() {
                e.sleepers.fetch_sub(1, SeqCst);
                return Ok(());
            }
            futex_wait(e.wake, seen, self.sleep);
            e.sleepers.fetch_sub(1, SeqCst);
            if ready() {
                return Ok(());
            }
            if start.elapsed() > DEATH_CHECK_AFTER {
                self.check_peers(what, addr)?;
            }
        }
    }

    fn check_peers(&self, what: &str, addr: u64) -> Result<()> {
        match self.region.dead_peer() {
            Some(dead) => Err(Error::new(
                ErrorKind::PeerDead,
                format!(
                    "sync {what} at address {addr:#x}: local rank {dead} (pid {}) died",
                    self.region.pid(dead)
                ),
            )),
            None => Ok(()),
        }
    }

    /// Stores `v` at `addr` and marks it full for `readers` gets, after waiting until the word
    /// is empty (the previous value's readers all took it).
    pub fn put<T: SyncValue>(&self, addr: u64, v: T, readers: u32) -> Result<()> {
        if readers == 0 || readers > MAX_READERS {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!("sync put at {addr:#x}: {readers} readers, must be 1..={MAX_READERS}"),
            ));
        }
        let e = self.lookup(addr)?;
        let claimed = loop {
            let c = e.ctl.load(SeqCst);
            if c & (FULL | BUSY) == 0 {
                if e.ctl.compare_exchange(c, c | BUSY, SeqCst, SeqCst).is_ok() {
                    break c;
                }
                continue;
            }
            self.wait(&e, "put", addr, || e.ctl.load(SeqCst) & (FULL | BUSY) == 0)?;
        };
        e.value.store(v.to_bits(), SeqCst);
        let generation = (claimed as u32).wrapping_add(1) as u64;
        e.ctl
            .store(FULL | (readers as u64) << 32 | generation, SeqCst);
        Self::notify(&e);
        Ok(())
    }

    /// Waits until `addr` is full, takes its value, and marks it empty when this was the last
    /// expected reader.
    pub fn get<T: SyncValue>(&self, addr: u64) -> Result<T> {
        let e = self.lookup(addr)?;
        loop {
            let c = e.ctl.load(SeqCst);
            if c & FULL != 0 {
                let v = e.value.load(SeqCst);
                let readers = (c >> 32) & READERS_MASK;
                let next = if readers <= 1 {
                    c & 0xffff_ffff
                } else {
                    c - (1 << 32)
                };
                // The generation in `c` makes this fail if the word was emptied and filled
                // again since we read `v`.
                if e.ctl.compare_exchange(c, next, SeqCst, SeqCst).is_ok() {
                    if readers <= 1 {
                        Self::notify(&e);
                    }
                    return Ok(T::from_bits(v));
                }
                continue;
            }
            self.wait(&e, "get", addr, || e.ctl.load(SeqCst) & FULL != 0)?;
        }
    }

    /// Whether `addr` is full right now.
    pub fn is_full(&self, addr: u64) -> Result<bool> {
        Ok(self.lookup(addr)?.ctl.load(SeqCst) & FULL != 0)
    }

    fn acquire(&self, e: &Entry<'_>, bit: u32, what: &str, addr: u64) -> Result<()> {
        loop {
            let l = e.lock.load(SeqCst);
            if l & bit == 0 {
                if e.lock.compare_exchange(l, l | bit, SeqCst, SeqCst).is_ok() {
                    return Ok(());
                }
                continue;
            }
            self.wait(e, what, addr, || e.lock.load(SeqCst) & bit == 0)?;
        }
    }

    /// Sets the lock bit of `addr`, waiting while another holder has it.
    pub fn lock(&self, addr: u64) -> Result<()> {
        let e = self.lookup(addr)?;
        self.acquire(&e, USER_LOCK, "lock", addr)
    }

    /// Sets the lock bit of `addr` if it is clear; true when it did.
    pub fn try_lock(&self, addr: u64) -> Result<bool> {
        let e = self.lookup(addr)?;
        Ok(e.lock.fetch_or(USER_LOCK, SeqCst) & USER_LOCK == 0)
    }

    /// Clears the lock bit of `addr`; an error when it was not set.
    pub fn unlock(&self, addr: u64) -> Result<()> {
        let e = self.lookup(addr)?;
        if e.lock.fetch_and(!USER_LOCK, SeqCst) & USER_LOCK == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("sync unlock at {addr:#x}: the word is not locked"),
            ));
        }
        Self::notify(&e);
        Ok(())
    }

    fn check_n(what: &str, addr: u64, n: u32) -> Result<()> {
        if n == 0 || n > i32::MAX as u32 {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!("sync {what} at {addr:#x}: {n} participants, must be at least 1"),
            ));
        }
        Ok(())
    }

    /// Returns once `n` participants have called `barrier` on `addr` in this round.
    pub fn barrier(&self, addr: u64, n: u32) -> Result<()> {
        Self::check_n("barrier", addr, n)?;
        let e = self.lookup(addr)?;
        let a = e.arrive.fetch_add(1, SeqCst);
        let generation = a >> 32;
        if (a & 0xffff_ffff) + 1 >= n as u64 {
            // Nobody can arrive for the next round before this store: all wait for it.
            e.arrive.store((generation + 1) << 32, SeqCst);
            Self::notify(&e);
            return Ok(());
        }
        self.wait(&e, "barrier", addr, || {
            e.arrive.load(SeqCst) >> 32 != generation
        })
    }

    /// Combines `v` from each of `n` participants with `op`; every participant gets the
    /// result. Values are combined in arrival order (for floats the rounding may differ from
    /// run to run, but all participants of one round see the same result).
    pub fn reduce<T: SyncValue>(&self, addr: u64, v: T, op: SyncOp, n: u32) -> Result<T> {
        Self::check_n("reduce", addr, n)?;
        if !T::supports(op) {
            return Err(Error::new(
                ErrorKind::InvalidOp,
                format!(
                    "sync reduce at {addr:#x}: {op:?} does not apply to {}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        let e = self.lookup(addr)?;
        self.acquire(&e, REDUCE_LOCK, "reduce", addr)?;
        let a = e.arrive.load(SeqCst);
        let (generation, count) = (a >> 32, a & 0xffff_ffff);
        let acc = if count == 0 {
            v
        } else {
            T::combine(op, T::from_bits(e.accum.load(SeqCst)), v)
        };
        e.accum.store(acc.to_bits(), SeqCst);
        let last = count + 1 >= n as u64;
        if last {
            // The result of this round stays until the next round completes, which needs
            // every participant of this one to have arrived again (so to have read it).
            e.result.store(acc.to_bits(), SeqCst);
            e.arrive.store((generation + 1) << 32, SeqCst);
        } else {
            e.arrive.store(a + 1, SeqCst);
        }
        e.lock.fetch_and(!REDUCE_LOCK, SeqCst);
        Self::notify(&e);
        if !last {
            self.wait(&e, "reduce", addr, || {
                e.arrive.load(SeqCst) >> 32 != generation
            })?;
        }
        Ok(T::from_bits(e.result.load(SeqCst)))
    }

    /// Reduces whole buffers: each of `n` participants passes `src` (same length everywhere)
    /// and gets `dst[i] = op` over all participants' `src[i]`. `addr` tags the operation. Each
    /// participant stages its buffer in its own slot and reduces one slice of every chunk
    /// across all slots, in local-rank order, so the result is identical everywhere and
    /// deterministic. At most one burst reduce per process at a time.
    pub fn burst_reduce<T: SyncValue>(
        &self,
        addr: u64,
        src: &[T],
        dst: &mut [T],
        op: SyncOp,
        n: u32,
    ) -> Result<()> {
        Self::check_n("burst reduce", addr, n)?;
        if src.len() != dst.len() {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "sync burst reduce at {addr:#x}: source has {} elements, destination {}",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        if !T::supports(op) {
            return Err(Error::new(
                ErrorKind::InvalidOp,
                format!(
                    "sync burst reduce at {addr:#x}: {op:?} does not apply to {}",
                    std::any::type_name::<T>()
                ),
            ));
        }
        if n as usize > self.geo.local_size {
            return Err(Error::new(
                ErrorKind::InvalidCount,
                format!(
                    "sync burst reduce at {addr:#x}: {n} participants but {} ranks on this node",
                    self.geo.local_size
                ),
            ));
        }
        if addr == u64::MAX {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "sync address 0xffffffffffffffff is reserved",
            ));
        }
        let me = self.region.me() as usize;
        let my_tag = self.region.u64_at(self.geo.burst_tags_offset() + me * 8)?;
        let chunk = self.geo.burst_bytes / 8;
        let slot_offset =
            |local: usize| self.geo.burst_slots_offset() + local * self.geo.burst_bytes;
        let mut members = Vec::with_capacity(n as usize);
        let mut bits = vec![0u64; chunk.min(src.len())];
        let mut done = 0;
        while done < src.len() {
            let len = chunk.min(src.len() - done);
            for (b, x) in bits.iter_mut().zip(&src[done..done + len]) {
                *b = x.to_bits();
            }
            self.region
                .write(slot_offset(me), bytemuck::cast_slice(&bits[..len]))?;
            my_tag.store(addr + 1, SeqCst);
            self.barrier(addr, n)?;
            members.clear();
            for l in 0..self.geo.local_size {
                if self
                    .region
                    .u64_at(self.geo.burst_tags_offset() + l * 8)?
                    .load(SeqCst)
                    == addr + 1
                {
                    members.push(l);
                }
            }
            if members.len() != n as usize {
                return Err(Error::new(
                    ErrorKind::InvalidCount,
                    format!(
                        "sync burst reduce at {addr:#x}: {} ranks of this node take part, {n} expected",
                        members.len()
                    ),
                ));
            }
            let index = members.iter().position(|&l| l == me).unwrap_or(0);
            let (lo, hi) = (
                len * index / members.len(),
                len * (index + 1) / members.len(),
            );
            if hi > lo {
                let mut acc = vec![0u64; hi - lo];
                let mut other = vec![0u64; hi - lo];
                for (i, &l) in members.iter().enumerate() {
                    let buf = if i == 0 { &mut acc } else { &mut other };
                    self.region
                        .read(slot_offset(l) + lo * 8, bytemuck::cast_slice_mut(buf))?;
                    if i > 0 {
                        for (a, o) in acc.iter_mut().zip(&other) {
                            *a = T::combine(op, T::from_bits(*a), T::from_bits(*o)).to_bits();
                        }
                    }
                }
                self.region
                    .write(slot_offset(members[0]) + lo * 8, bytemuck::cast_slice(&acc))?;
            }
            self.barrier(addr, n)?;
            self.region.read(
                slot_offset(members[0]),
                bytemuck::cast_slice_mut(&mut bits[..len]),
            )?;
            for (d, b) in dst[done..done + len].iter_mut().zip(&bits[..len]) {
                *d = T::from_bits(*b);
            }
            my_tag.store(0, SeqCst);
            // Nobody overwrites its slot for the next chunk before everyone copied this one.
            self.barrier(addr, n)?;
            done += len;
        }
        Ok(())
    }
}

/// A 64-bit mixer (splitmix64's finaliser) so neighbouring addresses spread over sets.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_combine_and_refuse() {
        assert_eq!(i64::combine(SyncOp::Min, -3, 2), -3);
        assert_eq!(u64::combine(SyncOp::Xor, 6, 3), 5);
        assert_eq!(f64::combine(SyncOp::Prod, 1.5, 2.0), 3.0);
        assert!(!f64::supports(SyncOp::And));
        assert_eq!(SyncOp::parse("max").unwrap(), SyncOp::Max);
        let e = SyncOp::parse("avg").unwrap_err();
        assert!(e.message().contains("avg"), "{e}");
    }

    #[test]
    fn wait_policy_spins_only_with_a_core_per_rank() {
        let own = WaitPolicy::new(false, 20_000, 100, 2000);
        assert_eq!(
            (own.spins, own.spin_ns, own.yield_us),
            (u32::MAX, 20_000, 2000)
        );
        let shared = WaitPolicy::new(true, 20_000, 100, 2000);
        assert_eq!(shared.spins, OVERSUBSCRIBED_SPINS);
        assert_eq!(shared.spin_ns, 0);
        assert_eq!(shared.yield_us, 100);
    }

    #[test]
    fn geometry_is_disjoint() {
        let g = Geometry {
            sets: 4,
            overflow: 3,
            burst_bytes: 128,
            local_size: 3,
        };
        assert_eq!(g.entries(), 19);
        assert!(g.burst_slots_offset() >= g.burst_tags_offset() + 24);
        assert_eq!(g.body_bytes(), g.burst_slots_offset() + 384);
        assert_ne!(mix(1) & 3, mix(2) & 3);
    }
}
