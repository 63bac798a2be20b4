//! Unscoped nonblocking point-to-point requests for the C interfaces (MPI, OpenSHMEM).
//!
//! The Rust API ties every nonblocking operation to a [`crate::Scope`] so no buffer can be
//! freed while the engine still reads or writes it. A C caller has no scopes: MPI makes the
//! program promise that a buffer outlives its request. The functions here take raw pointers
//! and are `unsafe` for exactly that promise; everything else (argument checks, matching,
//! protocols) is the same code the safe API runs.
//!
//! Depends on the engine and communicators only; knows nothing of the C ABI above it.

use crate::comm::Comm;
use crate::engine::{Engine, ReqId, Status};
use crate::matching::Pattern;
use std::cell::RefCell;
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result, Tag};
use weft_transport::buf::{RawBuf, RawBufMut};

/// A nonblocking send or receive started through [`Comm::raw_isend`] or
/// [`Comm::raw_irecv`]. Dropping a request that is still in flight cancels it if it is an
/// unmatched receive and then waits for it, so the engine never keeps a pointer into a
/// buffer the caller believes released.
pub struct RawRequest {
    engine: Rc<RefCell<Engine>>,
    /// `None` once finished, or when the operation completed when it was started.
    id: Option<ReqId>,
    /// The status of the completion, kept also when it failed (see [`RawRequest::last_status`]).
    last_status: Status,
    /// A request created complete reports `last_status` at its first completion (an
    /// empty one after it).
    preset: bool,
}

impl std::fmt::Debug for RawRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RawRequest({:?})", self.id)
    }
}

impl Comm {
    /// Starts sending the `len` bytes at `ptr` to rank `dst` with `tag` (MPI_Isend).
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `len` bytes, and the memory must stay alive and
    /// unmodified until the request has completed (test or wait returned it) or been dropped.
    pub unsafe fn raw_isend(
        &self,
        ptr: *const u8,
        len: usize,
        dst: u32,
        tag: Tag,
    ) -> Result<RawRequest> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.raw_isend_mode(ptr, len, dst, tag, false) }
    }

    /// Starts a synchronous send (MPI_Issend): it completes only once a receive has matched
    /// it, whatever its size.
    ///
    /// # Safety
    /// As [`Comm::raw_isend`].
    pub unsafe fn raw_issend(
        &self,
        ptr: *const u8,
        len: usize,
        dst: u32,
        tag: Tag,
    ) -> Result<RawRequest> {
        // SAFETY: the caller's contract is ours.
        unsafe { self.raw_isend_mode(ptr, len, dst, tag, true) }
    }

    /// # Safety
    /// As [`Comm::raw_isend`].
    unsafe fn raw_isend_mode(
        &self,
        ptr: *const u8,
        len: usize,
        dst: u32,
        tag: Tag,
        synchronous: bool,
    ) -> Result<RawRequest> {
        let what = if synchronous { "issend" } else { "isend" };
        self.check_send_tag(tag, what)?;
        let w = self.check_dest(dst, if synchronous { "issend to" } else { "isend to" })?;
        // SAFETY: the caller promises `ptr` is readable for `len` bytes for the request's life.
        let bytes = unsafe { byte_slice(ptr, len) };
        let mut e = self.engine.borrow_mut();
        let data = RawBuf::new(bytes);
        let id = e.start_send_mode(
            data,
            w,
            self.data.rank,
            self.data.ctx,
            tag,
            synchronous,
            false,
        )?;
        drop(e);
        Ok(RawRequest {
            engine: self.engine.clone(),
            id,
            last_status: Status::default(),
            preset: false,
        })
    }

    /// Starts receiving at most `len` bytes into `ptr` from `src` (or `ANY_SOURCE`) with `tag`
    /// (or `ANY_TAG`) (MPI_Irecv).
    ///
    /// # Safety
    /// `ptr` must be valid for writes of `len` bytes, not read or written by anyone else, and
    /// stay alive until the request has completed or been dropped.
    pub unsafe fn raw_irecv(
        &self,
        ptr: *mut u8,
        len: usize,
        src: i32,
        tag: Tag,
    ) -> Result<RawRequest> {
        let (pattern, src_world): (Pattern, Option<u32>) =
            self.recv_pattern(src, tag, self.data.ctx, "irecv from")?;
        // SAFETY: the caller promises `ptr` is writable and unaliased for the request's life.
        let bytes = unsafe { byte_slice_mut(ptr, len) };
        let id = self.engine.borrow_mut().start_recv(
            RawBufMut::new(bytes),
            pattern,
            src_world,
            self.peers(),
        )?;
        Ok(RawRequest {
            engine: self.engine.clone(),
            id: Some(id),
            last_status: Status::default(),
            preset: false,
        })
    }

    /// Receives at most `len` bytes into `ptr` from `src` (or `ANY_SOURCE`) with `tag` (or
    /// `ANY_TAG`) and returns once they have arrived (MPI_Recv): the safe API's blocking
    /// receive, with no request object in between. `status` is written once the receive has
    /// started, also when it then fails: a truncated message still names its source, tag and
    /// length (MPI-4.1 §3.2.5).
    ///
    /// # Safety
    /// `ptr` must be valid for writes of `len` bytes and not read or written by anyone else
    /// until this returns.
    #[inline]
    pub unsafe fn raw_recv(
        &self,
        ptr: *mut u8,
        len: usize,
        src: i32,
        tag: Tag,
        status: &mut Status,
    ) -> Result<()> {
        // SAFETY: the caller promises `ptr` is writable and unaliased during the call.
        let bytes = unsafe { byte_slice_mut(ptr, len) };
        self.recv_status(bytes, src, tag, self.data.ctx, status)
    }

    /// Sends `slen` bytes at `sptr` to `dst` with `send_tag` while receiving at most `rlen`
    /// bytes into `rptr` from `src` with `recv_tag` (MPI_Sendrecv); `status` as in
    /// [`Comm::raw_recv`].
    ///
    /// # Safety
    /// `sptr` must be valid for reads of `slen` bytes and `rptr` for writes of `rlen` bytes,
    /// the receive buffer unaliased (it may not overlap the send buffer), until this returns.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn raw_sendrecv(
        &self,
        sptr: *const u8,
        slen: usize,
        dst: u32,
        send_tag: Tag,
        rptr: *mut u8,
        rlen: usize,
        src: i32,
        recv_tag: Tag,
        status: &mut Status,
    ) -> Result<()> {
        self.check_send_tag(send_tag, "sendrecv")?;
        // SAFETY: the caller's contract: readable, resp. writable and unaliased, buffers.
        let (sbytes, rbytes) = unsafe { (byte_slice(sptr, slen), byte_slice_mut(rptr, rlen)) };
        self.sendrecv_status(
            sbytes,
            dst,
            send_tag,
            rbytes,
            src,
            recv_tag,
            self.data.ctx,
            status,
        )
    }

    /// Starts the send of a partitioned operation (MPI-4.1 ch. 4): `len` bytes to `dst`
    /// with the program's `tag`, on the communicator's collective context under a tag range
    /// of its own, so it matches only a partitioned receive ([`Comm::raw_partitioned_irecv`])
    /// and never a point-to-point or collective message. Tags that differ by a multiple of
    /// 2^28 share a range slot: two partitioned operations with such tags between the same
    /// ranks must not be in flight at once.
    ///
    /// # Safety
    /// As [`Comm::raw_isend`].
    pub unsafe fn raw_partitioned_isend(
        &self,
        ptr: *const u8,
        len: usize,
        dst: u32,
        tag: Tag,
    ) -> Result<RawRequest> {
        self.check_send_tag(tag, "partitioned send")?;
        let w = self.check_dest(dst, "partitioned send to")?;
        // SAFETY: the caller promises `ptr` is readable for `len` bytes for the request's life.
        let bytes = unsafe { byte_slice(ptr, len) };
        let id = self.engine.borrow_mut().start_send_mode(
            RawBuf::new(bytes),
            w,
            self.data.rank,
            self.data.ctx + 1,
            partitioned_tag(tag),
            false,
            false,
        )?;
        Ok(RawRequest {
            engine: self.engine.clone(),
            id,
            last_status: Status::default(),
            preset: false,
        })
    }

    /// Starts the receive of a partitioned operation from `src` with `tag` (no wildcards):
    /// the counterpart of [`Comm::raw_partitioned_isend`].
    ///
    /// # Safety
    /// As [`Comm::raw_irecv`].
    pub unsafe fn raw_partitioned_irecv(
        &self,
        ptr: *mut u8,
        len: usize,
        src: i32,
        tag: Tag,
    ) -> Result<RawRequest> {
        if src < 0 || tag < 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "partitioned receive from {src} with tag {tag}: partitioned operations take no wildcards"
                ),
            ));
        }
        self.check_send_tag(tag, "partitioned receive")?;
        let (pattern, src_world): (Pattern, Option<u32>) = self.recv_pattern(
            src,
            partitioned_tag(tag),
            self.data.ctx + 1,
            "partitioned receive from",
        )?;
        // SAFETY: the caller promises `ptr` is writable and unaliased for the request's life.
        let bytes = unsafe { byte_slice_mut(ptr, len) };
        let id = self.engine.borrow_mut().start_recv(
            RawBufMut::new(bytes),
            pattern,
            src_world,
            self.peers(),
        )?;
        Ok(RawRequest {
            engine: self.engine.clone(),
            id: Some(id),
            last_status: Status::default(),
            preset: false,
        })
    }

    /// Moves every pending operation of this process forward once; true if anything moved.
    /// C layers call it from their test functions so polling loops make progress.
    pub fn raw_progress(&self) -> bool {
        self.engine.borrow_mut().progress()
    }
}

/// A shared slice over C memory; an empty slice for a zero length (C may pass NULL then).
///
/// # Safety
/// For `len > 0`, `ptr` must be valid for reads of `len` bytes for the slice's use.
unsafe fn byte_slice<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || ptr.is_null() {
        return &[];
    }
    // SAFETY: non-null and readable for `len` bytes (the caller's contract).
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// A mutable slice over C memory; an empty slice for a zero length.
///
/// # Safety
/// For `len > 0`, `ptr` must be valid for writes of `len` bytes and unaliased while used.
unsafe fn byte_slice_mut<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 || ptr.is_null() {
        return &mut [];
    }
    // SAFETY: non-null, writable and unaliased for `len` bytes (the caller's contract).
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

impl RawRequest {
    /// A request that has already completed with an empty status (MPI_PROC_NULL peers).
    pub fn completed(comm: &Comm) -> RawRequest {
        RawRequest {
            engine: comm.engine.clone(),
            id: None,
            last_status: Status::default(),
            preset: false,
        }
    }

    /// A request that has already completed with `status` (a message received before the
    /// request was made, as MPI_Imrecv's): its first completion reports that status.
    pub fn completed_with(comm: &Comm, status: Status) -> RawRequest {
        RawRequest {
            engine: comm.engine.clone(),
            id: None,
            last_status: status,
            preset: true,
        }
    }

    /// True once the operation has completed; does not poll.
    pub fn is_done(&self) -> bool {
        self.id.is_none_or(|id| self.engine.borrow().is_done(id))
    }

    /// Completes the request if it is done, polling once first (MPI_Test): `Ok(Some(status))`
    /// then (the request is finished and later calls return an empty status), `Ok(None)`
    /// while it is in flight.
    pub fn test(&mut self) -> Result<Option<Status>> {
        let Some(id) = self.id else {
            return Ok(Some(self.take_preset()));
        };
        let mut e = self.engine.borrow_mut();
        if !e.is_done(id) {
            e.progress();
            if !e.is_done(id) {
                return Ok(None);
            }
        }
        let r = e.outcome(id);
        self.last_status = e.status_of(id);
        e.free_req(id);
        self.id = None;
        r.map(Some)
    }

    /// What a completion of a request without an operation reports: the status it was
    /// created with the first time, an empty one after.
    fn take_preset(&mut self) -> Status {
        if std::mem::take(&mut self.preset) {
            self.last_status
        } else {
            Status::default()
        }
    }

    /// Waits for completion and finishes the request (MPI_Wait).
    pub fn wait(&mut self) -> Result<Status> {
        let Some(id) = self.id else {
            return Ok(self.take_preset());
        };
        let mut e = self.engine.borrow_mut();
        let r = e.wait(id);
        self.last_status = e.status_of(id);
        e.free_req(id);
        self.id = None;
        r
    }

    /// The status of the completion that `test` or `wait` reported, also when it reported an
    /// error: after a truncation it names the source and tag of the message (MPI-4.1 §3.2.5
    /// fills them in for MPI_ERR_TRUNCATE).
    pub fn last_status(&self) -> Status {
        self.last_status
    }

    /// The status of the operation if it has completed, without finishing the request
    /// (MPI_Request_get_status); `None` while it is in flight. Does not poll.
    pub fn peek_status(&self) -> Option<Status> {
        match self.id {
            None => Some(self.last_status),
            Some(id) => {
                let e = self.engine.borrow();
                e.is_done(id).then(|| e.status_of(id))
            }
        }
    }

    /// Cancels a receive that has not matched yet (MPI_Cancel); true if it was cancelled.
    /// Completing a cancelled receive gives a status with `cancelled` set.
    pub fn cancel(&self) -> bool {
        self.id
            .is_some_and(|id| self.engine.borrow_mut().cancel_recv(id))
    }
}

impl Drop for RawRequest {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            let mut e = self.engine.borrow_mut();
            e.cancel_recv(id);
            let _ = e.wait(id);
            e.free_req(id);
        }
    }
}

/// The tags of partitioned operations on the collective context: above every collective
/// tag (below 2^30), below the nonblocking duplications' (0x6000_0000 and up).
const TAG_PARTITIONED: i32 = 0x5000_0000;

fn partitioned_tag(tag: Tag) -> Tag {
    TAG_PARTITIONED | (tag & 0x0fff_ffff)
}

/// Drives progress until one of `reqs` has completed and returns its index (MPI_Waitany).
/// `None` entries are skipped; all-`None` (or an empty slice) is an error.
pub fn wait_any(reqs: &[Option<&RawRequest>]) -> Result<usize> {
    let Some(first) = reqs.iter().flatten().next() else {
        return Err(Error::new(
            ErrorKind::InvalidRequest,
            "wait_any on no active requests",
        ));
    };
    if let Some(i) = reqs.iter().position(|r| r.is_some_and(|r| r.id.is_none())) {
        return Ok(i);
    }
    let waiting = first.engine.clone();
    let mut e = waiting.borrow_mut();
    let mut found = None;
    // A request of another of this process's instances (a spawn's universe) is asked of its
    // own engine: the wait's progress polls that one too.
    e.wait_p2p_until(|e| {
        found = reqs.iter().position(|r| {
            r.is_some_and(|r| {
                r.id.is_some_and(|id| {
                    if Rc::ptr_eq(&r.engine, &waiting) {
                        e.is_done(id)
                    } else {
                        r.engine.try_borrow().is_ok_and(|o| o.is_done(id))
                    }
                })
            })
        });
        found.is_some()
    });
    Ok(found.expect("wait_any woke without a completion"))
}

/// Drives progress until `done()` holds (used by C layers waiting on several requests or
/// on their own conditions). `done` must not touch the engine. The wait spins and yields
/// but never sleeps (`WEFT_BLOCK`): the condition may come true through something that
/// wakes no sleeper (a lock word a peer writes).
pub fn wait_until(comm: &Comm, mut done: impl FnMut() -> bool) {
    comm.engine.borrow_mut().wait_p2p_until_polled(|_| done());
}

#[cfg(test)]
mod tests {
    use crate::{init_with, Config, Launch};

    #[test]
    fn isend_irecv_to_self_and_cancel() {
        let weft = init_with(
            Launch {
                rank: 0,
                size: 1,
                job_id: "raw-test".into(),
                node_id: "n".into(),
                store: None,
            },
            Config::from_vars(&[]).unwrap(),
        )
        .unwrap();
        let world = weft.world();
        let mut got = [0u32; 4];
        let data = [1u32, 2, 3, 4];
        // SAFETY: both buffers live until the requests are waited below.
        let mut r = unsafe { world.raw_irecv(got.as_mut_ptr() as *mut u8, 16, 0, 5) }.unwrap();
        assert!(!r.is_done());
        // SAFETY: as above.
        let mut s = unsafe { world.raw_isend(data.as_ptr() as *const u8, 16, 0, 5) }.unwrap();
        s.wait().unwrap();
        let st = r.wait().unwrap();
        assert_eq!((st.source, st.tag, st.bytes), (0, 5, 16));
        assert_eq!(got, data);
        // A receive nobody sends to can be cancelled, and says so.
        let mut one = [0u8; 1];
        // SAFETY: `one` outlives the request.
        let mut c = unsafe { world.raw_irecv(one.as_mut_ptr(), 1, 0, 9) }.unwrap();
        assert!(super::wait_any(&[None]).is_err());
        assert!(c.cancel());
        assert!(c.test().unwrap().unwrap().cancelled);
        // A bad tag is refused before anything starts.
        // SAFETY: zero-length send reads nothing.
        assert!(unsafe { world.raw_isend(std::ptr::null(), 0, 0, -5) }.is_err());
    }

    #[test]
    fn blocking_recv_and_sendrecv_report_status_also_when_truncated() {
        let weft = init_with(
            Launch {
                rank: 0,
                size: 1,
                job_id: "raw-recv-test".into(),
                node_id: "n".into(),
                store: None,
            },
            Config::from_vars(&[]).unwrap(),
        )
        .unwrap();
        let world = weft.world();
        let data = [7u8; 16];
        let mut got = [0u8; 16];
        let mut st = crate::Status::default();
        // SAFETY: `data` outlives the send request, waited below.
        let mut s = unsafe { world.raw_isend(data.as_ptr(), 16, 0, 4) }.unwrap();
        // SAFETY: `got` is writable for 16 bytes during the call.
        unsafe { world.raw_recv(got.as_mut_ptr(), 16, -1, -1, &mut st) }.unwrap();
        s.wait().unwrap();
        assert_eq!((st.source, st.tag, st.bytes, got), (0, 4, 16, data));
        // A longer message than the buffer: truncation, and the status still names it.
        // SAFETY: as above.
        let mut s = unsafe { world.raw_isend(data.as_ptr(), 16, 0, 6) }.unwrap();
        let mut st = crate::Status::default();
        // SAFETY: `got` is writable for 8 bytes.
        let e = unsafe { world.raw_recv(got.as_mut_ptr(), 8, 0, 6, &mut st) }.unwrap_err();
        s.wait().unwrap();
        assert_eq!(e.kind(), crate::ErrorKind::Truncate);
        assert_eq!((st.source, st.tag, st.bytes), (0, 6, 16));
        // Sendrecv to self: the send's bytes arrive, and truncation is reported the same way.
        let mut st = crate::Status::default();
        let mut back = [0u8; 16];
        // SAFETY: both buffers live through the call and do not overlap.
        unsafe {
            world.raw_sendrecv(
                data.as_ptr(),
                16,
                0,
                9,
                back.as_mut_ptr(),
                16,
                0,
                9,
                &mut st,
            )
        }
        .unwrap();
        assert_eq!((st.source, st.tag, st.bytes, back), (0, 9, 16, data));
        let mut st = crate::Status::default();
        // SAFETY: as above.
        let e = unsafe {
            world.raw_sendrecv(data.as_ptr(), 16, 0, 9, back.as_mut_ptr(), 4, 0, 9, &mut st)
        }
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Truncate);
        assert_eq!((st.source, st.tag, st.bytes), (0, 9, 16));
        // Bad arguments are refused before anything starts.
        // SAFETY: nothing is read or written for a refused call.
        assert!(unsafe { world.raw_recv(got.as_mut_ptr(), 1, 3, 0, &mut st) }.is_err());
        // SAFETY: as above.
        assert!(unsafe {
            world.raw_sendrecv(data.as_ptr(), 1, 0, -4, got.as_mut_ptr(), 1, 0, 0, &mut st)
        }
        .is_err());
    }
}
