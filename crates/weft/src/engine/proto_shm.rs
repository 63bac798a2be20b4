//! The protocol over the shared-memory rings (see the module comment of `engine`): eager
//! messages, rendezvous by CMA (alone or cooperative) or by fragments through the ring.

use super::queue::{flush_queues, Link, Outgoing};
use super::request::{ReqKind, Request};
use super::{Core, Engine, ReqId, Unexpected, CONTROL_BODY_BYTES};
use crate::config::{CmaMode, Config};
use crate::matching::Envelope;
use weft_core::{Error, ErrorKind, Result};
use weft_model::lanes::rendezvous::{choose_rendezvous, RendezvousChoice};
use weft_model::lanes::TransportKind;
use weft_transport::buf::RawBufMut;
use weft_transport::shm::{cma, Header, ShmNode};

pub(super) const KIND_EAGER: u8 = 1;
pub(super) const KIND_RTS: u8 = 2;
const KIND_CTS: u8 = 3;
const KIND_FIN: u8 = 4;
const KIND_FRAG: u8 = 5;
const KIND_CTS_COOP: u8 = 6;
const KIND_FIN_COOP: u8 = 7;
/// Body of a shared-memory `RTS`: the sender's address and length (8 bytes each) and its
/// `solo` flag (1 byte).
pub(super) const RTS_BODY_BYTES: u8 = 17;

/// The ring header of an eager message of `len` bytes.
#[inline]
pub(super) fn eager_header(src_in_comm: u32, ctx: u32, tag: i32, len: usize) -> Header {
    Header {
        kind: KIND_EAGER,
        src: src_in_comm,
        ctx,
        tag,
        len: len as u32,
        ..Header::default()
    }
}

/// The rendezvous thresholds between two processes of a node running `ppn` ranks of the
/// job: the lane model ([`weft_model::lanes::rendezvous`]) fed with the figures of the shm
/// and cma lanes (the transports' own, or a lane file's), the knobs `WEFT_SHM_CMA_MIN_BYTES`
/// and `WEFT_SHM_COOP_BYTES` over it. `single_copy` says whether the pair may use CMA
/// (its probe passed); without it, or when CMA is off, not offered or not in
/// `WEFT_TRANSPORTS`, the single copy is never chosen.
pub fn shm_rendezvous(config: &Config, ppn: u32, single_copy: bool) -> Result<RendezvousChoice> {
    let lanes = crate::lane_candidates(config)?;
    let allowed = |t: TransportKind| config.transports.contains(&t);
    let ring = lanes
        .iter()
        .find(|l| l.transport == TransportKind::SHM)
        .ok_or_else(|| Error::new(ErrorKind::Internal, "the shm transport offers no lane"))?;
    let single = lanes.iter().find(|l| {
        single_copy
            && config.cma != CmaMode::Off
            && l.transport == TransportKind::CMA
            && allowed(TransportKind::CMA)
    });
    Ok(choose_rendezvous(
        ring,
        single,
        ppn,
        config.shm_cma_min_bytes.map(|n| n as u64),
        config.shm_coop_bytes.map(|n| n as u64),
    ))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cma {
    Unknown,
    Yes,
    No,
}

/// A CMA read to do after the control messages queued with it have gone out.
pub(super) struct DeferredRead {
    pub(super) req: ReqId,
    pub(super) from_local: u32,
    pub(super) addr: u64,
    /// Bytes to read from the start of the message.
    pub(super) len: usize,
    /// The sender's request, acknowledged with `FIN` once this read is over: only then may the
    /// sender reuse its buffer.
    pub(super) sreq: u32,
    /// True when the sender writes the rest of the message itself (cooperative rendezvous);
    /// such a read cannot fall back to fragment streaming.
    pub(super) cooperative: bool,
}

impl Engine {
    /// Polls every inbound ring, flushes what is queued for local peers and runs deferred
    /// reads. True if anything moved.
    pub(super) fn progress_shm(&mut self) -> bool {
        let mut moved = false;
        let Some(shm) = self.shm.as_mut() else {
            return moved;
        };
        let core = &mut self.core;
        let n = core.local_world.len() as u32;
        for peer in 0..n {
            if peer == core.my_local {
                continue;
            }
            while shm
                .poll(peer, |h, a, b| core.on_message(peer, h, a, b))
                .is_some()
            {
                moved = true;
            }
        }
        if core.outq_len > 0 {
            moved |= core.flush(shm);
        }
        if core.run_deferred_reads() {
            core.flush(shm);
            moved = true;
        }
        moved
    }
}

impl Core {
    pub(super) fn enqueue(&mut self, peer: u32, item: Outgoing) {
        self.outq[peer as usize].push_back(item);
        self.outq_len += 1;
    }

    /// Queues a control message with a small body for local rank `peer`.
    pub(super) fn control(&mut self, peer: u32, kind: u8, aux: u32, flags: u8, body_bytes: &[u8]) {
        let mut body = [0u8; CONTROL_BODY_BYTES];
        body[..body_bytes.len()].copy_from_slice(body_bytes);
        let header = Header {
            kind,
            aux,
            flags,
            ..Header::default()
        };
        self.enqueue(
            peer,
            Outgoing::Control {
                header,
                body,
                body_len: body_bytes.len() as u8,
            },
        );
    }

    /// A matched rendezvous: pull the data with CMA (sharing the copy with the sender from
    /// the pair's `coop_bytes` unless it sent `solo`), or ask the sender to stream fragments
    /// when CMA is not allowed or the message is below the pair's `cma_min_bytes`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start_rendezvous(
        &mut self,
        id: ReqId,
        env: &Envelope,
        from_local: u32,
        addr: u64,
        len: usize,
        sreq: u32,
        solo: bool,
    ) {
        if !self.matched(id, env, len) {
            self.control(from_local, KIND_FIN, sreq, 0, &[]);
            return;
        }
        if self.cma[from_local as usize] == Cma::Unknown {
            // Not probed (a job of one rank has no segment to probe through): try it.
            self.cma[from_local as usize] = Cma::Yes;
        }
        // The pair's thresholds were chosen at start-up ([`shm_rendezvous`]): below
        // `cma_min_bytes` two copies through the segment, pipelined, move the message
        // sooner by the lanes' figures; from `coop_bytes` both processes share the copy.
        let pair = from_local as usize;
        if self.cma[pair] == Cma::Yes && len >= self.cma_min_bytes[pair] {
            if len >= self.coop_bytes[pair] && !solo {
                // Both sides copy: the sender writes the upper part into our buffer while we
                // read the lower part. Send the request first, read after (deferred), so the
                // two copies overlap.
                let split = (len / 2) & !4095;
                let r = &mut self.reqs[id as usize];
                r.parts_left = 2;
                let mut body = [0u8; CONTROL_BODY_BYTES];
                body[..4].copy_from_slice(&id.to_le_bytes());
                body[8..16].copy_from_slice(&r.rbuf.addr().to_le_bytes());
                body[16..24].copy_from_slice(&(split as u64).to_le_bytes());
                self.control(from_local, KIND_CTS_COOP, sreq, 0, &body);
                self.deferred_reads.push_back(DeferredRead {
                    req: id,
                    from_local,
                    addr,
                    len: split,
                    sreq,
                    cooperative: true,
                });
                return;
            }
            self.reqs[id as usize].parts_left = 1;
            self.read_part(DeferredRead {
                req: id,
                from_local,
                addr,
                len,
                sreq,
                cooperative: false,
            });
            return;
        }
        if len == 0 {
            // Nothing to stream (a synchronous send of no bytes): matching was the point.
            self.reqs[id as usize].done = true;
            self.control(from_local, KIND_FIN, sreq, 0, &[]);
            return;
        }
        let r = &mut self.reqs[id as usize];
        r.frag_total = len;
        r.frag_received = 0;
        self.control(from_local, KIND_CTS, sreq, 0, &id.to_le_bytes());
    }

    /// Performs the CMA reads queued by matched rendezvous. True if any ran.
    pub(super) fn run_deferred_reads(&mut self) -> bool {
        let mut ran = false;
        while let Some(d) = self.deferred_reads.pop_front() {
            self.read_part(d);
            ran = true;
        }
        ran
    }

    /// Reads one rendezvous part with CMA and completes what it can.
    fn read_part(&mut self, d: DeferredRead) {
        let pid = self.pids[d.from_local as usize];
        let r = &mut self.reqs[d.req as usize];
        // SAFETY: the receive buffer is alive and exclusively ours until completion; a
        // cooperating sender writes only bytes at or above `d.len` (the split).
        let dst = unsafe { r.rbuf.slice_mut(0, d.len) };
        let result = cma::read(pid, d.addr, dst);
        let source = r.status.source;
        match result {
            Ok(()) => {}
            Err(e) if !d.cooperative && self.cma_mode == CmaMode::Auto && cma_refused(&e) => {
                // Refused although the probe passed (policy changed): stream instead.
                self.cma[d.from_local as usize] = Cma::No;
                let r = &mut self.reqs[d.req as usize];
                r.frag_total = d.len;
                r.frag_received = 0;
                r.parts_left = 0;
                self.control(d.from_local, KIND_CTS, d.sreq, 0, &d.req.to_le_bytes());
                return;
            }
            Err(e) => {
                if r.error.is_none() {
                    r.error = Some(Error::io(
                        format!("receive of {} bytes from rank {source} (pid {pid}) with process_vm_readv", d.len),
                        e,
                    ));
                }
            }
        }
        let r = &mut self.reqs[d.req as usize];
        r.parts_left = r.parts_left.saturating_sub(1);
        if r.parts_left == 0 {
            r.done = true;
        }
        self.control(d.from_local, KIND_FIN, d.sreq, 0, &[]);
    }

    /// Handles one message from local rank `peer`.
    fn on_message(&mut self, peer: u32, h: &Header, a: &[u8], b: &[u8]) {
        match h.kind {
            KIND_EAGER => {
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                match self.matching.take_posted(&env) {
                    Some(id) => self.fill_recv(id, &env, a, b),
                    None => {
                        let msg = self.unexpected_copy(a, b);
                        self.matching.push_unexpected(env, (msg, peer));
                    }
                }
            }
            KIND_RTS => {
                let mut body = [0u8; CONTROL_BODY_BYTES];
                copy_body(&mut body, a, b);
                let addr = u64::from_le_bytes(body[..8].try_into().unwrap());
                let len = u64::from_le_bytes(body[8..16].try_into().unwrap()) as usize;
                let solo = body[16] != 0;
                let env = Envelope {
                    ctx: h.ctx,
                    src: h.src,
                    tag: h.tag,
                };
                match self.matching.take_posted(&env) {
                    Some(id) => self.start_rendezvous(id, &env, peer, addr, len, h.aux, solo),
                    None => self.matching.push_unexpected(
                        env,
                        (
                            Unexpected::Rts {
                                addr,
                                len,
                                sreq: h.aux,
                                solo,
                            },
                            peer,
                        ),
                    ),
                }
            }
            KIND_FIN => {
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    match r.kind {
                        ReqKind::Send => r.done = true,
                        // The peer is done with an abandoned send: its slot is free again.
                        ReqKind::Abandoned => {
                            r.kind = ReqKind::Free;
                            r.any_source_members = None;
                            r.rbuf = RawBufMut::new(&mut []);
                            self.free_reqs.push(h.aux);
                        }
                        _ => {}
                    }
                }
            }
            KIND_CTS_COOP => {
                let mut body = [0u8; CONTROL_BODY_BYTES];
                copy_body(&mut body, a, b);
                let rreq = u32::from_le_bytes(body[..4].try_into().unwrap());
                let raddr = u64::from_le_bytes(body[8..16].try_into().unwrap());
                let split = u64::from_le_bytes(body[16..24].try_into().unwrap()) as usize;
                let pid = self.pids[peer as usize];
                let Some(r) = self.reqs.get_mut(h.aux as usize) else {
                    return;
                };
                if r.kind == ReqKind::Abandoned {
                    // Our buffer is gone: tell the receiver its upper half failed rather than
                    // leave it waiting for it.
                    self.control(peer, KIND_FIN_COOP, rreq, 1, &[]);
                    return;
                }
                if r.kind != ReqKind::Send || r.done || split > r.sbuf.len() {
                    return;
                }
                // SAFETY: the send buffer stays alive until its request completes.
                let upper = unsafe { r.sbuf.slice(split, r.sbuf.len() - split) };
                let failed = cma::write(pid, raddr + split as u64, upper).is_err();
                // Not done yet: the receiver may still be reading the lower half from our
                // buffer; its FIN (which follows this CTS_COOP in the ring) completes the send.
                self.control(peer, KIND_FIN_COOP, rreq, u8::from(failed), &[]);
            }
            KIND_FIN_COOP => {
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    if r.kind == ReqKind::Recv && !r.done && r.parts_left > 0 {
                        if h.flags != 0 && r.error.is_none() {
                            r.error = Some(Error::new(
                                ErrorKind::Io,
                                format!("rank {} could not write its part of a {}-byte message with process_vm_writev", r.status.source, r.status.bytes),
                            ));
                        }
                        r.parts_left -= 1;
                        if r.parts_left == 0 {
                            r.done = true;
                        }
                    }
                }
            }
            KIND_CTS => {
                let mut body = [0u8; CONTROL_BODY_BYTES];
                copy_body(&mut body, a, b);
                let rreq = u32::from_le_bytes(body[..4].try_into().unwrap());
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    if r.kind == ReqKind::Send && !r.done {
                        r.remote_req = rreq;
                        r.frag_sent = 0;
                        self.enqueue(peer, Outgoing::Fragments { req: h.aux });
                    }
                }
            }
            KIND_FRAG => {
                if let Some(r) = self.reqs.get_mut(h.aux as usize) {
                    let len = a.len() + b.len();
                    if r.kind == ReqKind::Recv && !r.done && r.frag_received + len <= r.frag_total {
                        // SAFETY: the receive buffer is alive and exclusively ours until completion;
                        // frag_total ≤ buffer length was checked when the rendezvous matched.
                        let dst = unsafe { r.rbuf.slice_mut(r.frag_received, len) };
                        dst[..a.len()].copy_from_slice(a);
                        dst[a.len()..].copy_from_slice(b);
                        r.frag_received += len;
                        if r.frag_received == r.frag_total {
                            r.done = true;
                        }
                    }
                }
            }
            other => {
                log::warn!("local rank {}: ignoring message of unknown kind {other} from local rank {peer}", self.my_local);
            }
        }
    }

    /// Sends queued work while the rings have room. True if anything was sent.
    pub(super) fn flush(&mut self, shm: &mut ShmNode) -> bool {
        let mut link = ShmLink {
            shm,
            fragment_bytes: self.fragment_bytes,
        };
        flush_queues(
            &mut self.outq,
            &mut self.outq_len,
            &mut self.reqs,
            &mut link,
        )
    }
}

/// The shared-memory rings: fragments as large as the knob and the peer's ring allow, in
/// order (one ring per pair), so they carry no offset.
struct ShmLink<'a> {
    shm: &'a mut ShmNode,
    fragment_bytes: usize,
}

impl Link for ShmLink<'_> {
    #[inline]
    fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool {
        self.shm.try_send(peer, header, parts)
    }

    fn fragment(&self, peer: u32, r: &Request) -> (Header, usize) {
        let n = (r.sbuf.len() - r.frag_sent)
            .min(self.fragment_bytes)
            .min(self.shm.max_payload(peer));
        let h = Header {
            kind: KIND_FRAG,
            aux: r.remote_req,
            len: n as u32,
            ..Header::default()
        };
        (h, n)
    }
}

fn cma_refused(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPERM) | Some(libc::ENOSYS) | Some(libc::EACCES)
    )
}

fn copy_body(body: &mut [u8; CONTROL_BODY_BYTES], a: &[u8], b: &[u8]) {
    let n1 = a.len().min(CONTROL_BODY_BYTES);
    body[..n1].copy_from_slice(&a[..n1]);
    let n2 = b.len().min(CONTROL_BODY_BYTES - n1);
    body[n1..n1 + n2].copy_from_slice(&b[..n2]);
}
