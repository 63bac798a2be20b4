//! Compound requests: one MPI request made of several point-to-point requests of this
//! library and a local step that runs once they have all completed (reducing the received
//! contributions). The nonblocking collectives on intercommunicators (inter_coll.rs) return
//! them: their start call posts every message, the engine moves the messages while the
//! program computes or waits on anything else, and MPI_Test/Wait (and the array forms)
//! complete the parts and run the final step.
//!
//! A compound lives in `State::compounds` under its request-table index; its table entry
//! has no operation of its own. The completion calls of p2p.rs ask `is_compound` first.
//! Depends on the request table and p2p.rs's completion of single requests.

use crate::consts::*;
use crate::error::{err, MpiError, R};
use crate::p2p::{complete as complete_one, empty_status, store, MpiStatus};
use crate::state::{ReqEntry, State};

/// The local step that ends a compound request; it gets the state because it may reduce
/// with a user's operation.
pub type Then = Box<dyn FnOnce(&mut State) -> R<()>>;

/// Parts of one compound request.
pub struct Compound {
    /// Request handles of this library, MPI_REQUEST_NULL once completed.
    parts: Vec<Handle>,
    /// Run after every part has completed without error. It owns the scratch buffers the
    /// parts receive into, so they outlive the parts.
    then: Option<Then>,
    /// The first part's error: reported once every part has completed.
    error: Option<MpiError>,
}

/// A compound request's parts and final step, before it is filed.
pub(crate) fn new(parts: Vec<Handle>, then: Option<Then>) -> Compound {
    Compound {
        parts,
        then,
        error: None,
    }
}

/// Files request `*req` on `comm` made of `parts` and ending with `then`.
pub(crate) fn file(
    s: &mut State,
    comm: Handle,
    parts: Vec<Handle>,
    then: Option<Then>,
    req: *mut Handle,
) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    let mut e = ReqEntry::generalized();
    e.comm = comm;
    let h = s.add_req(e);
    let i = crate::state::handle_index(crate::state::K_REQ, h).expect("a request handle");
    s.compounds.insert(
        i,
        Compound {
            parts,
            then,
            error: None,
        },
    );
    // SAFETY: checked non-null; writable by the MPI calling contract.
    unsafe { *req = h };
    Ok(())
}

/// Whether request-table entry `i` is a compound request.
pub(crate) fn is_compound(s: &State, i: usize) -> bool {
    s.compounds.contains_key(&i)
}

/// Advances (or with `block`, waits for) every part of compound `i`; once all are done the
/// entry is retired, `*req` becomes MPI_REQUEST_NULL, the final step runs and the first
/// error of a part or of the step is returned. Returns whether it completed.
pub(crate) fn complete(
    s: &mut State,
    i: usize,
    req: *mut Handle,
    block: bool,
    status: *mut MpiStatus,
) -> R<bool> {
    let mut c = s.compounds.remove(&i).expect("checked by the caller");
    let mut all = true;
    for p in c.parts.iter_mut() {
        if *p == MPI_REQUEST_NULL {
            continue;
        }
        match complete_one(s, p, block, std::ptr::null_mut()) {
            Ok(true) => {}
            Ok(false) => all = false,
            Err(e) => {
                // The failed part is retired; the others still run to completion.
                *p = MPI_REQUEST_NULL;
                c.error.get_or_insert(e);
            }
        }
    }
    if !all {
        s.compounds.insert(i, c);
        return Ok(false);
    }
    // A persistent request stays, inactive, for the next MPI_Start.
    if s.reqs.get(i).is_none_or(|e| e.restart().is_none()) {
        s.reqs.discard(i);
        // SAFETY: the caller checked `req` non-null; writable by the MPI calling contract.
        unsafe { *req = MPI_REQUEST_NULL };
    }
    store(status, empty_status());
    if let Some(e) = c.error {
        return Err(e);
    }
    match c.then.take() {
        Some(f) => f(s).map(|()| true),
        None => Ok(true),
    }
}

/// Whether every part of compound `i` has completed (does not complete them).
pub(crate) fn ready(
    s: &mut State,
    i: usize,
    part_ready: impl Fn(&mut State, Handle) -> R<bool>,
) -> R<bool> {
    let parts = s
        .compounds
        .get(&i)
        .expect("checked by the caller")
        .parts
        .clone();
    for p in parts {
        if p != MPI_REQUEST_NULL && !part_ready(s, p)? {
            return Ok(false);
        }
    }
    Ok(true)
}
