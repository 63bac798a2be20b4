//! MPI_THREAD_MULTIPLE (MPI-4.1 §11.6): one lock around the whole library, and blocking
//! calls that do not hold it while they wait.
//!
//! Every exported function starts with [`enter`]. Below MPI_THREAD_MULTIPLE that is one
//! relaxed load of a flag and a branch that is never taken: the state stays lock-free
//! as MPI_THREAD_SERIALIZED lets it be (the program orders its calls). Once MPI_Init_thread
//! or MPI_Session_init has provided MPI_THREAD_MULTIPLE, [`enter`] takes the process's one
//! lock (re-entrant: user callbacks and error handlers called from inside MPI may call MPI
//! again) and the value it returns gives it back when the call returns. Everything that lives
//! in the state, the engine and the fast path's scratch is then reached by one thread at a
//! time, as under MPI_THREAD_SERIALIZED.
//!
//! A blocking call must not hold the lock while it waits: the message it waits for may be
//! sent by another thread of the same process (or a peer may wait for one that another
//! thread of this process has yet to send). Under MPI_THREAD_MULTIPLE the blocking
//! point-to-point calls, the wait and probe families, the blocking collectives,
//! MPI_Comm_dup and MPI_Comm_disconnect's barrier therefore start their nonblocking twin
//! and then poll it ([`wait`]): each poll takes the lock, tests (which drives progress for
//! every thread's operations) and gives the lock back, so other threads enter between polls.
//! No reference into the state or the engine lives across a release: each poll is a whole
//! MPI call. A blocking call made from a user callback inside MPI (the lock then held
//! further out) keeps the lock while it polls.
//!
//! Calls whose wait is not one nonblocking twin wait by `wait_released`: the exported
//! call gives its hold back for the whole wait and each poll enters on its own.
//! Communicator creation (split, create, split_type, create_group, create_from_group, the
//! Cartesian, graph and distributed graph topologies, intercommunicator creation, split and
//! merging) gathers what it needs by nonblocking collectives and takes its context ids from
//! nonblocking agreements (`weft::Comm::idup`, `icreate_group`, `iagree_intercomm`), whose
//! ids no concurrent creation of another thread can take; MPI_Buffer_detach and the buffer
//! flushes poll the buffered sends; window creation (every flavor) runs its nonblocking
//! collectives through `steps_wait`; MPI_Win_fence and MPI_Win_free arrive at their
//! barrier and poll it; MPI_Win_start polls for its targets' posts, MPI_Win_wait polls
//! MPI_Win_test, MPI_Win_lock and MPI_Win_lock_all poll their lock words. The completion of
//! this process's operations at other nodes' targets (the flushes, MPI_Win_unlock(_all),
//! MPI_Win_complete, and a fence's or a free's own operations) waits for those targets'
//! one-sided services only, never for an MPI call, and runs with the lock given back
//! (`released`). File open, close and the collective file calls run their exchanges
//! through `steps_wait` too, and the blocking collective accesses poll their nonblocking
//! twin.
//!
//! No nonblocking call completes inside its start: the intercommunicator
//! MPI_Ireduce_scatter(_block) (inter_coll.rs) and the reductions of a user operation on a
//! derived datatype (user_reduce.rs) are compound requests that the test and wait calls
//! finish. MPI_Comm_accept, _connect and _join (dynamic.rs) wait for the other group's
//! leader on a socket with the lock given back (`released`, each poll of progress in
//! between entering on its own), then spread the outcome and agree on the new contexts
//! through `wait_released`: one thread may accept while another connects to that port
//! from another process (to its own, both fail: the groups would overlap).

use crate::consts::*;
use crate::p2p::MpiStatus;
use std::cell::Cell;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// The library's thread mode, both flags in one byte so that a call reads them with one
/// load: [`MULTIPLE`] and [`TWINS`], each set once and never cleared (a call racing with
/// MPI_Finalize still locks). [`MULTIPLE`] is only ever set together with [`TWINS`], so a
/// call that found [`TWINS`] clear holds no lock to take.
static MODE: AtomicU8 = AtomicU8::new(0);

/// [`MODE`]: MPI_THREAD_MULTIPLE was provided: every call takes the lock.
const MULTIPLE: u8 = 1;

/// [`MODE`]: the blocking calls that have a nonblocking twin (point-to-point, the wait and
/// probe families, collectives, MPI_Comm_dup) and intercommunicator creation take the
/// twin's path (start it, then poll): under MPI_THREAD_MULTIPLE, and on every rank of a job
/// where any rank got MPI_THREAD_MULTIPLE from MPI_Init_thread (agreed there), so that the
/// ranks' collective sequences match whatever level each asked for.
const TWINS: u8 = 2;

/// The lock's holder: 0 when free, else the address of the holder's [`DEPTH`].
static OWNER: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// How many calls deep this thread is inside MPI while it holds the lock.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Polls of a contended lock before each one yields the core.
const SPINS_BEFORE_YIELD: u32 = 64;

/// How long a wait polls without yielding the core: a reply a few microseconds away (a
/// round trip between two cores takes under one) is then met on the core, not after the
/// scheduler has run someone else; short enough that threads and ranks sharing a core
/// lose little to it (the engine's own waits learn a spin of up to 50 us). Read from the
/// clock only once the first [`SPINS_BEFORE_YIELD`] polls found nothing.
const WAIT_SPIN: std::time::Duration = std::time::Duration::from_micros(10);

/// The pause between two polls of a wait: a spin hint for the first [`SPINS_BEFORE_YIELD`]
/// polls and until [`WAIT_SPIN`] has passed since `*since` (set on the first call that needs
/// it), then the core yielded on each.
#[inline]
fn pause(polls: u32, since: &mut Option<std::time::Instant>) {
    if polls < SPINS_BEFORE_YIELD {
        std::hint::spin_loop();
        return;
    }
    let t0 = *since.get_or_insert_with(std::time::Instant::now);
    if t0.elapsed() < WAIT_SPIN {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Whether MPI_THREAD_MULTIPLE is in force.
#[inline(always)]
pub fn multiple() -> bool {
    MODE.load(Ordering::Relaxed) & MULTIPLE != 0
}

/// Makes every later call take the lock (the init that provides MPI_THREAD_MULTIPLE).
pub(crate) fn provide_multiple() {
    MODE.fetch_or(MULTIPLE | TWINS, Ordering::SeqCst);
}

/// Whether blocking calls take their nonblocking twin's path (see `TWINS`).
#[inline(always)]
pub fn twins() -> bool {
    MODE.load(Ordering::Relaxed) & TWINS != 0
}

/// Makes blocking calls take their twin's path below MPI_THREAD_MULTIPLE too (another rank
/// of the job got MPI_THREAD_MULTIPLE: MPI_Init_thread agreed on it).
pub(crate) fn take_twins() {
    MODE.fetch_or(TWINS, Ordering::SeqCst);
}

/// An MPI call in progress: holds the lock under MPI_THREAD_MULTIPLE until dropped.
#[must_use]
pub struct Entered(bool);

/// Enters a blocking call that found the twins' path off ([`twins`] false, checked by
/// `blocking_by_twin!` just before): MPI_THREAD_MULTIPLE is then not in force (it turns
/// the twins' path on with it, in the same store), so there is no lock to take and no flag
/// to read again.
#[inline(always)]
pub fn enter_untwinned() -> Entered {
    Entered(false)
}

/// Enters an MPI call (the first statement of every exported function).
#[inline(always)]
pub fn enter() -> Entered {
    if multiple() {
        lock();
        Entered(true)
    } else {
        Entered(false)
    }
}

impl Drop for Entered {
    #[inline(always)]
    fn drop(&mut self) {
        if self.0 {
            unlock();
        }
    }
}

#[cold]
#[inline(never)]
fn lock() {
    DEPTH.with(|d| {
        let depth = d.get();
        if depth > 0 {
            d.set(depth + 1);
            return;
        }
        let me = d as *const Cell<u32> as usize;
        let mut polls = 0u32;
        while OWNER
            .compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            polls += 1;
            if polls < SPINS_BEFORE_YIELD {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        d.set(1);
    })
}

#[cold]
#[inline(never)]
fn unlock() {
    DEPTH.with(|d| {
        let depth = d.get();
        debug_assert!(
            depth > 0,
            "MPI lock released by a thread that does not hold it"
        );
        d.set(depth - 1);
        if depth == 1 {
            OWNER.store(0, Ordering::Release);
        }
    })
}

/// Calls `once` (one test of an MPI call's work, `p2p::test_as` and the like) inside an
/// [`enter`] of its own until it returns an error code other than MPI_SUCCESS or says the
/// operation is complete; the lock is free between calls, which spin for [`WAIT_SPIN`],
/// then yield the core on each ([`pause`]).
fn poll(mut once: impl FnMut() -> (c_int, bool)) -> c_int {
    let mut polls = 0u32;
    let mut since = None;
    loop {
        let (rc, done) = {
            let _entered = enter();
            once()
        };
        if rc != MPI_SUCCESS || done {
            return rc;
        }
        polls = polls.saturating_add(1);
        pause(polls, &mut since);
    }
}

/// Polls `once` until it says done (`Ok(true)`) or fails, inside an exported call that
/// entered once: under MPI_THREAD_MULTIPLE this thread gives its hold of the lock back for
/// the whole wait and `once` runs inside an [`enter`] of its own, so other threads enter
/// between polls; the hold is taken again before returning. The caller holds no reference
/// into the state across this (each poll fetches what it needs). A wait from a user
/// callback inside MPI (the lock held further out) keeps the lock, as [`wait`] does; below
/// MPI_THREAD_MULTIPLE it just polls.
pub(crate) fn wait_released<E>(mut once: impl FnMut() -> Result<bool, E>) -> Result<(), E> {
    let held = multiple() && DEPTH.with(Cell::get) == 1;
    if held {
        unlock();
    }
    let mut polls = 0u32;
    let mut since = None;
    let r = loop {
        let entered = enter();
        let step = once();
        drop(entered);
        match step {
            Err(x) => break Err(x),
            Ok(true) => break Ok(()),
            Ok(false) => {}
        }
        polls = polls.saturating_add(1);
        pause(polls, &mut since);
    };
    if held {
        lock();
    }
    r
}

/// Runs `f` (which touches nothing of the state: a window's [`weft::rma::win::Completion`]
/// waiting for other nodes' one-sided services) with this thread's hold of the lock given
/// back under MPI_THREAD_MULTIPLE, as [`wait_released`] does for a whole wait; below it, or
/// from a user callback inside MPI, just runs it.
pub(crate) fn released<T>(f: impl FnOnce() -> T) -> T {
    let held = multiple() && DEPTH.with(Cell::get) == 1;
    if held {
        unlock();
    }
    let r = f();
    if held {
        lock();
    }
    r
}

/// The wait of a window creation, a file's open or close ([`weft::wait::Wait`]): [`wait_released`].
pub(crate) fn steps_wait(poll: &mut dyn FnMut() -> weft::Result<bool>) -> weft::Result<()> {
    wait_released(poll)
}

/// Waits for a weft nonblocking collective `q` as [`wait_released`] does (the blocking
/// collectives inside communicator creation).
pub(crate) fn coll_released(mut q: weft::CollRequest<'_>) -> crate::error::R<()> {
    wait_released(|| Ok(q.test()?))
}

/// MPI_Wait without holding the lock between polls.
///
/// # Safety
/// The MPI_Wait contract.
pub unsafe fn wait(func: &str, req: *mut Handle, status: *mut MpiStatus) -> c_int {
    poll(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's contract.
        let rc = unsafe { crate::p2p::test_as(func, req, &mut flag, status) };
        (rc, flag != 0)
    })
}

/// The first statement of a blocking call that has a nonblocking twin: on the twins' path
/// ([`twins`]) the call returns its twin `path(args)` (written without the request
/// argument, which this appends) waited for by [`twin`] with the status `status` (none
/// given: MPI_STATUS_IGNORE); otherwise the call goes on. The twin is started inside a
/// hold taken here ([`enter`]): the nonblocking call's internal work (`icoll::ibcast_as`
/// and the like, given the name of the blocking call the user made, which its errors name).
/// Used inside the exported functions, whose MPI contract the twin's arguments follow.
macro_rules! blocking_by_twin {
    ($($f:ident)::+ ( $func:expr, $($arg:expr),* $(,)? ) $(; $status:expr)?) => {
        if $crate::threads::twins() {
            #[allow(unused_mut, unused_assignments)]
            let mut status: *mut $crate::p2p::MpiStatus = ::std::ptr::null_mut();
            $(status = $status;)?
            // SAFETY: the caller's MPI contract, forwarded to the nonblocking twin (started
            // inside the closure, a call of an unsafe function); the status is the caller's.
            return unsafe {
                $crate::threads::by_twin($func, move |req| $($f)::+($func, $($arg,)* req), status)
            };
        }
    };
}
pub(crate) use blocking_by_twin;

/// The twins' path of `blocking_by_twin!`: starts the twin by `start(req)` inside a hold,
/// numbered as the blocking call it stands for (so it meets the other ranks' blocking calls
/// whatever their nonblocking ones do around it), and waits for it. Out of line and cold,
/// so that the blocking call's own path keeps its arguments in registers.
///
/// # Safety
/// `start` follows the blocking call's MPI contract; `status` is MPI_STATUS_IGNORE or points
/// to a status.
#[cold]
#[inline(never)]
pub unsafe fn by_twin(
    func: &str,
    start: impl FnOnce(*mut Handle) -> c_int,
    status: *mut MpiStatus,
) -> c_int {
    let mut req = MPI_REQUEST_NULL;
    let rc = weft::coll::numbered_as_blocking(|| {
        let _entered = enter();
        start(&mut req)
    });
    // SAFETY: the request is the twin's, the status the caller's.
    unsafe { twin(func, rc, &mut req, status) }
}

/// The wait of a blocking call started as its nonblocking twin, which returned `rc` and
/// the request `req`.
///
/// # Safety
/// `status` is MPI_STATUS_IGNORE or points to a status.
pub unsafe fn twin(func: &str, rc: c_int, req: &mut Handle, status: *mut MpiStatus) -> c_int {
    if rc != MPI_SUCCESS {
        return rc;
    }
    // SAFETY: the request is the twin's, the status the caller's.
    unsafe { wait(func, req, status) }
}

/// MPI_Waitall without holding the lock between polls.
///
/// # Safety
/// The MPI_Waitall contract.
pub unsafe fn waitall(func: &str, n: c_int, reqs: *mut Handle, statuses: *mut MpiStatus) -> c_int {
    poll(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's contract.
        let rc = unsafe { crate::p2p::testall_as(func, n, reqs, &mut flag, statuses) };
        (rc, flag != 0)
    })
}

/// MPI_Waitany without holding the lock between polls.
///
/// # Safety
/// The MPI_Waitany contract.
pub unsafe fn waitany(
    func: &str,
    n: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    poll(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's contract.
        let rc = unsafe { crate::p2p::testany_as(func, n, reqs, index, &mut flag, status) };
        (rc, flag != 0)
    })
}

/// MPI_Waitsome without holding the lock between polls.
///
/// # Safety
/// The MPI_Waitsome contract.
pub unsafe fn waitsome(
    func: &str,
    n: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    poll(|| {
        // SAFETY: the caller's contract.
        let rc = unsafe { crate::p2p::testsome_as(func, n, reqs, outcount, indices, statuses) };
        // SAFETY: MPI_Testsome wrote the count unless it failed.
        let done = rc == MPI_SUCCESS && unsafe { *outcount } != 0;
        (rc, done)
    })
}

/// MPI_Probe without holding the lock between polls.
///
/// # Safety
/// The MPI_Probe contract.
pub unsafe fn probe(
    func: &str,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    poll(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's contract.
        let rc = unsafe { crate::p2p::iprobe_as(func, source, tag, comm, &mut flag, status) };
        (rc, flag != 0)
    })
}

/// MPI_Mprobe without holding the lock between polls.
///
/// # Safety
/// The MPI_Mprobe contract.
pub unsafe fn mprobe(
    func: &str,
    source: c_int,
    tag: c_int,
    comm: Handle,
    msg: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    poll(|| {
        let mut flag: c_int = 0;
        // SAFETY: the caller's contract.
        let rc =
            unsafe { crate::mprobe::improbe_as(func, source, tag, comm, &mut flag, msg, status) };
        (rc, flag != 0)
    })
}
