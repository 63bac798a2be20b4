//! Messages over a network transport (peers on other nodes, or every peer when shared
//! memory is not allowed): eager messages and rendezvous through the
//! [`NetEndpoint`](weft_transport::net::NetEndpoint) the lane choice picked (TCP, UCX, ...),
//! which moves a rendezvous message's data once the engine has matched it; the endpoint's
//! polling cadence; lost peers.

use super::liveness::dead_peer_error;
use super::request::ReqKind;
use super::{Core, Engine, ReqId, Unexpected};
use crate::matching::Envelope;
use weft_core::{Error, ErrorKind, Result};
use weft_transport::buf::{RawBuf, RawBufMut};
use weft_transport::net::{Handle, NetEndpoint, NetFailure, NetSink, Sent};
use weft_transport::shm::Header;

/// Progress calls between polls of the network endpoint while it has no connection (only to
/// accept the first connection of a peer: its handshake waits at most this long).
const NET_IDLE_POLL_EVERY: u32 = 256;

/// Work for a network peer that could not be handed to the endpoint at once, in the order
/// MPI's matching needs (eager messages and rendezvous announcements), with the answers to
/// the peer's announcements (fetch, discard) ahead of them.
pub(super) enum NetOut {
    /// An eager message whose body is borrowed from a request's buffer; the request
    /// completes once the endpoint has sent it.
    Eager {
        header: Header,
        data: RawBuf,
        req: ReqId,
    },
    /// A rendezvous message to announce, or (`push`) a larger eager message to send from its
    /// buffer; its request completes when the endpoint says.
    Rendezvous {
        header: Header,
        data: RawBuf,
        req: ReqId,
        push: bool,
        /// The rail the data goes on (`Engine::start_send_on_rail`); None: striped.
        rail: Option<u32>,
    },
    /// The data of a matched announcement, to fetch into a receive's buffer.
    Fetch {
        handle: Handle,
        dst: RawBufMut,
        req: ReqId,
    },
    /// A matched announcement whose receive is too small: the data is refused.
    Discard { handle: Handle },
}

impl Engine {
    /// Fragments sent over extra network rails.
    pub(crate) fn tcp_striped(&self) -> u64 {
        self.net.as_ref().map_or(0, |n| n.stats().striped)
    }

    /// Bytes of network connection buffers and peers in high-speed mode.
    pub(crate) fn tcp_memory(&self) -> (usize, u32) {
        self.net.as_ref().map_or((0, 0), |n| {
            let s = n.stats();
            (s.buffer_bytes, s.fast_peers)
        })
    }

    /// Open network connections and the largest receive buffer among them (bytes).
    pub(crate) fn tcp_connections(&self) -> (usize, usize) {
        self.net.as_ref().map_or((0, 0), |n| {
            let s = n.stats();
            (s.connections, s.largest_receive_buffer)
        })
    }

    /// Inbound connections refused because they did not prove the job key.
    pub(crate) fn tcp_refused(&self) -> u64 {
        self.net.as_ref().map_or(0, |n| n.stats().refused)
    }

    /// The network transport in use, if any (`tcp`, `ucx`, ...).
    pub(crate) fn net_transport(&self) -> Option<&'static str> {
        self.net.as_ref().map(|n| n.transport())
    }

    pub(super) fn start_net_send(
        &mut self,
        data: RawBuf,
        w: u32,
        header: Header,
        synchronous: bool,
    ) -> Result<Option<ReqId>> {
        self.start_net_send_on(data, w, header, synchronous, None)
    }

    /// Rails of the network endpoint a message can be pinned to (1 without a network, or
    /// with a transport that cannot pin).
    pub(crate) fn net_rails(&self) -> u32 {
        self.net.as_ref().map_or(1, |n| n.rails().max(1))
    }

    /// A standard-mode send of a collective's message whose data, when it goes to a peer on
    /// another node by rendezvous, takes rail `rail` (modulo [`Engine::net_rails`]) only,
    /// not striped over every rail; any other send is [`Engine::start_send_mode`]'s.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_send_on_rail(
        &mut self,
        data: RawBuf,
        dst_world: u32,
        src_in_comm: u32,
        ctx: u32,
        tag: i32,
        solo: bool,
        rail: u32,
    ) -> Result<Option<ReqId>> {
        match self.routes[dst_world as usize] {
            super::Route::Net(w) if data.len() > self.core.net_eager_bytes => {
                let header = super::proto_shm::eager_header(src_in_comm, ctx, tag, data.len());
                let rail = rail % self.net_rails();
                self.start_net_send_on(data, w, header, false, Some(rail))
            }
            _ => self.start_send_mode(data, dst_world, src_in_comm, ctx, tag, false, solo),
        }
    }

    fn start_net_send_on(
        &mut self,
        data: RawBuf,
        w: u32,
        header: Header,
        synchronous: bool,
        rail: Option<u32>,
    ) -> Result<Option<ReqId>> {
        if self.core.net_dead[w as usize] {
            let why = self.core.net_why[w as usize].clone();
            return Err(dead_peer_error(self.world_rank, w, "send to", &why));
        }
        let id = if data.len() <= self.core.net_eager_bytes && !synchronous {
            if self.core.net_outq[w as usize].is_empty() {
                // The request a kept message completes (allocated only then).
                let token = self.next_req_id();
                let net = self
                    .net
                    .as_mut()
                    .expect("network route without an endpoint");
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                match net.try_send(w, &header, &[bytes], token) {
                    Sent::Done => return Ok(None),
                    Sent::Kept => {
                        // The buffer is free, the bytes not gone yet: the send completes
                        // when the endpoint reports the token (or the peer is lost).
                        let id = self.alloc_req(ReqKind::Send);
                        debug_assert_eq!(id, token);
                        self.core.reqs[id as usize].peer_world = Some(w);
                        return Ok(Some(id));
                    }
                    Sent::NotNow => {}
                }
            }
            let id = self.alloc_req(ReqKind::Send);
            self.core.net_enqueue(
                w,
                NetOut::Eager {
                    header,
                    data,
                    req: id,
                },
            );
            id
        } else {
            let id = self.alloc_req(ReqKind::Send);
            // A send that need not wait for its receive, up to the endpoint's push limit,
            // goes eagerly from its own buffer: no copy, and no round trip to the receiver.
            let push = !synchronous && rail.is_none() && data.len() <= self.core.net_push_bytes;
            self.core.net_enqueue(
                w,
                NetOut::Rendezvous {
                    header,
                    data,
                    req: id,
                    push,
                    rail,
                },
            );
            id
        };
        let r = &mut self.core.reqs[id as usize];
        r.sbuf = data;
        r.peer_world = Some(w);
        self.progress_net(true);
        Ok(Some(id))
    }

    /// Polls the network endpoint (when `now`, or when due: see the module comment of
    /// `engine`), hands what arrived to matching, fails the operations of peers found dead
    /// and sends what is queued. True if anything moved.
    pub(super) fn progress_net(&mut self, now: bool) -> bool {
        let Some(net) = self.net.as_mut() else {
            return false;
        };
        self.net_tick = self.net_tick.wrapping_add(1);
        let due = now || self.net_only || self.core.net_outq_len > 0 || net.wants_polling() || {
            let every = if net.connected() {
                self.net_poll_every
            } else {
                NET_IDLE_POLL_EVERY
            };
            self.net_tick.is_multiple_of(every)
        };
        if !due {
            return false;
        }
        let core = &mut self.core;
        let mut moved = net.poll(&mut Delivery(core));
        let lost = net.take_lost();
        if core.net_outq_len > 0 {
            moved |= core.flush_net(net.as_mut());
        }
        if !lost.is_empty() {
            for (w, why) in lost {
                self.net_peer_lost(w, &why);
            }
            moved = true;
        }
        moved
    }

    /// Whether the last [`Engine::progress_net`] call polled the network endpoint (nothing
    /// was polled or sent through it since): a wait about to yield after a progress pass
    /// that found nothing need not ask it again (each poll can be a system call: UCX's TCP
    /// transport asks epoll).
    pub(super) fn net_just_polled(&self) -> bool {
        let Some(net) = self.net.as_ref() else {
            return false;
        };
        self.net_only
            || self.core.net_outq_len > 0
            || net.wants_polling()
            || self.net_tick.is_multiple_of(if net.connected() {
                self.net_poll_every
            } else {
                NET_IDLE_POLL_EVERY
            })
    }

    /// Records that network peer `w` is gone and fails what waits on it.
    fn net_peer_lost(&mut self, w: u32, why: &str) {
        let core = &mut self.core;
        if core.net_dead[w as usize] {
            return;
        }
        core.net_dead[w as usize] = true;
        core.net_why[w as usize] = why.to_string();
        let dropped = core.net_outq[w as usize].len();
        core.net_outq[w as usize].clear();
        core.net_outq_len -= dropped;
        if self.world_rank != w {
            weft_core::diag!("weft: rank {}: lost rank {w}: {why}", self.world_rank);
        }
        self.fail_dead_requests();
    }
}

impl Core {
    /// What the network transport said when world rank `w` was lost (empty for a peer on
    /// shared memory, or one the transport said nothing about).
    pub(super) fn lost_why(&self, w: u32, routes: &[super::Route]) -> String {
        match routes[w as usize] {
            super::Route::Net(w) => self.net_why[w as usize].clone(),
            _ => String::new(),
        }
    }

    fn net_enqueue(&mut self, w: u32, item: NetOut) {
        self.net_outq[w as usize].push_back(item);
        self.net_outq_len += 1;
    }

    /// Queues the answer to an announcement of world rank `w` ahead of everything queued
    /// for it: it takes part in no matching order, and a peer that waits for it while our
    /// own traffic to it goes out first would send nothing meanwhile (an exchange of two
    /// large messages would run one direction after the other).
    fn net_answer(&mut self, w: u32, item: NetOut) {
        self.net_outq[w as usize].push_front(item);
        self.net_outq_len += 1;
    }

    /// A matched rendezvous announcement: fetch the data into the receive's buffer, or
    /// refuse it when the message does not fit (the receive fails with truncation).
    pub(super) fn start_net_rendezvous(
        &mut self,
        id: ReqId,
        env: &Envelope,
        w: u32,
        len: usize,
        handle: Handle,
    ) {
        if !self.matched(id, env, len) {
            self.net_answer(w, NetOut::Discard { handle });
            return;
        }
        let r = &mut self.reqs[id as usize];
        // Matched: only `w` may deliver the data (and only its death fails the receive).
        r.peer_world = Some(w);
        r.any_source_members = None;
        // SAFETY: the receive's buffer stays alive until the request completes; `matched`
        // checked that it holds `len` bytes.
        let dst = RawBufMut::new(unsafe { r.rbuf.slice_mut(0, len) });
        self.net_answer(
            w,
            NetOut::Fetch {
                handle,
                dst,
                req: id,
            },
        );
    }

    /// Hands queued network work to the endpoint while it takes it, peer by peer and in
    /// each peer's order. True if anything went.
    pub(super) fn flush_net(&mut self, net: &mut dyn NetEndpoint) -> bool {
        let mut moved = false;
        for (peer, q) in self.net_outq.iter_mut().enumerate() {
            let peer = peer as u32;
            while let Some(item) = q.front() {
                let went = match *item {
                    NetOut::Eager { header, data, req } => {
                        // SAFETY: a queued send's buffer stays alive until its request
                        // completes.
                        let bytes = unsafe { data.slice(0, data.len()) };
                        match net.try_send(peer, &header, &[bytes], req) {
                            Sent::Done => {
                                self.reqs[req as usize].done = true;
                                true
                            }
                            // The endpoint reports the request done once the bytes left.
                            Sent::Kept => true,
                            Sent::NotNow => false,
                        }
                    }
                    NetOut::Rendezvous {
                        header,
                        data,
                        req,
                        push,
                        rail,
                    } => {
                        // SAFETY: the send's buffer stays alive until the endpoint reports
                        // its request done, it is abandoned, or the peer is lost.
                        unsafe {
                            match (push, rail) {
                                (true, _) => net.start_push(peer, &header, data, req),
                                (false, Some(r)) => {
                                    net.start_rendezvous_on_rail(peer, &header, data, req, r)
                                }
                                (false, None) => net.start_rendezvous(peer, &header, data, req),
                            }
                        }
                    }
                    NetOut::Fetch { handle, dst, req } => {
                        // SAFETY: the receive's buffer stays alive and untouched until the
                        // endpoint reports its request done or the peer is lost.
                        unsafe { net.fetch(peer, handle, dst, req) };
                        true
                    }
                    NetOut::Discard { handle } => {
                        net.discard(peer, handle);
                        true
                    }
                };
                if !went {
                    break;
                }
                q.pop_front();
                self.net_outq_len -= 1;
                moved = true;
            }
        }
        moved
    }

    /// Withdraws queued network work of send `id`; true if some was queued.
    pub(super) fn withdraw_net_send(&mut self, id: ReqId) -> bool {
        let mut found = false;
        for q in self.net_outq.iter_mut() {
            let before = q.len();
            q.retain(|item| match item {
                NetOut::Eager { req, .. } => *req != id,
                NetOut::Rendezvous { req, .. } => *req != id,
                _ => true,
            });
            found |= q.len() != before;
            self.net_outq_len -= before - q.len();
        }
        found
    }
}

/// What the network endpoint delivers goes to matching; completions to their requests.
struct Delivery<'a>(&'a mut Core);

impl NetSink for Delivery<'_> {
    fn eager(&mut self, w: u32, h: &Header, body: &[u8]) {
        let core = &mut *self.0;
        let env = Envelope {
            ctx: h.ctx,
            src: h.src,
            tag: h.tag,
        };
        match core.matching.take_posted(&env) {
            Some(id) => core.fill_recv(id, &env, body, &[]),
            None => {
                let msg = core.unexpected_copy(body, &[]);
                core.matching.push_unexpected(env, (msg, w));
            }
        }
    }

    fn rendezvous(&mut self, w: u32, h: &Header, len: usize, handle: Handle) {
        let core = &mut *self.0;
        let env = Envelope {
            ctx: h.ctx,
            src: h.src,
            tag: h.tag,
        };
        match core.matching.take_posted(&env) {
            Some(id) => core.start_net_rendezvous(id, &env, w, len, handle),
            None => core
                .matching
                .push_unexpected(env, (Unexpected::NetRts { len, handle }, w)),
        }
    }

    fn done(&mut self, token: u32, result: std::result::Result<(), NetFailure>) {
        let core = &mut *self.0;
        let me = core.local_world[core.my_local as usize];
        let Some(r) = core.reqs.get_mut(token as usize) else {
            return;
        };
        if !matches!(r.kind, ReqKind::Send | ReqKind::Recv) || r.done {
            return;
        }
        if let Err(f) = result {
            let op = if r.kind == ReqKind::Send {
                "send to"
            } else {
                "receive from"
            };
            let peer = r.peer_world.map_or(-1, |w| w as i64);
            let kind = if f.peer_lost {
                ErrorKind::PeerDead
            } else {
                ErrorKind::Io
            };
            r.error = Some(Error::new(
                kind,
                format!("rank {me} {op} rank {peer}: {}", f.why),
            ));
        }
        r.done = true;
    }
}
