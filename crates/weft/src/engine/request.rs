//! The request table (allocation, outcome, cancel, abandon) and what completes a receive:
//! matching a message, truncation, unexpected messages and their spare buffers.

use super::proto_shm::KIND_RTS;
use super::queue::Outgoing;
use super::{Core, Engine, ReqId, Unexpected};
use crate::matching::{Envelope, Pattern};
use std::rc::Rc;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::buf::{RawBuf, RawBufMut};

/// Buffers of delivered unexpected messages kept for reuse: a burst of small messages ahead
/// of their receives (a collective's early arrivals) then costs no allocation.
const SPARE_BUFS: usize = 64;

/// The largest such buffer kept (so at most 1 MiB stays held).
const SPARE_BUF_MAX_BYTES: usize = 16 << 10;

/// The result of a completed receive or probe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// Rank of the sender in the communicator.
    pub source: i32,
    /// Tag of the message.
    pub tag: i32,
    /// Length of the message in bytes (may exceed the buffer when truncated).
    pub bytes: usize,
    /// True when the operation was cancelled.
    pub cancelled: bool,
}

impl Status {
    /// Number of whole elements of `T` in the message.
    pub fn count<T>(&self) -> usize {
        match std::mem::size_of::<T>() {
            0 => 0,
            n => self.bytes / n,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ReqKind {
    Free,
    Send,
    Recv,
    /// A send given up before the peer took it (see [`Engine::abandon_send`]): its buffer
    /// is forgotten and the peer's later answers to it are ignored; the slot is reused only
    /// after the peer's `FIN` says it is done with it.
    Abandoned,
}

pub(super) struct Request {
    pub(super) kind: ReqKind,
    pub(super) done: bool,
    pub(super) status: Status,
    pub(super) error: Option<Error>,
    /// Receive: where the data goes and what it accepts.
    pub(super) rbuf: RawBufMut,
    pub(super) pattern: Pattern,
    /// Receive by fragments: bytes expected and received so far.
    pub(super) frag_total: usize,
    pub(super) frag_received: usize,
    /// Receive by CMA: parts still to arrive (ours and the cooperating sender's).
    pub(super) parts_left: u8,
    /// Send: the data, the peer, and for fragment streaming the receiver's request and progress.
    pub(super) sbuf: RawBuf,
    pub(super) remote_req: u32,
    pub(super) frag_sent: usize,
    /// The world ranks that could satisfy an `ANY_SOURCE` receive (for failure detection).
    pub(super) any_source_members: Option<Rc<[u32]>>,
    /// World rank this request depends on, when one.
    pub(super) peer_world: Option<u32>,
}

impl Request {
    pub(super) fn empty() -> Request {
        Request {
            kind: ReqKind::Free,
            done: false,
            status: Status::default(),
            error: None,
            rbuf: RawBufMut::new(&mut []),
            pattern: Pattern {
                ctx: 0,
                src: 0,
                tag: 0,
            },
            frag_total: 0,
            frag_received: 0,
            parts_left: 0,
            sbuf: RawBuf::new(&[]),
            remote_req: 0,
            frag_sent: 0,
            any_source_members: None,
            peer_world: None,
        }
    }
}

impl Engine {
    /// The id the next [`Engine::alloc_req`] returns (a token handed out before the request
    /// is known to be needed).
    pub(super) fn next_req_id(&self) -> ReqId {
        match self.core.free_reqs.last() {
            Some(&id) => id,
            None => self.core.reqs.len() as ReqId,
        }
    }

    pub(super) fn alloc_req(&mut self, kind: ReqKind) -> ReqId {
        let id = match self.core.free_reqs.pop() {
            Some(id) => id,
            None => {
                self.core.reqs.push(Request::empty());
                (self.core.reqs.len() - 1) as ReqId
            }
        };
        let r = &mut self.core.reqs[id as usize];
        r.kind = kind;
        r.done = false;
        r.error = None;
        r.status = Status::default();
        r.frag_total = 0;
        r.frag_received = 0;
        r.frag_sent = 0;
        r.parts_left = 0;
        r.any_source_members = None;
        r.peer_world = None;
        id
    }

    /// Releases a completed request's slot.
    pub(crate) fn free_req(&mut self, id: ReqId) {
        let r = &mut self.core.reqs[id as usize];
        debug_assert!(r.kind != ReqKind::Free);
        r.kind = ReqKind::Free;
        r.any_source_members = None;
        r.rbuf = RawBufMut::new(&mut []);
        r.sbuf = RawBuf::new(&[]);
        self.core.free_reqs.push(id);
    }

    /// True once the request has completed (successfully or not).
    pub(crate) fn is_done(&self, id: ReqId) -> bool {
        self.core.reqs[id as usize].done
    }

    /// What the engine knows of a finished request's message even when it failed: a
    /// truncated receive still names the source and tag of the message that matched.
    pub(crate) fn status_of(&self, id: ReqId) -> Status {
        self.core.reqs[id as usize].status
    }

    /// The outcome of a completed request.
    pub(crate) fn outcome(&self, id: ReqId) -> Result<Status> {
        let r = &self.core.reqs[id as usize];
        match &r.error {
            Some(e) => Err(e.clone()),
            None => Ok(r.status),
        }
    }

    /// Cancels a receive that has not matched yet; true if it was cancelled.
    pub(crate) fn cancel_recv(&mut self, id: ReqId) -> bool {
        let r = &self.core.reqs[id as usize];
        if r.kind != ReqKind::Recv || r.done {
            return false;
        }
        if self.core.matching.cancel_posted(|&p| p == id) {
            let r = &mut self.core.reqs[id as usize];
            r.done = true;
            r.status.cancelled = true;
            true
        } else {
            false
        }
    }

    /// Gives up a send the peer has not taken yet, so its buffer may be released without
    /// waiting for a receive that will never come (a collective whose ranks disagree).
    /// True if it was pending: the request then belongs to the engine (do not wait for or
    /// free it). Work still queued for it is withdrawn (its request to send, eager data,
    /// fragments); a peer that had already matched it gets no data (the program is
    /// erroneous by then), and a cooperative copy it asks for is refused. A network
    /// endpoint forgets it too (see `NetEndpoint::abandon`); its slot is never reused, since
    /// the peer may still answer it.
    pub(crate) fn abandon_send(&mut self, id: ReqId) -> bool {
        let core = &mut self.core;
        let r = &mut core.reqs[id as usize];
        if r.kind != ReqKind::Send || r.done {
            return false;
        }
        r.kind = ReqKind::Abandoned;
        r.done = true;
        r.sbuf = RawBuf::new(&[]);
        let refers = |item: &Outgoing, rts: u8| match item {
            Outgoing::Data { req, .. } => *req == Some(id),
            Outgoing::Fragments { req } => *req == id,
            Outgoing::Control { header, .. } => header.kind == rts && header.aux == id,
        };
        for q in core.outq.iter_mut() {
            let before = q.len();
            q.retain(|item| !refers(item, KIND_RTS));
            core.outq_len -= before - q.len();
        }
        let queued = core.withdraw_net_send(id);
        if let (false, Some(net)) = (queued, self.net.as_mut()) {
            net.abandon(id);
        }
        true
    }
}

impl Core {
    pub(super) fn fail(&mut self, id: ReqId, err: Error) {
        let r = &mut self.reqs[id as usize];
        if !r.done {
            r.error = Some(err);
            r.done = true;
        }
    }

    /// An unexpected eager message holding `a` then `b`, in a spare buffer when one is
    /// kept and the message is small (at most [`SPARE_BUF_MAX_BYTES`]).
    pub(super) fn unexpected_copy(&mut self, a: &[u8], b: &[u8]) -> Unexpected {
        let len = a.len() + b.len();
        let mut v = match self.spare_bufs.pop() {
            Some(v) if len <= SPARE_BUF_MAX_BYTES => v,
            other => {
                self.spare_bufs.extend(other);
                Vec::with_capacity(len)
            }
        };
        v.clear();
        v.extend_from_slice(a);
        if !b.is_empty() {
            v.extend_from_slice(b);
        }
        Unexpected::Eager(v)
    }

    /// Keeps the buffer of a delivered unexpected message for the next one, while fewer
    /// than [`SPARE_BUFS`] are kept and it is small.
    pub(super) fn keep_spare(&mut self, v: Vec<u8>) {
        // An empty one (a zero-length message's) would save no allocation.
        if self.spare_bufs.len() < SPARE_BUFS && (1..=SPARE_BUF_MAX_BYTES).contains(&v.capacity()) {
            self.spare_bufs.push(v);
        }
    }

    pub(super) fn deliver_to_self(&mut self, env: Envelope, bytes: &[u8]) {
        match self.matching.take_posted(&env) {
            Some(id) => self.fill_recv(id, &env, bytes, &[]),
            None => {
                let msg = self.unexpected_copy(bytes, &[]);
                let me = self.my_local;
                self.matching.push_unexpected(env, (msg, me));
            }
        }
    }

    /// Records that receive `id` matched a message of `len` bytes; on truncation records the
    /// error and completes the request. Returns whether the message fits.
    pub(super) fn matched(&mut self, id: ReqId, env: &Envelope, len: usize) -> bool {
        let r = &mut self.reqs[id as usize];
        r.status = Status {
            source: env.src as i32,
            tag: env.tag,
            bytes: len,
            cancelled: false,
        };
        if len > r.rbuf.len() {
            r.error = Some(truncation_error(env, len, r.rbuf.len()));
            r.done = true;
            return false;
        }
        true
    }

    /// Completes receive `id` with a message whose payload is `a` followed by `b`.
    pub(super) fn fill_recv(&mut self, id: ReqId, env: &Envelope, a: &[u8], b: &[u8]) {
        let len = a.len() + b.len();
        if self.matched(id, env, len) {
            let r = &mut self.reqs[id as usize];
            // SAFETY: the receive's owner keeps the buffer alive until the request completes,
            // and nothing else writes it meanwhile.
            let dst = unsafe { r.rbuf.slice_mut(0, len) };
            dst[..a.len()].copy_from_slice(a);
            if !b.is_empty() {
                dst[a.len()..].copy_from_slice(b);
            }
            r.done = true;
        }
    }
}

fn truncation_error(env: &Envelope, len: usize, cap: usize) -> Error {
    Error::new(
        ErrorKind::Truncate,
        format!(
            "message from rank {} with tag {} is {len} bytes but the receive buffer holds {cap}",
            env.src, env.tag
        ),
    )
}
