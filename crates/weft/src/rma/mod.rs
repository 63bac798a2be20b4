//! One-sided communication on the symmetric heap (ALGORITHMS.md §8, seed 002).
//!
//! Every PE (rank) owns a heap of `WEFT_SYMMETRIC_SIZE` bytes. The heaps of one node live in
//! one shared region that every local PE maps, so a put to a local peer is a memory copy into
//! its heap and an atomic is a CPU atomic on the mapped word. [`alloc::Allocator`] is
//! deterministic: PEs that allocate and free in the same order (OpenSHMEM requires it) get
//! the same offsets, so `address - my_heap_base` names the same object on every PE.
//!
//! Globals and statics of the program are symmetric too ([`statics`]): every PE runs the same
//! executable, so a variable in its writable segments lies at the same offset from each
//! process's load base, and a put/get to a peer's copy is one `process_vm_writev` /
//! `process_vm_readv` at `address - my_base + peer_base`. The rule: the main executable's
//! `.data`/`.bss` only (not shared libraries' globals, not thread-locals, not the stack), and
//! atomics on a *peer's* global are refused (a CMA copy is not atomic): put such words in the
//! symmetric heap.
//!
//! Completion: a put to a local peer is complete (visible to the target) when the call
//! returns, so the `_nbi` forms complete at once, [`SymmetricHeap::fence`] orders with a
//! release fence and [`SymmetricHeap::quiet`] with a full fence. Every initiating thread
//! stores directly (no proxy thread, nothing to coalesce). Atomics are all CPU atomics on the
//! mapped word, so mixing them with plain puts to the same word is a data race in the
//! OpenSHMEM sense only (no torn atomics). PEs on other nodes are reported as not accessible:
//! one-sided communication across nodes (active messages over TCP) is not implemented yet.
//!
//! Depends on the transport's [`Region`] and CMA; the runtime only for creation.

pub mod alloc;
pub mod knobs;
pub mod statics;

use crate::sync::region::{knob_text, node_region};
use crate::Weft;
use alloc::Allocator;
use statics::Image;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use weft_core::units::parse_bytes;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::cma;
use weft_transport::shm::heap::Region;

const WORD_PE: usize = 0;
const WORD_BASE: usize = 1;
const WORD_FINGERPRINT: usize = 2;

/// Where a symmetric address of a peer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// In the node's heap region, at this offset of its body.
    Heap(usize),
    /// A global/static in the process `pid`, at this address in that process.
    Static {
        /// The peer's process id.
        pid: i32,
        /// The address in the peer's address space.
        addr: u64,
    },
}

/// The symmetric heaps of this node as seen by one PE. `Send` and `Sync`: threads put and
/// get concurrently, each directly (no proxy).
pub struct SymmetricHeap {
    region: Region,
    heap_bytes: usize,
    me_local: u32,
    pe: u32,
    npes: u32,
    local_of_pe: Vec<Option<u32>>,
    alloc: Mutex<Allocator>,
    image: Image,
    /// Per local rank: the load base of its executable, when it is the same executable.
    peer_image_base: Vec<Option<u64>>,
}

impl SymmetricHeap {
    /// Creates this node's heaps (collective over the job's ranks: every rank creates its
    /// heaps in the same order), sized by `WEFT_SYMMETRIC_SIZE`.
    pub fn new(weft: &Weft) -> Result<SymmetricHeap> {
        let text = knob_text(&weft.config.values, "WEFT_SYMMETRIC_SIZE", "64M");
        let bytes = parse_bytes(&text)? as usize;
        Self::with_size(weft, bytes)
    }

    /// Creates this node's heaps with `heap_bytes` per PE (collective, as [`Self::new`]).
    pub fn with_size(weft: &Weft, heap_bytes: usize) -> Result<SymmetricHeap> {
        if !(4096..=1 << 40).contains(&heap_bytes) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("WEFT_SYMMETRIC_SIZE={heap_bytes}: must be 4 KiB to 1 TiB"),
            ));
        }
        let heap_bytes = heap_bytes.next_multiple_of(4096);
        let local_world: Vec<u32> = weft.engine.borrow().local_ranks().0.to_vec();
        let n = local_world.len();
        let total = heap_bytes.checked_mul(n).ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!("WEFT_SYMMETRIC_SIZE={heap_bytes} times {n} local PEs overflows"),
            )
        })?;
        // Every heap of a job needs its own region name and store keys; ranks create their
        // heaps in the same order (it is collective), so a per-thread count names them alike
        // (per thread, because in-process jobs run one rank per thread).
        thread_local!(static HEAPS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
        let k = HEAPS.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        let region = node_region(weft, &format!("heap{k}"), total)?;
        let image = Image::of_executable();
        region.publish(WORD_BASE, image.base);
        region.publish(WORD_FINGERPRINT, image.fingerprint);
        region.publish(WORD_PE, weft.world.rank() as u64 + 1);
        if let Some(store) = &weft.store {
            store.barrier(
                &format!("heap{k}-published/{}", weft.node_id),
                n as u32,
                std::time::Duration::from_secs(weft.config.boot_timeout_s),
            )?;
        }
        let npes = weft.world.size();
        let mut local_of_pe = vec![None; npes as usize];
        let mut peer_image_base = Vec::with_capacity(n);
        for (l, &pe) in local_world.iter().enumerate() {
            let published = region.published(l as u32, WORD_PE);
            if published != pe as u64 + 1 {
                return Err(Error::new(
                    ErrorKind::Protocol,
                    format!(
                        "symmetric heap: local rank {l} published PE {} but is PE {pe}",
                        published.wrapping_sub(1)
                    ),
                ));
            }
            local_of_pe[pe as usize] = Some(l as u32);
            let same = region.published(l as u32, WORD_FINGERPRINT) == image.fingerprint;
            peer_image_base.push(same.then(|| region.published(l as u32, WORD_BASE)));
        }
        Ok(SymmetricHeap {
            me_local: region.me(),
            region,
            heap_bytes,
            pe: weft.world.rank(),
            npes,
            local_of_pe,
            alloc: Mutex::new(Allocator::new(heap_bytes)),
            image,
            peer_image_base,
        })
    }

    /// This PE.
    pub fn pe(&self) -> u32 {
        self.pe
    }

    /// Number of PEs.
    pub fn npes(&self) -> u32 {
        self.npes
    }

    /// Bytes of each PE's heap.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes
    }

    /// Start of this PE's own heap in this process.
    pub fn base(&self) -> *mut u8 {
        self.heap_ptr(self.me_local, 0)
    }

    fn heap_ptr(&self, local: u32, offset: usize) -> *mut u8 {
        self.region
            .body_ptr()
            .wrapping_add(local as usize * self.heap_bytes + offset)
    }

    /// Allocates `bytes` in the symmetric heap (every PE must make the same call in the same
    /// order); returns the offset.
    pub fn malloc(&self, bytes: usize) -> Result<usize> {
        self.align(alloc::MIN_ALIGN, bytes)
    }

    /// Allocates `bytes` aligned to `align` (a power of two).
    pub fn align(&self, align: usize, bytes: usize) -> Result<usize> {
        self.allocator()
            .alloc(bytes, align)
            .map_err(|e| e.context(format!("PE {}", self.pe)))
    }

    /// Frees the block at `offset`.
    pub fn free(&self, offset: usize) -> Result<()> {
        self.allocator()
            .free(offset)
            .map_err(|e| e.context(format!("PE {}", self.pe)))
    }

    /// Resizes the block at `offset`, moving this PE's copy of the data when it has to move.
    pub fn realloc(&self, offset: usize, bytes: usize) -> Result<usize> {
        let mut a = self.allocator();
        let old = a.block_bytes(offset).unwrap_or(0);
        let new = a
            .realloc(offset, bytes)
            .map_err(|e| e.context(format!("PE {}", self.pe)))?;
        if new != offset {
            let mine = self.me_local as usize * self.heap_bytes;
            self.region
                .copy_within(mine + offset, mine + new, old.min(bytes))?;
        }
        Ok(new)
    }

    fn allocator(&self) -> std::sync::MutexGuard<'_, Allocator> {
        // A panic while holding the lock cannot leave the allocator half-updated in a way
        // that matters more than the panic itself: keep going with its state.
        self.alloc.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Offset in the heap of `addr` (an address in this process), if it lies in this PE's heap.
    pub fn offset_of(&self, addr: u64) -> Option<usize> {
        let base = self.base() as u64;
        (addr >= base && addr < base + self.heap_bytes as u64).then(|| (addr - base) as usize)
    }

    /// A number naming the symmetric object at `addr` identically on every PE (heap offset or
    /// offset in the executable's image, in disjoint ranges), for tags of the node's
    /// synchronisation engine; `None` when the address is not symmetric.
    pub fn symmetric_id(&self, addr: u64) -> Option<u64> {
        if let Some(off) = self.offset_of(addr) {
            return Some(1 << 62 | off as u64);
        }
        self.image
            .contains(addr, 1)
            .then(|| 1 << 61 | (addr - self.image.base))
    }

    /// Whether `pe` can be reached with loads and stores (same node).
    pub fn accessible(&self, pe: u32) -> bool {
        self.local_of_pe
            .get(pe as usize)
            .is_some_and(|l| l.is_some())
    }

    fn local(&self, pe: u32, what: &str, addr: u64) -> Result<u32> {
        match self.local_of_pe.get(pe as usize) {
            None => Err(Error::new(
                ErrorKind::InvalidRank,
                format!("PE {}: {what} at {addr:#x} to PE {pe}, which is out of range 0..{}", self.pe, self.npes),
            )),
            Some(None) => Err(Error::new(
                ErrorKind::Unsupported,
                format!("PE {}: {what} at {addr:#x} to PE {pe} on another node: one-sided communication across nodes is not implemented yet", self.pe),
            )),
            Some(Some(l)) => Ok(*l),
        }
    }

    /// Where `[addr, addr + len)` (symmetric, in this process's terms) lives on `pe`.
    pub fn target(&self, pe: u32, addr: u64, len: usize, what: &str) -> Result<Target> {
        let local = self.local(pe, what, addr)?;
        if let Some(off) = self.offset_of(addr) {
            if off + len > self.heap_bytes {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("PE {}: {what} of {len} bytes at {addr:#x} on PE {pe} runs past the end of the symmetric heap", self.pe),
                ));
            }
            return Ok(Target::Heap(local as usize * self.heap_bytes + off));
        }
        if self.image.contains(addr, len as u64) {
            if let (Some(peer_base), pid) =
                (self.peer_image_base[local as usize], self.region.pid(local))
            {
                return Ok(Target::Static {
                    pid,
                    addr: addr - self.image.base + peer_base,
                });
            }
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("PE {}: {what} at {addr:#x} (a global) on PE {pe}, which runs a different executable", self.pe),
            ));
        }
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "PE {}: {what} of {len} bytes at {addr:#x} on PE {pe}: the address is not symmetric (neither in the symmetric heap nor a global of the program)",
                self.pe
            ),
        ))
    }

    /// Copies `src` to `dest` (a symmetric address) on `pe`; complete on return.
    pub fn put(&self, pe: u32, dest: u64, src: &[u8]) -> Result<()> {
        match self.target(pe, dest, src.len(), "put")? {
            Target::Heap(off) => self.region.write(off, src),
            Target::Static { pid, addr } => cma::write(pid, addr, src).map_err(|e| {
                Error::io(
                    format!(
                        "PE {}: put of {} bytes to global {dest:#x} on PE {pe}",
                        self.pe,
                        src.len()
                    ),
                    e,
                )
            }),
        }
    }

    /// Copies from `src` (a symmetric address) on `pe` into `dst`.
    pub fn get(&self, pe: u32, src: u64, dst: &mut [u8]) -> Result<()> {
        match self.target(pe, src, dst.len(), "get")? {
            Target::Heap(off) => self.region.read(off, dst),
            Target::Static { pid, addr } => cma::read(pid, addr, dst).map_err(|e| {
                Error::io(
                    format!(
                        "PE {}: get of {} bytes from global {src:#x} on PE {pe}",
                        self.pe,
                        dst.len()
                    ),
                    e,
                )
            }),
        }
    }

    /// The address in this process of `addr` on `pe` when it can be accessed with loads and
    /// stores (heap address, same node), as `shmem_ptr` returns.
    pub fn ptr(&self, pe: u32, addr: u64) -> Option<*mut u8> {
        let local = self.local_of_pe.get(pe as usize).copied().flatten()?;
        let off = self.offset_of(addr)?;
        Some(self.heap_ptr(local, off))
    }

    fn atomic_offset(&self, pe: u32, addr: u64, bytes: usize) -> Result<usize> {
        match self.target(pe, addr, bytes, "atomic")? {
            Target::Heap(off) => Ok(off),
            Target::Static { .. } => Err(Error::new(
                ErrorKind::Unsupported,
                format!("PE {}: atomic at {addr:#x} on PE {pe} is a global of the program; atomics on another PE's globals are not atomic through CMA: allocate the word with shmem_malloc", self.pe),
            )),
        }
    }

    /// The 64-bit word at `addr` on `pe`, for a CPU atomic (8-byte aligned, in the heap).
    pub fn atomic_u64(&self, pe: u32, addr: u64) -> Result<&AtomicU64> {
        let off = self.atomic_offset(pe, addr, 8)?;
        self.region
            .u64_at(off)
            .map_err(|e| e.context(format!("PE {}: atomic at {addr:#x} on PE {pe}", self.pe)))
    }

    /// The 32-bit word at `addr` on `pe`, for a CPU atomic (4-byte aligned, in the heap).
    pub fn atomic_u32(&self, pe: u32, addr: u64) -> Result<&AtomicU32> {
        let off = self.atomic_offset(pe, addr, 4)?;
        self.region
            .u32_at(off)
            .map_err(|e| e.context(format!("PE {}: atomic at {addr:#x} on PE {pe}", self.pe)))
    }

    /// Orders this PE's earlier puts before its later ones (shmem_fence): stores to mapped
    /// heaps become visible in program order after a release fence.
    pub fn fence(&self) {
        fence(Ordering::Release);
    }

    /// Completes every earlier put of this PE (shmem_quiet): they are already in the target's
    /// memory; the full fence orders them before anything that follows, flags included.
    pub fn quiet(&self) {
        fence(Ordering::SeqCst);
    }
}
