//! Starting sends and receives, the receives that take a message already here without a
//! request, and probes.

use super::liveness::dead_peer_error;
use super::proto_shm::{eager_header, KIND_EAGER, KIND_RTS, RTS_BODY_BYTES};
use super::queue::Outgoing;
use super::request::{ReqKind, Status};
use super::{Engine, ReqId, Route, Unexpected, CONTROL_BODY_BYTES};
use crate::matching::{Envelope, Oldest, Pattern};
use std::rc::Rc;
use weft_core::Result;
use weft_transport::buf::{RawBuf, RawBufMut};
use weft_transport::shm::Header;

impl Engine {
    /// Starts a send of `data` to world rank `dst`. Returns `Ok(None)` when it completed on
    /// the spot (the common small-message case), or the request to wait on.
    pub(crate) fn start_send(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
    ) -> Result<Option<ReqId>> {
        self.start_send_mode(data, dst_world, src_in_comm, ctx, tag, false, false)
    }

    /// Starts a send; a `synchronous` one (MPI_Ssend) goes by rendezvous whatever its size,
    /// so it completes only once a receive has matched it and taken the data. To oneself it
    /// is buffered like any send (a synchronous send to oneself with no receive posted is
    /// erroneous in MPI). A `solo` send tells a shared-memory receiver of a large message
    /// to read all of it: the sender has other work (a collective step with more than this
    /// send) and would be late with its share of a cooperative copy
    /// (`WEFT_SHM_COOP_BYTES`), which the receiver would wait for.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub(crate) fn start_send_mode(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
        synchronous: bool,
        solo: bool,
    ) -> Result<Option<ReqId>> {
        // The usual small send to a live rank of the node with nothing queued before it:
        // straight into its ring, complete at once (the rest below handles every other case,
        // this one included when the ring is full).
        if let (Route::Local(peer), Some(shm), false) = (
            self.routes[dst_world as usize],
            self.shm.as_mut(),
            synchronous,
        ) {
            let p = peer as usize;
            if data.len() <= self.core.eager_bytes.min(shm.ring_bytes(peer) / 4)
                && !self.core.dead[p]
                && self.core.outq[p].is_empty()
            {
                let header = eager_header(src_in_comm, ctx, tag, data.len());
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                if shm.try_send(peer, &header, &[bytes]) {
                    return Ok(None);
                }
            }
        }
        self.start_send_queued(data, dst_world, src_in_comm, ctx, tag, synchronous, solo)
    }

    /// [`Engine::start_send_mode`] past its fast case.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn start_send_queued(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
        synchronous: bool,
        solo: bool,
    ) -> Result<Option<ReqId>> {
        let header = eager_header(src_in_comm, ctx, tag, data.len());
        match self.routes[dst_world as usize] {
            Route::Myself => {
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                self.core.deliver_to_self(
                    Envelope {
                        ctx,
                        src: src_in_comm,
                        tag,
                    },
                    bytes,
                );
                Ok(None)
            }
            Route::Local(peer) => {
                if self.core.dead[peer as usize] {
                    return Err(dead_peer_error(self.world_rank, dst_world, "send to", ""));
                }
                let shm = self.shm.as_mut().expect("local peer without a segment");
                // A pair still on its small ring takes eager messages up to a quarter of it
                // (rings only grow, so a message queued now still fits when it goes).
                let eager_bytes = self.core.eager_bytes.min(shm.ring_bytes(peer) / 4);
                if data.len() <= eager_bytes && !synchronous {
                    if self.core.outq[peer as usize].is_empty() {
                        // SAFETY: the caller keeps `data` alive for this call.
                        let bytes = unsafe { data.slice(0, data.len()) };
                        if shm.try_send(peer, &header, &[bytes]) {
                            return Ok(None);
                        }
                    }
                    let id = self.alloc_req(ReqKind::Send);
                    let r = &mut self.core.reqs[id as usize];
                    r.sbuf = data;
                    r.peer_world = Some(dst_world);
                    self.core.enqueue(
                        peer,
                        Outgoing::Data {
                            header,
                            data,
                            req: Some(id),
                        },
                    );
                    Ok(Some(id))
                } else {
                    let id = self.alloc_req(ReqKind::Send);
                    let r = &mut self.core.reqs[id as usize];
                    r.sbuf = data;
                    r.peer_world = Some(dst_world);
                    let mut body = [0u8; CONTROL_BODY_BYTES];
                    body[..8].copy_from_slice(&data.addr().to_le_bytes());
                    body[8..16].copy_from_slice(&(data.len() as u64).to_le_bytes());
                    body[16] = u8::from(solo);
                    let rts = Header {
                        kind: KIND_RTS,
                        len: RTS_BODY_BYTES.into(),
                        aux: id,
                        ..header
                    };
                    self.core.enqueue(
                        peer,
                        Outgoing::Control {
                            header: rts,
                            body,
                            body_len: RTS_BODY_BYTES,
                        },
                    );
                    self.flush_all();
                    Ok(Some(id))
                }
            }
            Route::Net(w) => self.start_net_send(data, w, header, synchronous),
        }
    }

    /// Starts a receive into `buf` matching `pattern`. `src_world` is the world rank of a
    /// specific source (None for `ANY_SOURCE`, then `members` lists who could send).
    pub(crate) fn start_recv(
        &mut self,
        buf: RawBufMut,
        pattern: Pattern,
        src_world: Option<u32>,
        members: &Rc<[u32]>,
    ) -> Result<ReqId> {
        let id = self.alloc_req(ReqKind::Recv);
        {
            let r = &mut self.core.reqs[id as usize];
            r.rbuf = buf;
            r.pattern = pattern;
            r.peer_world = src_world;
            if src_world.is_none() {
                r.any_source_members = Some(members.clone());
            }
        }
        match self.core.matching.take_unexpected(&pattern) {
            Some((env, (msg, from_local))) => {
                match msg {
                    Unexpected::Eager(data) => {
                        self.core.fill_recv(id, &env, &data, &[]);
                        self.core.keep_spare(data);
                    }
                    Unexpected::Rts {
                        addr,
                        len,
                        sreq,
                        solo,
                    } => self
                        .core
                        .start_rendezvous(id, &env, from_local, addr, len, sreq, solo),
                    Unexpected::NetRts { len, handle } => self
                        .core
                        .start_net_rendezvous(id, &env, from_local, len, handle),
                }
                self.flush_all();
            }
            None => {
                if let Some(w) = src_world {
                    let dead = match self.routes[w as usize] {
                        Route::Local(l) => self.core.dead[l as usize],
                        Route::Net(w) => self.core.net_dead[w as usize],
                        Route::Myself => false,
                    };
                    if dead {
                        let why = self.core.lost_why(w, &self.routes);
                        self.core.fail(
                            id,
                            dead_peer_error(self.world_rank, w, "receive from", &why),
                        );
                        return Ok(id);
                    }
                }
                self.core.matching.post(pattern, id);
            }
        }
        Ok(id)
    }

    /// Receives into `buf` at once when the message a receive from `src_world` (a live rank
    /// of this node) matching `pattern` (a named source) would get is already here, eager
    /// and of exactly `buf.len()` bytes, while no receive is posted: the oldest matching
    /// message among those waiting unmatched (a progress pass, in another call's wait,
    /// took it off the ring; its buffer goes back to the spare ones), or, when none
    /// matches, the next message in the rank's ring. Nothing else could take that message
    /// or come before it, so this is what posting the receive and polling would do,
    /// without a request or a pass through the posted queue. False, having taken nothing,
    /// otherwise (the caller posts the receive).
    #[inline]
    pub(crate) fn recv_eager_now(
        &mut self,
        buf: &mut [u8],
        pattern: &Pattern,
        src_world: u32,
    ) -> bool {
        let len = buf.len();
        self.take_here(buf, pattern, src_world, |n| n == len)
            .is_some()
    }

    /// [`Engine::recv_eager_now`] for a blocking point-to-point receive: a message of at
    /// most `buf.len()` bytes (a longer one, which the receive must report as truncated,
    /// is left for the usual way), with any tag `pattern` accepts; its status.
    #[inline]
    pub(crate) fn recv_p2p_now(
        &mut self,
        buf: &mut [u8],
        pattern: &Pattern,
        src_world: u32,
    ) -> Option<Status> {
        let len = buf.len();
        let (env, bytes) = self.take_here(buf, pattern, src_world, |n| n <= len)?;
        self.p2p_received_at_once += 1;
        Some(Status {
            source: env.src as i32,
            tag: env.tag,
            bytes,
            cancelled: false,
        })
    }

    /// What [`Engine::recv_eager_now`] and [`Engine::recv_p2p_now`] share: takes the
    /// message when its length `fits`, copying it to the front of `buf`; its envelope and
    /// length.
    #[inline(always)]
    fn take_here(
        &mut self,
        buf: &mut [u8],
        pattern: &Pattern,
        src_world: u32,
        fits: impl Fn(usize) -> bool,
    ) -> Option<(Envelope, usize)> {
        let Route::Local(peer) = self.routes[src_world as usize] else {
            return None;
        };
        let shm = self.shm.as_mut()?;
        let core = &mut self.core;
        if core.dead[peer as usize] || core.matching.posted_len() != 0 {
            return None;
        }
        if core.matching.unexpected_len() != 0 {
            let eager_fits =
                |u: &(Unexpected, u32)| matches!(&u.0, Unexpected::Eager(v) if fits(v.len()));
            match core.matching.take_unexpected_if(pattern, eager_fits) {
                Oldest::Taken(env, (Unexpected::Eager(v), _)) => {
                    let n = v.len();
                    buf[..n].copy_from_slice(&v);
                    core.keep_spare(v);
                    return Some((env, n));
                }
                Oldest::Taken(..) => unreachable!("only an eager message that fits is taken"),
                Oldest::Kept => return None,
                Oldest::None => {}
            }
        }
        let want = |h: &Header| {
            h.kind == KIND_EAGER
                && fits(h.len as usize)
                && pattern.matches(&Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                })
        };
        let copy = |h: &Header, a: &[u8], b: &[u8]| {
            buf[..a.len()].copy_from_slice(a);
            if !b.is_empty() {
                buf[a.len()..a.len() + b.len()].copy_from_slice(b);
            }
            let env = Envelope {
                ctx: h.ctx,
                src: h.src,
                tag: h.tag,
            };
            (env, a.len() + b.len())
        };
        shm.poll_if(peer, want, copy)
    }

    /// Calls of [`Engine::progress`] so far (wrapping); a caller compares two readings.
    pub(crate) fn progress_passes(&self) -> u64 {
        self.progress_passes
    }

    /// [`Engine::recv_p2p_now`]'s receives so far.
    pub(crate) fn p2p_received_at_once(&self) -> u64 {
        self.p2p_received_at_once
    }

    /// Starts bringing the next message from world rank `src_world` into this core's cache
    /// when it comes through this node's shared memory (a hint; nothing is taken): a
    /// receive that will look for it after its setup overlaps the transfer of the line from
    /// the sender's core with that setup.
    #[inline]
    pub(crate) fn prefetch_from(&self, src_world: u32) {
        if let (Route::Local(peer), Some(shm)) = (self.routes[src_world as usize], &self.shm) {
            shm.prefetch(peer);
        }
    }

    /// Whether [`Engine::recv_eager_now`] could take a message of `bytes` from `src_world`
    /// now that one lands: a live rank of this node, no receive posted, no message waiting
    /// unmatched, and not longer than the eager limit (a longer one comes by rendezvous,
    /// which only a posted receive takes). A caller about to wait on that rank's ring alone
    /// asks first.
    pub(crate) fn may_recv_eager_now(&self, src_world: u32, bytes: usize) -> bool {
        let Route::Local(peer) = self.routes[src_world as usize] else {
            return false;
        };
        let core = &self.core;
        self.shm.is_some()
            && bytes <= core.eager_bytes
            && !core.dead[peer as usize]
            && core.matching.posted_len() == 0
            && core.matching.unexpected_len() == 0
    }

    /// Probe: polls once, then reports the oldest unexpected message matching `pattern`.
    pub(crate) fn iprobe(&mut self, pattern: &Pattern) -> Option<Status> {
        self.progress();
        self.peek(pattern)
    }

    /// The oldest unexpected message matching `pattern`, without polling.
    pub(crate) fn peek(&self, pattern: &Pattern) -> Option<Status> {
        self.core
            .matching
            .peek_unexpected(pattern)
            .map(|(e, (u, _))| Status {
                source: e.src as i32,
                tag: e.tag,
                bytes: u.len(),
                cancelled: false,
            })
    }
}
