//! Node-wide shared regions for one-sided communication (symmetric heaps) and the
//! synchronisation engine's tagged-word table, plus the two primitives of those layers that
//! need `unsafe`: futex wait/wake on a shared 32-bit word, and bounds-checked access to words
//! and bytes inside a region.
//!
//! A [`Region`] is one POSIX segment (mode 0600) created by one local rank and attached by the
//! others, exactly like the transport's node segment: the caller orders create/attach through
//! its bootstrap store (unknown to this crate) and the creator unlinks the name once everybody
//! attached, so nothing stays in `/dev/shm`. The header holds, per local rank, its process id
//! and a few words it publishes to its peers (an executable's load base, for example). The
//! body is zero-filled at creation and page-aligned.
//!
//! This module depends only on [`super::segment`] and `libc`; it knows nothing of heaps,
//! allocators or tags.

use super::segment::Segment;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;
use weft_core::{Error, ErrorKind, Result};

const MAGIC: u64 = 0x7765_6674_7267_6e31; // "weftrgn1"
const SLOT_BYTES: usize = 64;
const SLOTS_OFFSET: usize = 64;
const PAGE_BYTES: usize = 4096;
/// Words each local rank can publish in its header slot.
pub const PUBLISHED_WORDS: usize = 6;

#[repr(C)]
struct RegionHeader {
    magic: AtomicU64,
    local_size: AtomicU32,
    attached: AtomicU32,
    body_bytes: AtomicU64,
}

#[repr(C)]
struct RankSlot {
    pid: AtomicI32,
    _pad: u32,
    words: [AtomicU64; PUBLISHED_WORDS],
}

fn body_offset(local_size: u32) -> usize {
    (SLOTS_OFFSET + local_size as usize * SLOT_BYTES).next_multiple_of(PAGE_BYTES)
}

/// One node-wide shared region as mapped by one local rank.
pub struct Region {
    seg: Segment,
    local_size: u32,
    me: u32,
    body: *mut u8,
    body_bytes: usize,
}

// SAFETY: the region is a shared mapping that lives as long as the value; every access to
// its words goes through atomics or bounds-checked raw copies, which are valid from any
// thread (other processes touch the same bytes anyway).
unsafe impl Send for Region {}
// SAFETY: as above; `&Region` only hands out atomics and copies.
unsafe impl Sync for Region {}

impl Region {
    /// Creates the region `name` with a body of `body_bytes` for `local_size` local ranks and
    /// attaches as local rank `me`.
    pub fn create(name: &str, local_size: u32, me: u32, body_bytes: usize) -> Result<Region> {
        Self::create_aligned(name, local_size, me, body_bytes, PAGE_BYTES)
    }

    /// [`Region::create`] with the body mapped at a multiple of `align` (a power of two).
    pub fn create_aligned(
        name: &str,
        local_size: u32,
        me: u32,
        body_bytes: usize,
        align: usize,
    ) -> Result<Region> {
        if local_size == 0 || local_size > 4096 {
            return Err(Error::new(
                ErrorKind::Config,
                format!("shared region {name} for {local_size} local ranks: must be 1..=4096"),
            ));
        }
        let total = body_offset(local_size)
            .checked_add(body_bytes.next_multiple_of(PAGE_BYTES))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Config,
                    format!("shared region {name}: body of {body_bytes} bytes is too large"),
                )
            })?;
        let seg = Segment::create(name, total)?.aligned(align, body_offset(local_size))?;
        let header = seg.base() as *const RegionHeader;
        // SAFETY: the segment is at least one page, zero-filled and page-aligned, so the
        // header's atomics are in bounds and aligned.
        unsafe {
            (*header).local_size.store(local_size, Ordering::Relaxed);
            (*header)
                .body_bytes
                .store(body_bytes as u64, Ordering::Relaxed);
            (*header).magic.store(MAGIC, Ordering::Release);
        }
        Self::finish(seg, me)
    }

    /// Attaches to the region `name` created by another local rank, as local rank `me`.
    pub fn attach(name: &str, me: u32) -> Result<Region> {
        Self::attach_aligned(name, me, PAGE_BYTES)
    }

    /// [`Region::attach`] with the body mapped at a multiple of `align` (a power of two).
    pub fn attach_aligned(name: &str, me: u32, align: usize) -> Result<Region> {
        let seg = Segment::open(name)?;
        if seg.len() < PAGE_BYTES {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!("shared region {name} is only {} bytes", seg.len()),
            ));
        }
        // SAFETY: at least one page is mapped (checked), holding the header.
        let local_size = unsafe {
            (*(seg.base() as *const RegionHeader))
                .local_size
                .load(Ordering::Relaxed)
        };
        let seg = seg.aligned(align, body_offset(local_size))?;
        Self::finish(seg, me)
    }

    fn finish(seg: Segment, me: u32) -> Result<Region> {
        let header = seg.base() as *const RegionHeader;
        // SAFETY: at least one page is mapped (checked by both callers).
        let (magic, local_size, body_bytes) = unsafe {
            (
                (*header).magic.load(Ordering::Acquire),
                (*header).local_size.load(Ordering::Relaxed),
                (*header).body_bytes.load(Ordering::Relaxed) as usize,
            )
        };
        if magic != MAGIC {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "shared region {} has a bad magic number {magic:#x}",
                    seg.name()
                ),
            ));
        }
        let offset = body_offset(local_size);
        if local_size == 0 || offset + body_bytes > seg.len() {
            return Err(Error::new(
                ErrorKind::Protocol,
                format!(
                    "shared region {} is {} bytes, its header asks for {local_size} ranks and {body_bytes} body bytes",
                    seg.name(),
                    seg.len()
                ),
            ));
        }
        if me >= local_size {
            return Err(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "local rank {me} attaching to shared region {} of {local_size} ranks",
                    seg.name()
                ),
            ));
        }
        // SAFETY: offset + body_bytes <= seg.len() (checked above).
        let body = unsafe { seg.base().add(offset) };
        let region = Region {
            seg,
            local_size,
            me,
            body,
            body_bytes,
        };
        region
            .slot(me)
            .pid
            .store(std::process::id() as i32, Ordering::Release);
        region.header().attached.fetch_add(1, Ordering::AcqRel);
        Ok(region)
    }

    fn header(&self) -> &RegionHeader {
        // SAFETY: the header lies at the start of the live mapping.
        unsafe { &*(self.seg.base() as *const RegionHeader) }
    }

    fn slot(&self, local: u32) -> &RankSlot {
        assert!(local < self.local_size, "local rank {local} out of range");
        // SAFETY: slots lie between SLOTS_OFFSET and the body offset, inside the mapping, and
        // are 8-byte aligned.
        unsafe {
            &*(self
                .seg
                .base()
                .add(SLOTS_OFFSET + local as usize * SLOT_BYTES) as *const RankSlot)
        }
    }

    /// Removes the region's name (call once every local rank has attached).
    pub fn unlink(&self) -> Result<()> {
        Segment::unlink(self.seg.name())
    }

    /// The region's name.
    pub fn name(&self) -> &str {
        self.seg.name()
    }

    /// Local ranks the region was created for.
    pub fn local_size(&self) -> u32 {
        self.local_size
    }

    /// This process's local rank.
    pub fn me(&self) -> u32 {
        self.me
    }

    /// Local ranks attached so far.
    pub fn attached(&self) -> u32 {
        self.header().attached.load(Ordering::Acquire)
    }

    /// Process id of local rank `local` (0 until it attached).
    pub fn pid(&self, local: u32) -> i32 {
        self.slot(local).pid.load(Ordering::Acquire)
    }

    /// Whether local rank `local`'s process is alive (a system call: use it only after a
    /// wait has made no progress for a while).
    pub fn peer_alive(&self, local: u32) -> bool {
        super::process_alive(self.pid(local))
    }

    /// The first local rank whose process has died, if any.
    pub fn dead_peer(&self) -> Option<u32> {
        (0..self.local_size).find(|&l| l != self.me && self.pid(l) != 0 && !self.peer_alive(l))
    }

    /// Publishes word `index` (< [`PUBLISHED_WORDS`]) of this rank's header slot.
    pub fn publish(&self, index: usize, value: u64) {
        self.slot(self.me).words[index].store(value, Ordering::Release);
    }

    /// Word `index` published by local rank `local`.
    pub fn published(&self, local: u32, index: usize) -> u64 {
        self.slot(local).words[index].load(Ordering::Acquire)
    }

    /// Bytes in the body.
    pub fn body_bytes(&self) -> usize {
        self.body_bytes
    }

    /// Base address of the body in this process. Raw: for the layers that translate user
    /// pointers (the C ABI); everything else uses the checked accessors below.
    pub fn body_ptr(&self) -> *mut u8 {
        self.body
    }

    fn check(&self, offset: usize, len: usize, align: usize, what: &str) -> Result<()> {
        if !offset.is_multiple_of(align)
            || offset.checked_add(len).is_none_or(|e| e > self.body_bytes)
        {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{what} at offset {offset} ({len} bytes, alignment {align}) outside shared region {} of {} bytes or misaligned",
                    self.seg.name(),
                    self.body_bytes
                ),
            ));
        }
        Ok(())
    }

    /// The 64-bit word at `offset` of the body (8-byte aligned).
    pub fn u64_at(&self, offset: usize) -> Result<&AtomicU64> {
        self.check(offset, 8, 8, "64-bit word")?;
        // SAFETY: in bounds and aligned (checked); any bit pattern is a valid AtomicU64 and
        // the mapping outlives the borrow of self.
        Ok(unsafe { &*(self.body.add(offset) as *const AtomicU64) })
    }

    /// The 32-bit word at `offset` of the body (4-byte aligned).
    pub fn u32_at(&self, offset: usize) -> Result<&AtomicU32> {
        self.check(offset, 4, 4, "32-bit word")?;
        // SAFETY: as for u64_at.
        Ok(unsafe { &*(self.body.add(offset) as *const AtomicU32) })
    }

    /// Copies `src` into the body at `offset`. Concurrent writers of the same bytes race on
    /// the data (as two OpenSHMEM puts to one address do) but never on memory safety: no Rust
    /// reference to the shared bytes exists.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.check(offset, src.len(), 1, "write")?;
        // SAFETY: the destination range is inside the body (checked); src is a distinct
        // private buffer.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.body.add(offset), src.len()) };
        Ok(())
    }

    /// Copies bytes at `offset` of the body into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.check(offset, dst.len(), 1, "read")?;
        // SAFETY: the source range is inside the body (checked); dst is exclusively borrowed.
        unsafe {
            std::ptr::copy_nonoverlapping(self.body.add(offset), dst.as_mut_ptr(), dst.len())
        };
        Ok(())
    }

    /// Copies `len` bytes inside the body from `from` to `to` (ranges may overlap).
    pub fn copy_within(&self, from: usize, to: usize, len: usize) -> Result<()> {
        self.check(from, len, 1, "copy source")?;
        self.check(to, len, 1, "copy destination")?;
        // SAFETY: both ranges are inside the body (checked); `copy` allows overlap.
        unsafe { std::ptr::copy(self.body.add(from), self.body.add(to), len) };
        Ok(())
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout`, or until a [`futex_wake`] on the
/// same word from any process. Returns early (spuriously) on signals; callers re-check their
/// condition in a loop. The word must live in shared memory for cross-process wake-ups: the
/// futex is keyed by the physical page, which is why this is not `FUTEX_PRIVATE`.
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a valid, aligned 32-bit atomic for the duration of the call; the kernel
    // only reads it and compares with `expected`; ts is a valid relative timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes up to `count` processes sleeping in [`futex_wait`] on `word`.
pub fn futex_wake(word: &AtomicU32, count: i32) {
    // SAFETY: word is a valid aligned 32-bit atomic; FUTEX_WAKE only uses its address.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            count,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn name(tag: &str) -> String {
        format!("/weft-test-{}-rgn-{tag}", std::process::id())
    }

    #[test]
    fn create_attach_publish_and_bounds() {
        let n = name("a");
        let a = Region::create(&n, 2, 0, 10_000).unwrap();
        let b = Region::attach(&n, 1).unwrap();
        a.unlink().unwrap();
        assert_eq!(b.attached(), 2);
        assert_eq!(b.body_bytes(), 10_000);
        a.publish(2, 77);
        assert_eq!(b.published(0, 2), 77);
        assert_eq!(b.pid(0), std::process::id() as i32);
        a.write(100, b"hello").unwrap();
        let mut out = [0u8; 5];
        b.read(100, &mut out).unwrap();
        assert_eq!(&out, b"hello");
        a.u64_at(8).unwrap().store(5, Ordering::SeqCst);
        assert_eq!(b.u64_at(8).unwrap().load(Ordering::SeqCst), 5);
        assert!(a.u64_at(4).is_err(), "misaligned");
        assert!(a.u64_at(10_000).is_err(), "out of bounds");
        let e = a.write(9_999, b"ab").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains("9999"), "{e}");
        b.copy_within(100, 200, 5).unwrap();
        b.read(200, &mut out).unwrap();
        assert_eq!(&out, b"hello");
        assert!(Region::attach(&name("missing"), 0).is_err());
        assert_eq!(a.dead_peer(), None);
    }

    #[test]
    fn attach_beyond_size_is_an_error() {
        let n = name("b");
        let a = Region::create(&n, 1, 0, 4096).unwrap();
        let e = Region::attach(&n, 3).err().unwrap();
        a.unlink().unwrap();
        assert_eq!(e.kind(), ErrorKind::InvalidRank);
        assert!(Region::create(&name("c"), 0, 0, 4096).is_err());
    }

    #[test]
    fn futex_wakes_a_sleeper() {
        let word = Arc::new(AtomicU32::new(0));
        let w = word.clone();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // SAFETY: gettid has no arguments and cannot fail.
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            // Ten minutes: only the wake ends this wait in time for the check below.
            while w.load(Ordering::SeqCst) == 0 {
                futex_wait(&w, 0, Duration::from_secs(600));
            }
            done_tx.send(()).unwrap();
        });
        // The sleeper is in the futex system call before the wake (the kernel shows the call
        // a blocked thread is in), so the wake is what ends it, not a value it saw early.
        let tid = tid_rx.recv().unwrap();
        let syscall = format!("/proc/self/task/{tid}/syscall");
        let futex = libc::SYS_futex.to_string();
        let in_call = || {
            let now = std::fs::read_to_string(&syscall).unwrap_or_default();
            now.split_whitespace().next() == Some(futex.as_str())
        };
        while !in_call() {
            std::thread::yield_now();
        }
        word.store(1, Ordering::SeqCst);
        futex_wake(&word, i32::MAX);
        // A hang catcher far below the sleeper's ten minutes.
        assert!(
            done_rx.recv_timeout(Duration::from_secs(120)).is_ok(),
            "the sleeper was not woken"
        );
        // A wait on a stale value returns at once.
        futex_wait(&word, 0, Duration::from_secs(5));
    }
}
