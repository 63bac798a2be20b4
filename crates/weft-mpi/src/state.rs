//! The process's MPI state: the weft instance and the tables that turn C handles into weft
//! objects (communicators, groups, requests, datatypes, operations, info objects, error
//! handlers). Predefined handles are the standard ABI's small constants; handles this
//! library creates are `kind << 32 | index`, so a handle of the wrong kind, a freed one or
//! garbage is recognised and reported instead of dereferenced.

use crate::consts::*;
use crate::error::{err, MpiError, R};
use std::cell::UnsafeCell;
use std::os::raw::{c_int, c_void};
use weft::raw::RawRequest;
use weft::{Comm, Weft};

pub const K_COMM: usize = 1;
pub const K_GROUP: usize = 2;
pub const K_REQ: usize = 3;
pub const K_TYPE: usize = 4;
pub const K_OP: usize = 5;
pub const K_INFO: usize = 6;
pub const K_ERRH: usize = 7;
pub const K_MSG: usize = 8;

/// A handle this library created.
#[inline]
pub fn make_handle(kind: usize, idx: usize) -> Handle {
    (kind << 32) | idx
}

/// The table index of a created handle of `kind`, if it is one.
#[inline]
pub fn handle_index(kind: usize, h: Handle) -> Option<usize> {
    if h >> 32 == kind {
        Some(h & 0xffff_ffff)
    } else {
        None
    }
}

/// Slots with reuse of freed indices.
pub struct Table<T> {
    slots: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Table<T> {
    pub const fn new() -> Self {
        Table {
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
    pub fn insert(&mut self, v: T) -> usize {
        match self.free.pop() {
            Some(i) => {
                // A free slot is empty: nothing to drop (forgetting the None skips the drop
                // glue's call, a tenth of a plain request's insert).
                let old = self.slots[i].replace(v);
                debug_assert!(old.is_none(), "free slot {i} in use");
                std::mem::forget(old);
                i
            }
            None => {
                self.slots.push(Some(v));
                self.slots.len() - 1
            }
        }
    }
    pub fn get(&self, i: usize) -> Option<&T> {
        self.slots.get(i).and_then(Option::as_ref)
    }
    /// Slots used or free: every index ever handed out is below this.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.slots.get_mut(i).and_then(Option::as_mut)
    }
    /// Drops entry `i` where it lies, for a caller that has no use for it (the completion
    /// path): no move out of the table first.
    pub fn discard(&mut self, i: usize) {
        if let Some(slot @ Some(_)) = self.slots.get_mut(i) {
            *slot = None;
            self.free.push(i);
        }
    }
    pub fn remove(&mut self, i: usize) -> Option<T> {
        let v = self.slots.get_mut(i).and_then(Option::take);
        if v.is_some() {
            self.free.push(i);
        }
        v
    }
}

/// A communicator's C-side companions.
pub struct CommEntry {
    pub comm: Comm,
    pub errhandler: Handle,
    pub name: String,
    /// Cartesian topology: dimensions and periodicity.
    pub cart: Option<(Vec<c_int>, Vec<bool>)>,
    /// Graph or distributed graph topology (see [`crate::topo`]).
    pub graph: Option<crate::topo::GraphTopo>,
    /// Cached attributes: keyval and value.
    pub attrs: Vec<(c_int, usize)>,
    /// An intercommunicator's hidden companions (see [`InterParts`]).
    pub inter: Option<InterParts>,
    /// A topology's private context for its neighborhood collectives (see crate::topo).
    pub neighbor: Option<crate::topo::Neighborhood>,
}

/// The handles collectives on an intercommunicator run on: its local group as an
/// intracommunicator and its bridge (point-to-point to the remote group on a context of its
/// own). Both return errors to the caller (ERRORS_RETURN); programs never see them.
#[derive(Clone, Copy)]
pub struct InterParts {
    pub local: Handle,
    pub bridge: Handle,
}

/// The attribute copy callback (MPI_Comm_copy_attr_function).
pub type CopyFn =
    unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_int) -> c_int;
/// The attribute delete callback (MPI_Comm_delete_attr_function).
pub type DeleteFn = unsafe extern "C" fn(Handle, c_int, *mut c_void, *mut c_void) -> c_int;

/// A user attribute key (MPI_Comm_create_keyval). The copy "function" may be the
/// standard's sentinels 0 (MPI_COMM_NULL_COPY_FN) or 1 (MPI_COMM_DUP_FN), hence addresses.
#[derive(Clone, Copy)]
pub struct Keyval {
    pub copy: usize,
    pub delete: usize,
    pub extra: usize,
}

/// The user error handler function type (MPI_Comm_errhandler_function).
pub type ErrFn = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);

/// The user reduction function type (MPI_User_function).
pub type UserFn = unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut Handle);

/// What to do with an error on a communicator.
#[derive(Clone, Copy)]
pub enum CommHandler {
    Fatal,
    Return,
    User(ErrFn),
}

/// A derived datatype: weft's type map, whether it was committed, and its name.
#[derive(Clone)]
pub struct Derived {
    /// Shared so that staging a message takes a reference instead of copying the map.
    pub map: std::rc::Rc<weft::dtype::TypeMap>,
    pub committed: bool,
    pub name: String,
}

/// A user reduction (MPI_Op_create).
#[derive(Clone, Copy)]
pub struct UserOpEntry {
    pub f: UserFn,
    pub commute: bool,
    /// Made by MPI_Op_create_c: `f` takes its count as an MPI_Count (a pointer either way,
    /// so the same function pointer type holds both).
    pub large: bool,
}

impl UserOpEntry {
    /// Calls the program's function on `count` items of `dt`: `inout = input op inout`,
    /// with the count as the function expects it (an `int`, or an MPI_Count for
    /// MPI_Op_create_c).
    ///
    /// # Safety
    /// Both buffers hold `count` items of `dt` as the function reads and writes them.
    pub unsafe fn call(&self, input: *mut c_void, inout: *mut c_void, count: i64, dt: Handle) {
        let mut d = dt;
        let mut n32 = count as c_int;
        let mut n64 = count;
        let n: *mut c_int = if self.large {
            &mut n64 as *mut i64 as *mut c_int
        } else {
            &mut n32
        };
        // SAFETY: the caller's contract; the count pointer's target has the width `f` takes.
        unsafe { (self.f)(input, inout, n, &mut d) };
    }
}

/// A persistent request's arguments (MPI_Send_init / MPI_Recv_init).
#[derive(Clone, Copy)]
pub struct Persistent {
    pub send: bool,
    /// A synchronous send (MPI_Ssend_init).
    pub synchronous: bool,
    /// A buffered send (MPI_Bsend_init).
    pub buffered: bool,
    /// `dt` is the request's own copy of a derived datatype, freed with the request.
    pub own_type: bool,
    pub buf: usize,
    pub count: i64,
    pub dt: Handle,
    pub peer: c_int,
    pub tag: c_int,
    pub comm: Handle,
}

/// A request: an operation in flight, or a persistent one between starts. A plain
/// nonblocking send or receive (the message-rate path) has only its raw request and the
/// fields beside it; everything else lives in the boxed [`ReqMore`], so that the entry
/// moved into the table and dropped from it on every such call stays small (8 B windows,
/// callgrind, instructions per request: MPI_Isend 404 -> 398 and its share of MPI_Waitall
/// 206 -> 177; MPI_Irecv 439 -> 432 and its share of MPI_Waitall 482 -> 452).
/// Field order matters: Rust drops fields in declaration order, and `raw` (and the
/// collective in `more`) point into the buffers of `more`, so `raw` comes first and is
/// finished (a dropped raw request is withdrawn or waited for) before those are freed.
pub struct ReqEntry {
    pub raw: Option<RawRequest>,
    /// Completed at start (a peer of MPI_PROC_NULL): the status says so.
    pub proc_null: bool,
    /// Whether the request is a receive (sends report empty statuses).
    pub recv: bool,
    pub comm: Handle,
    /// What a plain send or receive does not have.
    pub more: Option<Box<ReqMore>>,
}

/// The parts of a request that a plain send or receive does not have.
/// Field order matters as in [`ReqEntry`]: `coll` points into `keep` and the `unpack`
/// buffer, so it is finished (a dropped collective completes its schedule) first.
#[derive(Default)]
pub struct ReqMore {
    /// A nonblocking collective in flight (it borrows the user's buffers, which MPI keeps
    /// alive until completion, hence the unbounded lifetime).
    pub coll: Option<Box<weft::coll::CollRequest<'static>>>,
    /// A persistent point-to-point request: how MPI_Start starts it again.
    pub persistent: Option<Box<Persistent>>,
    /// Buffers the operation reads or writes that the library owns (packed copies of types
    /// with holes, in-place copies): they live as long as the request.
    pub keep: Vec<Vec<u8>>,
    /// The unpack a receive of a type with holes owes its user buffer.
    pub unpack: Option<Box<crate::stage::Unpack>>,
    /// A persistent collective: how MPI_Start starts it again.
    pub restart: Option<crate::icoll::Restart>,
    /// Count arrays a large-count persistent call converted to `int` at its init, which
    /// every start reads (MPI binds them to the request).
    pub counts: Vec<Vec<c_int>>,
    /// A partitioned send or receive (MPI_Psend_init, MPI_Precv_init).
    pub partitioned: Option<Box<crate::partitioned::Partitioned>>,
}

impl ReqEntry {
    /// A started nonblocking send or receive (`recv`) on `comm` that moves the user's bytes
    /// in place: nothing staged, nothing to unpack, not persistent.
    pub fn started(raw: RawRequest, recv: bool, comm: Handle) -> ReqEntry {
        ReqEntry {
            raw: Some(raw),
            ..ReqEntry::empty(recv, comm)
        }
    }

    /// An entry on `comm` with no operation yet (the caller fills it in).
    pub fn empty(recv: bool, comm: Handle) -> ReqEntry {
        ReqEntry {
            raw: None,
            proc_null: false,
            recv,
            comm,
            more: None,
        }
    }

    /// A generalized request's entry (MPI_Grequest_start): no operation of its own; the
    /// callbacks and completion live in greq.rs's registry under this entry's handle.
    pub fn generalized() -> ReqEntry {
        ReqEntry::empty(false, MPI_COMM_SELF)
    }

    /// The rare parts, made on first use.
    pub fn more_mut(&mut self) -> &mut ReqMore {
        self.more.get_or_insert_with(Default::default)
    }

    /// The nonblocking collective in flight, if any.
    pub fn coll_mut(&mut self) -> Option<&mut weft::coll::CollRequest<'static>> {
        self.more.as_mut()?.coll.as_deref_mut()
    }

    /// Whether a nonblocking collective is in flight.
    pub fn has_coll(&self) -> bool {
        self.more.as_ref().is_some_and(|m| m.coll.is_some())
    }

    /// The persistent point-to-point operation, if this is one.
    pub fn persistent(&self) -> Option<&Persistent> {
        self.more.as_ref()?.persistent.as_deref()
    }

    /// How MPI_Start starts this persistent collective again, if it is one.
    pub fn restart(&self) -> Option<&crate::icoll::Restart> {
        self.more.as_ref()?.restart.as_ref()
    }

    /// Whether the request stays after completion (persistent point-to-point or
    /// collective), inactive until the next MPI_Start.
    pub fn stays(&self) -> bool {
        self.more.as_ref().is_some_and(|m| {
            m.persistent.is_some() || m.restart.is_some() || m.partitioned.is_some()
        })
    }

    /// A started partitioned send whose partitions are not all marked ready yet.
    pub fn partitions_unsent(&self) -> bool {
        self.more
            .as_ref()
            .and_then(|m| m.partitioned.as_ref())
            .is_some_and(|p| p.unsent())
    }

    /// A persistent request (point-to-point or collective) that is not started: MPI's
    /// Waitany/Waitsome/Testany/Testsome skip it like MPI_REQUEST_NULL (MPI-4.1 §3.9).
    pub fn inactive(&self) -> bool {
        self.stays()
            && self.raw.is_none()
            && !self.has_coll()
            && !self.proc_null
            && !self.partitions_unsent()
    }
}

/// A freed active request: the raw request, its pending unpack and the buffers it uses.
pub type Detached = (RawRequest, Option<crate::stage::Unpack>, Vec<Vec<u8>>);

pub struct State {
    pub weft: Weft,
    pub comms: Table<CommEntry>,
    pub groups: Table<Vec<u32>>,
    pub reqs: Table<ReqEntry>,
    pub types: Table<Derived>,
    pub ops: Table<UserOpEntry>,
    pub infos: Table<Vec<(String, String)>>,
    pub errhs: Table<ErrFn>,
    pub keyvals: Table<Keyval>,
    /// Messages taken out of matching by MPI_Mprobe: their bytes and status.
    pub messages: Table<(Vec<u8>, weft::Status)>,
    pub thread_level: c_int,
    pub main_thread: std::thread::ThreadId,
    /// The attached Bsend buffers and the buffered sends in flight.
    pub bsend: crate::buffer::Buffers,
    /// Requests freed while active (MPI_Request_free): they still match and complete
    /// (MPI-4.1 §3.7.3), so they live here until done, with the unpack a receive of a type
    /// with holes owes and the packed copy a send reads. The raw request comes first in the
    /// tuple so it is finished before those buffers are dropped.
    pub detached: Vec<Detached>,
    /// Names the program gave predefined datatypes (MPI_Type_set_name).
    pub type_names: std::collections::HashMap<Handle, String>,
    /// Compound requests (compound.rs) by request-table index.
    pub compounds: std::collections::HashMap<usize, crate::compound::Compound>,
    /// Duplications in flight (MPI_Comm_idup) by request handle; the request table entry of
    /// each is a bare one, like a generalized request's. In the state, not per thread: under
    /// MPI_THREAD_SERIALIZED another thread may complete the request.
    pub(crate) idups: std::collections::HashMap<Handle, crate::comm::PendingDup>,
    /// Windows, their keyvals and the process's one-sided endpoint.
    pub wins: crate::win::Windows,
    /// Open files, MPI_FILE_NULL's error handler and registered data representations.
    pub files: crate::file::Files,
    /// The universes of this process's spawns and the launchers it started.
    pub spawned: crate::spawn::Spawned,
}

struct Global(UnsafeCell<Option<State>>);

// SAFETY: the state is only reached from inside MPI calls, and no two threads are inside
// them at once: under MPI_THREAD_SERIALIZED and below the program promises so and orders its
// calls with its own synchronisation; under MPI_THREAD_MULTIPLE every call holds the lock of
// crate::threads (acquire/release orders the calls), and a blocking call that lets other
// threads in while it waits keeps no reference into the state across the release.
unsafe impl Sync for Global {}

static STATE: Global = Global(UnsafeCell::new(None));
pub static INITIALIZED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
pub static FINALIZED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The state, when MPI is initialised and not finalised.
#[allow(clippy::mut_from_ref)]
pub fn state_opt() -> Option<&'static mut State> {
    // SAFETY: serialised access, see `Global`; callers keep the reference within one call
    // (within one hold of the lock under MPI_THREAD_MULTIPLE).
    unsafe { (*STATE.0.get()).as_mut() }
}

/// The state, or an MPI_ERR_OTHER error naming `func` when MPI is not running.
#[inline]
pub fn state(func: &str) -> R<&'static mut State> {
    state_opt().ok_or_else(|| {
        err(
            MPI_ERR_OTHER,
            format!("{func} called before MPI_Init or after MPI_Finalize"),
        )
    })
}

/// Installs the state (MPI_Init).
pub fn install(s: State) {
    // SAFETY: Init runs before any other MPI call, on one thread.
    unsafe { *STATE.0.get() = Some(s) };
}

/// Removes the state (MPI_Finalize).
pub fn uninstall() -> Option<State> {
    // SAFETY: Finalize is the last MPI call, on one thread.
    unsafe { (*STATE.0.get()).take() }
}

impl State {
    pub fn world_rank(&self) -> u32 {
        self.weft.world().rank()
    }

    fn comm_index(h: Handle) -> Option<usize> {
        match h {
            MPI_COMM_WORLD => Some(0),
            MPI_COMM_SELF => Some(1),
            _ => handle_index(K_COMM, h),
        }
    }

    /// MPI_ERR_INFO unless `info` is MPI_INFO_NULL or a live info object (for info arguments
    /// whose hints weft reads none of).
    pub fn check_info_or_null(&self, info: Handle) -> R<()> {
        if info != MPI_INFO_NULL
            && handle_index(K_INFO, info)
                .and_then(|i| self.infos.get(i))
                .is_none()
        {
            return Err(err(
                MPI_ERR_INFO,
                format!("info handle {info:#x} is not valid"),
            ));
        }
        Ok(())
    }

    /// The communicator behind `h`, or MPI_ERR_COMM.
    #[inline]
    pub fn comm(&self, h: Handle) -> R<&CommEntry> {
        self.comm_opt(h).ok_or_else(|| bad_comm(h))
    }

    /// The communicator behind `h`, if it is one (the fast path's lookup: no error is
    /// built; the caller takes the checked path when this is `None`).
    #[inline]
    pub fn comm_opt(&self, h: Handle) -> Option<&CommEntry> {
        Self::comm_index(h).and_then(|i| self.comms.get(i))
    }

    pub fn comm_mut(&mut self, h: Handle) -> R<&mut CommEntry> {
        Self::comm_index(h)
            .and_then(|i| self.comms.get_mut(i))
            .ok_or_else(|| bad_comm(h))
    }

    /// A handle for a new communicator (with the hidden companions of an
    /// intercommunicator).
    pub fn add_comm(&mut self, comm: Comm) -> Handle {
        let inter = match (comm.local_comm(), comm.bridge()) {
            (Ok(local), Ok(bridge)) => {
                let local = self.add_entry(local.clone(), MPI_ERRORS_RETURN, None);
                let bridge = self.add_entry(bridge, MPI_ERRORS_RETURN, None);
                Some(InterParts { local, bridge })
            }
            _ => None,
        };
        self.add_entry(comm, MPI_ERRORS_ARE_FATAL, inter)
    }

    fn add_entry(&mut self, comm: Comm, errhandler: Handle, inter: Option<InterParts>) -> Handle {
        let name = comm.name().to_string();
        let idx = self.comms.insert(CommEntry {
            comm,
            errhandler,
            name,
            cart: None,
            graph: None,
            attrs: Vec::new(),
            inter,
            neighbor: None,
        });
        make_handle(K_COMM, idx)
    }

    /// Removes communicator `h` from the table with its hidden companions.
    pub fn remove_comm(&mut self, h: Handle) {
        let Some(i) = handle_index(K_COMM, h) else {
            return;
        };
        if let Some(e) = self.comms.remove(i) {
            if let Some(p) = e.inter {
                for x in [p.local, p.bridge] {
                    if let Some(j) = handle_index(K_COMM, x) {
                        if let Some(c) = self.comms.remove(j) {
                            // The local group's communicator is freed with its
                            // intercommunicator; a repeated free is harmless here.
                            let _ = c.comm.free();
                        }
                    }
                }
            }
        }
    }

    /// The hidden companions of `h` when it is an intercommunicator.
    pub fn inter_parts(&self, h: Handle) -> R<Option<InterParts>> {
        Ok(self.comm(h)?.inter)
    }

    /// The error handler in force for errors on `comm`.
    pub fn handler_of(&self, comm: Handle) -> CommHandler {
        let h = match self.comm(comm) {
            Ok(c) => c.errhandler,
            Err(_) => self
                .comms
                .get(0)
                .map_or(MPI_ERRORS_ARE_FATAL, |c| c.errhandler),
        };
        match h {
            MPI_ERRORS_RETURN => CommHandler::Return,
            _ => match handle_index(K_ERRH, h).and_then(|i| self.errhs.get(i)) {
                Some(f) => CommHandler::User(*f),
                None => CommHandler::Fatal,
            },
        }
    }

    /// World ranks of the group behind `h`, or MPI_ERR_GROUP.
    pub fn group(&self, h: Handle) -> R<&[u32]> {
        if h == MPI_GROUP_EMPTY {
            return Ok(&[]);
        }
        handle_index(K_GROUP, h)
            .and_then(|i| self.groups.get(i))
            .map(|g| g.as_slice())
            .ok_or_else(|| err(MPI_ERR_GROUP, format!("group handle {h:#x} is not valid")))
    }

    pub fn add_group(&mut self, g: Vec<u32>) -> Handle {
        if g.is_empty() {
            return MPI_GROUP_EMPTY;
        }
        make_handle(K_GROUP, self.groups.insert(g))
    }

    pub fn add_req(&mut self, r: ReqEntry) -> Handle {
        make_handle(K_REQ, self.reqs.insert(r))
    }

    /// Whether request entry `i` is an inactive persistent request (a started persistent
    /// compound request has no operation in its entry but is active).
    pub fn req_inactive(&self, i: usize) -> bool {
        self.reqs.get(i).is_some_and(ReqEntry::inactive) && !self.compounds.contains_key(&i)
    }
}

fn bad_comm(h: Handle) -> MpiError {
    if h == MPI_COMM_NULL {
        err(MPI_ERR_COMM, "communicator is MPI_COMM_NULL")
    } else {
        err(
            MPI_ERR_COMM,
            format!(
                "communicator handle {h:#x} is not a valid communicator (freed or never created)"
            ),
        )
    }
}
