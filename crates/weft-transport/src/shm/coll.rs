//! A safe view of the node-wide collective area of a [`ShmNode`] segment: a few shared
//! counters, one published flag per local rank, and data slots (one per local rank plus one
//! shared result slot) that are only ever copied into and out of, never borrowed.
//!
//! Layout (from the area's start): 64-byte lines for the arrival counter, then one per local
//! rank: its flag (word 0), its Cross Memory Attach vote (word 1), a second published
//! value (word 2, [`CollArea::publish_second`]), the number of leader barriers it has
//! arrived at (word 4, [`CollArea::barrier_arrive`]), the number of counter arrivals it has
//! made (word 5, its phase; only it writes it) and, in local rank 0's line only, the last
//! leader barrier it released (word 3, [`CollArea::release`]); the slots start at the next
//! 4096-byte boundary and split the rest evenly, each in two halves of
//! [`CollArea::slot_bytes`] (multiples of 64 bytes). The area is zero-filled when the
//! segment is created.
//!
//! Synchronisation is the caller's protocol: a writer copies into a slot and then arrives
//! (release); a reader waits until every rank has arrived (acquire) and then copies out.
//! Phases alternate between the halves: a write goes into the half of the writer's current
//! phase (the arrivals it has made), a read comes from the half of the phase before. So
//! what was written before an arrival can be read until the next one, and the next write
//! into that half comes only after every rank has arrived once more, i.e. has finished
//! reading it: one arrival per exchange, none to free the slots. Every rank of the node
//! takes part in every arrival, so phases agree. Copies go through raw pointers into the
//! caller's own buffers, so no Rust reference to shared bytes ever exists. Depends only on
//! [`ShmNode::coll_area`], and on [`ShmNode::wake_node`]: every write another rank may wait
//! for (an arrival, a release, a flag, a vote) then wakes the ranks asleep in a wait.

use super::ShmNode;
use std::sync::atomic::{AtomicU64, Ordering};

const LINE_BYTES: usize = 64;
const PAGE_BYTES: usize = 4096;

const CMA_YES: u64 = 1;
const CMA_NO: u64 = 2;

/// What the local ranks' Cross Memory Attach votes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmaVerdict {
    /// Some rank has not voted yet.
    Pending,
    /// Every rank can read every other rank's memory.
    Usable,
    /// This local rank (the lowest such) cannot.
    Refused(u32),
}

/// Where the slots of an area of `len` bytes at `base` shared by `local_size` ranks start
/// and how large each is ([`CollArea::new`] reads it from the node, which works it out once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    local_size: u32,
    slots_offset: usize,
    slot_bytes: usize,
}

impl Geometry {
    /// The geometry, or None when the area is too small to give every slot at least 64
    /// bytes or is not line-aligned.
    pub(crate) fn of(base: *mut u8, len: usize, local_size: usize) -> Option<Geometry> {
        let n = local_size;
        let slots_offset = ((1 + n) * LINE_BYTES).next_multiple_of(PAGE_BYTES);
        let slot_bytes = (len.checked_sub(slots_offset)? / (2 * (n + 1))) & !(LINE_BYTES - 1);
        if slot_bytes == 0 || base.align_offset(LINE_BYTES) != 0 {
            return None;
        }
        Some(Geometry {
            local_size: n as u32,
            slots_offset,
            slot_bytes,
        })
    }
}

/// The collective area of one node segment, as seen by one local rank.
pub struct CollArea<'a> {
    base: *mut u8,
    local_size: u32,
    me: u32,
    slots_offset: usize,
    slot_bytes: usize,
    /// The node, to wake ranks that sleep waiting for the area ([`ShmNode::wake_node`]).
    node: &'a ShmNode,
}

impl<'a> CollArea<'a> {
    /// The area of `node`, or `None` when it is too small to give every slot at least 64
    /// bytes.
    pub fn new(node: &'a ShmNode) -> Option<CollArea<'a>> {
        let g = node.coll_geometry()?;
        let (base, _) = node.coll_area();
        Some(CollArea {
            base,
            local_size: g.local_size,
            me: node.me(),
            slots_offset: g.slots_offset,
            slot_bytes: g.slot_bytes,
            node,
        })
    }

    /// Local ranks sharing the area.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }

    /// This process's local rank.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// Bytes of each slot (of each of its two halves: what one phase can exchange).
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// Index of the shared result slot (after the per-rank slots).
    pub fn result_slot(&self) -> u32 {
        self.local_size
    }

    fn word(&self, line: usize) -> &AtomicU64 {
        self.word_at(line, 0)
    }

    fn word_at(&self, line: usize, index: usize) -> &AtomicU64 {
        debug_assert!(line <= self.local_size as usize && index < LINE_BYTES / 8);
        // SAFETY: line `line` lies in the control lines at the area's start (checked against
        // the area's length in `new`), word `index` inside it is 8-byte aligned, and the
        // control words are only ever accessed atomically by every process, so a shared
        // reference to an AtomicU64 is sound.
        unsafe { &*(self.base.add(line * LINE_BYTES + index * 8) as *const AtomicU64) }
    }

    /// Records this rank's verdict on Cross Memory Attach: whether it can read every other
    /// local rank's memory. Once per segment; later votes are ignored, so the node-wide
    /// verdict never changes once every rank has voted.
    pub fn vote_cma(&self, ok: bool) {
        let v = if ok { CMA_YES } else { CMA_NO };
        let _ = self.word_at(1 + self.me as usize, 1).compare_exchange(
            0,
            v,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        self.node.wake_node();
    }

    /// Whether this rank has voted ([`CollArea::vote_cma`]).
    pub fn voted_cma(&self) -> bool {
        self.word_at(1 + self.me as usize, 1)
            .load(Ordering::Acquire)
            != 0
    }

    /// The node-wide verdict on Cross Memory Attach: the same on every rank once every rank
    /// has voted.
    pub fn cma_verdict(&self) -> CmaVerdict {
        let mut refused = None;
        for l in 0..self.local_size {
            match self.word_at(1 + l as usize, 1).load(Ordering::Acquire) {
                0 => return CmaVerdict::Pending,
                CMA_NO => {
                    refused.get_or_insert(l);
                }
                _ => {}
            }
        }
        match refused {
            Some(l) => CmaVerdict::Refused(l),
            None => CmaVerdict::Usable,
        }
    }

    /// Adds one arrival to the node-wide counter and starts this rank's next phase; returns
    /// the count including it. AcqRel: whatever this rank wrote before arriving is visible to
    /// whoever sees the count reach it. The caller waits until every rank has arrived
    /// before its next slot access.
    pub fn arrive(&self) -> u64 {
        let phase = self.word_at(1 + self.me as usize, 5);
        phase.store(phase.load(Ordering::Relaxed) + 1, Ordering::Release);
        let count = self.word(0).fetch_add(1, Ordering::AcqRel) + 1;
        self.node.wake_node();
        count
    }

    /// This rank's phase: the counter arrivals it has made.
    pub fn phase(&self) -> u64 {
        self.word_at(1 + self.me as usize, 5)
            .load(Ordering::Relaxed)
    }

    /// Local rank `rank`'s phase (the counter arrivals it has made; acquire): whether it has
    /// arrived in a phase, for a waiting rank that decides whether it may keep its core.
    pub fn phase_of(&self, rank: u32) -> u64 {
        assert!(
            rank < self.local_size,
            "phase of local rank {rank} of {}",
            self.local_size
        );
        self.word_at(1 + rank as usize, 5).load(Ordering::Acquire)
    }

    /// The arrival counter (acquire: pairs with [`CollArea::arrive`]).
    pub fn arrivals(&self) -> u64 {
        self.word(0).load(Ordering::Acquire)
    }

    /// Arrives at the next leader barrier: a barrier that local rank 0 ends for the others
    /// once it has seen every arrival ([`CollArea::all_arrived`], then
    /// [`CollArea::release`]), so it always leaves first. Returns the barrier's number (the
    /// same on every rank: each counts its own arrivals, and all take part in every one).
    /// Release: what this rank wrote before is visible to whoever sees the arrival.
    pub fn barrier_arrive(&self) -> u64 {
        let w = self.word_at(1 + self.me as usize, 4);
        let seq = w.load(Ordering::Relaxed) + 1;
        w.store(seq, Ordering::Release);
        self.node.wake_node();
        seq
    }

    /// Whether local rank `rank` has arrived at leader barrier `seq` (acquire).
    pub fn barrier_arrived(&self, rank: u32, seq: u64) -> bool {
        assert!(
            rank < self.local_size,
            "barrier arrival of local rank {rank} of {}",
            self.local_size
        );
        self.word_at(1 + rank as usize, 4).load(Ordering::Acquire) >= seq
    }

    /// Whether every local rank has arrived at leader barrier `seq` (acquire).
    pub fn all_arrived(&self, seq: u64) -> bool {
        (0..self.local_size as usize).all(|l| self.word_at(1 + l, 4).load(Ordering::Acquire) >= seq)
    }

    /// Local rank 0 ends leader barrier `seq` for the others (release: everything it wrote
    /// and everything the arrivals it observed published is visible to whoever sees it).
    pub fn release(&self, seq: u64) {
        debug_assert_eq!(self.me, 0, "only local rank 0 releases a barrier");
        self.word_at(1, 3).store(seq, Ordering::Release);
        self.node.wake_node();
    }

    /// The last leader barrier local rank 0 released (acquire: pairs with
    /// [`CollArea::release`]).
    pub fn released(&self) -> u64 {
        self.word_at(1, 3).load(Ordering::Acquire)
    }

    /// Publishes `value` as this rank's flag (release: slot writes before it are visible to
    /// a reader that sees it).
    pub fn publish(&self, value: u64) {
        self.word(1 + self.me as usize)
            .store(value, Ordering::Release);
        self.node.wake_node();
    }

    /// Publishes a second value (an address), beside the flag (release).
    pub fn publish_second(&self, value: u64) {
        self.word_at(1 + self.me as usize, 2)
            .store(value, Ordering::Release);
        self.node.wake_node();
    }

    /// Local rank `rank`'s second published value (acquire).
    pub fn second(&self, rank: u32) -> u64 {
        assert!(
            rank < self.local_size,
            "second value of local rank {rank} of {}",
            self.local_size
        );
        self.word_at(1 + rank as usize, 2).load(Ordering::Acquire)
    }

    /// Local rank `rank`'s flag (acquire).
    pub fn flag(&self, rank: u32) -> u64 {
        assert!(
            rank < self.local_size,
            "flag of local rank {rank} of {}",
            self.local_size
        );
        self.word(1 + rank as usize).load(Ordering::Acquire)
    }

    /// Where bytes `off..off + len` of `slot` lie in the half of phase `phase`.
    fn slot_ptr(&self, slot: u32, phase: u64, off: usize, len: usize) -> *mut u8 {
        assert!(
            slot <= self.local_size && off.checked_add(len).is_some_and(|e| e <= self.slot_bytes),
            "slot {slot} bytes {off}..+{len} outside the {}-byte slots of {} ranks",
            self.slot_bytes,
            self.local_size
        );
        let half = (slot as usize * 2 + (phase % 2) as usize) * self.slot_bytes;
        // SAFETY: in bounds of the area: slots_offset + (local_size + 1) · 2 · slot_bytes ≤
        // len by construction in `new`, and the range was checked above.
        unsafe { self.base.add(self.slots_offset + half + off) }
    }

    /// Copies `data` into `slot` at byte `off`, in the half of this rank's current phase
    /// (readable after its next arrival, until the one after).
    pub fn write(&self, slot: u32, off: usize, data: &[u8]) {
        let dst = self.slot_ptr(slot, self.phase(), off, data.len());
        // SAFETY: `dst..dst + len` is inside the mapping (slot_ptr checked it) and cannot
        // overlap `data`, a buffer of this process outside the segment's collective area.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) }
    }

    /// Copies bytes `off..off + out.len()` of `slot` into `out`, from the half written in
    /// the phase before this rank's current one.
    pub fn read(&self, slot: u32, off: usize, out: &mut [u8]) {
        let src = self.slot_ptr(slot, self.phase() + 1, off, out.len());
        // SAFETY: as in `write`, with the roles swapped.
        unsafe { std::ptr::copy_nonoverlapping(src, out.as_mut_ptr(), out.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::Layout;

    #[test]
    fn two_views_share_slots_and_flags() {
        let name = format!("/weft-colltest-{}", std::process::id());
        let layout = Layout {
            local_size: 2,
            ring_bytes: 4096,
            coll_bytes: 16384,
        };
        let a = ShmNode::create(&name, layout, 0).unwrap();
        let b = ShmNode::attach(&name, 1).unwrap();
        a.unlink().unwrap();
        let (va, vb) = (CollArea::new(&a).unwrap(), CollArea::new(&b).unwrap());
        assert_eq!(va.slot_bytes(), vb.slot_bytes());
        assert!(va.slot_bytes() >= 64 && va.slot_bytes() * 2 * 3 <= 16384);
        va.write(0, 8, b"hello");
        va.publish(7);
        assert_eq!(vb.flag(0), 7);
        let mut out = [0u8; 5];
        vb.read(0, 8, &mut out);
        assert_eq!(out, [0; 5], "a read sees the phase before: nothing yet");
        assert_eq!(va.arrive(), 1);
        assert_eq!(vb.arrive(), 2);
        assert_eq!(va.arrivals(), 2);
        vb.read(0, 8, &mut out);
        assert_eq!(&out, b"hello", "written before the arrival, read after it");
        // The next phase writes the other half: the bytes stay readable meanwhile.
        va.write(0, 8, b"world");
        vb.read(0, 8, &mut out);
        assert_eq!(&out, b"hello");
        va.arrive();
        vb.arrive();
        vb.read(0, 8, &mut out);
        assert_eq!(&out, b"world");
        assert_eq!(vb.released(), 0);
        va.release(2);
        assert_eq!(
            (vb.released(), vb.flag(0)),
            (2, 7),
            "the release is beside the flag"
        );
        assert_eq!(va.cma_verdict(), CmaVerdict::Pending);
        va.vote_cma(true);
        assert!(va.voted_cma() && !vb.voted_cma());
        assert_eq!(vb.cma_verdict(), CmaVerdict::Pending);
        vb.vote_cma(false);
        va.vote_cma(false);
        assert_eq!(va.cma_verdict(), CmaVerdict::Refused(1), "first vote stays");
        assert_eq!(vb.cma_verdict(), CmaVerdict::Refused(1));
        assert_eq!(va.flag(0), 7, "the vote is beside the flag, not on it");
        vb.publish_second(99);
        assert_eq!((va.second(1), va.flag(1), va.second(0)), (99, 0, 0));
        vb.write(vb.result_slot(), 0, &[9; 64]);
        va.arrive();
        vb.arrive();
        let mut r = [0u8; 64];
        va.read(2, 0, &mut r);
        assert_eq!(r, [9; 64]);
    }

    #[test]
    fn no_area_means_no_view() {
        let name = format!("/weft-colltest0-{}", std::process::id());
        let layout = Layout {
            local_size: 2,
            ring_bytes: 4096,
            coll_bytes: 0,
        };
        let a = ShmNode::create(&name, layout, 0).unwrap();
        a.unlink().unwrap();
        assert!(CollArea::new(&a).is_none());
    }
}
