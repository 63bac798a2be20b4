//! The shared-memory transport: one segment per node holding a header (each local rank's
//! pid and CMA probe word), one small single-producer ring for every ordered pair of local
//! ranks, and a pool of large rings per rank.
//!
//! Buffer modes (seed 003): every pair starts on its small ring (memory-saving). Once a
//! sender has put [`Modes::fast_after_bytes`] into a peer's ring it moves that pair to one of
//! its own large rings (high-speed), at most [`Modes::fast_rings`] peers per sender. The move
//! is an in-band message ([`KIND_SWITCH`]) that is the last thing written to the old ring, so
//! the consumer reads the old ring to its end and then follows to the new one: order holds
//! without any other synchronisation. Large rings are never given back (a pair that was busy
//! once is likely to be busy again, and giving back would need a second handshake).
//! Neither end allocates or makes a system call when it switches: the pool is part of the
//! segment, and its pages are only touched (and so only take memory) once used.
//!
//! Setup is two-phase because the creator and the others must be ordered by the bootstrap
//! store (which this crate does not know): local rank 0 calls [`ShmNode::create`], publishes
//! that fact, the others call [`ShmNode::attach`]; once everybody is attached the creator
//! calls [`ShmNode::unlink`] so nothing is left in `/dev/shm` even if the job dies later.
//! This module must not depend on the runtime's message kinds beyond reserving
//! [`KIND_SWITCH`].
//!
//! Sleeping and waking: each rank's slot holds a futex word (its *bell*) and an *asleep*
//! flag, and the header a count of the node's sleepers. A rank that found nothing to do for
//! long enough announces that it will sleep ([`ShmNode::sleep_prepare`]), looks once more
//! for work, and sleeps in `FUTEX_WAIT` on its bell with a timeout ([`ShmNode::sleep`]);
//! whoever delivers something to it (a message into one of its rings: [`ShmNode::try_send`];
//! an arrival in the collective area: [`coll::CollArea`]) rings the bell when, and only when,
//! the flag says it sleeps ([`ShmNode::wake`]), so the sending side costs one fence and one
//! load of a read-mostly line, and no system call, while nobody sleeps. The futex is shared
//! (not `FUTEX_PRIVATE_FLAG`): the waker is another process (`heap::futex_wait`, the `libc`
//! crate's `syscall(SYS_futex, ..)`).

pub mod affinity;
pub mod cma;
pub mod coll;
pub mod heap;
pub mod lanes;
pub mod ring;
pub mod segment;

use ring::{Consumer, Producer};
use segment::Segment;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use weft_core::{Error, ErrorKind, Result};

pub use ring::{Header, INLINE_BYTES};

/// Message kind reserved by this module: "the rest of this pair's messages are in the
/// sender's large ring number `aux`". Never handed to the runtime.
pub const KIND_SWITCH: u8 = 0xff;

const MAGIC: u64 = 0x7765_6674_7368_6d33; // "weftshm3"
const SLOTS_OFFSET: usize = 256;
const SLOT_BYTES: usize = 64;
const PAGE_BYTES: usize = 4096;

#[repr(C)]
struct SegmentHeader {
    magic: AtomicU64,
    local_size: AtomicU32,
    fast_rings: AtomicU32,
    ring_bytes: AtomicU64,
    attached: AtomicU32,
    _pad2: u32,
    coll_bytes: AtomicU64,
    small_ring_bytes: AtomicU64,
    fast_after_bytes: AtomicU64,
    _pad3: [u8; 72],
    /// Ranks of the node announced asleep ([`ShmNode::sleep_prepare`]), on a cache line of
    /// its own: a waker of the whole node (a collective arrival) reads it first.
    sleepers: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<SegmentHeader>() <= SLOTS_OFFSET);

#[repr(C)]
struct RankSlot {
    pid: AtomicI32,
    _pad: u32,
    probe_addr: AtomicU64,
    probe_value: AtomicU64,
    /// Nonzero from the rank's announcement that it will sleep until it is awake again
    /// ([`ShmNode::sleep_prepare`]), 2 once its last look found nothing
    /// ([`ShmNode::sleep`]); written by the rank alone.
    asleep: AtomicU32,
    /// The rank's futex word: bumped by each waker that saw `asleep` set.
    bell: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<RankSlot>() <= SLOT_BYTES);

/// Geometry of a node segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Number of local ranks.
    pub local_size: u32,
    /// Bytes of cells per high-speed ring (power of two). Without [`Modes`] every pair's
    /// ring has this size.
    pub ring_bytes: usize,
    /// Bytes of the node-wide area for shared-memory collectives (multiple of 4096; may be 0).
    pub coll_bytes: usize,
}

/// Per-pair buffer modes: small rings first, large ones for the busiest peers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modes {
    /// Bytes of cells of every pair's first (memory-saving) ring (power of two, at most
    /// [`Layout::ring_bytes`]).
    pub small_ring_bytes: usize,
    /// Large rings in each rank's pool: the most peers a rank sends to in high-speed mode
    /// (`WEFT_MAX_FAST_PEERS`, capped at `local_size - 1`).
    pub fast_rings: u32,
    /// Bytes a rank puts into a peer's small ring before it moves the pair to a large ring
    /// (`WEFT_FAST_PEER_BYTES`).
    pub fast_after_bytes: u64,
}

impl Modes {
    /// No small rings: every pair uses a ring of `layout.ring_bytes` from the start.
    pub fn fixed(layout: &Layout) -> Modes {
        Modes {
            small_ring_bytes: layout.ring_bytes,
            fast_rings: 0,
            fast_after_bytes: u64::MAX,
        }
    }

    /// Small rings of `small_ring_bytes` and a pool of `max_fast_peers` large rings per rank
    /// (no more than it has peers). A small ring as large as the large one means no switching
    /// ([`Modes::fixed`]); a larger one is refused, naming both knobs: nothing would say which
    /// of the two sizes the user meant.
    pub fn new(
        layout: &Layout,
        small_ring_bytes: usize,
        max_fast_peers: u32,
        fast_after_bytes: u64,
    ) -> Result<Modes> {
        if small_ring_bytes > layout.ring_bytes {
            return Err(small_ring_too_large(small_ring_bytes, layout.ring_bytes));
        }
        if small_ring_bytes == layout.ring_bytes {
            return Ok(Modes::fixed(layout));
        }
        Ok(Modes {
            small_ring_bytes,
            fast_rings: max_fast_peers.min(layout.local_size.saturating_sub(1)),
            fast_after_bytes,
        })
    }
}

/// The error for a memory-saving ring larger than the high-speed one.
pub fn small_ring_too_large(small_ring_bytes: usize, ring_bytes: usize) -> Error {
    Error::new(
        ErrorKind::Config,
        format!(
            "WEFT_SHM_SMALL_RING_BYTES={small_ring_bytes} is larger than WEFT_SHM_RING_BYTES={ring_bytes}: \
             the ring every pair starts with must not exceed the one busy pairs switch to \
             (lower WEFT_SHM_SMALL_RING_BYTES, raise WEFT_SHM_RING_BYTES, or make them equal for no switching)"
        ),
    )
}

/// Offsets of everything in a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    layout: Layout,
    modes: Modes,
}

impl Geometry {
    fn rings_offset(&self) -> usize {
        (SLOTS_OFFSET + self.layout.local_size as usize * SLOT_BYTES).next_multiple_of(PAGE_BYTES)
    }

    /// The small ring of the pair (src, dst).
    fn ring_offset(&self, src: u32, dst: u32) -> usize {
        let n = self.layout.local_size as usize;
        self.rings_offset()
            + (src as usize * n + dst as usize) * ring::ring_footprint(self.modes.small_ring_bytes)
    }

    fn pool_offset(&self) -> usize {
        self.ring_offset(self.layout.local_size, 0)
            .next_multiple_of(PAGE_BYTES)
    }

    /// Large ring `k` of sender `src`'s pool.
    fn fast_ring_offset(&self, src: u32, k: u32) -> usize {
        self.pool_offset()
            + (src as usize * self.modes.fast_rings as usize + k as usize)
                * ring::ring_footprint(self.layout.ring_bytes)
    }

    fn coll_offset(&self) -> usize {
        self.fast_ring_offset(self.layout.local_size, 0)
            .next_multiple_of(PAGE_BYTES)
    }

    fn segment_bytes(&self) -> usize {
        self.coll_offset() + self.layout.coll_bytes.next_multiple_of(PAGE_BYTES)
    }

    fn validate(&self) -> Result<()> {
        let l = &self.layout;
        if l.local_size == 0 || l.local_size > 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "shared-memory segment for {} local ranks: must be 1..=4096",
                    l.local_size
                ),
            ));
        }
        if !l.ring_bytes.is_power_of_two() || l.ring_bytes < 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "WEFT_SHM_RING_BYTES={}: must be a power of two of at least 4096",
                    l.ring_bytes
                ),
            ));
        }
        let small = self.modes.small_ring_bytes;
        if small > l.ring_bytes {
            return Err(small_ring_too_large(small, l.ring_bytes));
        }
        if !small.is_power_of_two() || small < 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "WEFT_SHM_SMALL_RING_BYTES={small}: must be a power of two from 4096 to WEFT_SHM_RING_BYTES={}",
                    l.ring_bytes
                ),
            ));
        }
        if self.modes.fast_rings >= l.local_size {
            return Err(Error::new(
                ErrorKind::Config,
                format!(
                    "{} large rings per rank for {} local ranks: at most one per peer",
                    self.modes.fast_rings, l.local_size
                ),
            ));
        }
        Ok(())
    }
}

impl Layout {
    /// Total segment size in bytes when every pair has a ring of `ring_bytes` (no modes).
    pub fn segment_bytes(&self) -> usize {
        self.segment_bytes_with(&Modes::fixed(self))
    }

    /// Total segment size in bytes with `modes`: small rings, the pools of large rings, then
    /// the collective area.
    pub fn segment_bytes_with(&self, modes: &Modes) -> usize {
        Geometry {
            layout: *self,
            modes: *modes,
        }
        .segment_bytes()
    }
}

/// This process's view of the node segment: its producing ends towards every local peer and
/// its consuming ends from every local peer.
pub struct ShmNode {
    seg: Segment,
    geo: Geometry,
    me: u32,
    out: Vec<Producer>,
    inbound: Vec<Consumer>,
    /// Per peer: cells put into its current ring at which to try moving the pair to a large
    /// ring (`u64::MAX` once moved, or when the pool is used up), so the send path tests one
    /// number and nothing else.
    switch_at_cells: Vec<u64>,
    /// Large rings of our pool in use (peers we send to in high-speed mode).
    fast_out: u32,
    /// Peers that moved their sends to us to a large ring.
    fast_in: u32,
    /// The collective area's offset in the segment and its slot geometry (`coll::Geometry`),
    /// worked out once: `CollArea::new` runs on every poll of a wait in the area.
    coll_geometry: (usize, Option<coll::Geometry>),
    /// Bytes touched in the small rings we moved away from (see [`ShmNode::ring_touched_bytes`]).
    retired_touched_bytes: usize,
    /// Whether a send looks for a sleeping receiver to wake ([`ShmNode::set_wakes`]).
    wakes: bool,
    /// Futex sleeps of this rank so far ([`ShmNode::sleep`]).
    sleeps: u64,
    /// Those that ended with the bell rung.
    woken: u64,
}

impl ShmNode {
    /// Creates the node segment `name` (mode 0600) for `layout`, every pair with a ring of
    /// `layout.ring_bytes`, and attaches as local rank `me`.
    pub fn create(name: &str, layout: Layout, me: u32) -> Result<ShmNode> {
        Self::create_with(name, layout, Modes::fixed(&layout), me)
    }

    /// Creates the node segment `name` (mode 0600) with per-pair buffer `modes` and attaches
    /// as local rank `me`. The attaching ranks read the modes from the segment.
    pub fn create_with(name: &str, layout: Layout, modes: Modes, me: u32) -> Result<ShmNode> {
        let geo = Geometry { layout, modes };
        geo.validate()?;
        let seg = Segment::create(name, geo.segment_bytes())?;
        let header = seg.base() as *const SegmentHeader;
        // SAFETY: the segment is at least one page, zero-filled, and page-aligned.
        unsafe {
            let h = &*header;
            h.local_size.store(layout.local_size, Ordering::Relaxed);
            h.ring_bytes
                .store(layout.ring_bytes as u64, Ordering::Relaxed);
            h.coll_bytes
                .store(layout.coll_bytes as u64, Ordering::Relaxed);
            h.small_ring_bytes
                .store(modes.small_ring_bytes as u64, Ordering::Relaxed);
            h.fast_rings.store(modes.fast_rings, Ordering::Relaxed);
            h.fast_after_bytes
                .store(modes.fast_after_bytes, Ordering::Relaxed);
            h.magic.store(MAGIC, Ordering::Release);
        }
        Self::finish_attach(seg, geo, me)
    }

    /// Attaches to the segment `name` created by another local rank, as local rank `me`.
    pub fn attach(name: &str, me: u32) -> Result<ShmNode> {
        let seg = Segment::open(name)?;
        if seg.len() < PAGE_BYTES {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("segment {name} is only {} bytes", seg.len()),
            ));
        }
        // SAFETY: at least one page is mapped (checked above).
        let h = unsafe { &*(seg.base() as *const SegmentHeader) };
        let magic = h.magic.load(Ordering::Acquire);
        if magic != MAGIC {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("segment {name} has a bad magic number {magic:#x}"),
            ));
        }
        let geo = Geometry {
            layout: Layout {
                local_size: h.local_size.load(Ordering::Relaxed),
                ring_bytes: h.ring_bytes.load(Ordering::Relaxed) as usize,
                coll_bytes: h.coll_bytes.load(Ordering::Relaxed) as usize,
            },
            modes: Modes {
                small_ring_bytes: h.small_ring_bytes.load(Ordering::Relaxed) as usize,
                fast_rings: h.fast_rings.load(Ordering::Relaxed),
                fast_after_bytes: h.fast_after_bytes.load(Ordering::Relaxed),
            },
        };
        geo.validate()?;
        if seg.len() < geo.segment_bytes() {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "segment {name} is {} bytes, layout needs {}",
                    seg.len(),
                    geo.segment_bytes()
                ),
            ));
        }
        Self::finish_attach(seg, geo, me)
    }

    fn finish_attach(seg: Segment, geo: Geometry, me: u32) -> Result<ShmNode> {
        if me >= geo.layout.local_size {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "local rank {me} attaching to a segment for {} ranks",
                    geo.layout.local_size
                ),
            ));
        }
        let base = seg.base();
        let n = geo.layout.local_size;
        let small = geo.modes.small_ring_bytes;
        let mut out = Vec::with_capacity(n as usize);
        let mut inbound = Vec::with_capacity(n as usize);
        for peer in 0..n {
            // SAFETY: ring offsets lie inside the segment (its size was checked against the
            // geometry); each (src, dst) ring has exactly one producer (src) and one consumer
            // (dst).
            unsafe {
                out.push(Producer::new(base.add(geo.ring_offset(me, peer)), small));
                inbound.push(Consumer::new(base.add(geo.ring_offset(peer, me)), small));
            }
        }
        let switch_at = if geo.modes.fast_rings == 0 {
            u64::MAX
        } else {
            geo.modes.fast_after_bytes.div_ceil(ring::CELL_BYTES as u64)
        };
        let coll_offset = geo.coll_offset();
        let coll_geometry = (
            coll_offset,
            coll::Geometry::of(
                // SAFETY: the area lies inside the mapping (its size was checked against the
                // layout); only its address is taken here.
                unsafe { base.add(coll_offset) },
                geo.layout.coll_bytes,
                geo.layout.local_size as usize,
            ),
        );
        let node = ShmNode {
            seg,
            geo,
            me,
            coll_geometry,
            out,
            inbound,
            switch_at_cells: vec![switch_at; n as usize],
            fast_out: 0,
            fast_in: 0,
            retired_touched_bytes: 0,
            wakes: true,
            sleeps: 0,
            woken: 0,
        };
        let pid = std::process::id() as i32;
        let (probe_addr, probe_value) = cma::probe_target(pid);
        let slot = node.slot(me);
        slot.probe_addr.store(probe_addr, Ordering::Relaxed);
        slot.probe_value.store(probe_value, Ordering::Relaxed);
        slot.pid.store(pid, Ordering::Release);
        node.header().attached.fetch_add(1, Ordering::AcqRel);
        Ok(node)
    }

    fn header(&self) -> &SegmentHeader {
        // SAFETY: the header lies at the start of the live mapping.
        unsafe { &*(self.seg.base() as *const SegmentHeader) }
    }

    fn slot(&self, local: u32) -> &RankSlot {
        assert!(local < self.geo.layout.local_size);
        // SAFETY: slots lie between SLOTS_OFFSET and rings_offset(), inside the mapping.
        unsafe {
            &*(self
                .seg
                .base()
                .add(SLOTS_OFFSET + local as usize * SLOT_BYTES) as *const RankSlot)
        }
    }

    /// Removes the segment's name (call once every local rank has attached).
    pub fn unlink(&self) -> Result<()> {
        Segment::unlink(self.seg.name())
    }

    /// Number of local ranks that have attached so far.
    pub fn attached(&self) -> u32 {
        self.header().attached.load(Ordering::Acquire)
    }

    /// The segment's geometry.
    pub fn layout(&self) -> Layout {
        self.geo.layout
    }

    /// The segment's buffer modes.
    pub fn modes(&self) -> Modes {
        self.geo.modes
    }

    /// Peers this rank sends to through a large ring (at most [`Modes::fast_rings`]).
    pub fn fast_peer_count(&self) -> u32 {
        self.fast_out
    }

    /// Peers that send to this rank through a large ring.
    pub fn fast_inbound_count(&self) -> u32 {
        self.fast_in
    }

    /// Bytes of rings reserved for what this rank sends (control areas included): one small
    /// ring per peer and the large rings it moved to. This is address space set aside in the
    /// segment, not memory in use: a page of a ring takes memory only once written (see
    /// [`ShmNode::ring_touched_bytes`]); large rings nobody moved to are never touched.
    pub fn ring_memory_bytes(&self) -> usize {
        let peers = self.geo.layout.local_size as usize - 1;
        peers * ring::ring_footprint(self.geo.modes.small_ring_bytes)
            + self.fast_out as usize * ring::ring_footprint(self.geo.layout.ring_bytes)
    }

    /// Bytes of the rings this rank sends into that its traffic has touched so far (cells
    /// written, at most each ring's size, and control areas; small rings it moved away from
    /// included): the memory its sending really takes, give or take a page per ring (the
    /// kernel maps whole pages; this counts bytes).
    /// At most [`ShmNode::ring_memory_bytes`]; O(local peers).
    pub fn ring_touched_bytes(&self) -> usize {
        self.retired_touched_bytes + self.out.iter().map(Producer::touched_bytes).sum::<usize>()
    }

    /// Length of the whole segment in bytes.
    pub fn segment_bytes(&self) -> usize {
        self.geo.segment_bytes()
    }

    /// This process's local rank.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// Process id of local rank `local` (0 until it attached).
    pub fn pid(&self, local: u32) -> i32 {
        self.slot(local).pid.load(Ordering::Acquire)
    }

    /// Whether this process can use CMA to read from local rank `local` (probes it).
    pub fn probe_cma(&self, local: u32) -> bool {
        let slot = self.slot(local);
        let pid = slot.pid.load(Ordering::Acquire);
        pid != 0
            && cma::probe(
                pid,
                slot.probe_addr.load(Ordering::Relaxed),
                slot.probe_value.load(Ordering::Relaxed),
            )
    }

    /// Whether local rank `local`'s process still exists (and is not a zombie). A system call:
    /// use only when a wait has made no progress for a while.
    pub fn peer_alive(&self, local: u32) -> bool {
        process_alive(self.pid(local))
    }

    /// The node-wide area for shared-memory collectives: its base address and length. Every
    /// local rank maps the same bytes; the area is zero-filled at creation. What lives there
    /// and how access is synchronised is the business of the safe wrapper in `shm::coll`.
    pub fn coll_area(&self) -> (*mut u8, usize) {
        // SAFETY: the area lies inside the mapping (its size was checked against the layout).
        (
            unsafe { self.seg.base().add(self.coll_geometry.0) },
            self.geo.layout.coll_bytes,
        )
    }

    /// The collective area's slot geometry, None when it is too small (`coll::Geometry`).
    pub(crate) fn coll_geometry(&self) -> Option<coll::Geometry> {
        self.coll_geometry.1
    }

    /// Largest payload of one message to local rank `peer` now (its ring may grow later,
    /// never shrink).
    #[inline]
    pub fn max_payload(&self, peer: u32) -> usize {
        self.out[peer as usize].max_payload()
    }

    /// Bytes of cells of the ring this rank sends to local rank `peer` through now.
    #[inline]
    pub fn ring_bytes(&self, peer: u32) -> usize {
        self.out[peer as usize].ring_bytes()
    }

    /// Sends one message to local rank `peer`; false when its ring is full right now.
    #[inline]
    pub fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool {
        let p = peer as usize;
        if self.out[p].cells_sent() >= self.switch_at_cells[p] {
            self.try_switch(p);
        }
        if !self.out[p].try_send(header, parts) {
            return false;
        }
        if self.wakes {
            self.wake(peer);
        }
        true
    }

    /// Whether sends look for a sleeping receiver to wake (default yes). A job whose ranks
    /// never sleep (`WEFT_BLOCK=off` on every rank) saves the fence of each send; a rank
    /// that sleeps anyway is then woken only by its sleep's timeout.
    pub fn set_wakes(&mut self, wakes: bool) {
        self.wakes = wakes;
    }

    /// Announces that this rank is about to sleep and returns its bell's value, to hand to
    /// [`ShmNode::sleep`] after one more look for work (or [`ShmNode::sleep_cancel`] when
    /// that look found some).
    ///
    /// Ordering (no lost wake-up): the sleeper stores `asleep`, then a SeqCst fence, then
    /// reads the bell and looks for work (ring sequence words, collective area counters);
    /// a waker publishes its work (a release store or RMW), then a SeqCst fence, then reads
    /// `asleep` ([`ShmNode::wake`]). Of two SeqCst fences one comes first in their single
    /// total order: if the waker's comes first, the sleeper's look sees the work and it
    /// does not sleep; if the sleeper's comes first, the waker sees `asleep`, bumps the
    /// bell and calls `FUTEX_WAKE`. A bump that lands before the sleeper read the bell is
    /// ordered after the work it signals (the RMW reads-from chain), so the look sees the
    /// work; one that lands after makes `FUTEX_WAIT` return at once (the word no longer
    /// holds the value read). A wake-up may be spurious (an old bump, a timeout): callers
    /// look for work again after any return.
    pub fn sleep_prepare(&self) -> u32 {
        let me = self.slot(self.me);
        me.asleep.store(1, Ordering::Relaxed);
        self.header().sleepers.fetch_add(1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::SeqCst);
        me.bell.load(Ordering::Acquire)
    }

    /// Withdraws the announcement of [`ShmNode::sleep_prepare`] (work was found).
    pub fn sleep_cancel(&self) {
        let me = self.slot(self.me);
        me.asleep.store(0, Ordering::Relaxed);
        self.header().sleepers.fetch_sub(1, Ordering::Relaxed);
    }

    /// Sleeps in `FUTEX_WAIT` on this rank's bell while it still reads `bell` (the value
    /// [`ShmNode::sleep_prepare`] returned), at most `timeout`, then withdraws the
    /// announcement. Returns whether the bell was rung (false: the timeout, a signal, or
    /// nothing rung yet); either way the caller looks for work again.
    pub fn sleep(&mut self, bell: u32, timeout: std::time::Duration) -> bool {
        self.sleeps += 1;
        let me = self.slot(self.me);
        // Committed: the last look found nothing ([`ShmNode::asleep`] tells peers).
        me.asleep.store(2, Ordering::Relaxed);
        let word = &me.bell;
        heap::futex_wait(word, bell, timeout);
        let rung = word.load(Ordering::Acquire) != bell;
        self.sleep_cancel();
        self.woken += rung as u64;
        rung
    }

    /// Ranks of this node that announced a sleep ([`ShmNode::sleep_prepare`]) and have not
    /// withdrawn it: the job's ranks that are not competing for a core right now (read in a
    /// wait's slow part, never on the message path).
    pub fn sleepers(&self) -> u32 {
        self.header().sleepers.load(Ordering::Relaxed)
    }

    /// Futex sleeps of this rank so far ([`ShmNode::sleep`]).
    pub fn sleeps(&self) -> u64 {
        self.sleeps
    }

    /// Sleeps of this rank that ended with its bell rung by a peer (not by the timeout).
    pub fn sleeps_woken(&self) -> u64 {
        self.woken
    }

    /// Whether local rank `local` sleeps: its last look for work found none and it is in
    /// (or entering) `FUTEX_WAIT`, which only a rung bell or the timeout ends. (A rank that
    /// has only announced its sleep, [`ShmNode::sleep_prepare`], may still find work.)
    pub fn asleep(&self, local: u32) -> bool {
        self.slot(local).asleep.load(Ordering::SeqCst) == 2
    }

    /// Wakes local rank `peer` if it announced that it sleeps, after this rank published
    /// something for it (see [`ShmNode::sleep_prepare`] for the ordering). While it does
    /// not sleep: one fence and one load of a line it writes only when it goes to sleep.
    #[inline]
    pub fn wake(&self, peer: u32) {
        std::sync::atomic::fence(Ordering::SeqCst);
        let slot = self.slot(peer);
        if slot.asleep.load(Ordering::Relaxed) != 0 {
            ring_bell(&slot.bell);
        }
    }

    /// Wakes every local rank that announced that it sleeps (after a change of the
    /// collective area, which any of them may wait for). While nobody sleeps: one fence and
    /// one load.
    pub fn wake_node(&self) {
        if !self.wakes {
            return;
        }
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.header().sleepers.load(Ordering::Relaxed) == 0 {
            return;
        }
        for l in 0..self.geo.layout.local_size {
            let slot = self.slot(l);
            if l != self.me && slot.asleep.load(Ordering::Relaxed) != 0 {
                ring_bell(&slot.bell);
            }
        }
    }

    /// Moves the pair (me, `p`) to the next large ring of our pool, if one is left and the
    /// small ring has room for the switch message (otherwise the next send tries again).
    #[cold]
    fn try_switch(&mut self, p: usize) {
        let k = self.fast_out;
        // The threshold is u64::MAX without a pool and once the pool is used up.
        debug_assert!(
            k < self.geo.modes.fast_rings,
            "switch with no large ring left"
        );
        let h = Header {
            kind: KIND_SWITCH,
            aux: k,
            ..Header::default()
        };
        if !self.out[p].try_send(&h, &[]) {
            return;
        }
        let off = self.geo.fast_ring_offset(self.me, k);
        self.retired_touched_bytes += self.out[p].touched_bytes();
        // SAFETY: the ring lies inside the segment; ring k of our pool is used by us alone,
        // for this pair alone (k is handed out once), and is still zero-filled.
        self.out[p] =
            unsafe { Producer::new(self.seg.base().add(off), self.geo.layout.ring_bytes) };
        self.fast_out += 1;
        self.switch_at_cells[p] = u64::MAX;
        if self.fast_out == self.geo.modes.fast_rings {
            self.switch_at_cells.fill(u64::MAX);
        }
    }

    /// True when a message from local rank `peer` is waiting (possibly only the switch to a
    /// large ring, after which [`ShmNode::poll`] may still find nothing).
    #[inline]
    pub fn ready(&self, peer: u32) -> bool {
        self.inbound[peer as usize].ready()
    }

    /// Starts bringing the next message from local rank `peer` into this core's cache
    /// ([`Consumer::prefetch`]); takes nothing.
    #[inline]
    pub fn prefetch(&self, peer: u32) {
        self.inbound[peer as usize].prefetch();
    }

    /// Takes the next message from local rank `peer`, if any, handing header and payload to
    /// `f`. Follows the peer to its large ring when it switched.
    #[inline]
    pub fn poll<R>(&mut self, peer: u32, f: impl FnOnce(&Header, &[u8], &[u8]) -> R) -> Option<R> {
        self.poll_if(peer, |_| true, f)
    }

    /// [`ShmNode::poll`] for a message from `peer` whose header `accept` accepts; one it
    /// refuses stays, the next to take.
    #[inline]
    pub fn poll_if<R>(
        &mut self,
        peer: u32,
        accept: impl Fn(&Header) -> bool,
        f: impl FnOnce(&Header, &[u8], &[u8]) -> R,
    ) -> Option<R> {
        let mut f = Some(f);
        loop {
            let inbound = &mut self.inbound[peer as usize];
            let got = inbound.poll_if(
                |h| h.kind == KIND_SWITCH || accept(h),
                |h, a, b| {
                    if h.kind == KIND_SWITCH {
                        Err(h.aux)
                    } else {
                        // `f` is only taken here, and this branch returns at once below.
                        Ok(f.take().map(|f| f(h, a, b)))
                    }
                },
            )?;
            match got {
                Ok(r) => return r,
                Err(k) => self.follow_switch(peer, k),
            }
        }
    }

    /// Peer `peer` wrote its last message to our small ring and continues in ring `k` of its
    /// pool.
    #[cold]
    fn follow_switch(&mut self, peer: u32, k: u32) {
        if k >= self.geo.modes.fast_rings {
            // Only a local rank of this job writes here; a bad index is a bug, not an attack.
            // Staying on the old ring stalls this pair rather than reading foreign memory.
            log::error!(
                "local rank {}: local rank {peer} switched to large ring {k} of {}; ignored",
                self.me,
                self.geo.modes.fast_rings
            );
            return;
        }
        let off = self.geo.fast_ring_offset(peer, k);
        // SAFETY: the ring lies inside the segment; its producer (peer) gave it to this pair
        // alone, and we are the pair's only consumer.
        self.inbound[peer as usize] =
            unsafe { Consumer::new(self.seg.base().add(off), self.geo.layout.ring_bytes) };
        self.fast_in += 1;
    }
}

/// Rings a sleeping rank's bell: a bump of the word its `FUTEX_WAIT` compares, then
/// `FUTEX_WAKE` (cold: only when the rank announced that it sleeps).
#[cold]
fn ring_bell(bell: &AtomicU32) {
    bell.fetch_add(1, Ordering::SeqCst);
    heap::futex_wake(bell, i32::MAX);
}

/// True when process `pid` exists and is not a zombie.
pub fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    }
    // /proc/<pid>/stat, read into the stack: this runs now and then during every long wait
    // (the engine's liveness check), which must not allocate.
    use std::io::{Read, Write};
    let mut path = [0u8; 32];
    let len = {
        let mut w = &mut path[..];
        if write!(w, "/proc/{pid}/stat").is_err() {
            return true;
        }
        32 - w.len()
    };
    let Ok(path) = std::str::from_utf8(&path[..len]) else {
        return true;
    };
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    // The state comes right after the command name (at most 16 bytes), well within this.
    let mut buf = [0u8; 512];
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    let stat = &buf[..n];
    // Field 3 (after the parenthesised command name) is the state; Z = zombie, X = dead.
    match stat.iter().rposition(|&b| b == b')').and_then(|i| {
        stat[i + 1..]
            .iter()
            .copied()
            .find(|b| !b.is_ascii_whitespace())
    }) {
        Some(state) => state != b'Z' && state != b'X',
        None => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment name unique to this test process; the name is unlinked when the guard
    /// drops, so a failing test leaves nothing in /dev/shm.
    struct Name(String);

    impl std::ops::Deref for Name {
        type Target = str;
        fn deref(&self) -> &str {
            &self.0
        }
    }

    impl Drop for Name {
        fn drop(&mut self) {
            let _ = Segment::unlink(&self.0);
        }
    }

    fn name(tag: &str) -> Name {
        Name(format!("/weft-test-{}-{tag}", std::process::id()))
    }

    #[test]
    fn create_attach_exchange_unlink() {
        let n = name("a");
        let layout = Layout {
            local_size: 3,
            ring_bytes: 8192,
            coll_bytes: 8192,
        };
        let mut a = ShmNode::create(&n, layout, 0).unwrap();
        let mut b = ShmNode::attach(&n, 2).unwrap();
        assert_eq!(a.attached(), 2);
        assert_eq!(b.layout(), layout);
        a.unlink().unwrap();
        assert!(!std::path::Path::new(&format!("/dev/shm{}", &*n)).exists());
        // Mode 0600 was checked while the name existed in the multi-process tests; here: data.
        let h = Header {
            kind: 3,
            src: 0,
            ctx: 9,
            tag: 5,
            len: 3,
            aux: 1,
            ..Header::default()
        };
        assert!(a.try_send(2, &h, &[b"abc"]));
        assert!(!b.ready(1));
        let got = b.poll(0, |h, x, y| (*h, [x, y].concat())).unwrap();
        assert_eq!(got, (h, b"abc".to_vec()));
        assert!(b.probe_cma(0));
        assert!(b.peer_alive(0));
        assert!(!b.peer_alive(1), "rank 1 never attached");
    }

    #[test]
    fn segment_is_private_to_the_user() {
        use std::os::unix::fs::PermissionsExt;
        let n = name("mode");
        let a = ShmNode::create(
            &n,
            Layout {
                local_size: 1,
                ring_bytes: 4096,
                coll_bytes: 8192,
            },
            0,
        )
        .unwrap();
        let mode = std::fs::metadata(format!("/dev/shm{}", &*n))
            .unwrap()
            .permissions()
            .mode();
        a.unlink().unwrap();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn bad_layouts_and_names_are_errors() {
        assert!(ShmNode::create(
            &name("b"),
            Layout {
                local_size: 2,
                ring_bytes: 5000,
                coll_bytes: 8192
            },
            0
        )
        .is_err());
        assert!(ShmNode::create(
            &name("c"),
            Layout {
                local_size: 0,
                ring_bytes: 8192,
                coll_bytes: 8192
            },
            0
        )
        .is_err());
        assert!(ShmNode::create(
            "no-slash",
            Layout {
                local_size: 1,
                ring_bytes: 8192,
                coll_bytes: 8192
            },
            0
        )
        .is_err());
        assert!(ShmNode::attach(&name("missing"), 0).is_err());
        let n = name("d");
        let a = ShmNode::create(
            &n,
            Layout {
                local_size: 2,
                ring_bytes: 8192,
                coll_bytes: 8192,
            },
            0,
        )
        .unwrap();
        assert_eq!(
            ShmNode::attach(&n, 5).err().map(|e| e.kind()),
            Some(ErrorKind::InvalidRank)
        );
        a.unlink().unwrap();
    }

    fn msg(tag: u32, len: usize) -> (Header, Vec<u8>) {
        let h = Header {
            kind: 1,
            tag: tag as i32,
            len: len as u32,
            ..Header::default()
        };
        (h, (0..len).map(|i| (i as u32 ^ tag) as u8).collect())
    }

    #[test]
    fn only_the_cap_of_pairs_moves_to_large_rings_and_order_holds() {
        let n = name("modes");
        let layout = Layout {
            local_size: 4,
            ring_bytes: 65536,
            coll_bytes: 0,
        };
        let modes = Modes::new(&layout, 4096, 1, 8192).unwrap();
        assert_eq!(modes.fast_rings, 1);
        let mut a = ShmNode::create_with(&n, layout, modes, 0).unwrap();
        let mut peers: Vec<ShmNode> = (1..4).map(|r| ShmNode::attach(&n, r).unwrap()).collect();
        a.unlink().unwrap();
        assert_eq!(peers[0].modes(), modes);
        assert_eq!(a.max_payload(1), ring::max_payload(4096));
        // Every peer gets far more than the threshold, interleaved; each checks order and data.
        let mut next = [0u32; 3];
        let mut expect = [0u32; 3];
        for round in 0..3000u32 {
            for p in 0..3 {
                let (h, data) = msg(next[p], (round as usize * 13) % 1000);
                if a.try_send(
                    p as u32 + 1,
                    &h,
                    &[&data[..data.len() / 3], &data[data.len() / 3..]],
                ) {
                    next[p] += 1;
                }
                if round % 2 == 0 {
                    while let Some((h, d)) = peers[p].poll(0, |h, x, y| (*h, [x, y].concat())) {
                        let (eh, ed) = msg(expect[p], d.len());
                        assert_eq!((h.tag, h.len), (eh.tag, eh.len), "peer {p}");
                        assert_eq!(d, ed, "peer {p} message {}", expect[p]);
                        expect[p] += 1;
                    }
                }
            }
        }
        for p in 0..3 {
            while peers[p]
                .poll(0, |h, _, _| assert_eq!(h.tag as u32, expect[p]))
                .is_some()
            {
                expect[p] += 1;
            }
            assert_eq!(expect[p], next[p], "peer {p} lost messages");
            assert!(next[p] > 1000, "peer {p}: only {} messages", next[p]);
        }
        assert_eq!(a.fast_peer_count(), 1);
        let followed: u32 = peers.iter().map(ShmNode::fast_inbound_count).sum();
        assert_eq!(followed, 1, "exactly one pair moved");
        let fast = (1..4).find(|&p| a.ring_bytes(p) == 65536).unwrap();
        assert_eq!(peers[fast as usize - 1].fast_inbound_count(), 1);
        assert_eq!(
            (1..4).filter(|&p| a.ring_bytes(p) == 4096).count(),
            2,
            "the others stay small"
        );
        // The large ring carries what the small one could not.
        let big = ring::max_payload(4096) + 1000;
        let (h, data) = msg(next[fast as usize - 1], big);
        assert!(a.try_send(fast, &h, &[&data]));
        let got = peers[fast as usize - 1]
            .poll(0, |_, x, y| [x, y].concat())
            .unwrap();
        assert_eq!(got, data);
        assert_eq!(
            a.ring_memory_bytes(),
            2 * ring::ring_footprint(4096)
                + ring::ring_footprint(4096)
                + ring::ring_footprint(65536)
        );
    }

    #[test]
    fn a_small_ring_above_the_large_one_is_refused_by_name() {
        let layout = Layout {
            local_size: 4,
            ring_bytes: 65536,
            coll_bytes: 0,
        };
        let e = Modes::new(&layout, 131072, 2, 1 << 20).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Config);
        for part in [
            "WEFT_SHM_SMALL_RING_BYTES=131072",
            "WEFT_SHM_RING_BYTES=65536",
        ] {
            assert!(e.message().contains(part), "{e}");
        }
        // Equal sizes are the documented "no switching".
        assert_eq!(
            Modes::new(&layout, 65536, 2, 1 << 20).unwrap(),
            Modes::fixed(&layout)
        );
        // Modes made by hand are checked where the segment is made.
        let bad = Modes {
            small_ring_bytes: 131072,
            fast_rings: 1,
            fast_after_bytes: 1,
        };
        let e = ShmNode::create_with(&name("bigsmall"), layout, bad, 0)
            .err()
            .unwrap();
        assert!(e.message().contains("WEFT_SHM_RING_BYTES=65536"), "{e}");
    }

    #[test]
    fn touched_bytes_follow_the_traffic_not_the_reservation() {
        let n = name("touch");
        let layout = Layout {
            local_size: 3,
            ring_bytes: 65536,
            coll_bytes: 0,
        };
        let modes = Modes::new(&layout, 8192, 1, 16384).unwrap();
        let mut a = ShmNode::create_with(&n, layout, modes, 0).unwrap();
        let mut b = ShmNode::attach(&n, 1).unwrap();
        let _c = ShmNode::attach(&n, 2).unwrap();
        a.unlink().unwrap();
        assert_eq!(a.ring_touched_bytes(), 0, "nothing sent, nothing touched");
        // 300 messages of 3 cells to rank 1 only: the 8K small ring wraps before the switch
        // (at 16K), then about 210 messages go into the 64K large ring, which does not wrap.
        for i in 0..300 {
            let (h, d) = msg(i, 100);
            while !a.try_send(1, &h, &[&d]) {
                while b.poll(0, |_, _, _| ()).is_some() {}
            }
        }
        while b.poll(0, |_, _, _| ()).is_some() {}
        assert_eq!(a.fast_peer_count(), 1);
        let touched = a.ring_touched_bytes();
        let reserved = a.ring_memory_bytes();
        // The small ring to rank 1 whole, and at least 200 messages' cells of the large ring;
        // nothing of the ring to rank 2 and not all of the large ring.
        assert!(touched >= 8192 + 200 * 3 * 64, "{touched}");
        assert!(touched < 8192 + 65536, "{touched}");
        assert!(
            reserved >= 2 * 8192 + 65536 && touched + 8192 < reserved,
            "touched {touched} reserved {reserved}"
        );
    }

    #[test]
    fn a_full_small_ring_delays_the_switch_without_losing_order() {
        let n = name("full");
        let layout = Layout {
            local_size: 2,
            ring_bytes: 16384,
            coll_bytes: 0,
        };
        // 64 cells of 64 bytes; the threshold is passed when the ring is full.
        let mut a = ShmNode::create_with(
            &n,
            layout,
            Modes::new(&layout, 4096, 1, 63 * 64).unwrap(),
            0,
        )
        .unwrap();
        let mut b = ShmNode::attach(&n, 1).unwrap();
        a.unlink().unwrap();
        let (h0, d0) = msg(0, 2016); // 32 cells
        let (h1, d1) = msg(1, 1952); // 31 cells: 63 in use, the last one kept free
        assert!(a.try_send(1, &h0, &[&d0]));
        assert!(a.try_send(1, &h1, &[&d1]));
        let (h2, d2) = msg(2, 10);
        assert!(
            !a.try_send(1, &h2, &[&d2]),
            "no room for the switch nor the message"
        );
        assert_eq!(a.fast_peer_count(), 0);
        assert_eq!(b.poll(0, |h, _, _| h.tag), Some(0));
        assert!(
            a.try_send(1, &h2, &[&d2]),
            "room now: switch, then the message"
        );
        assert_eq!((a.fast_peer_count(), a.ring_bytes(1)), (1, 16384));
        assert_eq!(b.poll(0, |h, x, y| (h.tag, [x, y].concat())), Some((1, d1)));
        assert_eq!(b.fast_inbound_count(), 0, "the switch is behind message 1");
        assert_eq!(b.poll(0, |h, x, y| (h.tag, [x, y].concat())), Some((2, d2)));
        assert_eq!(b.fast_inbound_count(), 1);
        assert!(b.poll(0, |_, _, _| ()).is_none());
    }

    #[test]
    fn small_rings_shrink_large_segments() {
        // Default knobs: 256K large rings, 64K small rings, 8 fast peers, 4M collective area.
        for (local, at_most_percent) in [(16u32, 80usize), (64, 40)] {
            let layout = Layout {
                local_size: local,
                ring_bytes: 256 << 10,
                coll_bytes: 4 << 20,
            };
            let before = layout.segment_bytes();
            let after =
                layout.segment_bytes_with(&Modes::new(&layout, 64 << 10, 8, 1 << 20).unwrap());
            assert!(
                after * 100 <= before * at_most_percent,
                "{local} local ranks: {after} bytes with modes, {before} without"
            );
        }
    }

    #[test]
    fn a_sleeping_receiver_is_woken_by_a_send_and_an_area_arrival() {
        let n = name("sleep");
        let layout = Layout {
            local_size: 2,
            ring_bytes: 8192,
            coll_bytes: 16384,
        };
        let mut a = ShmNode::create(&n, layout, 0).unwrap();
        let long = std::time::Duration::from_secs(60);
        let (attached, on_attach) = std::sync::mpsc::channel();
        let seg_name = n.0.clone();
        // Rank 1 sleeps until a message comes, then until the area's count reaches 1.
        let sleeper = std::thread::spawn(move || {
            let mut b = ShmNode::attach(&seg_name, 1).unwrap();
            attached.send(()).unwrap();
            let got = loop {
                let bell = b.sleep_prepare();
                if let Some(v) = b.poll(0, |h, x, _| (h.tag, x.to_vec())) {
                    b.sleep_cancel();
                    break v;
                }
                b.sleep(bell, long);
            };
            attached.send(()).unwrap();
            loop {
                let bell = b.sleep_prepare();
                if coll::CollArea::new(&b).unwrap().arrivals() >= 1 {
                    b.sleep_cancel();
                    break;
                }
                b.sleep(bell, long);
            }
            (got, b.sleeps(), b.sleeps_woken())
        });
        on_attach.recv().unwrap();
        a.unlink().unwrap();
        let deadline = std::time::Instant::now() + long;
        let wait_asleep = |a: &ShmNode| {
            while !a.asleep(1) {
                assert!(std::time::Instant::now() < deadline, "rank 1 never slept");
                std::thread::yield_now();
            }
        };
        wait_asleep(&a);
        let h = Header {
            kind: 1,
            tag: 42,
            len: 5,
            ..Header::default()
        };
        assert!(a.try_send(1, &h, &[b"hello"]));
        // Its first sleep over (announcement withdrawn), the next one is the area's.
        on_attach.recv().unwrap();
        wait_asleep(&a);
        coll::CollArea::new(&a).unwrap().arrive();
        let (got, sleeps, woken) = sleeper.join().unwrap();
        assert_eq!(got, (42, b"hello".to_vec()));
        // Both sleeps were seen before the delivery, so each ended with the bell rung (a
        // lost wake-up would end one only after a minute, unrung).
        assert!(sleeps >= 2 && woken >= 2, "{sleeps} sleeps, {woken} woken");
        assert!(!a.asleep(1));
    }

    #[test]
    fn dead_process_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(!process_alive(pid));
        assert!(process_alive(std::process::id() as i32));
    }

    #[test]
    fn zombie_process_is_not_alive() {
        // An exited child not yet reaped still answers kill(pid, 0): only its state in
        // /proc/<pid>/stat ("Z") tells.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_alive(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "child {pid} never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // SAFETY: signal 0 only checks for existence.
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "still there as a zombie");
        child.wait().unwrap();
    }
}
