//! Point-to-point operations on a communicator: blocking and nonblocking send and receive,
//! probe, and sendrecv, with argument checks that name the rank, peer and value at fault.
//!
//! Nonblocking operations live inside a [`Scope`] (like `std::thread::scope`): buffers are
//! borrowed for the scope, and every operation still pending when the scope ends is finished
//! there (unmatched receives are cancelled), so no operation can outlive its buffer.

use crate::comm::Comm;
use crate::engine::{Engine, ReqId, Status};
use crate::matching::Pattern;
use bytemuck::Pod;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result, Tag, ANY_SOURCE, ANY_TAG, TAG_UB};
use weft_transport::buf::{RawBuf, RawBufMut};

impl Comm {
    // The checks are inline and their errors out of line (cold): the small-message path
    // runs a few compares and builds a message only when one fails.

    #[inline]
    pub(crate) fn check_dest(&self, dst: u32, op: &str) -> Result<u32> {
        self.check_open()?;
        match self.peers().get(dst as usize) {
            Some(&w) => Ok(w),
            None => Err(self.bad_rank(i64::from(dst), op, "")),
        }
    }

    /// The error of an invalid peer rank `peer` given to `op`; `or` adds what else was
    /// accepted.
    #[cold]
    #[inline(never)]
    fn bad_rank(&self, peer: i64, op: &str, or: &str) -> Error {
        Error::new(
            ErrorKind::InvalidRank,
            format!(
                "rank {} {op} rank {peer}: communicator {} has {}ranks 0..{}{or}",
                self.rank(),
                self.name(),
                if self.is_inter() { "remote " } else { "" },
                self.peers().len()
            ),
        )
    }

    /// The error of an invalid tag given to `op`; `or` adds what else was accepted.
    #[cold]
    #[inline(never)]
    fn bad_tag(&self, tag: Tag, op: &str, or: &str) -> Error {
        Error::new(
            ErrorKind::InvalidTag,
            format!(
                "rank {} {op}: tag {tag} is invalid (tags are 0..={TAG_UB}{or})",
                self.rank()
            ),
        )
    }

    #[inline]
    pub(crate) fn check_send_tag(&self, tag: Tag, op: &str) -> Result<()> {
        if !(0..=TAG_UB).contains(&tag) {
            return Err(self.bad_tag(tag, op, ""));
        }
        Ok(())
    }

    /// Validates a receive's source and tag; returns the pattern and the source's world rank.
    #[inline]
    pub(crate) fn recv_pattern(
        &self,
        src: i32,
        tag: Tag,
        ctx: u32,
        op: &str,
    ) -> Result<(Pattern, Option<u32>)> {
        self.check_open()?;
        if tag < 0 && tag != ANY_TAG {
            return Err(self.bad_tag(tag, op, " or ANY_TAG"));
        }
        let src_world = if src == ANY_SOURCE {
            None
        } else if src >= 0 && (src as usize) < self.peers().len() {
            Some(self.peers()[src as usize])
        } else {
            return Err(self.bad_rank(i64::from(src), op, " (or ANY_SOURCE)"));
        };
        Ok((Pattern { ctx, src, tag }, src_world))
    }

    /// Sends `buf` to rank `dst` with `tag` and returns when the buffer may be reused
    /// (MPI_Send). Messages up to the eager limit return at once.
    pub fn send<T: Pod>(&self, buf: &[T], dst: u32, tag: Tag) -> Result<()> {
        self.check_send_tag(tag, "send")?;
        self.send_ctx(bytemuck::cast_slice(buf), dst, tag, self.data.ctx, false)
    }

    /// Sends `buf` to rank `dst` with `tag` and returns only once a matching receive has
    /// taken it (MPI_Ssend), whatever the size.
    pub fn ssend<T: Pod>(&self, buf: &[T], dst: u32, tag: Tag) -> Result<()> {
        self.check_send_tag(tag, "ssend")?;
        self.send_ctx(bytemuck::cast_slice(buf), dst, tag, self.data.ctx, true)
    }

    /// A blocking send on context `ctx`; `synchronous` makes it complete only once matched.
    pub(crate) fn send_ctx(
        &self,
        bytes: &[u8],
        dst: u32,
        tag: Tag,
        ctx: u32,
        synchronous: bool,
    ) -> Result<()> {
        let w = self.check_dest(dst, if synchronous { "ssend to" } else { "send to" })?;
        let mut e = self.engine.borrow_mut();
        let data = RawBuf::new(bytes);
        match e.start_send_mode(data, w, self.data.rank, ctx, tag, synchronous, false)? {
            None => {}
            Some(id) => finish(&mut e, id).map(|_| ())?,
        }
        Ok(())
    }

    /// Receives into `buf` a message from `src` (or [`ANY_SOURCE`]) with `tag` (or
    /// [`ANY_TAG`]) (MPI_Recv). A message longer than `buf` is an error naming both sizes.
    pub fn recv<T: Pod>(&self, buf: &mut [T], src: i32, tag: Tag) -> Result<Status> {
        self.recv_ctx(bytemuck::cast_slice_mut(buf), src, tag, self.data.ctx)
    }

    /// Blocking receives of this rank (any communicator) whose message was already here, in
    /// its sender's ring or taken off it by a progress pass, and was received without a
    /// request; for tests and tools that check which path a receive took.
    pub fn p2p_received_at_once(&self) -> u64 {
        self.engine.borrow().p2p_received_at_once()
    }

    pub(crate) fn recv_ctx(
        &self,
        bytes: &mut [u8],
        src: i32,
        tag: Tag,
        ctx: u32,
    ) -> Result<Status> {
        let mut status = Status::default();
        self.recv_status(bytes, src, tag, ctx, &mut status)?;
        Ok(status)
    }

    /// A blocking receive on context `ctx` that writes the message's status into `status`
    /// also when the receive fails once started: a truncated message still names its source,
    /// tag and length (MPI-4.1 §3.2.5 fills them in for MPI_ERR_TRUNCATE).
    pub(crate) fn recv_status(
        &self,
        bytes: &mut [u8],
        src: i32,
        tag: Tag,
        ctx: u32,
        status: &mut Status,
    ) -> Result<()> {
        let (pattern, src_world) = self.recv_pattern(src, tag, ctx, "receive from")?;
        let mut e = self.engine.borrow_mut();
        // A message already here from a named rank of this node is taken without a request
        // (Engine::recv_p2p_now).
        if let Some(w) = src_world {
            if let Some(st) = e.recv_p2p_now(bytes, &pattern, w) {
                *status = st;
                return Ok(());
            }
        }
        let id = e.start_recv(RawBufMut::new(bytes), pattern, src_world, self.peers())?;
        finish_status(&mut e, id, status)
    }

    /// Sends `sendbuf` to `dst` and receives into `recvbuf` from `src` at the same time, so
    /// pairs exchanging data cannot deadlock (MPI_Sendrecv).
    pub fn sendrecv<S: Pod, R: Pod>(
        &self,
        sendbuf: &[S],
        dst: u32,
        send_tag: Tag,
        recvbuf: &mut [R],
        src: i32,
        recv_tag: Tag,
    ) -> Result<Status> {
        self.check_send_tag(send_tag, "sendrecv")?;
        self.sendrecv_bytes(
            bytemuck::cast_slice(sendbuf),
            dst,
            send_tag,
            bytemuck::cast_slice_mut(recvbuf),
            src,
            recv_tag,
            self.data.ctx,
        )
    }

    /// Sendrecv of bytes on context `ctx`: posts the receive, starts the send, waits for both.
    /// The receive is cancelled and finished if the send cannot start, so no request keeps a
    /// pointer to `recvbuf` after this returns.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sendrecv_bytes(
        &self,
        sendbuf: &[u8],
        dst: u32,
        send_tag: Tag,
        recvbuf: &mut [u8],
        src: i32,
        recv_tag: Tag,
        ctx: u32,
    ) -> Result<Status> {
        let mut status = Status::default();
        self.sendrecv_status(
            sendbuf,
            dst,
            send_tag,
            recvbuf,
            src,
            recv_tag,
            ctx,
            &mut status,
        )?;
        Ok(status)
    }

    /// [`Comm::sendrecv_bytes`] that writes the receive's status into `status` also when
    /// the receive fails once started (a truncated message names its source and tag).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sendrecv_status(
        &self,
        sendbuf: &[u8],
        dst: u32,
        send_tag: Tag,
        recvbuf: &mut [u8],
        src: i32,
        recv_tag: Tag,
        ctx: u32,
        status: &mut Status,
    ) -> Result<()> {
        let w = self.check_dest(dst, "sendrecv to")?;
        let (pattern, src_world) = self.recv_pattern(src, recv_tag, ctx, "sendrecv from")?;
        let mut e = self.engine.borrow_mut();
        let rid = e.start_recv(RawBufMut::new(recvbuf), pattern, src_world, self.peers())?;
        let sid = match e.start_send(RawBuf::new(sendbuf), w, self.data.rank, ctx, send_tag) {
            Ok(s) => s,
            Err(err) => {
                e.cancel_recv(rid);
                e.wait(rid).ok();
                e.free_req(rid);
                return Err(err);
            }
        };
        let send_result = match sid {
            Some(id) => finish(&mut e, id).map(|_| ()),
            None => Ok(()),
        };
        // Not `finish_status`: that one is the blocking receive's alone, so profiles tell the
        // two apart (bench/mpi_overhead.sh --callgrind subtracts its wait).
        let received = e.wait(rid).map(|_| ());
        *status = e.status_of(rid);
        e.free_req(rid);
        send_result?;
        received
    }

    /// Internal sendrecv on an explicit context (collectives, communicator creation).
    pub(crate) fn sendrecv_ctx(
        &self,
        sendbuf: &[u8],
        dst: u32,
        recvbuf: &mut [u8],
        src: u32,
        tag: Tag,
        ctx: u32,
    ) -> Result<Status> {
        self.sendrecv_bytes(sendbuf, dst, tag, recvbuf, src as i32, tag, ctx)
    }

    /// Waits for a message matching `src` and `tag` and returns its status without receiving
    /// it (MPI_Probe).
    pub fn probe(&self, src: i32, tag: Tag) -> Result<Status> {
        let (pattern, src_world) = self.recv_pattern(src, tag, self.data.ctx, "probe for")?;
        let mut e = self.engine.borrow_mut();
        // A zero-byte receive that never matches stands in for the probe during failure checks.
        let mut found = e.iprobe(&pattern);
        if found.is_none() {
            let guard = e.start_recv(
                RawBufMut::new(&mut []),
                Pattern { tag: -2, ..pattern },
                src_world,
                self.peers(),
            )?;
            e.wait_p2p_until(|e| e.is_done(guard) || e.peek(&pattern).is_some());
            e.cancel_recv(guard);
            let failed = e.outcome(guard);
            e.free_req(guard);
            failed?;
            found = e.peek(&pattern);
        }
        Ok(found.expect("probe woke without a message"))
    }

    /// The status of a waiting message matching `src` and `tag`, if there is one now
    /// (MPI_Iprobe).
    pub fn iprobe(&self, src: i32, tag: Tag) -> Result<Option<Status>> {
        let (pattern, _) = self.recv_pattern(src, tag, self.data.ctx, "iprobe for")?;
        Ok(self.engine.borrow_mut().iprobe(&pattern))
    }

    /// Runs `f` with a scope for nonblocking operations; see [`Scope`].
    pub fn scope<'env, R>(
        &self,
        f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
    ) -> R {
        scope_on(self.engine.clone(), f)
    }

    /// Starts sending `buf` to `dst` (MPI_Isend). `buf` stays borrowed until the scope ends.
    pub fn isend<'scope, T: Pod>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope [T],
        dst: u32,
        tag: Tag,
    ) -> Result<Request<'scope>> {
        scope.check_engine(self)?;
        self.check_send_tag(tag, "isend")?;
        let w = self.check_dest(dst, "isend to")?;
        let started = self.engine.borrow_mut().start_send(
            RawBuf::new(bytemuck::cast_slice(buf)),
            w,
            self.data.rank,
            self.data.ctx,
            tag,
        )?;
        Ok(scope.register(started))
    }

    /// Starts receiving into `buf` (MPI_Irecv). `buf` stays borrowed until the scope ends.
    pub fn irecv<'scope, T: Pod>(
        &self,
        scope: &'scope Scope<'scope, '_>,
        buf: &'scope mut [T],
        src: i32,
        tag: Tag,
    ) -> Result<Request<'scope>> {
        scope.check_engine(self)?;
        let (pattern, src_world) = self.recv_pattern(src, tag, self.data.ctx, "irecv from")?;
        let id = self.engine.borrow_mut().start_recv(
            RawBufMut::new(bytemuck::cast_slice_mut(buf)),
            pattern,
            src_world,
            self.peers(),
        )?;
        Ok(scope.register(Some(id)))
    }
}

/// Waits for `id`, frees it and returns its outcome.
fn finish(e: &mut Engine, id: ReqId) -> Result<Status> {
    let r = e.wait(id);
    e.free_req(id);
    r
}

/// Waits for `id`, writes its status into `status` (also when it failed: the engine knows
/// the matched message's source, tag and length), frees it and returns its outcome. Kept out
/// of line, like `finish`, so a profile names the blocking receive's wait.
#[inline(never)]
fn finish_status(e: &mut Engine, id: ReqId, status: &mut Status) -> Result<()> {
    let r = e.wait(id);
    *status = e.status_of(id);
    e.free_req(id);
    r.map(|_| ())
}

/// A region in which nonblocking operations may borrow buffers; see [`Comm::scope`].
pub struct Scope<'scope, 'env: 'scope> {
    inner: ScopeInner,
    _scope: PhantomData<&'scope mut &'scope ()>,
    _env: PhantomData<&'env mut &'env ()>,
}

fn scope_on<'env, R>(
    engine: Rc<RefCell<Engine>>,
    f: impl for<'scope> FnOnce(&'scope Scope<'scope, 'env>) -> R,
) -> R {
    let scope = Scope {
        inner: ScopeInner {
            engine,
            pending: RefCell::new(Vec::new()),
        },
        _scope: PhantomData,
        _env: PhantomData,
    };
    // The guard finishes leftover operations even if `f` panics, so no buffer is written
    // after its borrow ends.
    struct Finish<'a, 's, 'e>(&'a Scope<'s, 'e>);
    impl Drop for Finish<'_, '_, '_> {
        fn drop(&mut self) {
            self.0.inner.finish_pending();
        }
    }
    let guard = Finish(&scope);
    let r = f(guard.0);
    drop(guard);
    r
}

/// The part of a scope that requests point back to.
struct ScopeInner {
    engine: Rc<RefCell<Engine>>,
    /// Requests started in this scope and not yet consumed by a wait or test.
    pending: RefCell<Vec<ReqId>>,
}

impl ScopeInner {
    fn forget(&self, id: ReqId) {
        let mut p = self.pending.borrow_mut();
        if let Some(i) = p.iter().position(|&x| x == id) {
            p.swap_remove(i);
        }
    }

    fn finish_pending(&self) {
        let ids: Vec<ReqId> = std::mem::take(&mut *self.pending.borrow_mut());
        let mut e = self.engine.borrow_mut();
        for id in ids {
            e.cancel_recv(id);
            let _ = e.wait(id);
            e.free_req(id);
        }
    }
}

impl<'scope> Scope<'scope, '_> {
    fn check_engine(&self, comm: &Comm) -> Result<()> {
        if Rc::ptr_eq(&self.inner.engine, &comm.engine) {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::InvalidArgument,
                "a scope from another weft instance was used",
            ))
        }
    }

    fn register(&'scope self, id: Option<ReqId>) -> Request<'scope> {
        if let Some(id) = id {
            self.inner.pending.borrow_mut().push(id);
        }
        Request {
            id,
            scope: &self.inner,
        }
    }

    /// Waits for all `reqs` (MPI_Waitall); returns their statuses in order, or the first error.
    pub fn wait_all(&self, reqs: Vec<Request<'scope>>) -> Result<Vec<Status>> {
        let mut out = Vec::with_capacity(reqs.len());
        let mut first_err = None;
        for r in reqs {
            match r.wait() {
                Ok(s) => out.push(s),
                Err(e) => {
                    out.push(Status::default());
                    first_err.get_or_insert(e);
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// Waits until one of `reqs` completes (MPI_Waitany); removes it from the vector and
    /// returns its former index and outcome. An empty vector is an error.
    pub fn wait_any(&self, reqs: &mut Vec<Request<'scope>>) -> Result<(usize, Status)> {
        if reqs.is_empty() {
            return Err(Error::new(
                ErrorKind::InvalidRequest,
                "wait_any on no requests",
            ));
        }
        let idx = {
            let mut e = self.inner.engine.borrow_mut();
            let mut found = None;
            e.wait_p2p_until(|e| {
                found = reqs
                    .iter()
                    .position(|r| r.id.is_none_or(|id| e.is_done(id)));
                found.is_some()
            });
            found.expect("wait_any woke without a completion")
        };
        let r = reqs.remove(idx);
        r.wait().map(|s| (idx, s))
    }

    /// True when every request in `reqs` has completed (MPI_Testall); does not consume them.
    pub fn test_all(&self, reqs: &[Request<'scope>]) -> bool {
        let mut e = self.inner.engine.borrow_mut();
        e.progress();
        reqs.iter().all(|r| r.id.is_none_or(|id| e.is_done(id)))
    }
}

/// A nonblocking operation in flight; finish it with [`Request::wait`] or [`Request::test`],
/// or let the scope finish it.
#[must_use = "a request does nothing unless waited or tested"]
pub struct Request<'scope> {
    id: Option<ReqId>,
    scope: &'scope ScopeInner,
}

impl<'scope> Request<'scope> {
    /// Waits for completion (MPI_Wait).
    pub fn wait(self) -> Result<Status> {
        match self.id {
            None => Ok(Status::default()),
            Some(id) => {
                let r = finish(&mut self.scope.engine.borrow_mut(), id);
                self.scope.forget(id);
                r
            }
        }
    }

    /// Completes the request if it is done (MPI_Test): `Ok(Some(status))` then, `Ok(None)`
    /// while it is still in flight (the request stays usable).
    pub fn test(&mut self) -> Result<Option<Status>> {
        let Some(id) = self.id else {
            return Ok(Some(Status::default()));
        };
        let mut e = self.scope.engine.borrow_mut();
        if !e.is_done(id) {
            e.progress();
            if !e.is_done(id) {
                return Ok(None);
            }
        }
        let r = e.outcome(id);
        e.free_req(id);
        drop(e);
        self.scope.forget(id);
        self.id = None;
        r.map(Some)
    }

    /// Cancels a receive that has not matched yet (MPI_Cancel); true if it was cancelled.
    /// Waiting on a cancelled receive returns a status with `cancelled` set.
    pub fn cancel(&self) -> bool {
        self.id
            .is_some_and(|id| self.scope.engine.borrow_mut().cancel_recv(id))
    }
}
