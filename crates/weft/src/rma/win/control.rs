//! A window member's control block: the words other processes of its node (and its
//! one-sided service, for other nodes) use to synchronise with it. One block per local
//! member, in the window's node region, zero-filled at creation.
//!
//! - `lock`: MPI_Win_lock's reader-writer lock: [`EXCLUSIVE`] while held exclusively, the
//!   number of shared holders in the low 32 bits.
//! - `acc`: the accumulate spin lock of [`super::acc`].
//! - `fence_epoch`: how many MPI_Win_fence node barriers (see [`super::fence`]) the member
//!   has arrived at, on a cache line of its own (the other members poll it);
//! - the attach table of a dynamic window: up to [`MAX_ATTACH`] (address, bytes) entries
//!   behind a sequence lock that only the owner writes (odd while it changes the table), so
//!   local origins and the service check an address against what is attached.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use weft_core::{Error, ErrorKind, Result};

/// Regions a dynamic window may have attached at once (Open MPI's default limit is 32).
pub const MAX_ATTACH: usize = 64;
/// The lock word's bit for an exclusive holder.
pub(crate) const EXCLUSIVE: u64 = 1 << 63;
/// Bytes from one member's control block to the next (a multiple of the cache line).
pub(crate) const CONTROL_STRIDE: usize = std::mem::size_of::<Control>().next_multiple_of(64);
/// Offset of the lock word in the block (for requests from other nodes).
pub(crate) const LOCK_OFFSET: u64 = 0;

/// One member's control block (see the module).
#[repr(C)]
pub(crate) struct Control {
    pub(crate) lock: AtomicU64,
    pub(crate) acc: AtomicU32,
    _pad0: u32,
    attach_seq: AtomicU64,
    _pad1: [u64; 5],
    pub(crate) fence_epoch: AtomicU64,
    _pad2: [u64; 7],
    table: [[AtomicU64; 2]; MAX_ATTACH],
}

impl Control {
    /// The block at `p`.
    ///
    /// # Safety
    /// `p` must point to a zero-filled (or live) block of [`CONTROL_STRIDE`] bytes, 8-byte
    /// aligned, that outlives the reference.
    pub(crate) unsafe fn at<'a>(p: *const u8) -> &'a Control {
        // SAFETY: the caller's contract; all fields are atomics, valid when zero.
        unsafe { &*(p as *const Control) }
    }

    /// The attached regions as the owner last published them.
    pub(crate) fn attached(&self) -> Vec<(u64, u64)> {
        loop {
            let s1 = self.attach_seq.load(Ordering::Acquire);
            if s1 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let v: Vec<(u64, u64)> = self
                .table
                .iter()
                .map(|[a, n]| (a.load(Ordering::Relaxed), n.load(Ordering::Relaxed)))
                .filter(|&(_, n)| n > 0)
                .collect();
            fence(Ordering::Acquire);
            if self.attach_seq.load(Ordering::Relaxed) == s1 {
                return v;
            }
        }
    }

    /// Whether `[addr, addr + len)` lies inside one attached region.
    pub(crate) fn covers(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        // The table read as `attached` does, without collecting it (an origin's hot path).
        loop {
            let s1 = self.attach_seq.load(Ordering::Acquire);
            if s1 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let hit = self.table.iter().any(|[a, n]| {
                let (a, n) = (a.load(Ordering::Relaxed), n.load(Ordering::Relaxed));
                n > 0 && addr >= a && end <= a.saturating_add(n)
            });
            fence(Ordering::Acquire);
            if self.attach_seq.load(Ordering::Relaxed) == s1 {
                return hit;
            }
        }
    }

    /// Adds `[addr, addr + bytes)` to the table (the owner only).
    pub(crate) fn attach(&self, addr: u64, bytes: u64) -> Result<()> {
        let now = self.attached();
        if let Some(&(a, n)) = now
            .iter()
            .find(|&&(a, n)| addr < a.saturating_add(n) && a < addr.saturating_add(bytes))
        {
            return Err(Error::new(
                ErrorKind::RmaAttach,
                format!(
                    "attaching {bytes} bytes at {addr:#x}: they overlap the {n} bytes at {a:#x} already attached"
                ),
            ));
        }
        let Some(free) = self
            .table
            .iter()
            .position(|e| e[1].load(Ordering::Relaxed) == 0)
        else {
            return Err(Error::new(
                ErrorKind::RmaAttach,
                format!(
                    "attaching {bytes} bytes at {addr:#x}: {MAX_ATTACH} regions are attached already, the most a dynamic window holds"
                ),
            ));
        };
        self.change(|t| {
            t[free][0].store(addr, Ordering::Relaxed);
            t[free][1].store(bytes, Ordering::Relaxed);
        });
        Ok(())
    }

    /// Removes the region attached at `addr` (the owner only).
    pub(crate) fn detach(&self, addr: u64) -> Result<()> {
        let Some(i) = self
            .table
            .iter()
            .position(|e| e[1].load(Ordering::Relaxed) > 0 && e[0].load(Ordering::Relaxed) == addr)
        else {
            return Err(Error::new(
                ErrorKind::RmaAttach,
                format!("detaching {addr:#x}: no region attached to the window starts there"),
            ));
        };
        self.change(|t| {
            t[i][1].store(0, Ordering::Relaxed);
            t[i][0].store(0, Ordering::Relaxed);
        });
        Ok(())
    }

    fn change(&self, f: impl FnOnce(&[[AtomicU64; 2]; MAX_ATTACH])) {
        self.attach_seq.fetch_add(1, Ordering::AcqRel);
        fence(Ordering::Release);
        f(&self.table);
        self.attach_seq.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_word_has_a_cache_line_of_its_own() {
        let words = vec![0u64; CONTROL_STRIDE / 8];
        // SAFETY: zero-filled, aligned, lives for the test.
        let c = unsafe { Control::at(words.as_ptr() as *const u8) };
        let base = c as *const Control as usize;
        let line = |p: usize| (p - base) / 64;
        let fence = line(&c.fence_epoch as *const AtomicU64 as usize);
        assert_eq!(LOCK_OFFSET, 0);
        assert_ne!(fence, line(&c.lock as *const AtomicU64 as usize));
        assert_ne!(fence, line(&c.acc as *const AtomicU32 as usize));
        assert_ne!(fence, line(&c.attach_seq as *const AtomicU64 as usize));
        assert_ne!(fence, line(c.table.as_ptr() as usize));
    }

    #[test]
    fn attach_table() {
        let words = vec![0u64; CONTROL_STRIDE / 8];
        // SAFETY: zero-filled, aligned, lives for the test.
        let c = unsafe { Control::at(words.as_ptr() as *const u8) };
        assert!(CONTROL_STRIDE.is_multiple_of(64));
        c.attach(0x1000, 100).unwrap();
        c.attach(0x2000, 8).unwrap();
        assert!(c.covers(0x1000, 100) && c.covers(0x2004, 4));
        assert!(!c.covers(0x1000, 101) && !c.covers(0x1fff, 2));
        assert_eq!(
            c.attach(0x1010, 4).unwrap_err().kind(),
            ErrorKind::RmaAttach
        );
        c.detach(0x1000).unwrap();
        assert!(!c.covers(0x1000, 1));
        assert_eq!(c.detach(0x1000).unwrap_err().kind(), ErrorKind::RmaAttach);
        for i in 0..MAX_ATTACH as u64 - 1 {
            c.attach(0x10_0000 + i * 16, 8).unwrap();
        }
        assert_eq!(
            c.attach(0x90_0000, 8).unwrap_err().kind(),
            ErrorKind::RmaAttach
        );
    }
}
