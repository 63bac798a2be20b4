//! A window member's control block: the words other processes of its node (and its
//! one-sided service, for other nodes) use to synchronise with it. One block per local
//! member, in the window's node region, zero-filled at creation.
//!
//! - `lock`: MPI_Win_lock's reader-writer lock: [`EXCLUSIVE`] while held exclusively, the
//!   number of shared holders in the low 32 bits.
//! - `acc`: the accumulate spin lock of [`super::acc`].
//! - `fence_epoch`: how many MPI_Win_fence node barriers (see [`super::fence`]) the member
//!   has arrived at, on a cache line of its own (the other members poll it);
//! - the attach table of a dynamic window: how many regions are attached and where the
//!   owner keeps them, an array in its own memory of (address, bytes) entries sorted by
//!   address (see [`AttachTable`]), behind a sequence lock that only the owner writes (odd
//!   while it changes the table). The owner's process (its origins and its one-sided service)
//!   reads the array directly; the other members of the node read it with CMA, the way they
//!   reach the attached memory itself. An access may span regions attached back to back.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::cma;

/// The lock word's bit for an exclusive holder.
pub(crate) const EXCLUSIVE: u64 = 1 << 63;
/// Bytes from one member's control block to the next (a multiple of the cache line).
pub(crate) const CONTROL_STRIDE: usize = std::mem::size_of::<Control>().next_multiple_of(64);
/// Offset of the lock word in the block (for requests from other nodes).
pub(crate) const LOCK_OFFSET: u64 = 0;
/// Attach-table entries another process reads in one CMA transfer (into a stack buffer);
/// larger tables are binary-searched one entry per transfer.
const CMA_BATCH: usize = 64;
/// Entries of the first array a dynamic window allocates; each next one doubles.
const FIRST_CAPACITY: usize = 16;

/// One attach-table entry: address and bytes.
type Entry = [AtomicU64; 2];

/// One member's control block (see the module).
#[repr(C)]
pub(crate) struct Control {
    pub(crate) lock: AtomicU64,
    pub(crate) acc: AtomicU32,
    _pad0: u32,
    attach_seq: AtomicU64,
    /// Address, in the owner's process, of its current attach array.
    table_addr: AtomicU64,
    /// Entries of it in use.
    table_len: AtomicU64,
    _pad1: [u64; 3],
    pub(crate) fence_epoch: AtomicU64,
    _pad2: [u64; 7],
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

    /// Reads the table consistently: `f(len, addr)` gets the published length and array
    /// address and runs again if the owner changed the table meanwhile.
    fn read<T>(&self, mut f: impl FnMut(usize, u64) -> T) -> T {
        loop {
            let s1 = self.attach_seq.load(Ordering::Acquire);
            if s1 % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            // The length first: a length published with a larger array comes with it (the
            // owner stores the array's address before the length, with release), and an
            // older length fits any array published since (arrays only grow).
            let len = self.table_len.load(Ordering::Acquire) as usize;
            let addr = self.table_addr.load(Ordering::Relaxed);
            let v = f(len, addr);
            fence(Ordering::Acquire);
            if self.attach_seq.load(Ordering::Relaxed) == s1 {
                return v;
            }
        }
    }

    /// Whether `[addr, addr + len)` lies in attached memory (one region, or regions attached
    /// back to back). For the owner's process only: it reads the owner's array directly.
    pub(crate) fn covers(&self, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        self.read(|n, at| {
            if n == 0 {
                return false;
            }
            // SAFETY: `at` is an array of the owner's `AttachTable` (this process), which
            // keeps every array it published until the window is freed; it holds at least
            // `n` entries (see `read`); entries are atomics.
            let t = unsafe { std::slice::from_raw_parts(at as usize as *const Entry, n) };
            let entry = |i: usize| {
                Some((
                    t[i][0].load(Ordering::Relaxed),
                    t[i][1].load(Ordering::Relaxed),
                ))
            };
            covered(n, addr, end, entry) == Some(true)
        })
    }

    /// [`Control::covers`] for another process of the node, `pid`, whose control block this
    /// is: reads the owner's array with CMA. `Err` when CMA fails.
    pub(crate) fn covers_in(&self, pid: i32, addr: u64, len: u64) -> std::io::Result<bool> {
        let Some(end) = addr.checked_add(len) else {
            return Ok(false);
        };
        let mut failed = None;
        let hit = self.read(|n, at| {
            failed = None;
            if n == 0 {
                return false;
            }
            let mut batch = [0u8; CMA_BATCH * 16];
            let word = |b: &[u8], i: usize, k: usize| {
                let p = i * 16 + k * 8;
                u64::from_ne_bytes(b[p..p + 8].try_into().expect("8 bytes"))
            };
            let r = if n <= CMA_BATCH {
                match cma::read(pid, at, &mut batch[..n * 16]) {
                    Ok(()) => covered(n, addr, end, |i| {
                        Some((word(&batch, i, 0), word(&batch, i, 1)))
                    }),
                    Err(e) => {
                        failed = Some(e);
                        None
                    }
                }
            } else {
                covered(n, addr, end, |i| {
                    let mut one = [0u8; 16];
                    match cma::read(pid, at + i as u64 * 16, &mut one) {
                        Ok(()) => Some((word(&one, 0, 0), word(&one, 0, 1))),
                        Err(e) => {
                            failed = Some(e);
                            None
                        }
                    }
                })
            };
            r == Some(true)
        });
        match failed {
            Some(e) => Err(e),
            None => Ok(hit),
        }
    }
}

/// Whether `[addr, end)` lies in the regions of a table of `n` entries sorted by address and
/// not overlapping, `entry(i)` giving entry `i`: in the region holding `addr` and, past its
/// end, in the ones that follow it without a gap. `None` when `entry` failed.
fn covered(
    n: usize,
    addr: u64,
    end: u64,
    mut entry: impl FnMut(usize) -> Option<(u64, u64)>,
) -> Option<bool> {
    // The last region starting at or before `addr`.
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if entry(mid)?.0 <= addr {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let Some(mut i) = lo.checked_sub(1) else {
        return Some(false);
    };
    let mut from = addr;
    loop {
        let (a, bytes) = entry(i)?;
        if a > from {
            return Some(false);
        }
        let to = a.saturating_add(bytes);
        if to <= from {
            return Some(false);
        }
        if to >= end {
            return Some(true);
        }
        from = to;
        i += 1;
        if i == n {
            return Some(false);
        }
    }
}

/// The owner's side of a dynamic window's attach table: the arrays its control block points
/// at. Every array published stays allocated until the table is dropped (with the window and
/// its registry entry), since a reader of this process may still be looking at an older one;
/// arrays double, so they hold at most twice the largest table.
#[derive(Default)]
pub(crate) struct AttachTable {
    arrays: Mutex<Vec<Box<[Entry]>>>,
}

impl AttachTable {
    /// Adds `[addr, addr + bytes)` (`bytes` above 0) to `control`'s table, the owner's.
    pub(crate) fn attach(&self, control: &Control, addr: u64, bytes: u64) -> Result<()> {
        let mut arrays = self.arrays.lock().unwrap_or_else(|p| p.into_inner());
        let n = control.table_len.load(Ordering::Relaxed) as usize;
        let end = addr.saturating_add(bytes);
        let get = |t: &[Entry], i: usize| {
            (
                t[i][0].load(Ordering::Relaxed),
                t[i][1].load(Ordering::Relaxed),
            )
        };
        let cur: &[Entry] = arrays.last().map_or(&[], |a| &a[..n]);
        let i = cur.partition_point(|e| e[0].load(Ordering::Relaxed) < addr);
        let before = i.checked_sub(1).map(|j| get(cur, j));
        let after = (i < n).then(|| get(cur, i));
        for (a, b) in [before, after].into_iter().flatten() {
            if addr < a.saturating_add(b) && a < end {
                return Err(Error::new(
                    ErrorKind::RmaAttach,
                    format!(
                        "attaching {bytes} bytes at {addr:#x}: they overlap the {b} bytes at {a:#x} already attached"
                    ),
                ));
            }
        }
        let capacity = arrays.last().map_or(0, |a| a.len());
        if n < capacity {
            let t = arrays.last().expect("an array");
            change(control, || {
                for j in (i..n).rev() {
                    let (a, b) = get(t, j);
                    t[j + 1][0].store(a, Ordering::Relaxed);
                    t[j + 1][1].store(b, Ordering::Relaxed);
                }
                t[i][0].store(addr, Ordering::Relaxed);
                t[i][1].store(bytes, Ordering::Relaxed);
                control.table_len.store(n as u64 + 1, Ordering::Release);
            });
            return Ok(());
        }
        // A larger array, filled before anyone sees it.
        let grown: Box<[Entry]> = (0..(capacity * 2).max(FIRST_CAPACITY))
            .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
            .collect();
        let old: &[Entry] = arrays.last().map_or(&[], |a| &a[..n]);
        let shifted = (0..n).map(|j| if j < i { j } else { j + 1 });
        for (j, to) in shifted.enumerate() {
            let (a, b) = get(old, j);
            grown[to][0].store(a, Ordering::Relaxed);
            grown[to][1].store(b, Ordering::Relaxed);
        }
        grown[i][0].store(addr, Ordering::Relaxed);
        grown[i][1].store(bytes, Ordering::Relaxed);
        let at = grown.as_ptr() as usize as u64;
        arrays.push(grown);
        change(control, || {
            control.table_addr.store(at, Ordering::Relaxed);
            control.table_len.store(n as u64 + 1, Ordering::Release);
        });
        Ok(())
    }

    /// Removes the region attached at `addr` from `control`'s table, the owner's.
    pub(crate) fn detach(&self, control: &Control, addr: u64) -> Result<()> {
        let arrays = self.arrays.lock().unwrap_or_else(|p| p.into_inner());
        let n = control.table_len.load(Ordering::Relaxed) as usize;
        let t: &[Entry] = arrays.last().map_or(&[], |a| &a[..n]);
        let i = t.partition_point(|e| e[0].load(Ordering::Relaxed) < addr);
        if i == n || t[i][0].load(Ordering::Relaxed) != addr {
            return Err(Error::new(
                ErrorKind::RmaAttach,
                format!("detaching {addr:#x}: no region attached to the window starts there"),
            ));
        }
        change(control, || {
            for j in i + 1..n {
                let (a, b) = (
                    t[j][0].load(Ordering::Relaxed),
                    t[j][1].load(Ordering::Relaxed),
                );
                t[j - 1][0].store(a, Ordering::Relaxed);
                t[j - 1][1].store(b, Ordering::Relaxed);
            }
            control.table_len.store(n as u64 - 1, Ordering::Release);
        });
        Ok(())
    }
}

/// Runs `f`, the owner's change of the table, with the sequence word odd.
fn change(control: &Control, f: impl FnOnce()) {
    control.attach_seq.fetch_add(1, Ordering::AcqRel);
    fence(Ordering::Release);
    f();
    control.attach_seq.fetch_add(1, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fence_word_has_a_cache_line_of_its_own() {
        let words = [0u64; CONTROL_STRIDE / 8];
        // SAFETY: zero-filled, aligned, lives for the test.
        let c = unsafe { Control::at(words.as_ptr() as *const u8) };
        let base = c as *const Control as usize;
        let line = |p: usize| (p - base) / 64;
        let fence = line(&c.fence_epoch as *const AtomicU64 as usize);
        assert_eq!(LOCK_OFFSET, 0);
        assert_ne!(fence, line(&c.lock as *const AtomicU64 as usize));
        assert_ne!(fence, line(&c.acc as *const AtomicU32 as usize));
        assert_ne!(fence, line(&c.attach_seq as *const AtomicU64 as usize));
        assert_ne!(fence, line(&c.table_len as *const AtomicU64 as usize));
    }

    #[test]
    fn attach_table() {
        let words = [0u64; CONTROL_STRIDE / 8];
        // SAFETY: zero-filled, aligned, lives for the test.
        let c = unsafe { Control::at(words.as_ptr() as *const u8) };
        let t = AttachTable::default();
        assert!(CONTROL_STRIDE.is_multiple_of(64));
        assert!(!c.covers(0x1000, 1));
        t.attach(c, 0x2000, 8).unwrap();
        t.attach(c, 0x1000, 100).unwrap();
        assert!(c.covers(0x1000, 100) && c.covers(0x2004, 4));
        assert!(!c.covers(0x1000, 101) && !c.covers(0x1fff, 2) && !c.covers(0xfff, 2));
        for (a, n) in [(0x1010, 4), (0xff0, 0x20), (0x1fff, 2), (0x1000, 100)] {
            assert_eq!(t.attach(c, a, n).unwrap_err().kind(), ErrorKind::RmaAttach);
        }
        // Back to back: an access may span both.
        t.attach(c, 0x1064, 12).unwrap();
        assert!(c.covers(0x1000, 112) && c.covers(0x1060, 8));
        assert!(!c.covers(0x1000, 113));
        t.detach(c, 0x1000).unwrap();
        assert!(!c.covers(0x1000, 1) && c.covers(0x1064, 12) && !c.covers(0x1060, 8));
        assert_eq!(
            t.detach(c, 0x1000).unwrap_err().kind(),
            ErrorKind::RmaAttach
        );
        // No limit: thousands of regions, attached out of order, found by binary search.
        let k = 5000u64;
        for i in (0..k).rev() {
            t.attach(c, 0x10_0000 + i * 32, 16).unwrap();
        }
        for i in 0..k {
            assert!(c.covers(0x10_0000 + i * 32 + 4, 12), "{i}");
            assert!(!c.covers(0x10_0000 + i * 32 + 16, 1), "{i}");
            assert!(!c.covers(0x10_0000 + i * 32 + 8, 16), "{i}");
        }
        for i in (0..k).step_by(2) {
            t.detach(c, 0x10_0000 + i * 32).unwrap();
        }
        assert!(!c.covers(0x10_0000, 1) && c.covers(0x10_0000 + 32, 16));
        assert!(c.covers(0x2000, 8) && c.covers(0x1064, 12));
    }

    #[test]
    fn another_process_reads_the_table_with_cma() {
        let words = [0u64; CONTROL_STRIDE / 8];
        // SAFETY: zero-filled, aligned, lives for the test.
        let c = unsafe { Control::at(words.as_ptr() as *const u8) };
        let t = AttachTable::default();
        let pid = std::process::id() as i32;
        let (probe_at, probe_value) = cma::probe_target(pid);
        if !cma::probe(pid, probe_at, probe_value) {
            return; // CMA refused here (ptrace scope): the owner-process test covers the search
        }
        assert!(!c.covers_in(pid, 0x1000, 1).unwrap());
        for n in [1u64, CMA_BATCH as u64, 1000] {
            for i in 0..n {
                t.attach(c, 0x100_0000 * n + i * 64, 64).unwrap();
            }
            let base = 0x100_0000 * n;
            assert!(c.covers_in(pid, base, 64 * n).unwrap(), "{n}");
            assert!(
                c.covers_in(pid, base + 64 * (n - 1) + 3, 61).unwrap(),
                "{n}"
            );
            assert!(!c.covers_in(pid, base + 64 * n - 1, 2).unwrap(), "{n}");
            assert!(!c.covers_in(pid, base - 1, 2).unwrap(), "{n}");
        }
    }
}
