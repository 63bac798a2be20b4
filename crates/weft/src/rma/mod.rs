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
//! process's load base. When the process moved its globals into a shared file at load time
//! (libshmem does), the PEs of a node map each other's files and a global is reached like a
//! heap object: puts and gets are memory copies, atomics CPU atomics on the mapped word,
//! `shmem_ptr` a pointer. Otherwise a put/get to a peer's copy is one `process_vm_writev` /
//! `process_vm_readv` at `address - my_base + peer_base`, and atomics on a *peer's* global
//! are refused (a CMA copy is not atomic). A PE's own globals are always its own memory. The
//! rule: the main executable's `.data`/`.bss` only (not shared libraries' globals, not
//! thread-locals, not the stack).
//!
//! Completion: a put to a local peer is complete (visible to the target) when the call
//! returns, so the `_nbi` forms complete at once, [`SymmetricHeap::fence`] orders with a
//! release fence and [`SymmetricHeap::quiet`] with a full fence. Every initiating thread
//! stores directly (no proxy thread). Atomics are all CPU atomics on the mapped word, so
//! mixing them with plain puts to the same word is a data race in the OpenSHMEM sense only
//! (no torn atomics).
//!
//! PEs on other nodes are reached through [`net`]: active messages over TCP to the target
//! PE's own service thread, which applies them to its heap (atomics as CPU atomics on the
//! same word, so the rule above holds across nodes too) and answers gets and fetching
//! atomics; globals work there as well (same offset from the target's load base). Each
//! initiating thread and each context has its own lanes; puts are buffered and coalesced
//! and complete at quiet. `shmem_ptr` gives no pointer for such PEs, but they are reachable
//! ([`SymmetricHeap::reachable`]).
//!
//! Depends on the transport's [`Region`] and CMA; the runtime only for creation.

pub mod alloc;
pub mod knobs;
pub mod net;
pub mod statics;

use crate::sync::region::{knob_text, node_region_aligned};
use crate::Weft;
use alloc::Allocator;
use statics::{Image, PeerGlobals};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex;
use weft_core::units::parse_bytes;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::cma;
use weft_transport::shm::heap::Region;

const WORD_PE: usize = 0;
const WORD_BASE: usize = 1;
const WORD_FINGERPRINT: usize = 2;
/// Bytes of the PE's shared globals file (0: its globals are not shared).
const WORD_GLOBALS: usize = 3;
/// Non-zero once the PE has mapped its node's shared globals files (their names may go).
const WORD_GLOBALS_MAPPED: usize = 4;

/// Where a symmetric address of a peer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// In the node's heap region, at this offset of its body.
    Heap(usize),
    /// A global of a PE of this node whose globals are mapped here (see [`statics`]): at
    /// this offset of its shared globals file.
    Global {
        /// The PE's local rank.
        local: u32,
        /// Offset in its globals file.
        offset: usize,
    },
    /// A global of this PE: its own memory, at this address.
    Own(u64),
    /// A global/static in the process `pid` (reached through CMA), at this address in that
    /// process.
    Static {
        /// The peer's process id.
        pid: i32,
        /// The address in the peer's address space.
        addr: u64,
    },
    /// On a PE of another node, reached through its one-sided service.
    Remote(net::Remote),
}

/// The symmetric heaps of this node as seen by one PE. `Send` and `Sync`: threads put and
/// get concurrently, each directly (no proxy).
pub struct SymmetricHeap {
    /// First, so it is dropped (service stopped) before the region is unmapped.
    net: Option<net::Net>,
    /// Image fingerprint of every PE on another node (0 for same-node PEs).
    remote_fingerprint: Vec<u64>,
    /// The first error a `quiet` without a result met, returned by the next fallible call.
    sticky: Mutex<Option<Error>>,
    /// Whether `sticky` holds an error: read on every remote call, so the common case touches
    /// no lock and no cache line that another thread writes.
    has_sticky: std::sync::atomic::AtomicBool,
    region: Region,
    heap_bytes: usize,
    /// The alignment of every PE's heap base, in every process.
    base_align: usize,
    me_local: u32,
    pe: u32,
    npes: u32,
    local_of_pe: Vec<Option<u32>>,
    alloc: Mutex<Allocator>,
    image: Image,
    /// Per local rank: the load base of its executable, when it is the same executable.
    peer_image_base: Vec<Option<u64>>,
    /// Per local rank: its shared globals file mapped here, when its globals are shared.
    globals: Arc<Vec<Option<PeerGlobals>>>,
    /// The same-node fast path ([`Self::local_target`]): this PE's heap base in this
    /// process, and the executable's symmetric range (when it is one range: `len` 0 turns
    /// the path off for globals) with the offset in a globals file of its first byte.
    heap_base: u64,
    glob_lo: u64,
    glob_len: u64,
    glob_file_offset: u64,
}

impl SymmetricHeap {
    /// Creates this node's heaps (collective over the job's ranks: every rank creates its
    /// heaps in the same order), sized by OpenSHMEM's `SHMEM_SYMMETRIC_SIZE` when it is set,
    /// else by `WEFT_SYMMETRIC_SIZE`.
    pub fn new(weft: &Weft) -> Result<SymmetricHeap> {
        let standard = knob_text(&weft.config.values, "SHMEM_SYMMETRIC_SIZE", "");
        let text = if standard.is_empty() {
            knob_text(&weft.config.values, "WEFT_SYMMETRIC_SIZE", "512M")
        } else {
            standard
        };
        let bytes = parse_bytes(&text)? as usize;
        Self::with_size(weft, bytes)
    }

    /// Creates this node's heaps with `heap_bytes` per PE (collective, as [`Self::new`]).
    pub fn with_size(weft: &Weft, heap_bytes: usize) -> Result<SymmetricHeap> {
        Self::with_options(weft, heap_bytes, &net::Options::from_config(weft)?)
    }

    /// [`Self::with_size`] with explicit settings of the lanes to other nodes (instead of the
    /// `WEFT_RMA_*` knobs), e.g. to compare coalescing and the single proxy in one job.
    pub fn with_options(
        weft: &Weft,
        heap_bytes: usize,
        options: &net::Options,
    ) -> Result<SymmetricHeap> {
        if !(4096..=1 << 40).contains(&heap_bytes) {
            return Err(Error::new(
                ErrorKind::Config,
                format!("symmetric heap size {heap_bytes} (SHMEM_SYMMETRIC_SIZE or WEFT_SYMMETRIC_SIZE): must be 4 KiB to 1 TiB"),
            ));
        }
        let heap_bytes = heap_bytes.next_multiple_of(4096);
        // Every PE's heap starts at a multiple of this in every process, so a block aligned
        // (by offset) to at most this is aligned alike on every PE (shmem_align).
        let base_align = base_alignment(heap_bytes);
        let local_world: Vec<u32> = weft.engine.borrow().local_ranks().0.to_vec();
        let n = local_world.len();
        let total = heap_bytes.checked_mul(n).ok_or_else(|| {
            Error::new(
                ErrorKind::Config,
                format!("symmetric heap size {heap_bytes} times {n} local PEs overflows"),
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
        let region = node_region_aligned(weft, &format!("heap{k}"), total, base_align)?;
        let image = Image::of_executable();
        let shared = shared_globals(weft)?;
        region.publish(WORD_GLOBALS, shared.map_or(0, |s| s.bytes as u64));
        region.publish(WORD_BASE, image.base);
        region.publish(WORD_FINGERPRINT, image.fingerprint);
        region.publish(WORD_PE, weft.world.rank() as u64 + 1);
        // Every local PE publishes its PE word last: once all are there, so is the rest.
        crate::startup::wait_node(
            weft.world.rank(),
            &format!("heap{k} (publishing)"),
            || {
                (0..n as u32)
                    .filter(|&l| region.published(l, WORD_PE) != 0)
                    .count() as u32
            },
            n as u32,
            std::time::Duration::from_secs(weft.config.boot_timeout_s),
        )?;
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
        let me_local = region.me();
        let globals = match shared {
            Some(s) => map_globals(weft, k, &local_world, &region, &image, s)?,
            None => Arc::new(Vec::new()),
        };
        let (net, remote_fingerprint) = if local_of_pe.iter().any(|l| l.is_none()) {
            let mem = net::service::Memory {
                heap: region
                    .body_ptr()
                    .wrapping_add(me_local as usize * heap_bytes),
                heap_bytes,
                image: image.clone(),
            };
            let (n, f) = start_net(weft, k, &local_of_pe, mem, options)?;
            (Some(n), f)
        } else {
            (None, Vec::new())
        };
        let heap_base = region
            .body_ptr()
            .wrapping_add(me_local as usize * heap_bytes) as u64;
        let (glob_lo, glob_len, glob_file_offset) = match image.ranges[..] {
            [(lo, hi)] => (lo, hi - lo, image.file_offset(lo, 1).unwrap_or(0) as u64),
            _ => (0, 0, 0),
        };
        Ok(SymmetricHeap {
            heap_base,
            glob_lo,
            glob_len,
            glob_file_offset,
            net,
            remote_fingerprint,
            sticky: Mutex::new(None),
            has_sticky: std::sync::atomic::AtomicBool::new(false),
            me_local,
            region,
            heap_bytes,
            base_align,
            pe: weft.world.rank(),
            npes,
            local_of_pe,
            alloc: Mutex::new(Allocator::new(heap_bytes)),
            image,
            peer_image_base,
            globals,
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

    /// The alignment of every PE's heap base in every process: the largest alignment a block
    /// can have alike on every PE.
    pub fn base_alignment(&self) -> usize {
        self.base_align
    }

    /// Start of this PE's own heap in this process.
    pub fn base(&self) -> *mut u8 {
        self.heap_base as *mut u8
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

    /// Allocates `bytes` aligned to `align` (a power of two, at most
    /// [`Self::base_alignment`]: the block is then aligned alike on every PE).
    pub fn align(&self, align: usize, bytes: usize) -> Result<usize> {
        if align > self.base_align && align.is_power_of_two() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "PE {}: alignment {align} exceeds that of the symmetric heap's base ({}, the largest power of two dividing the heap size {} (SHMEM_SYMMETRIC_SIZE or WEFT_SYMMETRIC_SIZE), up to 1 GiB)",
                    self.pe, self.base_align, self.heap_bytes
                ),
            ));
        }
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
        let off = addr.wrapping_sub(self.heap_base);
        (off < self.heap_bytes as u64).then_some(off as usize)
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

    /// Whether `pe` can be reached at all: same node, or another node's PE through its
    /// one-sided service (`shmem_pe_accessible`).
    pub fn reachable(&self, pe: u32) -> bool {
        pe < self.npes && (self.accessible(pe) || self.net.is_some())
    }

    fn check_pe(&self, pe: u32, what: &str, addr: u64) -> Result<Option<u32>> {
        match self.local_of_pe.get(pe as usize) {
            None => Err(Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "PE {}: {what} at {addr:#x} to PE {pe}, which is out of range 0..{}",
                    self.pe, self.npes
                ),
            )),
            Some(l) => Ok(*l),
        }
    }

    /// The same-node fast path of [`Self::target`], taken by every put, get and atomic: a
    /// heap object or global of a PE of this node, found with a few compares; `None` for
    /// everything else (other nodes, CMA, bad input), which `target` resolves or rejects.
    #[inline]
    fn local_target(&self, pe: u32, addr: u64, len: usize) -> Option<Target> {
        let local = (*self.local_of_pe.get(pe as usize)?)?;
        let len = len as u64;
        let off = addr.wrapping_sub(self.heap_base);
        if off < self.heap_bytes as u64 && len <= self.heap_bytes as u64 - off {
            return Some(Target::Heap(
                local as usize * self.heap_bytes + off as usize,
            ));
        }
        let g = addr.wrapping_sub(self.glob_lo);
        if g < self.glob_len && len <= self.glob_len - g {
            if local == self.me_local {
                return Some(Target::Own(addr));
            }
            if matches!(self.globals.get(local as usize), Some(Some(_))) {
                return Some(Target::Global {
                    local,
                    offset: (self.glob_file_offset + g) as usize,
                });
            }
        }
        None
    }

    /// [`Self::local_target`], else [`Self::target`].
    #[inline]
    fn resolve(&self, pe: u32, addr: u64, len: usize, what: &str) -> Result<Target> {
        match self.local_target(pe, addr, len) {
            Some(t) => Ok(t),
            None => self.target(pe, addr, len, what),
        }
    }

    /// Where `[addr, addr + len)` (symmetric, in this process's terms) lives on `pe`.
    pub fn target(&self, pe: u32, addr: u64, len: usize, what: &str) -> Result<Target> {
        let local = self.check_pe(pe, what, addr)?;
        if let Some(off) = self.offset_of(addr) {
            if off + len > self.heap_bytes {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("PE {}: {what} of {len} bytes at {addr:#x} on PE {pe} runs past the end of the symmetric heap", self.pe),
                ));
            }
            return Ok(match local {
                Some(local) => Target::Heap(local as usize * self.heap_bytes + off),
                None => Target::Remote(net::Remote {
                    pe,
                    space: net::wire::SPACE_HEAP,
                    offset: off as u64,
                }),
            });
        }
        if self.image.contains(addr, len as u64) {
            let same = match local {
                Some(local) => self.peer_image_base[local as usize].is_some(),
                None => self.remote_fingerprint.get(pe as usize) == Some(&self.image.fingerprint),
            };
            if !same {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("PE {}: {what} at {addr:#x} (a global) on PE {pe}, which runs a different executable", self.pe),
                ));
            }
            return Ok(match local {
                Some(local) if local == self.me_local => Target::Own(addr),
                Some(local) => match self.globals.get(local as usize) {
                    Some(Some(_)) => Target::Global {
                        local,
                        offset: self.image.file_offset(addr, len as u64).ok_or_else(|| {
                            Error::new(
                                ErrorKind::Internal,
                                format!(
                                    "PE {}: global {addr:#x} has no place in the globals file",
                                    self.pe
                                ),
                            )
                        })?,
                    },
                    _ => Target::Static {
                        pid: self.region.pid(local),
                        addr: addr - self.image.base
                            + self.peer_image_base[local as usize].unwrap_or(0),
                    },
                },
                None => Target::Remote(net::Remote {
                    pe,
                    space: net::wire::SPACE_IMAGE,
                    offset: addr - self.image.base,
                }),
            });
        }
        Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "PE {}: {what} of {len} bytes at {addr:#x} on PE {pe}: the address is not symmetric (neither in the symmetric heap nor a global of the program)",
                self.pe
            ),
        ))
    }

    fn net(&self) -> Result<&net::Net> {
        self.net.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("PE {}: a remote PE without a one-sided network", self.pe),
            )
        })
    }

    fn sticky(&self) -> Result<()> {
        if !self.has_sticky.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut g = self.sticky.lock().unwrap_or_else(|p| p.into_inner());
        self.has_sticky.store(false, Ordering::Release);
        match g.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Copies `src` to `dest` (a symmetric address) on `pe`; complete on return.
    pub fn put(&self, pe: u32, dest: u64, src: &[u8]) -> Result<()> {
        self.put_ctx(0, pe, dest, src)
    }

    /// [`Self::put`] on context `ctx` (0 is the default context): to a PE of this node the
    /// copy is done on return; to another node's PE the bytes are buffered or sent (the
    /// source may be reused at once) and applied at the latest by the context's quiet.
    pub fn put_ctx(&self, ctx: u64, pe: u32, dest: u64, src: &[u8]) -> Result<()> {
        match self.resolve(pe, dest, src.len(), "put")? {
            Target::Heap(off) => self.region.write(off, src),
            Target::Global { local, offset } => self.peer_globals(local)?.write(offset, src),
            Target::Own(addr) => {
                statics::own_write(&self.image, addr, src);
                Ok(())
            }
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
            Target::Remote(at) => {
                self.sticky()?;
                if src.is_empty() {
                    return Ok(());
                }
                self.net()?.put(ctx, at, src)
            }
        }
    }

    /// Copies from `src` (a symmetric address) on `pe` into `dst`.
    pub fn get(&self, pe: u32, src: u64, dst: &mut [u8]) -> Result<()> {
        self.get_ctx(0, pe, src, dst)
    }

    /// [`Self::get`] on context `ctx`; to another node's PE it follows the context's earlier
    /// puts to that PE (one ordered lane).
    pub fn get_ctx(&self, ctx: u64, pe: u32, src: u64, dst: &mut [u8]) -> Result<()> {
        match self.resolve(pe, src, dst.len(), "get")? {
            Target::Heap(off) => self.region.read(off, dst),
            Target::Global { local, offset } => self.peer_globals(local)?.read(offset, dst),
            Target::Own(addr) => {
                statics::own_read(&self.image, addr, dst);
                Ok(())
            }
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
            Target::Remote(at) => {
                self.sticky()?;
                if dst.is_empty() {
                    return Ok(());
                }
                self.net()?.get(ctx, at, dst)
            }
        }
    }

    /// The address in this process of `addr` on `pe` when it can be accessed with loads and
    /// stores, as `shmem_ptr` returns: heap objects of this node's PEs, this PE's globals,
    /// and the globals of this node's PEs when they are shared.
    pub fn ptr(&self, pe: u32, addr: u64) -> Option<*mut u8> {
        let local = self.local_of_pe.get(pe as usize).copied().flatten()?;
        if let Some(off) = self.offset_of(addr) {
            return Some(self.heap_ptr(local, off));
        }
        match self.target(pe, addr, 1, "ptr").ok()? {
            Target::Own(addr) => Some(addr as *mut u8),
            Target::Global { local, offset } => Some(self.peer_globals(local).ok()?.ptr(offset)),
            _ => None,
        }
    }

    fn peer_globals(&self, local: u32) -> Result<&PeerGlobals> {
        self.globals
            .get(local as usize)
            .and_then(|g| g.as_ref())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::Internal,
                    format!(
                        "PE {}: local rank {local}'s globals are not mapped",
                        self.pe
                    ),
                )
            })
    }

    fn refused_atomic(&self, pe: u32, addr: u64, target: Target) -> Error {
        match target {
            Target::Remote(_) => Error::new(
                ErrorKind::Unsupported,
                format!("PE {}: atomic at {addr:#x} on PE {pe}: the PE is on another node, so its word cannot be mapped; use SymmetricHeap::atomic", self.pe),
            ),
            _ => Error::new(
                ErrorKind::Unsupported,
                format!("PE {}: atomic at {addr:#x} on PE {pe} is a global of the program, and its globals are not shared with this PE (they are reached through CMA, whose copies are not atomic): allocate the word with shmem_malloc, or leave WEFT_SYMMETRIC_GLOBALS at map in a program linked with libshmem", self.pe),
            ),
        }
    }

    /// The 64-bit word at `addr` on `pe`, for a CPU atomic (8-byte aligned, same node: in the
    /// heap, a global of this PE, or a shared global; [`Self::atomic`] reaches every PE).
    pub fn atomic_u64(&self, pe: u32, addr: u64) -> Result<&AtomicU64> {
        let t = self.resolve(pe, addr, 8, "atomic")?;
        self.word_u64(t, pe, addr)
    }

    /// The 32-bit word at `addr` on `pe`, for a CPU atomic (4-byte aligned; as
    /// [`Self::atomic_u64`]).
    pub fn atomic_u32(&self, pe: u32, addr: u64) -> Result<&AtomicU32> {
        let t = self.resolve(pe, addr, 4, "atomic")?;
        self.word_u32(t, pe, addr)
    }

    fn word_u64(&self, t: Target, pe: u32, addr: u64) -> Result<&AtomicU64> {
        let at = |e: Error| e.context(format!("PE {}: atomic at {addr:#x} on PE {pe}", self.pe));
        match t {
            Target::Heap(off) => self.region.u64_at(off).map_err(at),
            Target::Global { local, offset } => {
                self.peer_globals(local)?.u64_at(offset).map_err(at)
            }
            Target::Own(addr) => statics::own_u64(&self.image, addr).map_err(at),
            t => Err(self.refused_atomic(pe, addr, t)),
        }
    }

    fn word_u32(&self, t: Target, pe: u32, addr: u64) -> Result<&AtomicU32> {
        let at = |e: Error| e.context(format!("PE {}: atomic at {addr:#x} on PE {pe}", self.pe));
        match t {
            Target::Heap(off) => self.region.u32_at(off).map_err(at),
            Target::Global { local, offset } => {
                self.peer_globals(local)?.u32_at(offset).map_err(at)
            }
            Target::Own(addr) => statics::own_u32(&self.image, addr).map_err(at),
            t => Err(self.refused_atomic(pe, addr, t)),
        }
    }

    /// Applies `amo` to the `width`-byte (4 or 8) word at `addr` on `pe` on context `ctx`
    /// and returns the word's old value. Same node: a CPU atomic on the mapped word. Another
    /// node: applied as a CPU atomic by the target's service; with `fetch` false the call
    /// does not wait for it (it completes at the context's quiet, like a put) and returns 0.
    /// Works on the heap and, on other nodes' PEs, on globals too.
    #[allow(clippy::too_many_arguments)]
    pub fn atomic(
        &self,
        ctx: u64,
        pe: u32,
        addr: u64,
        width: u8,
        amo: net::Amo,
        a: u64,
        b: u64,
        fetch: bool,
    ) -> Result<u64> {
        if width != 4 && width != 8 {
            return Err(Error::new(
                ErrorKind::InvalidType,
                format!(
                    "PE {}: atomic of {width} bytes at {addr:#x}: only 4 and 8 bytes",
                    self.pe
                ),
            ));
        }
        if !addr.is_multiple_of(width as u64) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "PE {}: atomic at {addr:#x} on PE {pe}: not {width}-byte aligned",
                    self.pe
                ),
            ));
        }
        let t = self.resolve(pe, addr, width as usize, "atomic")?;
        if let Target::Remote(at) = t {
            self.sticky()?;
            let needs_answer = fetch || amo == net::Amo::Fetch;
            return self.net()?.amo(ctx, at, width, amo, a, b, needs_answer);
        }
        Ok(if width == 4 {
            net::apply_amo32(self.word_u32(t, pe, addr)?, amo, a as u32, b as u32) as u64
        } else {
            net::apply_amo64(self.word_u64(t, pe, addr)?, amo, a, b)
        })
    }

    /// Puts `src` to `dest` on `pe`, then updates the 8-byte signal word `sig_addr` there
    /// with `sig_op` (`Set` or `Add`) and `signal`: whoever sees the signal sees the data
    /// (same node: the store is ordered by the atomic's release; another node: one ordered
    /// lane).
    #[allow(clippy::too_many_arguments)]
    pub fn put_signal(
        &self,
        ctx: u64,
        pe: u32,
        dest: u64,
        src: &[u8],
        sig_addr: u64,
        signal: u64,
        sig_op: net::Amo,
    ) -> Result<()> {
        if !matches!(sig_op, net::Amo::Set | net::Amo::Add) {
            return Err(Error::new(
                ErrorKind::InvalidOp,
                format!(
                    "PE {}: put_signal with signal operation {sig_op:?}: only Set and Add",
                    self.pe
                ),
            ));
        }
        self.put_ctx(ctx, pe, dest, src)?;
        self.atomic(ctx, pe, sig_addr, 8, sig_op, signal, 0, false)?;
        // A signal is there to be waited for: send it now rather than when the lane fills.
        match (&self.net, self.local_of_pe[pe as usize]) {
            (Some(n), None) => n.flush_pe(ctx, pe),
            _ => Ok(()),
        }
    }

    /// Orders this PE's earlier puts before its later ones (shmem_fence): stores to mapped
    /// heaps become visible in program order after a release fence, and each lane to another
    /// node is one ordered stream applied in order, so no message is needed.
    pub fn fence(&self) {
        fence(Ordering::Release);
    }

    /// Completes every earlier put of this PE (shmem_quiet): those to this node are already
    /// in the target's memory and the full fence orders them; those to other nodes' PEs (on
    /// every thread's default-context lanes) are acknowledged by their targets. A failure is
    /// kept and returned by the next put, get or atomic; [`Self::try_quiet`] returns it.
    pub fn quiet(&self) {
        if let Err(e) = self.try_quiet() {
            let mut g = self.sticky.lock().unwrap_or_else(|p| p.into_inner());
            g.get_or_insert(e);
            self.has_sticky.store(true, Ordering::Release);
        }
    }

    /// [`Self::quiet`], returning the first failure (a dead PE, a rejected put).
    pub fn try_quiet(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        self.sticky()?;
        match &self.net {
            Some(n) => n.quiet(Some(0)),
            None => Ok(()),
        }
    }

    /// Completes the operations of context `ctx` only (`shmem_ctx_quiet`).
    pub fn quiet_ctx(&self, ctx: u64) -> Result<()> {
        fence(Ordering::SeqCst);
        match &self.net {
            Some(n) => n.quiet(Some(ctx)),
            None => Ok(()),
        }
    }

    /// Completes every context's operations (before a barrier).
    pub fn quiet_all(&self) -> Result<()> {
        fence(Ordering::SeqCst);
        self.sticky()?;
        match &self.net {
            Some(n) => n.quiet(None),
            None => Ok(()),
        }
    }

    /// A new context id with its own lanes (`shmem_ctx_create`); never 0, never reused.
    /// Only ids from here are accepted as contexts (until [`Self::ctx_destroy`]).
    pub fn ctx_create(&self) -> u64 {
        static CTX: AtomicU64 = AtomicU64::new(1);
        let id = CTX.fetch_add(1, Ordering::Relaxed);
        if let Some(n) = &self.net {
            n.add_ctx(id);
        }
        id
    }

    /// Contexts created and not yet destroyed whose bookkeeping this heap keeps (0 when
    /// every PE is on this node: contexts then need none).
    pub fn live_contexts(&self) -> usize {
        self.net.as_ref().map_or(0, |n| n.live_ctx_count())
    }

    /// Completes and forgets context `ctx` (`shmem_ctx_destroy`).
    pub fn ctx_destroy(&self, ctx: u64) -> Result<()> {
        let r = self.quiet_ctx(ctx);
        if let Some(n) = &self.net {
            n.forget_ctx(ctx);
        }
        r
    }

    /// Sends what the calling thread's lanes have buffered, so a PE about to wait for an
    /// answer to its puts does not keep them back.
    pub fn flush(&self) -> Result<()> {
        match &self.net {
            Some(n) => n.flush_mine(),
            None => Ok(()),
        }
    }

    /// The port of this PE's one-sided service (None when every PE is on this node).
    pub fn service_port(&self) -> Option<u16> {
        self.net.as_ref().map(|n| n.port())
    }

    /// Lanes (connections) this PE has open to other nodes' PEs: one per initiating thread
    /// and context and target PE; an exited thread's lanes close at the next quiet.
    pub fn open_lanes(&self) -> usize {
        self.net.as_ref().map_or(0, |n| n.lane_count())
    }

    /// Connections this PE's service dropped because they did not prove the job key.
    pub fn refused_connections(&self) -> u64 {
        self.net.as_ref().map_or(0, |n| n.refused())
    }

    /// Requests from other nodes' PEs this PE's service applied (a coalesced run of puts
    /// counts once): shows coalescing at work.
    pub fn requests_served(&self) -> u64 {
        self.net.as_ref().map_or(0, |n| n.served())
    }
}

/// The alignment of the heaps' bases for heaps of `heap_bytes` (a multiple of 4096): the
/// largest power of two dividing it, at most 1 GiB.
fn base_alignment(heap_bytes: usize) -> usize {
    (1usize << heap_bytes.trailing_zeros()).min(1 << 30)
}

/// This process's shared globals file when it belongs to this job and PE (see
/// [`statics::share_at_load`]); the reason as an error when sharing was attempted and failed.
fn shared_globals(weft: &Weft) -> Result<Option<&'static statics::Shared>> {
    match statics::shared() {
        Some(Ok(s)) if s.job_id == weft.job_id && s.rank == weft.world.rank() => Ok(Some(s)),
        Some(Err(why)) => Err(Error::new(
            ErrorKind::Unsupported,
            format!("{why} (WEFT_SYMMETRIC_GLOBALS=cma reaches globals through CMA instead, without atomics on other PEs' globals)"),
        )),
        _ => Ok(None),
    }
}

/// The shared globals files of this node's PEs, mapped once per process (a later heap of
/// the same process reuses them: the names are gone by then).
fn map_globals(
    weft: &Weft,
    k: u32,
    local_world: &[u32],
    region: &Region,
    image: &Image,
    shared: &statics::Shared,
) -> Result<Arc<Vec<Option<PeerGlobals>>>> {
    type Mapped = Arc<Vec<Option<PeerGlobals>>>;
    static MAPPED: Mutex<Option<(String, Mapped)>> = Mutex::new(None);
    let mut cache = MAPPED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((job, g)) = cache.as_ref() {
        if *job == weft.job_id {
            return Ok(g.clone());
        }
    }
    let mut maps = Vec::with_capacity(local_world.len());
    for (l, &pe) in local_world.iter().enumerate() {
        let l = l as u32;
        let bytes = region.published(l, WORD_GLOBALS);
        let same = region.published(l, WORD_FINGERPRINT) == image.fingerprint;
        maps.push(
            if l != region.me() && same && bytes == shared.bytes as u64 {
                Some(
                    PeerGlobals::open(&weft.job_id, pe, shared.bytes).map_err(|e| {
                        e.context(format!(
                            "PE {}: mapping PE {pe}'s globals",
                            weft.world.rank()
                        ))
                    })?,
                )
            } else {
                None
            },
        );
    }
    // Every local PE has mapped the files before their names go.
    region.publish(WORD_GLOBALS_MAPPED, 1);
    let n = local_world.len() as u32;
    crate::startup::wait_node(
        weft.world.rank(),
        &format!("heap{k} (mapping globals)"),
        || {
            (0..n)
                .filter(|&l| region.published(l, WORD_GLOBALS_MAPPED) != 0)
                .count() as u32
        },
        n,
        std::time::Duration::from_secs(weft.config.boot_timeout_s),
    )?;
    weft_transport::shm::segment::Segment::unlink(&shared.name)?;
    let maps = Arc::new(maps);
    *cache = Some((weft.job_id.clone(), maps.clone()));
    Ok(maps)
}

/// Starts this PE's one-sided service, publishes its address and reads every other node's
/// PE's; returns the network side and the image fingerprint of each PE.
fn start_net(
    weft: &Weft,
    k: u32,
    local_of_pe: &[Option<u32>],
    mem: net::service::Memory,
    options: &net::Options,
) -> Result<(net::Net, Vec<u64>)> {
    let me = weft.world.rank();
    let npes = weft.world.size();
    let boot = weft
        .boot
        .as_ref()
        .ok_or_else(|| Error::new(ErrorKind::Internal, "PEs on other nodes but no bootstrap"))?;
    let timeout = std::time::Duration::from_secs(weft.config.boot_timeout_s);
    let at = |what: &str| format!("PE {me}: one-sided service: {what}");
    let mut key = match &weft.config.job_secret {
        Some(k) => k.clone(),
        None => {
            let hex = boot
                .get(0, "tcp-key", timeout)
                .map_err(|e| e.context(at("reading the job key")))?;
            weft_boot::auth::decode_hex("tcp-key", &String::from_utf8_lossy(&hex))?
        }
    };
    // Its own key, so no proof made for the point-to-point transport is one for this service.
    key.extend_from_slice(b"/weft-rma");
    let fingerprint = mem.image.fingerprint;
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, 0))
        .map_err(|e| Error::io(at("binding its port"), e))?;
    let service = net::service::Service::start(listener, me, npes, key.clone(), mem)?;
    let ips = weft_transport::tcp::local_addresses(&weft.config.tcp_interfaces)?;
    let addrs: Vec<String> = ips
        .iter()
        .map(|ip| std::net::SocketAddr::new(*ip, service.port()).to_string())
        .collect();
    boot.put(
        &format!("rma/heap{k}"),
        format!("{fingerprint:x};{}", addrs.join(",")).as_bytes(),
    )
    .map_err(|e| e.context(at("publishing its address")))?;
    weft.boot_fence(boot.as_ref(), timeout)
        .map_err(|e| e.context(at("waiting for the other PEs' addresses")))?;
    let remote: Vec<u32> = (0..npes)
        .filter(|&pe| local_of_pe[pe as usize].is_none())
        .collect();
    let records = boot
        .get_all(&remote, &format!("rma/heap{k}"), timeout)
        .map_err(|e| e.context(at("reading the other PEs' addresses")))?;
    let mut peers = vec![Vec::new(); npes as usize];
    let mut fingerprints = vec![0u64; npes as usize];
    for (&pe, rec) in remote.iter().zip(records) {
        let rec = String::from_utf8_lossy(&rec);
        let (fp, list) = rec.split_once(';').ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                format!("PE {pe} published one-sided address {rec:?} without a fingerprint"),
            )
        })?;
        fingerprints[pe as usize] = u64::from_str_radix(fp, 16).map_err(|_| {
            Error::new(
                ErrorKind::Protocol,
                format!("PE {pe} published image fingerprint {fp:?}, not hex"),
            )
        })?;
        peers[pe as usize] = weft_transport::tcp::parse_addresses(pe, list)?;
    }
    Ok((
        net::Net::new(me, key, peers, options, service)?,
        fingerprints,
    ))
}
