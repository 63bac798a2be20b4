//! How a call made of several collective steps (window creation, file open and close)
//! waits for the other ranks: its steps are nonblocking collectives and agreements, each
//! polled by a [`Wait`] its caller supplies. The MPI layer's gives its thread lock back
//! between polls under MPI_THREAD_MULTIPLE, so other threads of the process call MPI while
//! this one waits. The steps are the same nonblocking ones whichever
//! wait the caller gives, so ranks that wait differently (asked for different thread
//! levels) still meet.
//!
//! Depends on the runtime's communicators and collectives only.

use crate::coll::CollRequest;
use crate::comm::Comm;
use weft_core::Result;

/// Called with one poll, which drives progress and says whether what it waits for is done,
/// until the poll says so or fails.
pub type Wait<'w> = &'w mut dyn FnMut(&mut dyn FnMut() -> Result<bool>) -> Result<()>;

/// The nonblocking collective `q` waited for by `wait`.
pub(crate) fn coll_waited(wait: Wait<'_>, mut q: CollRequest<'_>) -> Result<()> {
    wait(&mut || q.test())
}

/// Whether `ok` holds on every member of `comm` (a nonblocking minimum waited by `wait`).
pub(crate) fn min_waited(comm: &Comm, ok: bool, wait: Wait<'_>) -> Result<bool> {
    let send = [ok as u32];
    let mut all = [0u32];
    // SAFETY: the request is waited for (or dropped, which waits) before the buffers go.
    coll_waited(wait, unsafe {
        comm.iallreduce(&send, &mut all, &crate::coll::Op::Min)?
    })?;
    Ok(all[0] == 1)
}

/// A private duplicate of `comm`: a nonblocking duplication (whose agreement keeps
/// concurrent creations of other threads apart) waited for by `wait`.
pub(crate) fn dup_waited(comm: &Comm, wait: Wait<'_>) -> Result<Comm> {
    let mut req = comm.idup()?;
    let mut made = None;
    wait(&mut || {
        made = req.test()?;
        Ok(made.is_some())
    })?;
    Ok(made.expect("the wait returned once the duplicate was made"))
}
