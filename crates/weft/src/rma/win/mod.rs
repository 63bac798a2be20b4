//! MPI one-sided communication (MPI-4.1 ch. 12): windows of memory that the members of a
//! communicator read, write and update in each other without the target taking part.
//!
//! A window is made collectively over a communicator (its own private duplicate carries
//! the synchronisation messages) in one of four flavors: over memory the caller gives
//! ([`Window::create`]), over memory weft allocates ([`Window::allocate`],
//! [`Window::allocate_shared`]) or over memory attached later ([`Window::create_dynamic`]).
//! Each target is reached the fastest way the flavor allows, decided once at creation for
//! every member (`Path`):
//!
//! - the caller itself: its own memory;
//! - a member of the same node, allocated or shared window: the memory lies in a node region
//!   every local member maps, so a put is a `memcpy` and an accumulate a CPU atomic;
//! - a member of the same node, created or dynamic window: Cross Memory Attach
//!   (`process_vm_readv`/`writev`) into the target's own memory when the node allows it
//!   (probed at creation, and `WEFT_SHM_CMA` not `off`), else its one-sided service;
//! - a member of another node: its one-sided service (the machinery of [`crate::rma::net`]
//!   that OpenSHMEM uses, with the window spaces of its wire format): the service thread
//!   applies puts, answers gets, and applies accumulates and lock operations atomically, so
//!   no target ever has to call MPI for an origin to progress (truly passive target).
//!
//! Synchronisation ([`epoch`]): fence (complete everything, then a barrier: each member's
//! fence word in the node region when every member is on this node, see `fence.rs`, else the
//! window communicator's), post-start-complete-wait (zero-byte messages on the window's
//! communicator), lock/unlock shared and exclusive (a reader-writer lock word in the
//! target's control block, see `control.rs`, taken with CPU atomics locally and with the
//! service's atomics remotely), lock_all, flush and sync. Every operation of this process to
//! a same-node target is complete at the target when its call returns; operations to other
//! nodes' targets are buffered on the calling thread's lane and complete at the next flush,
//! unlock, complete or fence.
//!
//! Accumulates ([`acc`]) are atomic per element with respect to each other: with CPU atomics
//! on mapped windows where the element allows, else under the target's accumulate lock.
//!
//! Memory model: MPI_WIN_UNIFIED (every path writes the target's memory itself).
//! Depends on the runtime's communicators and progress engine, the transport's regions and
//! CMA, and [`crate::rma::net`].

pub mod acc;
pub(crate) mod control;
pub mod epoch;
mod fence;
mod ops;
pub(crate) mod registry;

pub use acc::AccOp;
pub use epoch::{Completion, LockType, StartWait};
pub use ops::{Origin, OriginMut, TargetSpec};

use crate::comm::Comm;
use crate::rma::net;
use crate::wait::{coll_waited, dup_waited, min_waited, Wait};
use crate::Weft;
use control::{AttachTable, Control, CONTROL_STRIDE};
use registry::{Exposed, Registry};
use std::cell::{OnceCell, RefCell};
use std::sync::Arc;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::shm::cma;
use weft_transport::shm::heap::Region;

/// How a window's memory came to be (MPI_WIN_CREATE_FLAVOR).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Memory the caller gave (MPI_Win_create).
    Create,
    /// Memory weft allocated (MPI_Win_allocate).
    Allocate,
    /// Memory weft allocated for load/store by every member (MPI_Win_allocate_shared).
    Shared,
    /// Memory attached after creation (MPI_Win_create_dynamic).
    Dynamic,
}

/// The process's side of one-sided communication that all its windows share: the registry
/// its service serves from, and the service and lanes to other nodes' processes, started
/// when the first window that needs them is made. One per process (the MPI layer keeps it
/// beside the runtime).
#[derive(Default)]
pub struct Endpoint {
    registry: Arc<Registry>,
    /// The network side and this process's service addresses (`ip:port,...`).
    net: OnceCell<(Arc<net::Net>, String)>,
}

impl Endpoint {
    /// An endpoint with nothing started.
    pub fn new() -> Endpoint {
        Endpoint::default()
    }

    /// The network side, started on first use: this process's service (serving the
    /// registry's windows, proving the job key) and its addresses, which each window
    /// exchanges over its communicator at creation (the lanes learn its members' there).
    fn net(&self, weft: &Weft) -> Result<&(Arc<net::Net>, String)> {
        if let Some(n) = self.net.get() {
            return Ok(n);
        }
        let me = weft.world.rank();
        let boot = weft.boot.as_ref().ok_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                format!("rank {me}: a window member on another node but no bootstrap"),
            )
        })?;
        let key = crate::rma::service_key(weft, boot.as_ref(), b"/weft-win")?;
        let mem = net::service::Memory {
            heap: std::ptr::null_mut(),
            heap_bytes: 0,
            image: crate::rma::statics::Image::default(),
            windows: Some(self.registry.clone()),
        };
        let (service, addrs) = crate::rma::start_service(weft, key.clone(), mem)?;
        let options = net::Options {
            proxy: false,
            ..net::Options::from_config(weft)?
        };
        let peers = vec![Vec::new(); weft.world.size() as usize];
        let n = net::Net::new(me, key, peers, &options, service)?;
        Ok(self.net.get_or_init(|| (Arc::new(n), addrs.join(","))))
    }
}

/// How this process reaches one member's window memory.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Path {
    /// This process: its own memory at `base`.
    Me,
    /// A member of the node whose window memory this process maps at `mem`.
    Mapped { mem: *mut u8 },
    /// A member of the node reached with CMA: process `pid`, memory at address `base` there.
    Cma { pid: i32, base: u64 },
    /// A member reached through its one-sided service: world rank `pe`, window `slot`.
    Service { pe: u32, slot: u16 },
}

/// One member as a target.
#[derive(Clone, Debug)]
pub(crate) struct Member {
    pub(crate) world: u32,
    pub(crate) bytes: u64,
    pub(crate) disp_unit: u32,
    pub(crate) path: Path,
    /// The member's control block when it is on this node (mapped), else null.
    pub(crate) control: *const u8,
}

/// A window (see the module).
pub struct Window {
    weft_rank: u32,
    comm: Comm,
    flavor: Flavor,
    members: Vec<Member>,
    /// Where this process's window memory starts (null for dynamic windows) and its bytes.
    base: *mut u8,
    bytes: usize,
    disp_unit: u32,
    hw_atomics: bool,
    /// The node region with the local members' control blocks (and memory, when weft
    /// allocated it). Dropped after the registry entry.
    region: Option<Region>,
    control: *const u8,
    /// The regions attached to this process's part of a dynamic window (empty otherwise).
    attached: Arc<AttachTable>,
    slot: u16,
    registry: Arc<Registry>,
    /// The network side when a member is reached through a service.
    net: Option<Arc<net::Net>>,
    /// MPI_Win_fence's barrier in the node region when every member is on this node (else
    /// the window communicator's barrier).
    node_fence: Option<fence::NodeFence>,
    epochs: RefCell<epoch::Epochs>,
    freed: bool,
}

/// Words each member contributes at creation.
const INFO_WORDS: usize = 8;

impl Window {
    /// A window over `bytes` bytes of the caller's memory at `base` (MPI_Win_create), with
    /// displacement unit `disp_unit`. Collective over `comm`.
    ///
    /// # Safety
    /// `base..base + bytes` must stay valid for reads and writes by other processes until
    /// the window is freed, and be touched locally only as MPI's synchronisation allows.
    pub unsafe fn create(
        weft: &Weft,
        ep: &Endpoint,
        comm: &Comm,
        base: *mut u8,
        bytes: usize,
        disp_unit: u32,
        wait: Wait<'_>,
    ) -> Result<Window> {
        Self::build(
            weft,
            ep,
            comm,
            Flavor::Create,
            base,
            bytes,
            disp_unit,
            false,
            wait,
        )
    }

    /// A window over `bytes` bytes weft allocates (MPI_Win_allocate): local members map each
    /// other's memory. Collective over `comm`.
    pub fn allocate(
        weft: &Weft,
        ep: &Endpoint,
        comm: &Comm,
        bytes: usize,
        disp_unit: u32,
        wait: Wait<'_>,
    ) -> Result<Window> {
        Self::build(
            weft,
            ep,
            comm,
            Flavor::Allocate,
            std::ptr::null_mut(),
            bytes,
            disp_unit,
            false,
            wait,
        )
    }

    /// A window every member can load from and store to (MPI_Win_allocate_shared): all
    /// members must be on this node. The members' memory is contiguous in rank order unless
    /// `noncontig` (the `alloc_shared_noncontig` hint), which aligns each member's to a page.
    pub fn allocate_shared(
        weft: &Weft,
        ep: &Endpoint,
        comm: &Comm,
        bytes: usize,
        disp_unit: u32,
        noncontig: bool,
        wait: Wait<'_>,
    ) -> Result<Window> {
        Self::build(
            weft,
            ep,
            comm,
            Flavor::Shared,
            std::ptr::null_mut(),
            bytes,
            disp_unit,
            noncontig,
            wait,
        )
    }

    /// A window without memory, to which each member attaches its own later
    /// (MPI_Win_create_dynamic); displacements are addresses.
    pub fn create_dynamic(
        weft: &Weft,
        ep: &Endpoint,
        comm: &Comm,
        wait: Wait<'_>,
    ) -> Result<Window> {
        Self::build(
            weft,
            ep,
            comm,
            Flavor::Dynamic,
            std::ptr::null_mut(),
            0,
            1,
            false,
            wait,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        weft: &Weft,
        ep: &Endpoint,
        comm: &Comm,
        flavor: Flavor,
        user_base: *mut u8,
        bytes: usize,
        disp_unit: u32,
        noncontig: bool,
        wait: Wait<'_>,
    ) -> Result<Window> {
        comm.check()?;
        let me_world = weft.world.rank();
        let at = |what: String| format!("rank {me_world}: window creation: {what}");
        if comm.is_inter() {
            return Err(Error::new(
                ErrorKind::InvalidComm,
                at("windows are made over intracommunicators only".into()),
            ));
        }
        if disp_unit == 0 && flavor != Flavor::Dynamic {
            // MPI allows any positive unit; 0 would make every displacement the same byte.
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                at("displacement unit 0: it must be positive".into()),
            ));
        }
        let wcomm = dup_waited(comm, wait)?;
        let size = wcomm.size() as usize;
        let rank = wcomm.rank() as usize;
        let node_of: Vec<u32> = weft.engine.borrow().node_of().to_vec();
        let my_node = node_of[me_world as usize];
        let (probe_addr, probe_value) = cma::probe_target(std::process::id() as i32);
        let mine: [u64; INFO_WORDS] = [
            my_node as u64,
            bytes as u64,
            disp_unit as u64,
            std::process::id() as u64,
            user_base as u64,
            probe_addr,
            probe_value,
            0,
        ];
        let mut all = vec![0u64; INFO_WORDS * size];
        // SAFETY: the request is waited for (or dropped, which waits) before the buffers go.
        coll_waited(wait, unsafe { wcomm.iallgather(&mine, &mut all)? })?;
        let info = |r: usize, w: usize| all[r * INFO_WORDS + w];
        let local: Vec<usize> = (0..size)
            .filter(|&r| info(r, 0) == my_node as u64)
            .collect();
        let lidx = local
            .iter()
            .position(|&r| r == rank)
            .expect("the caller is local");
        if flavor == Flavor::Shared && local.len() != size {
            return Err(Error::new(
                ErrorKind::RmaShared,
                at(format!(
                    "a shared window needs every member on one node; {} of the {size} are on other nodes",
                    size - local.len()
                )),
            ));
        }
        // Layout of the node region: control blocks, then (allocated flavors) each local
        // member's memory, contiguous for a shared window unless asked otherwise.
        let controls = (local.len() * CONTROL_STRIDE).next_multiple_of(4096);
        let mut offsets = Vec::with_capacity(local.len());
        let mut end = controls;
        for &r in &local {
            let b = info(r, 1) as usize;
            let allocated = matches!(flavor, Flavor::Allocate | Flavor::Shared);
            if allocated && (flavor == Flavor::Allocate || noncontig) {
                end = end.next_multiple_of(if b >= 4096 { 4096 } else { 64 });
            }
            offsets.push(end);
            if allocated {
                end = end.checked_add(b).ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        at("window sizes overflow".into()),
                    )
                })?;
            }
        }
        let region = node_window_region(weft, &wcomm, &local, lidx, end, wait)?;
        let body = region.body_ptr();
        let control = body.wrapping_add(lidx * CONTROL_STRIDE) as *const u8;
        let base = match flavor {
            Flavor::Create => user_base,
            Flavor::Dynamic => std::ptr::null_mut(),
            Flavor::Allocate | Flavor::Shared => body.wrapping_add(offsets[lidx]),
        };
        // Cross Memory Attach between the node's members, decided alike everywhere (every
        // member takes part in the vote, also one alone on its node).
        let needs_cma = matches!(flavor, Flavor::Create | Flavor::Dynamic) && size > 1;
        let cma_ok = if needs_cma {
            let mine_ok = weft.engine.borrow().tuning().cma_allowed()
                && local
                    .iter()
                    .filter(|&&r| r != rank)
                    .all(|&r| cma::probe(info(r, 3) as i32, info(r, 5), info(r, 6)));
            min_waited(&wcomm, mine_ok, wait)?
        } else {
            true
        };
        let any_remote = local.len() != size;
        let needs_service = any_remote || !cma_ok;
        let hw_atomics = matches!(flavor, Flavor::Allocate | Flavor::Shared);
        let attached = Arc::new(AttachTable::default());
        let slot = ep.registry.register(Exposed {
            base: base as usize,
            bytes,
            control,
            dynamic: flavor == Flavor::Dynamic,
            hw: hw_atomics,
            _attached: attached.clone(),
        })?;
        // Every member's slot and, when a service is needed (alike on every member), its
        // service addresses: the lanes learn them here, and every service serves the window
        // before anyone accesses it. A member that could not start its service says so in
        // the same exchange, so that every member fails instead of waiting.
        let started = if needs_service {
            Some(ep.net(weft))
        } else {
            None
        };
        let record: &[u8] = match &started {
            Some(Ok((_, addrs))) => addrs.as_bytes(),
            _ => &[],
        };
        let failed = matches!(started, Some(Err(_)));
        let exchanged = exchange_slots(&wcomm, slot, record, failed, wait);
        let (slots, records) = match (started, exchanged) {
            (Some(Err(e)), _) | (_, Err(e)) => {
                ep.registry.unregister(slot);
                return Err(e);
            }
            (_, Ok(x)) => x,
        };
        let net = if needs_service {
            let (n, _) = ep.net(weft)?;
            for (r, rec) in records.iter().enumerate() {
                let world = wcomm.members()[r];
                if r != rank {
                    match weft_transport::tcp::parse_addresses(world, &String::from_utf8_lossy(rec))
                    {
                        Ok(a) => n.learn(world, a),
                        Err(e) => {
                            ep.registry.unregister(slot);
                            return Err(e);
                        }
                    }
                }
            }
            Some(n.clone())
        } else {
            None
        };
        let members = (0..size)
            .map(|r| {
                let world = wcomm.members()[r];
                let l = local.iter().position(|&x| x == r);
                let path = match l {
                    _ if r == rank => Path::Me,
                    Some(l) if hw_atomics => Path::Mapped {
                        mem: body.wrapping_add(offsets[l]),
                    },
                    Some(_) if cma_ok => Path::Cma {
                        pid: info(r, 3) as i32,
                        base: info(r, 4),
                    },
                    _ => Path::Service {
                        pe: world,
                        slot: slots[r],
                    },
                };
                Member {
                    world,
                    bytes: info(r, 1),
                    disp_unit: info(r, 2) as u32,
                    path,
                    control: l.map_or(std::ptr::null(), |l| {
                        body.wrapping_add(l * CONTROL_STRIDE) as *const u8
                    }),
                }
            })
            .collect();
        // The other members' local ranks in this process's node segment, when every member
        // is one of its ranks: a fence arrival rings their bells, so a fence may sleep.
        let bells = {
            let e = weft.engine.borrow();
            let (local_world, _) = e.local_ranks();
            e.shm().and_then(|_| {
                (0..size)
                    .filter(|&r| r != rank)
                    .map(|r| {
                        let world = wcomm.members()[r];
                        local_world
                            .iter()
                            .position(|&w| w == world)
                            .map(|l| l as u32)
                    })
                    .collect::<Option<Vec<u32>>>()
            })
        };
        // SAFETY: every member is local, so every control block lies in the region, which
        // every member maps and the window keeps until it is dropped.
        let node_fence = (local.len() == size).then(|| unsafe {
            fence::NodeFence::new(
                (0..size)
                    .map(|r| body.wrapping_add(r * CONTROL_STRIDE) as *const u8)
                    .collect(),
                rank,
                (0..size).map(|r| info(r, 3) as i32).collect(),
                bells,
            )
        });
        Ok(Window {
            weft_rank: me_world,
            comm: wcomm,
            flavor,
            members,
            base,
            bytes,
            disp_unit,
            hw_atomics,
            region: Some(region),
            control,
            attached,
            slot,
            registry: ep.registry.clone(),
            net,
            node_fence,
            epochs: RefCell::new(epoch::Epochs::default()),
            freed: false,
        })
    }

    /// The window's flavor.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }

    /// The window's private communicator (the members, in the creating communicator's
    /// order).
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// Start of this process's window memory (null for a dynamic window).
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Bytes of this process's window memory (0 for a dynamic window).
    pub fn size_bytes(&self) -> usize {
        self.bytes
    }

    /// This process's displacement unit.
    pub fn disp_unit(&self) -> u32 {
        self.disp_unit
    }

    /// Whether accumulates to this window use CPU atomics where the element allows.
    pub fn hardware_atomics(&self) -> bool {
        self.hw_atomics
    }

    /// How the window reaches member `rank`, in words for `weft info` and tests: `self`,
    /// `load/store`, `cma` or `service`.
    pub fn path_name(&self, rank: u32) -> Option<&'static str> {
        self.members.get(rank as usize).map(|m| match m.path {
            Path::Me => "self",
            Path::Mapped { .. } => "load/store",
            Path::Cma { .. } => "cma",
            Path::Service { .. } => "service",
        })
    }

    /// Member `rank`'s memory as this process can load and store it (MPI_Win_shared_query):
    /// address (null when it has no bytes), bytes and displacement unit, for members whose
    /// memory this process maps (and itself); `None` for others.
    pub fn shared_query(&self, rank: u32) -> Result<Option<(*mut u8, u64, u32)>> {
        if self.flavor == Flavor::Dynamic {
            return Err(Error::new(
                ErrorKind::RmaFlavor,
                format!(
                    "rank {}: MPI_Win_shared_query on a dynamic window",
                    self.weft_rank
                ),
            ));
        }
        let m = self.member(rank, "shared query")?;
        // A member without memory has no base (NULL, as MPICH answers).
        let base = |p: *mut u8, bytes: u64| if bytes == 0 { std::ptr::null_mut() } else { p };
        Ok(match m.path {
            Path::Me => Some((
                base(self.base, self.bytes as u64),
                self.bytes as u64,
                self.disp_unit,
            )),
            Path::Mapped { mem } => Some((base(mem, m.bytes), m.bytes, m.disp_unit)),
            _ => None,
        })
    }

    /// The lowest member with memory (bytes above 0), for MPI_Win_shared_query with
    /// MPI_PROC_NULL.
    pub fn first_with_memory(&self) -> Option<u32> {
        self.members
            .iter()
            .position(|m| m.bytes > 0)
            .map(|r| r as u32)
    }

    pub(crate) fn member(&self, rank: u32, what: &str) -> Result<&Member> {
        self.members.get(rank as usize).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidRank,
                format!(
                    "rank {}: {what} names window rank {rank}, but the window has {} members",
                    self.weft_rank,
                    self.members.len()
                ),
            )
        })
    }

    pub(crate) fn my_control(&self) -> &Control {
        // SAFETY: the block lies in the region this window keeps mapped.
        unsafe { Control::at(self.control) }
    }

    pub(crate) fn net(&self) -> Result<&net::Net> {
        match &self.net {
            Some(n) => Ok(n),
            None => Err(Error::new(
                ErrorKind::Internal,
                format!(
                    "rank {}: a service path without the one-sided network",
                    self.weft_rank
                ),
            )),
        }
    }

    /// Attaches `bytes` bytes at `base` to this dynamic window (MPI_Win_attach): other
    /// members then reach them at displacement `base as u64`.
    ///
    /// # Safety
    /// The memory must stay valid until detached.
    pub unsafe fn attach(&self, base: *mut u8, bytes: usize) -> Result<()> {
        self.dynamic_only("MPI_Win_attach")?;
        if bytes == 0 {
            return Ok(());
        }
        self.attached
            .attach(self.my_control(), base as u64, bytes as u64)
    }

    /// Detaches the memory attached at `base` (MPI_Win_detach).
    pub fn detach(&self, base: *mut u8) -> Result<()> {
        self.dynamic_only("MPI_Win_detach")?;
        self.attached.detach(self.my_control(), base as u64)
    }

    fn dynamic_only(&self, what: &str) -> Result<()> {
        if self.flavor != Flavor::Dynamic {
            return Err(Error::new(
                ErrorKind::RmaFlavor,
                format!(
                    "rank {}: {what} on a window that is not dynamic ({:?})",
                    self.weft_rank, self.flavor
                ),
            ));
        }
        Ok(())
    }

    /// Frees the window (MPI_Win_free): collective; every epoch must be closed. Completes
    /// this process's operations, waits for every member, then unmaps.
    pub fn free(mut self) -> Result<()> {
        self.epochs
            .borrow()
            .check_closed(self.weft_rank, "MPI_Win_free")?;
        self.flush_all()?;
        // The nonblocking barrier of [`Window::free_start`]: members that free either way
        // meet.
        let r = self.comm.ibarrier().and_then(|q| q.wait());
        self.release();
        r?;
        self.comm.free()
    }

    /// Starts [`Window::free`] for a caller that must not block while the other members
    /// arrive (the MPI layer under MPI_THREAD_MULTIPLE): checks the epochs, completes this
    /// process's operations and starts the barrier; poll the request to completion, then
    /// pass its outcome to [`Window::free_end`].
    pub fn free_start(&self) -> Result<crate::coll::CollRequest<'static>> {
        self.epochs
            .borrow()
            .check_closed(self.weft_rank, "MPI_Win_free")?;
        self.flush_all()?;
        self.comm.ibarrier()
    }

    /// Ends the free [`Window::free_start`] began, once its barrier completed with
    /// `barrier`: unmaps, then frees the window's communicator.
    pub fn free_end(mut self, barrier: Result<()>) -> Result<()> {
        self.release();
        barrier?;
        self.comm.free()
    }

    fn release(&mut self) {
        if !self.freed {
            self.freed = true;
            self.registry.unregister(self.slot);
            self.region = None;
        }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // A window dropped without `free` (its process is ending) stops being served before
        // its memory goes.
        self.release();
    }
}

/// The window creation's exchange over its communicator: every member's registry slot and
/// one-sided service record (`ip:port,...`, empty when no service is needed). Fails on every
/// member when one of them says it `failed`.
fn exchange_slots(
    wcomm: &Comm,
    slot: u16,
    record: &[u8],
    failed: bool,
    wait: Wait<'_>,
) -> Result<(Vec<u16>, Vec<Vec<u8>>)> {
    let size = wcomm.size() as usize;
    let mine = [slot as u64, record.len() as u64, failed as u64];
    let mut all = vec![0u64; 3 * size];
    // SAFETY: the request is waited for (or dropped, which waits) before the buffers go.
    coll_waited(wait, unsafe { wcomm.iallgather(&mine, &mut all)? })?;
    if let Some(r) = (0..size).find(|&r| all[3 * r + 2] != 0) {
        return Err(Error::new(
            ErrorKind::Internal,
            format!(
                "rank {}: window creation: rank {r} of the window could not start its one-sided service",
                wcomm.rank()
            ),
        ));
    }
    let counts: Vec<usize> = (0..size).map(|r| all[3 * r + 1] as usize).collect();
    let mut displs = Vec::with_capacity(size);
    let mut total = 0usize;
    for &c in &counts {
        displs.push(total);
        total += c;
    }
    let mut bytes = vec![0u8; total];
    if total > 0 {
        // SAFETY: as above.
        coll_waited(wait, unsafe {
            wcomm.iallgatherv(record, &mut bytes, &counts, &displs)?
        })?;
    }
    let slots = (0..size).map(|r| all[3 * r] as u16).collect();
    let records = (0..size)
        .map(|r| bytes[displs[r]..displs[r] + counts[r]].to_vec())
        .collect();
    Ok((slots, records))
}

/// The node region of a window: created by the first local member (`local[0]`), attached
/// by the others, unlinked once all have; every member of `wcomm` takes part in the
/// agreement, so a failure anywhere (a full /dev/shm) fails the creation everywhere.
fn node_window_region(
    weft: &Weft,
    wcomm: &Comm,
    local: &[usize],
    lidx: usize,
    body_bytes: usize,
    wait: Wait<'_>,
) -> Result<Region> {
    let leader_world = wcomm.members()[local[0]];
    let name = format!(
        "/weft-{}-{:08x}-win{}-{}",
        weft.job_id,
        crate::fnv1a(weft.node_id.as_bytes()),
        leader_world,
        wcomm.context_id()
    );
    let n = local.len() as u32;
    let mut agree = |ok: bool| min_waited(wcomm, ok, &mut *wait);
    let created = if lidx == 0 {
        Some(Region::create(&name, n, 0, body_bytes.max(1)))
    } else {
        None
    };
    let created_ok = created.as_ref().is_none_or(|r| r.is_ok());
    let all_created = agree(created_ok);
    if !matches!(all_created, Ok(true)) {
        // Nobody will attach: the name must not outlive this call.
        if let Some(Ok(r)) = &created {
            let _ = r.unlink();
        }
        all_created?;
        return Err(match created {
            Some(Err(e)) => e.context(format!("creating the window region {name}")),
            _ => Error::new(
                ErrorKind::Io,
                format!(
                    "rank {}: another member could not create its node's window region",
                    weft.world.rank()
                ),
            ),
        });
    }
    let region = match created {
        Some(r) => r,
        None => Region::attach(&name, lidx as u32),
    };
    let attached = agree(region.is_ok());
    if lidx == 0 {
        if let Ok(r) = &region {
            r.unlink()?;
        }
    }
    let region = region.map_err(|e| e.context(format!("attaching the window region {name}")))?;
    if !attached? {
        return Err(Error::new(
            ErrorKind::Io,
            format!(
                "rank {}: another member could not attach its node's window region",
                weft.world.rank()
            ),
        ));
    }
    Ok(region)
}
