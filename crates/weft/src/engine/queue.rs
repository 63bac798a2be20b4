//! Work queued for peers that could not go at once, and the one loop ([`flush_queues`])
//! that sends it over a [`Link`] (the rings or the TCP endpoint).

use super::request::Request;
use super::{ReqId, CONTROL_BODY_BYTES};
use std::collections::VecDeque;
use weft_transport::buf::RawBuf;
use weft_transport::shm::Header;

/// Work queued for a peer's ring because the ring was full or order required waiting.
pub(super) enum Outgoing {
    /// A message with a payload borrowed from a request's buffer (eager data or nothing).
    Data {
        header: Header,
        data: RawBuf,
        req: Option<ReqId>,
    },
    /// A control message with a small inline body.
    Control {
        header: Header,
        body: [u8; CONTROL_BODY_BYTES],
        body_len: u8,
    },
    /// Fragments of a send request's buffer still to be streamed (fallback rendezvous).
    Fragments { req: ReqId },
}

/// Where queued work goes: the shared-memory rings or the TCP endpoint. [`flush_queues`] is
/// the one loop over the queues; a link sends one message and cuts the next fragment of a
/// send streamed by fragments.
pub(super) trait Link {
    /// Sends one message to `peer` (local rank or world rank, as the queues are indexed);
    /// false when it has no room now.
    fn try_send(&mut self, peer: u32, header: &Header, parts: &[&[u8]]) -> bool;
    /// The header and length of the next fragment of send `r` to `peer` (from `r.frag_sent`).
    fn fragment(&self, peer: u32, r: &Request) -> (Header, usize);
}

/// Sends queued work, peer by peer and in each peer's order, while `link` takes it; counts
/// what leaves `queued` and completes eager sends and finished fragment streams. True if
/// anything was sent.
pub(super) fn flush_queues(
    queues: &mut [VecDeque<Outgoing>],
    queued: &mut usize,
    reqs: &mut [Request],
    link: &mut impl Link,
) -> bool {
    let mut moved = false;
    for (peer, q) in queues.iter_mut().enumerate() {
        let peer = peer as u32;
        while let Some(item) = q.front_mut() {
            let sent_whole = match item {
                Outgoing::Data { header, data, req } => {
                    // SAFETY: a queued send's buffer stays alive until its request completes.
                    let bytes = unsafe { data.slice(0, data.len()) };
                    if link.try_send(peer, header, &[bytes]) {
                        if let Some(id) = req {
                            reqs[*id as usize].done = true;
                        }
                        true
                    } else {
                        false
                    }
                }
                Outgoing::Control {
                    header,
                    body,
                    body_len,
                } => {
                    let h = Header {
                        len: *body_len as u32,
                        ..*header
                    };
                    link.try_send(peer, &h, &[&body[..*body_len as usize]])
                }
                Outgoing::Fragments { req } => {
                    let r = &mut reqs[*req as usize];
                    loop {
                        if r.frag_sent >= r.sbuf.len() {
                            r.done = true;
                            break true;
                        }
                        let (h, n) = link.fragment(peer, r);
                        // SAFETY: the send buffer stays alive until its request completes.
                        let chunk = unsafe { r.sbuf.slice(r.frag_sent, n) };
                        if !link.try_send(peer, &h, &[chunk]) {
                            break false;
                        }
                        r.frag_sent += n;
                        moved = true;
                    }
                }
            };
            if !sent_whole {
                break;
            }
            q.pop_front();
            *queued -= 1;
            moved = true;
        }
    }
    moved
}
