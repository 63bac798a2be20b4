//! A single-producer, single-consumer ring of 64-byte cells in shared memory.
//!
//! A message is one header cell (an 8-byte sequence word, a 24-byte [`Header`], then the
//! first 32 payload bytes) followed by as many cells as the rest of the payload needs. The
//! producer writes the payload and header, then publishes the sequence word with a release
//! store; the consumer spins on the sequence word of the cell at its read position with an
//! acquire load, so a short message costs one cache-line transfer and no system call.
//!
//! Stale bytes cannot pass for a message: the producer always keeps the cell right after a
//! message (where the next header will go) free, and before publishing the message it
//! zeroes that cell's sequence word unless the cell cannot hold stale payload bytes, so the
//! consumer sees either the next real header there, zero, or a header of an earlier lap
//! (whose sequence word is one lap lower than the one it waits for). A cell holds stale
//! payload only if a message of more than one cell covered it a lap ago; the producer
//! remembers the last cell any such message covered, so a stream of one-cell messages
//! writes one cache line each, not two.
//! The consumer publishes its read position in a separate cache line, which the producer only
//! reads when its cached copy says the ring is full.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per cell: one cache line.
pub const CELL_BYTES: usize = 64;
/// Bytes of the header cell taken by the sequence word and the header.
pub const HEADER_BYTES: usize = 32;
/// Payload bytes that fit in the header cell: messages up to this size take one cell.
pub const INLINE_BYTES: usize = CELL_BYTES - HEADER_BYTES;
/// Bytes of control area in front of each ring's cells (consumer position, padded).
pub const CONTROL_BYTES: usize = 2 * CELL_BYTES;

/// The fixed header of every message in a ring. What the fields mean is the runtime's
/// business; the ring only moves them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Header {
    /// Message kind (eager, rendezvous request, ...).
    pub kind: u8,
    /// Kind-specific flags.
    pub flags: u8,
    /// Unused, zero.
    pub reserved: u16,
    /// Sender's rank in the communicator.
    pub src: u32,
    /// Context id of the communicator.
    pub ctx: u32,
    /// Message tag.
    pub tag: i32,
    /// Payload length in bytes.
    pub len: u32,
    /// Kind-specific extra word (e.g. a request id).
    pub aux: u32,
}

const _: () = assert!(std::mem::size_of::<Header>() + 8 == HEADER_BYTES);

/// Total bytes one ring occupies in the segment (control area plus cells).
pub fn ring_footprint(ring_bytes: usize) -> usize {
    CONTROL_BYTES + ring_bytes
}

fn cells_for(payload_bytes: usize) -> u64 {
    (HEADER_BYTES + payload_bytes).div_ceil(CELL_BYTES) as u64
}

/// Largest payload a ring of `ring_bytes` can carry in one message.
pub fn max_payload(ring_bytes: usize) -> usize {
    // One cell always stays free (see module docs); keep a message to half the ring so a
    // producer never waits for a completely empty ring.
    ring_bytes / 2 - HEADER_BYTES
}

/// The producing end of a ring; lives in the sending process only.
pub struct Producer {
    cells: *mut u8,
    consumer_pos: *const AtomicU64,
    ring_bytes: usize,
    cell_mask: u64,
    cell_count: u64,
    head: u64,
    cached_tail: u64,
    /// One past the last cell (absolute index) that a message's payload, not its header,
    /// was written into: cells below it may hold stale payload a lap later.
    payload_end: u64,
}

/// The consuming end of a ring; lives in the receiving process only.
pub struct Consumer {
    cells: *const u8,
    consumer_pos: *const AtomicU64,
    ring_bytes: usize,
    cell_mask: u64,
    pos: u64,
}

// The raw pointers refer to a shared mapping that outlives both ends (the node owns the
// segment); the ends are moved between threads only together with it.
// SAFETY: each end is used by one thread at a time (it is `!Sync` and requires `&mut`).
unsafe impl Send for Producer {}
// SAFETY: as above.
unsafe impl Send for Consumer {}

impl Producer {
    /// Makes the producing end of the ring whose control area starts at `ring`.
    ///
    /// # Safety
    /// `ring` must point to `ring_footprint(ring_bytes)` bytes of a zero-initialised shared
    /// mapping that stays mapped while this end exists, with no other producer, and
    /// `ring_bytes` must be a power of two of at least 4 cells.
    pub unsafe fn new(ring: *mut u8, ring_bytes: usize) -> Producer {
        debug_assert!(ring_bytes.is_power_of_two() && ring_bytes >= 4 * CELL_BYTES);
        Producer {
            // SAFETY: within the ring's footprint per the contract.
            cells: unsafe { ring.add(CONTROL_BYTES) },
            consumer_pos: ring as *const AtomicU64,
            ring_bytes,
            cell_mask: (ring_bytes / CELL_BYTES) as u64 - 1,
            cell_count: (ring_bytes / CELL_BYTES) as u64,
            head: 0,
            cached_tail: 0,
            payload_end: 0,
        }
    }

    /// Largest payload one message may carry.
    #[inline]
    pub fn max_payload(&self) -> usize {
        max_payload(self.ring_bytes)
    }

    /// Bytes of cells of this ring.
    #[inline]
    pub fn ring_bytes(&self) -> usize {
        self.ring_bytes
    }

    /// Cells written since the ring was made (its traffic, in units of [`CELL_BYTES`]).
    #[inline]
    pub fn cells_sent(&self) -> u64 {
        self.head
    }

    /// Bytes of this ring that traffic has touched so far: the cells written (each message's
    /// cells and the cell after it, whose sequence word it may clear), at most the whole ring,
    /// plus the control area once anything was sent. A ring never written costs no memory:
    /// its pages are never faulted in.
    pub fn touched_bytes(&self) -> usize {
        if self.head == 0 {
            return 0;
        }
        let cells = (self.head + 1).min(self.cell_count) as usize;
        CONTROL_BYTES + cells * CELL_BYTES
    }

    /// Sends one message whose payload is the concatenation of `parts`. Returns false, without
    /// writing anything, when the ring has no room now (the caller retries after progress).
    /// Panics if the payload exceeds [`Producer::max_payload`] (a caller bug).
    #[inline]
    pub fn try_send(&mut self, header: &Header, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        assert!(len <= self.max_payload(), "ring payload {len} above limit");
        let need = cells_for(len);
        // `need + 1`: the cell after this message must be free so we can clear its sequence word.
        if self.head + need + 1 - self.cached_tail > self.cell_count {
            // SAFETY: consumer_pos points into the live mapping (constructor contract).
            self.cached_tail = unsafe { (*self.consumer_pos).load(Ordering::Acquire) };
            if self.head + need + 1 - self.cached_tail > self.cell_count {
                return false;
            }
        }
        let head_off = ((self.head & self.cell_mask) as usize) * CELL_BYTES;
        let next_off = (((self.head + need) & self.cell_mask) as usize) * CELL_BYTES;
        // SAFETY: all offsets are reduced modulo the ring size and the cells in
        // [head, head + need] are free (checked above), so nothing here races with the consumer.
        unsafe {
            // The cell after the message held, a lap ago, cell `head + need - cell_count`:
            // only a payload cell there can look like a header now.
            if self.head + need < self.payload_end + self.cell_count {
                (*(self.cells.add(next_off) as *const AtomicU64)).store(0, Ordering::Relaxed);
            }
            let mut off = head_off + HEADER_BYTES;
            for part in parts {
                self.copy_in(off, part);
                off += part.len();
            }
            std::ptr::write(self.cells.add(head_off + 8) as *mut Header, *header);
            (*(self.cells.add(head_off) as *const AtomicU64))
                .store(self.head + 1, Ordering::Release);
        }
        if need > 1 {
            self.payload_end = self.head + need;
        }
        self.head += need;
        true
    }

    /// Copies `src` to ring byte offset `off` (unreduced), wrapping at the end of the ring.
    ///
    /// # Safety
    /// The bytes written must be free cells of this ring.
    #[inline]
    unsafe fn copy_in(&mut self, off: usize, src: &[u8]) {
        let off = off & (self.ring_bytes - 1);
        let first = src.len().min(self.ring_bytes - off);
        // SAFETY: off < ring_bytes and first ≤ ring_bytes - off; the wrap part starts at 0.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.cells.add(off), first);
            if first < src.len() {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(first),
                    self.cells,
                    src.len() - first,
                );
            }
        }
    }
}

impl Consumer {
    /// Makes the consuming end of the ring whose control area starts at `ring`.
    ///
    /// # Safety
    /// Same contract as [`Producer::new`], with no other consumer.
    pub unsafe fn new(ring: *mut u8, ring_bytes: usize) -> Consumer {
        Consumer {
            // SAFETY: within the ring's footprint per the contract.
            cells: unsafe { ring.add(CONTROL_BYTES) },
            consumer_pos: ring as *const AtomicU64,
            ring_bytes,
            cell_mask: (ring_bytes / CELL_BYTES) as u64 - 1,
            pos: 0,
        }
    }

    /// True when a message is waiting (one acquire load).
    #[inline]
    pub fn ready(&self) -> bool {
        let off = ((self.pos & self.cell_mask) as usize) * CELL_BYTES;
        // SAFETY: off is inside the cells; the word is only ever accessed atomically or after
        // an acquire of it.
        let seq = unsafe { (*(self.cells.add(off) as *const AtomicU64)).load(Ordering::Acquire) };
        seq == self.pos + 1
    }

    /// Starts bringing the cell at the read position (the next message's header and first
    /// payload bytes) into this core's cache without waiting for it: a receiver that will
    /// read it after other work overlaps the line's transfer from the producer's core with
    /// that work. A hint only: nothing is read, and a line the producer rewrites later is
    /// simply fetched again.
    #[inline]
    pub fn prefetch(&self) {
        let off = ((self.pos & self.cell_mask) as usize) * CELL_BYTES;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: off is inside the cells (a valid address in the live mapping); a prefetch
        // neither reads into the program nor faults.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.cells.add(off) as *const i8);
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = off;
    }

    /// Takes the next message if one is waiting: calls `f` with its header and payload (as
    /// two slices, the second non-empty only when the payload wraps), then frees its cells.
    #[inline]
    pub fn poll<R>(&mut self, f: impl FnOnce(&Header, &[u8], &[u8]) -> R) -> Option<R> {
        self.poll_if(|_| true, f)
    }

    /// [`Consumer::poll`] for a message whose header `accept` accepts; one it refuses stays
    /// where it is, the next to take.
    #[inline]
    pub fn poll_if<R>(
        &mut self,
        accept: impl FnOnce(&Header) -> bool,
        f: impl FnOnce(&Header, &[u8], &[u8]) -> R,
    ) -> Option<R> {
        if !self.ready() {
            return None;
        }
        let off = ((self.pos & self.cell_mask) as usize) * CELL_BYTES;
        // SAFETY: the acquire in `ready` makes the producer's writes of this message visible;
        // the producer does not touch these cells until we publish a position past them.
        let (header, a, b) = unsafe {
            let header = std::ptr::read(self.cells.add(off + 8) as *const Header);
            let len = (header.len as usize).min(max_payload(self.ring_bytes));
            let start = off + HEADER_BYTES;
            let first = len.min(self.ring_bytes - start);
            let a = std::slice::from_raw_parts(self.cells.add(start), first);
            let b = std::slice::from_raw_parts(self.cells, len - first);
            (header, a, b)
        };
        if !accept(&header) {
            return None;
        }
        let r = f(&header, a, b);
        self.pos += cells_for(a.len() + b.len());
        // SAFETY: consumer_pos points into the live mapping.
        unsafe { (*self.consumer_pos).store(self.pos, Ordering::Release) };
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in ordinary (process-private) memory, aligned like a mapping.
    fn ring_memory(ring_bytes: usize) -> Vec<u64> {
        vec![0u64; ring_footprint(ring_bytes) / 8]
    }

    #[test]
    fn round_trip_sizes_and_wrap() {
        let ring_bytes = 1024;
        let mut mem = ring_memory(ring_bytes);
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: `mem` outlives both ends and is zeroed.
        let (mut p, mut c) = unsafe {
            (
                Producer::new(base, ring_bytes),
                Consumer::new(base, ring_bytes),
            )
        };
        let max = p.max_payload();
        let mut expected = std::collections::VecDeque::new();
        let mut counter = 0u32;
        for round in 0..2000usize {
            let len = (round * 37) % (max + 1);
            let payload: Vec<u8> = (0..len).map(|i| (i as u32 ^ counter) as u8).collect();
            let h = Header {
                kind: 1,
                tag: counter as i32,
                len: len as u32,
                ..Header::default()
            };
            if p.try_send(&h, &[&payload[..len / 2], &payload[len / 2..]]) {
                expected.push_back((h, payload));
                counter += 1;
            }
            if round % 3 != 0 {
                while let Some((h, data)) = c.poll(|h, a, b| (*h, [a, b].concat())) {
                    let (eh, ed) = expected.pop_front().expect("message nobody sent");
                    assert_eq!(h, eh);
                    assert_eq!(data, ed);
                }
            }
        }
        while let Some((h, data)) = c.poll(|h, a, b| (*h, [a, b].concat())) {
            let (eh, ed) = expected.pop_front().unwrap();
            assert_eq!((h, data), (eh, ed));
        }
        assert!(expected.is_empty());
        assert!(counter > 500, "ring made too little progress: {counter}");
    }

    #[test]
    fn full_ring_refuses_then_accepts() {
        let ring_bytes = 512;
        let mut mem = ring_memory(ring_bytes);
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: `mem` outlives both ends and is zeroed.
        let (mut p, mut c) = unsafe {
            (
                Producer::new(base, ring_bytes),
                Consumer::new(base, ring_bytes),
            )
        };
        let h = Header {
            len: 100,
            ..Header::default()
        };
        let data = [7u8; 100];
        let mut sent = 0;
        while p.try_send(&h, &[&data]) {
            sent += 1;
        }
        assert!(sent >= 1);
        assert!(c.poll(|_, a, b| a.len() + b.len()) == Some(100));
        assert!(p.try_send(&h, &[&data]));
    }

    #[test]
    fn payload_that_looks_like_a_sequence_word_is_not_a_message() {
        // Fill continuation cells with words equal to future sequence numbers; the consumer
        // must never take them for headers.
        let ring_bytes = 256;
        let mut mem = ring_memory(ring_bytes);
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: `mem` outlives both ends and is zeroed.
        let (mut p, mut c) = unsafe {
            (
                Producer::new(base, ring_bytes),
                Consumer::new(base, ring_bytes),
            )
        };
        for i in 0..200u64 {
            let words: Vec<u8> = (0..12u64).flat_map(|w| (i + w).to_le_bytes()).collect();
            let len = if i % 2 == 0 { words.len() } else { 8 };
            let h = Header {
                len: len as u32,
                aux: i as u32,
                ..Header::default()
            };
            assert!(p.try_send(&h, &[&words[..len]]));
            let got = c.poll(|h, a, b| (h.aux, a.len() + b.len())).unwrap();
            assert_eq!(got, (i as u32, len));
            assert!(c.poll(|_, _, _| ()).is_none(), "phantom message after {i}");
        }
    }

    #[test]
    fn a_lap_after_a_long_message_its_payload_cell_is_cleared() {
        // A 4-cell ring. Past the first lap, a two-cell message at cell 5 leaves in cell 6
        // (slot 2) the word 11: exactly the sequence word the consumer waits for at cell 10,
        // one lap later in the same slot. One-cell messages follow; the one at cell 9 must
        // clear slot 2 (one-cell messages alone clear nothing), or the consumer would take the
        // stale payload for a header.
        let ring_bytes = 4 * CELL_BYTES;
        let mut mem = ring_memory(ring_bytes);
        let base = mem.as_mut_ptr() as *mut u8;
        // SAFETY: `mem` outlives both ends and is zeroed.
        let (mut p, mut c) = unsafe {
            (
                Producer::new(base, ring_bytes),
                Consumer::new(base, ring_bytes),
            )
        };
        let mut send = |p: &mut Producer, payload: &[u8], aux: u32| {
            let h = Header {
                len: payload.len() as u32,
                aux,
                ..Header::default()
            };
            assert!(p.try_send(&h, &[payload]));
            assert_eq!(
                c.poll(|h, a, b| (h.aux, a.len() + b.len())),
                Some((aux, payload.len()))
            );
            assert!(
                c.poll(|_, _, _| ()).is_none(),
                "phantom message after {aux}"
            );
        };
        for aux in 0..5 {
            send(&mut p, &[1; 8], aux);
        }
        assert_eq!(p.cells_sent(), 5);
        let mut long = vec![0u8; INLINE_BYTES];
        long.extend_from_slice(&11u64.to_le_bytes());
        send(&mut p, &long, 5);
        assert_eq!(p.cells_sent(), 7);
        for aux in 6..20 {
            send(&mut p, &[2; 8], aux);
        }
    }
}
