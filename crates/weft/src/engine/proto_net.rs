//! The protocol over TCP (see the module comment of `engine`): eager frames, `RTS`/`CTS`
//! rendezvous with fragments read straight into the receive buffer, the endpoint's polling
//! cadence, and lost connections.

use super::liveness::dead_peer_error;
use super::queue::{flush_queues, Link, Outgoing};
use super::request::{ReqKind, Request};
use super::{Core, Engine, ReqId, Unexpected, CONTROL_BODY_BYTES};
use crate::matching::Envelope;
use weft_core::Result;
use weft_transport::buf::{RawBuf, RawBufMut};
use weft_transport::shm::Header;
use weft_transport::tcp::frame as net;
use weft_transport::tcp::Endpoint;

/// Smallest fragment a TCP rendezvous message is cut into to have two of them in flight.
const NET_MIN_SPLIT_BYTES: usize = 64 * 1024;

/// Progress calls between epoll polls while no TCP connection exists (only to accept the
/// first connection of a peer: its handshake waits at most this long).
const TCP_IDLE_POLL_EVERY: u32 = 256;

impl Engine {
    /// Fragments sent over extra TCP rails.
    pub(crate) fn tcp_striped(&self) -> u64 {
        self.tcp.as_ref().map_or(0, Endpoint::striped_count)
    }

    /// Bytes of TCP connection buffers and peers in high-speed mode.
    pub(crate) fn tcp_memory(&self) -> (usize, u32) {
        self.tcp
            .as_ref()
            .map_or((0, 0), |t| (t.buffer_bytes(), t.fast_peer_count()))
    }

    /// Open TCP connections and the largest receive buffer among them (bytes).
    pub(crate) fn tcp_connections(&self) -> (usize, usize) {
        self.tcp.as_ref().map_or((0, 0), |t| {
            (t.connection_count(), t.largest_receive_buffer())
        })
    }

    /// Inbound TCP connections refused because they did not prove the job key.
    pub(crate) fn tcp_refused(&self) -> u64 {
        self.tcp.as_ref().map_or(0, Endpoint::refused_count)
    }

    pub(super) fn start_net_send(
        &mut self,
        data: RawBuf,
        w: u32,
        header: Header,
        synchronous: bool,
    ) -> Result<Option<ReqId>> {
        if self.core.net_dead[w as usize] {
            return Err(dead_peer_error(self.world_rank, w, "send to"));
        }
        let id = if data.len() <= self.core.net_eager_bytes && !synchronous {
            if self.core.net_outq[w as usize].is_empty() {
                let tcp = self.tcp.as_mut().expect("TCP route without an endpoint");
                // SAFETY: the caller keeps `data` alive for this call.
                let bytes = unsafe { data.slice(0, data.len()) };
                if tcp.try_send(w, &header, &[bytes]) {
                    return Ok(None);
                }
            }
            let id = self.alloc_req(ReqKind::Send);
            self.core.net_enqueue(
                w,
                Outgoing::Data {
                    header,
                    data,
                    req: Some(id),
                },
            );
            id
        } else {
            let id = self.alloc_req(ReqKind::Send);
            let mut body = [0u8; CONTROL_BODY_BYTES];
            body[..8].copy_from_slice(&(data.len() as u64).to_le_bytes());
            let rts = Header {
                kind: net::KIND_RTS,
                len: net::RTS_BODY_BYTES as u32,
                aux: id,
                ..header
            };
            self.core.net_enqueue(
                w,
                Outgoing::Control {
                    header: rts,
                    body,
                    body_len: net::RTS_BODY_BYTES as u8,
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

    /// Polls the TCP endpoint (when `now`, or when due: see the module comment), hands
    /// inbound frames to matching, fails the operations of peers found dead and sends what
    /// is queued. True if anything moved.
    pub(super) fn progress_net(&mut self, now: bool) -> bool {
        let Some(tcp) = self.tcp.as_mut() else {
            return false;
        };
        self.tcp_tick = self.tcp_tick.wrapping_add(1);
        let due =
            now || self.net_only || self.core.net_outq_len > 0 || tcp.busy() || tcp.active() || {
                let every = if tcp.connection_count() == 0 {
                    TCP_IDLE_POLL_EVERY
                } else {
                    self.tcp_poll_every
                };
                self.tcp_tick.is_multiple_of(every)
            };
        if !due {
            return false;
        }
        let core = &mut self.core;
        let mut moved = tcp.poll_into(&mut NetSink(core));
        let lost = tcp.take_lost();
        for w in tcp.take_promoted() {
            core.net_fast[w as usize] = true;
        }
        if core.net_outq_len > 0 {
            moved |= core.flush_net(tcp);
        }
        if !lost.is_empty() {
            for (w, why) in lost {
                self.net_peer_lost(w, &why);
            }
            moved = true;
        }
        moved
    }

    /// Records that TCP peer `w` is gone and fails what waits on it.
    fn net_peer_lost(&mut self, w: u32, why: &str) {
        let core = &mut self.core;
        if core.net_dead[w as usize] {
            return;
        }
        core.net_dead[w as usize] = true;
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
    fn net_enqueue(&mut self, w: u32, item: Outgoing) {
        self.net_outq[w as usize].push_back(item);
        self.net_outq_len += 1;
    }

    /// Queues a TCP control frame (a `CTS`) for world rank `w`, ahead of everything queued
    /// for it: a `CTS` takes part in no matching order, and a peer that waits for it while
    /// our own fragments to it go out first would send nothing until they are all written
    /// (an exchange of two large messages would run one direction after the other).
    fn net_control(&mut self, w: u32, kind: u8, aux: u32, flags: u8, body_bytes: &[u8]) {
        let mut body = [0u8; CONTROL_BODY_BYTES];
        body[..body_bytes.len()].copy_from_slice(body_bytes);
        let header = Header {
            kind,
            aux,
            flags,
            ..Header::default()
        };
        self.net_outq[w as usize].push_front(Outgoing::Control {
            header,
            body,
            body_len: body_bytes.len() as u8,
        });
        self.net_outq_len += 1;
    }

    /// A matched TCP rendezvous: ask the sender for the data (or for nothing, when the
    /// message does not fit and the receive fails with truncation).
    pub(super) fn start_net_rendezvous(
        &mut self,
        id: ReqId,
        env: &Envelope,
        w: u32,
        len: usize,
        sreq: u32,
    ) {
        if !self.matched(id, env, len) {
            self.net_control(
                w,
                net::KIND_CTS,
                sreq,
                net::CTS_DISCARD,
                &[0u8; net::CTS_BODY_BYTES],
            );
            return;
        }
        let r = &mut self.reqs[id as usize];
        r.frag_total = len;
        r.frag_received = 0;
        // Matched: only `w` may deliver the fragments (and only its death fails the receive).
        r.peer_world = Some(w);
        r.any_source_members = None;
        if len == 0 {
            r.done = true;
        }
        // A peer in memory-saving mode is asked for small fragments, which its connection's
        // small receive buffer holds. A message of at most two full fragments comes in two
        // halves (not below NET_MIN_SPLIT_BYTES): we read the first while the peer writes
        // the second, where one fragment would make us wait for all of it.
        let frag = if self.net_fast[w as usize] {
            self.net_fragment_bytes
                .min(len.div_ceil(2).max(NET_MIN_SPLIT_BYTES))
        } else {
            self.net_small_fragment_bytes
        };
        let mut body = [0u8; net::CTS_BODY_BYTES];
        body[..4].copy_from_slice(&id.to_le_bytes());
        body[4..].copy_from_slice(&(frag as u32).to_le_bytes());
        self.net_control(w, net::KIND_CTS, sreq, 0, &body);
    }

    /// Handles one frame from world rank `w` (its kind and length were checked by the codec).
    fn on_net_message(&mut self, w: u32, h: &Header, body: &[u8]) {
        match h.kind {
            net::KIND_EAGER => {
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                match self.matching.take_posted(&env) {
                    Some(id) => self.fill_recv(id, &env, body, &[]),
                    None => {
                        let msg = self.unexpected_copy(body, &[]);
                        self.matching.push_unexpected(env, (msg, w));
                    }
                }
            }
            net::KIND_RTS => {
                let len = u64::from_le_bytes(body[..8].try_into().expect("RTS body is 8 bytes"));
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                match self.matching.take_posted(&env) {
                    Some(id) => self.start_net_rendezvous(id, &env, w, len, h.aux),
                    None => self
                        .matching
                        .push_unexpected(env, (Unexpected::NetRts { len, sreq: h.aux }, w)),
                }
            }
            net::KIND_CTS => {
                let rreq = u32::from_le_bytes(body[..4].try_into().expect("CTS body is 8 bytes"));
                let frag = u32::from_le_bytes(body[4..8].try_into().expect("CTS body is 8 bytes"));
                let frag_bytes = (frag as usize).clamp(1, self.net_fragment_bytes);
                let discard = h.flags & net::CTS_DISCARD != 0;
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    if r.kind == ReqKind::Send && !r.done && r.peer_world == Some(w) {
                        if discard {
                            r.done = true;
                        } else {
                            r.remote_req = rreq;
                            r.frag_sent = 0;
                            r.frag_bytes = frag_bytes;
                            self.net_enqueue(w, Outgoing::Fragments { req: h.aux });
                        }
                    }
                }
            }
            net::KIND_FRAG => {
                if let Some((r, offset)) = self.net_fragment_target(w, h) {
                    // SAFETY: the receive buffer is alive and exclusively ours until
                    // completion; frag_total ≤ buffer length was checked when it matched.
                    let dst = unsafe { r.rbuf.slice_mut(offset, body.len()) };
                    dst.copy_from_slice(body);
                    r.frag_received += body.len();
                    if r.frag_received == r.frag_total && r.parts_left == 0 {
                        r.done = true;
                    }
                }
            }
            other => {
                weft_core::diag!(
                    "weft: ignoring TCP frame of kind {other} from rank {w} (the codec admits no such kind)"
                );
            }
        }
    }

    /// The receive a `FRAG` from world rank `w` belongs to and the fragment's offset in it,
    /// if it is one that may take it (a matched rendezvous from `w`, not complete, with room
    /// for the fragment where its offset says).
    fn net_fragment_target(&mut self, w: u32, h: &Header) -> Option<(&mut Request, usize)> {
        let r = self.reqs.get_mut(h.aux as usize)?;
        let len = h.len as usize;
        // Fragments may arrive out of order over several rails: each carries its offset (low
        // word in ctx, high word in tag).
        let offset = (h.ctx as u64 | (h.tag as u32 as u64) << 32) as usize;
        let fits = r.kind == ReqKind::Recv
            && !r.done
            && r.peer_world == Some(w)
            && r.frag_received + len <= r.frag_total
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= r.frag_total);
        fits.then_some((r, offset))
    }

    /// Sends queued TCP work while the connections take it. True if anything was sent.
    pub(super) fn flush_net(&mut self, tcp: &mut Endpoint) -> bool {
        flush_queues(
            &mut self.net_outq,
            &mut self.net_outq_len,
            &mut self.reqs,
            tcp,
        )
    }
}

/// What the TCP endpoint reads goes to matching; the rest of a large fragment's body is read
/// straight into its receive buffer.
struct NetSink<'a>(&'a mut Core);

// SAFETY: `place` hands out the part of a matched, incomplete rendezvous receive's buffer that
// one fragment fills, and counts the placement in the receive's `parts_left`. The receive
// completes only with every byte counted and no placement left (`placed` takes it back), so
// its buffer stays alive and is not handed back to the program while the endpoint writes into
// it; it fails early only when its peer is lost, which the endpoint reports after closing
// every connection of that peer (ending their placements).
unsafe impl weft_transport::tcp::Sink for NetSink<'_> {
    fn frame(&mut self, peer: u32, h: &Header, body: &[u8]) {
        self.0.on_net_message(peer, h, body);
    }

    fn place(&mut self, peer: u32, h: &Header) -> Option<RawBufMut> {
        let (r, offset) = self.0.net_fragment_target(peer, h)?;
        if r.parts_left == u8::MAX {
            return None;
        }
        // Counted now, so bytes claimed twice (by a confused peer) find no room left.
        r.frag_received += h.len as usize;
        r.parts_left += 1;
        // SAFETY: as in `on_net_message` for `FRAG`: the receive buffer is alive and ours.
        Some(RawBufMut::new(unsafe {
            r.rbuf.slice_mut(offset, h.len as usize)
        }))
    }

    fn placed(&mut self, _peer: u32, h: &Header) {
        let Some(r) = self.0.reqs.get_mut(h.aux as usize) else {
            return;
        };
        if r.kind != ReqKind::Recv || r.done || r.parts_left == 0 {
            return;
        }
        r.parts_left -= 1;
        if r.frag_received == r.frag_total && r.parts_left == 0 {
            r.done = true;
        }
    }
}

/// TCP: fragments of the size the receiver asked for, each carrying its offset (low word in
/// `ctx`, high word in `tag`) because rails may deliver them out of order.
impl Link for Endpoint {
    #[inline]
    fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool {
        Endpoint::try_send(self, peer, header, parts)
    }

    fn fragment(&self, _peer: u32, r: &Request) -> (Header, usize) {
        let n = (r.sbuf.len() - r.frag_sent).min(r.frag_bytes);
        let offset = r.frag_sent as u64;
        let h = Header {
            kind: net::KIND_FRAG,
            aux: r.remote_req,
            len: n as u32,
            ctx: offset as u32,
            tag: (offset >> 32) as u32 as i32,
            ..Header::default()
        };
        (h, n)
    }
}
