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
//! Not wired yet: the request table entry and the wait/test/cancel/free hooks live in
//! state.rs and p2p.rs (see /work/notes/requests.md, R-k2), so MPI_Grequest_start and
//! MPI_Grequest_complete stay unsupported until they are. Depends on the error type and the
//! status layout of p2p.rs.

use crate::consts::*;
use crate::error::{err, R};
use crate::p2p::{empty_status, store, MpiStatus};
use std::os::raw::{c_int, c_void};

/// `MPI_Grequest_query_function`: fills the status of the completed request.
pub type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
/// `MPI_Grequest_free_function`: releases the program's state of the request.
pub type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`: asks the program to cancel; the flag says whether
/// MPI_Grequest_complete has been called.
pub type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// One generalized request.
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
