//! Generalized requests (MPI-4.1 §13.2): MPI_Grequest_start and MPI_Grequest_complete.
//!
//! [`Greq`] is one generalized request's state: the program's three callbacks, its
//! `extra_state`, and whether MPI_Grequest_complete has been called. It runs the callbacks
//! the way the standard orders them: a wait or test that finds it complete calls
//! `query_fn` (which fills the status) and then `free_fn` ([`Greq::finish`]);
//! MPI_Request_get_status calls `query_fn` only ([`Greq::query`]); MPI_Cancel calls
//! `cancel_fn` with the completed flag ([`Greq::cancel`]); MPI_Request_free calls `free_fn`
//! once the request is complete ([`Greq::release`]).
//!
//! The request table (state.rs) holds an entry with no operation for each generalized
//! request, so its handle is an ordinary request handle; the callbacks and the completed
//! flag live in a registry here, keyed by that handle, behind a mutex: MPI_Grequest_complete
//! touches only the registry, so it may run on another thread (or inside a callback) while
//! a wait polls it. The completion calls of p2p.rs ask the registry first (`done`,
//! `wait`, `take`). Callbacks never run with the registry locked (a callback may call
//! MPI_Grequest_complete). Depends on the error type, the request table and the status
//! layout of p2p.rs.

use crate::consts::*;
use crate::error::{err, R};
use crate::p2p::{empty_status, store, MpiStatus};
use crate::state::{handle_index, ReqEntry, State, K_REQ};
use std::collections::BTreeMap;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// `MPI_Grequest_query_function`: fills the status of the completed request.
pub type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
/// `MPI_Grequest_free_function`: releases the program's state of the request.
pub type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`: asks the program to cancel; the flag says whether
/// MPI_Grequest_complete has been called.
pub type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// One generalized request.
#[derive(Clone, Copy)]
pub struct Greq {
    query_fn: QueryFn,
    free_fn: FreeFn,
    cancel_fn: CancelFn,
    extra_state: *mut c_void,
    complete: bool,
}

/// A callback's return code as a result: MPI_SUCCESS is `Ok`, anything else is the error
/// class the MPI call returns (MPI-4.1 §13.2: the callbacks' codes are passed on).
fn code(rc: c_int, what: &str) -> R<()> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(err(
            rc,
            format!("the generalized request's {what} returned {rc}"),
        ))
    }
}

impl Greq {
    /// A new, incomplete request with the program's callbacks (NULL ones are refused with
    /// MPI_ERR_ARG: the standard has no null callback for generalized requests).
    pub fn new(
        query_fn: Option<QueryFn>,
        free_fn: Option<FreeFn>,
        cancel_fn: Option<CancelFn>,
        extra_state: *mut c_void,
    ) -> R<Greq> {
        let missing = |name: &str| err(MPI_ERR_ARG, format!("{name} is NULL"));
        Ok(Greq {
            query_fn: query_fn.ok_or_else(|| missing("query_fn"))?,
            free_fn: free_fn.ok_or_else(|| missing("free_fn"))?,
            cancel_fn: cancel_fn.ok_or_else(|| missing("cancel_fn"))?,
            extra_state,
            complete: false,
        })
    }

    /// Whether MPI_Grequest_complete has been called.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// MPI_Grequest_complete: marks the request complete; a second call is an error
    /// (MPI_ERR_REQUEST).
    pub fn complete(&mut self) -> R<()> {
        if self.complete {
            return Err(err(
                MPI_ERR_REQUEST,
                "MPI_Grequest_complete was already called on this request",
            ));
        }
        self.complete = true;
        Ok(())
    }

    /// MPI_Cancel: calls `cancel_fn(extra_state, complete)`.
    pub fn cancel(&self) -> R<()> {
        // SAFETY: the program registered `cancel_fn` for `extra_state` (MPI_Grequest_start).
        let rc = unsafe { (self.cancel_fn)(self.extra_state, self.complete as c_int) };
        code(rc, "cancel_fn")
    }

    /// Calls `query_fn` on a status that starts empty and stores the result in `status`
    /// (which may be MPI_STATUS_IGNORE: `query_fn` still gets a status to fill). For
    /// MPI_Request_get_status on a complete request; the request stays.
    pub fn query(&self, status: *mut MpiStatus) -> R<()> {
        let mut st = empty_status();
        // SAFETY: `query_fn` was registered for `extra_state`; `st` is a valid status.
        let rc = unsafe { (self.query_fn)(self.extra_state, &mut st) };
        store(status, st);
        code(rc, "query_fn")
    }

    /// Completes a wait or test on the complete request: `query_fn` fills the status, then
    /// `free_fn` runs (both are called even when the first fails; the first error is
    /// returned).
    pub fn finish(self, status: *mut MpiStatus) -> R<()> {
        debug_assert!(self.complete, "finish needs a complete request");
        let queried = self.query(status);
        let freed = self.release();
        queried.and(freed)
    }

    /// Calls `free_fn` (MPI_Request_free of a complete request, or the end of
    /// [`Greq::finish`]).
    pub fn release(self) -> R<()> {
        // SAFETY: `free_fn` was registered for `extra_state`; it is called once, as `self`
        // is consumed.
        let rc = unsafe { (self.free_fn)(self.extra_state) };
        code(rc, "free_fn")
    }
}

// SAFETY: `extra_state` is the program's pointer, handed back to its callbacks only; MPI lets
// the callbacks run on whichever thread completes, cancels or frees the request.
unsafe impl Send for Greq {}

/// A live generalized request: its state and whether MPI_Request_free has dropped the
/// handle (`free_fn` then runs at MPI_Grequest_complete).
struct Slot {
    greq: Greq,
    freed: bool,
}

/// The live generalized requests by request handle.
static LIVE: Mutex<BTreeMap<Handle, Slot>> = Mutex::new(BTreeMap::new());
/// How many there are: completion calls skip the lock when none is live.
static LIVE_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Handles of freed requests that MPI_Grequest_complete has finished: their request-table
/// entries (kept so the handle stays unique while the program may still name it) are
/// removed by the next [`reap`].
static REAPED: Mutex<Vec<Handle>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, BTreeMap<Handle, Slot>> {
    // A panic never happens with the lock held (no callback runs under it).
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

fn remove(map: &mut BTreeMap<Handle, Slot>, h: Handle) -> Option<Slot> {
    let s = map.remove(&h);
    if s.is_some() {
        LIVE_COUNT.fetch_sub(1, Ordering::Relaxed);
    }
    s
}

/// `Some(completed)` when `h` is a live generalized request, `None` for any other handle.
pub(crate) fn done(h: Handle) -> Option<bool> {
    if LIVE_COUNT.load(Ordering::Relaxed) == 0 {
        return None;
    }
    live().get(&h).map(|s| s.greq.is_complete())
}

/// Whether `h` is a live generalized request.
pub(crate) fn is_greq(h: Handle) -> bool {
    done(h).is_some()
}

/// Waits (`block`) or tests for generalized request `h` to be completed, advancing the
/// engine between looks (MPI_Grequest_complete may come from another thread, or from a
/// program that needs other messages to arrive first); returns whether it is complete.
pub(crate) fn wait(h: Handle, block: bool, world: &weft::Comm) -> bool {
    loop {
        if done(h) != Some(false) {
            return true;
        }
        if !block {
            world.raw_progress();
            return done(h) != Some(false);
        }
        if !world.raw_progress() {
            std::thread::yield_now();
        }
    }
}

/// Takes generalized request `h` out of the registry (a wait or test completing it).
pub(crate) fn take(h: Handle) -> Option<Greq> {
    remove(&mut live(), h).map(|s| s.greq)
}

/// MPI_Cancel on generalized request `h`: `cancel_fn(extra_state, completed)`.
pub(crate) fn cancel(h: Handle) -> R<()> {
    let g = live().get(&h).map(|s| s.greq);
    match g {
        Some(g) => g.cancel(),
        None => Err(not_greq(h)),
    }
}

/// MPI_Request_get_status on generalized request `h`: whether it is complete, and if so
/// `query_fn` has filled `status`.
pub(crate) fn get_status(h: Handle, status: *mut MpiStatus) -> R<bool> {
    let g = live().get(&h).map(|s| s.greq).ok_or_else(|| not_greq(h))?;
    if g.is_complete() {
        g.query(status)?;
    }
    Ok(g.is_complete())
}

/// MPI_Request_free on generalized request `h`: a complete one is released now (`free_fn`)
/// and its table entry may go (returns true); an incomplete one is released by
/// MPI_Grequest_complete, and its table entry stays until then (returns false).
pub(crate) fn free(h: Handle) -> R<bool> {
    let mut map = live();
    let slot = map.get_mut(&h).ok_or_else(|| not_greq(h))?;
    if !slot.greq.is_complete() {
        slot.freed = true;
        return Ok(false);
    }
    let g = remove(&mut map, h).expect("present").greq;
    drop(map);
    g.release()?;
    Ok(true)
}

/// Removes the table entries of freed generalized requests that have been completed.
pub(crate) fn reap(s: &mut State) {
    let hs = std::mem::take(&mut *REAPED.lock().unwrap_or_else(|p| p.into_inner()));
    for h in hs {
        if let Some(i) = handle_index(K_REQ, h) {
            s.reqs.discard(i);
        }
    }
}

fn not_greq(h: Handle) -> crate::error::MpiError {
    err(
        MPI_ERR_REQUEST,
        format!("request handle {h:#x} is not a live generalized request"),
    )
}

/// MPI_Grequest_start (MPI-4.1 §13.2): a new, incomplete generalized request.
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: *mut c_void,
    request: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe {
        grequest_start_as(
            "MPI_Grequest_start",
            query_fn,
            free_fn,
            cancel_fn,
            extra_state,
            request,
        )
    }
}

/// MPI_Grequest_start's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Grequest_start's contract.
pub(crate) unsafe fn grequest_start_as(
    func: &str,
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: *mut c_void,
    request: *mut Handle,
) -> c_int {
    let r = (|| {
        let s = crate::state::state(func)?;
        if request.is_null() {
            return Err(err(MPI_ERR_ARG, "request is NULL"));
        }
        let g = Greq::new(query_fn, free_fn, cancel_fn, extra_state)?;
        reap(s);
        let h = s.add_req(ReqEntry::generalized());
        live().insert(
            h,
            Slot {
                greq: g,
                freed: false,
            },
        );
        LIVE_COUNT.fetch_add(1, Ordering::Relaxed);
        // SAFETY: checked non-null; writable by the MPI calling contract.
        unsafe { *request = h };
        Ok(())
    })();
    crate::error::finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Grequest_complete (MPI-4.1 §13.2): the operation is done; a wait on the request
/// returns (from any thread). A request already freed is released now (`free_fn`).
#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_complete(request: Handle) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { grequest_complete_as("MPI_Grequest_complete", request) }
}

/// MPI_Grequest_complete's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Grequest_complete's contract.
pub(crate) unsafe fn grequest_complete_as(func: &str, request: Handle) -> c_int {
    let r = (|| {
        let mut map = live();
        let slot = map.get_mut(&request).ok_or_else(|| not_greq(request))?;
        slot.greq.complete()?;
        if !slot.freed {
            return Ok(());
        }
        let g = remove(&mut map, request).expect("present").greq;
        drop(map);
        REAPED
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request);
        g.release()
    })();
    crate::error::finish(MPI_COMM_WORLD, func, r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    thread_local! {
        static CALLS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    }

    fn log(s: String) {
        CALLS.with(|c| c.borrow_mut().push(s));
    }

    fn calls() -> Vec<String> {
        CALLS.with(|c| std::mem::take(&mut *c.borrow_mut()))
    }

    unsafe extern "C" fn query(extra: *mut c_void, st: *mut MpiStatus) -> c_int {
        // SAFETY: the tests pass a pointer to an i32 and a valid status.
        let v = unsafe { *(extra as *const i32) };
        log(format!("query {v}"));
        // SAFETY: the tests pass a valid, writable status.
        unsafe {
            (*st).source = 7;
            (*st).tag = v;
        }
        if v < 0 {
            MPI_ERR_OTHER
        } else {
            MPI_SUCCESS
        }
    }

    unsafe extern "C" fn free(extra: *mut c_void) -> c_int {
        // SAFETY: as in `query`.
        log(format!("free {}", unsafe { *(extra as *const i32) }));
        MPI_SUCCESS
    }

    unsafe extern "C" fn cancel(_: *mut c_void, complete: c_int) -> c_int {
        log(format!("cancel {complete}"));
        MPI_SUCCESS
    }

    fn greq(extra: &mut i32) -> Greq {
        Greq::new(
            Some(query),
            Some(free),
            Some(cancel),
            extra as *mut i32 as *mut c_void,
        )
        .unwrap()
    }

    #[test]
    fn callbacks_run_in_the_standard_order() {
        let mut v = 42;
        let mut g = greq(&mut v);
        assert!(!g.is_complete());
        g.cancel().unwrap();
        g.complete().unwrap();
        assert_eq!(g.complete().unwrap_err().class, MPI_ERR_REQUEST);
        g.cancel().unwrap();
        let mut st = MpiStatus::default();
        g.query(&mut st).unwrap();
        assert_eq!((st.source, st.tag), (7, 42));
        g.finish(std::ptr::null_mut()).unwrap();
        assert_eq!(
            calls(),
            ["cancel 0", "cancel 1", "query 42", "query 42", "free 42"]
        );
    }

    #[test]
    fn errors_of_callbacks_are_returned_after_free() {
        let mut v = -1;
        let mut g = greq(&mut v);
        g.complete().unwrap();
        let e = g.finish(std::ptr::null_mut()).unwrap_err();
        assert_eq!(e.class, MPI_ERR_OTHER);
        assert!(e.message.contains("query_fn"), "{}", e.message);
        assert_eq!(calls(), ["query -1", "free -1"]);
        let e = Greq::new(Some(query), None, Some(cancel), std::ptr::null_mut())
            .err()
            .unwrap();
        assert_eq!(e.class, MPI_ERR_ARG);
    }
}
