//! Buffered-mode send buffers (MPI-4.1 §3.6): the process's (MPI_Buffer_attach), one per
//! communicator (MPI_Comm_attach_buffer) and one per session (MPI_Session_attach_buffer),
//! each a byte budget (or MPI_BUFFER_AUTOMATIC: no budget) that buffered sends draw on
//! while their copies are in flight. A buffered send on a communicator uses the
//! communicator's buffer, else its session's (communicators made from a session's process
//! sets), else the process's. Flush waits for a buffer's messages to leave; detach does too.
//! Depends on the state tables only; the sends themselves are `p2p.rs`'s.

use crate::consts::*;
use crate::dtype::put;
use crate::error::{err, finish, R};
use crate::state::{state, State};
use std::collections::HashMap;
use std::os::raw::{c_int, c_void};
use weft::raw::RawRequest;

/// The standard ABI's MPI_BUFFER_AUTOMATIC (`(void *)2`).
const BUFFER_AUTOMATIC: usize = 2;

/// One attached buffer and the buffered sends drawing on it.
#[derive(Default)]
pub struct Pool {
    /// The attached buffer (address, bytes); `None` when nothing is attached.
    attached: Option<(usize, usize)>,
    /// Sends in flight, each with the copy it sends from.
    pending: Vec<(RawRequest, Vec<u8>)>,
}

impl Pool {
    /// Waits for every buffered send of this pool to complete (when a communicator that has
    /// a buffer is freed; the waits of the exported calls are [`flush_released`]'s).
    fn flush(&mut self) -> R<()> {
        for (mut q, _) in self.pending.drain(..) {
            q.wait()?;
        }
        Ok(())
    }
}

/// Waits for every buffered send of `scope`'s pool to complete, by
/// [`crate::threads::wait_released`]: under MPI_THREAD_MULTIPLE other threads enter while
/// this one waits (a receive of another thread may be what lets the messages leave). The
/// sends leave the pool for the wait, each polled until it completes; sends other threads
/// start meanwhile join the pool and are waited for in turn. Call with no reference into
/// the state held.
fn flush_released(what: &'static str, scope: Scope) -> R<()> {
    let mut failed = None;
    loop {
        let mut pending = std::mem::take(&mut pool_mut(state(what)?, scope)?.pending);
        if pending.is_empty() {
            return failed.map_or(Ok(()), Err);
        }
        crate::threads::wait_released(|| -> R<bool> {
            // Completed sends (and their copies) go; a failed one's error is kept for the
            // caller once the others are done.
            pending.retain_mut(|(q, _)| match q.test() {
                Ok(None) => true,
                Ok(Some(_)) => false,
                Err(e) => {
                    failed.get_or_insert(e.into());
                    false
                }
            });
            Ok(pending.is_empty())
        })?;
    }
}

/// Every buffer of the process.
#[derive(Default)]
pub struct Buffers {
    process: Pool,
    comms: HashMap<Handle, Pool>,
    sessions: HashMap<Handle, Pool>,
    /// The session each communicator made from a session's groups belongs to.
    comm_session: HashMap<Handle, Handle>,
    /// The session each group made from a session's process set belongs to.
    group_session: HashMap<Handle, Handle>,
}

impl Buffers {
    /// Records that `group` was made from a process set of `session`.
    pub(crate) fn group_from_session(&mut self, group: Handle, session: Handle) {
        self.group_session.insert(group, session);
    }

    /// Records that `comm` was made from `group`, so it belongs to the group's session.
    pub(crate) fn comm_from_group(&mut self, comm: Handle, group: Handle) {
        if let Some(&s) = self.group_session.get(&group) {
            self.comm_session.insert(comm, s);
        }
    }

    /// Forgets a freed communicator's buffer (after its sends left).
    pub(crate) fn comm_freed(&mut self, comm: Handle) -> R<()> {
        self.comm_session.remove(&comm);
        match self.comms.remove(&comm) {
            Some(mut p) => p.flush(),
            None => Ok(()),
        }
    }

    /// The pool a buffered send on `comm` draws on.
    fn pool_for(&mut self, comm: Handle) -> &mut Pool {
        if self.comms.get(&comm).is_some_and(|p| p.attached.is_some()) {
            return self.comms.get_mut(&comm).expect("checked");
        }
        if let Some(s) = self.comm_session.get(&comm) {
            if self.sessions.get(s).is_some_and(|p| p.attached.is_some()) {
                return self.sessions.get_mut(s).expect("checked");
            }
        }
        &mut self.process
    }

    /// Waits for every buffered send of the process.
    pub(crate) fn flush_all(&mut self) -> R<()> {
        self.process.flush()?;
        for p in self.comms.values_mut().chain(self.sessions.values_mut()) {
            p.flush()?;
        }
        Ok(())
    }
}

/// Admits a buffered send of `n` bytes on `comm`: the pool it draws on must have room for
/// it and MPI_BSEND_OVERHEAD (any size, with MPI_BUFFER_AUTOMATIC). Completed sends give
/// their room back first.
pub(crate) fn admit(s: &mut State, comm: Handle, n: usize) -> R<()> {
    let pool = s.bsend.pool_for(comm);
    let Some((addr, cap)) = pool.attached else {
        return Err(err(
            MPI_ERR_BUFFER,
            "MPI_Bsend without an attached buffer (MPI_Buffer_attach, MPI_Comm_attach_buffer)",
        ));
    };
    pool.pending
        .retain_mut(|(q, _)| !matches!(q.test(), Ok(Some(_))));
    if addr == BUFFER_AUTOMATIC {
        return Ok(());
    }
    let used: usize = pool
        .pending
        .iter()
        .map(|(_, b)| b.len() + MPI_BSEND_OVERHEAD)
        .sum();
    if used + n + MPI_BSEND_OVERHEAD > cap {
        return Err(err(
            MPI_ERR_BUFFER,
            format!(
                "attached buffer of {cap} bytes has {} free, the message needs {}",
                cap.saturating_sub(used),
                n + MPI_BSEND_OVERHEAD
            ),
        ));
    }
    Ok(())
}

/// Files a started buffered send on `comm` with the copy it sends from.
pub(crate) fn track(s: &mut State, comm: Handle, q: RawRequest, copy: Vec<u8>) {
    s.bsend.pool_for(comm).pending.push((q, copy));
}

/// Which buffer a call names.
#[derive(Clone, Copy)]
enum Scope {
    Process,
    Comm(Handle),
    Session(Handle),
}

fn pool_mut(s: &mut State, scope: Scope) -> R<&mut Pool> {
    Ok(match scope {
        Scope::Process => &mut s.bsend.process,
        Scope::Comm(c) => {
            s.comm(c)?;
            s.bsend.comms.entry(c).or_default()
        }
        Scope::Session(x) => {
            crate::session::check(x)?;
            s.bsend.sessions.entry(x).or_default()
        }
    })
}

fn attach(scope: Scope, buffer: *mut c_void, size: i64) -> R<()> {
    let s = state("MPI_Buffer_attach")?;
    let p = pool_mut(s, scope)?;
    if p.attached.is_some() {
        return Err(err(MPI_ERR_BUFFER, "a buffer is already attached"));
    }
    if size < 0 {
        return Err(err(MPI_ERR_COUNT, format!("size {size} is negative")));
    }
    if buffer.is_null() && size > 0 {
        return Err(err(MPI_ERR_BUFFER, "buffer is NULL"));
    }
    let size = if buffer as usize == BUFFER_AUTOMATIC {
        0
    } else {
        size as usize
    };
    p.attached = Some((buffer as usize, size));
    Ok(())
}

/// Detaches after the buffer's sends left; (address, bytes) of what was attached
/// (MPI_BUFFER_AUTOMATIC and 0 for an automatic buffer).
fn detach(scope: Scope) -> R<(usize, usize)> {
    let what = "MPI_Buffer_detach";
    let Some(a) = pool_mut(state(what)?, scope)?.attached else {
        return Err(err(MPI_ERR_BUFFER, "no buffer is attached"));
    };
    flush_released(what, scope)?;
    pool_mut(state(what)?, scope)?.attached = None;
    Ok(a)
}

fn flush(scope: Scope) -> R<()> {
    flush_released("MPI_Buffer_flush", scope)
}

/// A request that is complete: the nonblocking flushes finish their work before they
/// return it (MPI-4.1 §3.6.2 allows it).
fn completed_request(request: *mut Handle) -> R<()> {
    if request.is_null() {
        return Err(err(MPI_ERR_ARG, "request is NULL"));
    }
    let s = state("MPI_Buffer_iflush")?;
    let raw = RawRequest::completed(&s.weft.world());
    let h = s.add_req(crate::state::ReqEntry::started(raw, false, MPI_COMM_WORLD));
    put!(request, h)
}

fn write_detached<T: TryFrom<usize>>(
    a: (usize, usize),
    buffer_addr: *mut c_void,
    size: *mut T,
) -> R<()> {
    put!(buffer_addr as *mut usize, a.0)?;
    let n = T::try_from(a.1)
        .map_err(|_| err(MPI_ERR_COUNT, format!("size {} does not fit an int", a.1)))?;
    put!(size, n)
}

/// Generates the attach, detach, flush and iflush calls of one buffer scope: `(int size
/// form, large-count form)` names per call.
macro_rules! buffer_calls {
    ($scope:expr, $on:expr, ($($arg:ident: $t:ty),*);
     $attach:ident, $attach_c:ident, $detach:ident, $detach_c:ident, $flush:ident, $iflush:ident;) => {
        #[doc = concat!("`", stringify!($attach), "` (MPI-4.1 §3.6.1).")]
        #[no_mangle]
        pub unsafe extern "C" fn $attach($($arg: $t,)* buffer: *mut c_void, size: c_int) -> c_int {
            let _entered = crate::threads::enter();
            finish($on, stringify!($attach), attach($scope, buffer, size as i64))
        }

        #[doc = concat!("`", stringify!($attach_c), "` (MPI-4.1 §3.6.1, large count).")]
        #[no_mangle]
        pub unsafe extern "C" fn $attach_c($($arg: $t,)* buffer: *mut c_void, size: i64) -> c_int {
            let _entered = crate::threads::enter();
            finish($on, stringify!($attach_c), attach($scope, buffer, size))
        }

        #[doc = concat!("`", stringify!($detach), "` (MPI-4.1 §3.6.1): waits for the buffer's messages to leave.")]
        #[no_mangle]
        pub unsafe extern "C" fn $detach($($arg: $t,)* buffer_addr: *mut c_void, size: *mut c_int) -> c_int {
            let _entered = crate::threads::enter();
            let r = detach($scope).and_then(|a| write_detached(a, buffer_addr, size));
            finish($on, stringify!($detach), r)
        }

        #[doc = concat!("`", stringify!($detach_c), "` (MPI-4.1 §3.6.1, large count).")]
        #[no_mangle]
        pub unsafe extern "C" fn $detach_c($($arg: $t,)* buffer_addr: *mut c_void, size: *mut i64) -> c_int {
            let _entered = crate::threads::enter();
            let r = detach($scope).and_then(|a| write_detached(a, buffer_addr, size));
            finish($on, stringify!($detach_c), r)
        }

        #[doc = concat!("`", stringify!($flush), "` (MPI-4.1 §3.6.2): waits for the buffer's messages to leave.")]
        #[no_mangle]
        pub unsafe extern "C" fn $flush($($arg: $t),*) -> c_int {
            let _entered = crate::threads::enter();
            finish($on, stringify!($flush), flush($scope))
        }

        #[doc = concat!("`", stringify!($iflush), "` (MPI-4.1 §3.6.2): flushes, then returns a completed request.")]
        #[no_mangle]
        pub unsafe extern "C" fn $iflush($($arg: $t,)* request: *mut Handle) -> c_int {
            let _entered = crate::threads::enter();
            let r = flush($scope).and_then(|_| completed_request(request));
            finish($on, stringify!($iflush), r)
        }
    };
}

buffer_calls! {
    Scope::Process, MPI_COMM_WORLD, ();
    MPI_Buffer_attach, MPI_Buffer_attach_c, MPI_Buffer_detach, MPI_Buffer_detach_c, MPI_Buffer_flush, MPI_Buffer_iflush;
}

buffer_calls! {
    Scope::Comm(comm), comm, (comm: Handle);
    MPI_Comm_attach_buffer, MPI_Comm_attach_buffer_c, MPI_Comm_detach_buffer, MPI_Comm_detach_buffer_c, MPI_Comm_flush_buffer, MPI_Comm_iflush_buffer;
}

buffer_calls! {
    Scope::Session(session), MPI_COMM_WORLD, (session: Handle);
    MPI_Session_attach_buffer, MPI_Session_attach_buffer_c, MPI_Session_detach_buffer, MPI_Session_detach_buffer_c, MPI_Session_flush_buffer, MPI_Session_iflush_buffer;
}
