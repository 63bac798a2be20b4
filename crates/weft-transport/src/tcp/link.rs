//! The TCP transport as a [`NetEndpoint`]: the rendezvous protocol over the frames of an
//! [`Endpoint`].
//!
//! - `EAGER` frames carry eager messages.
//! - `RTS` announces a rendezvous message (its body: the length); the receiver's engine
//!   matches it and fetches it, which sends `CTS` naming the fetch and the fragment size
//!   wanted (small while the peer is in memory-saving mode; a message of at most two full
//!   fragments comes in two halves, not below [`MIN_SPLIT_BYTES`], so the receiver reads
//!   the first while the sender writes the second), or discards it (`CTS` with
//!   [`CTS_DISCARD`]: the sender completes without sending).
//! - The sender then streams `FRAG`s, each carrying its offset (low word in `ctx`, high word
//!   in `tag`) because rails may deliver them out of order. The send is done once its last
//!   fragment is handed to the kernel. A fragment whose header arrived before its body is
//!   read straight into the receive buffer ([`Sink::place`]); the fetch is done when every
//!   byte is in.
//! - A `CTS` goes out ahead of the fragments queued for the same peer, so both directions of
//!   an exchange of large messages stream at once; the socket's unsent limit
//!   ([`super::unsent_limit_bytes`]) keeps it from waiting behind fragments already handed
//!   to the kernel, of which there is at most about one beyond those in flight.
//!
//! Tokens are the engine's request ids; a `CTS` carries the fetch's token as the receiver's
//! request, and every fragment carries it back.

use super::frame::{self, CTS_BODY_BYTES, CTS_DISCARD, KIND_CTS, KIND_EAGER, KIND_FRAG, KIND_RTS};
use super::{Endpoint, Sink};
use crate::buf::{RawBuf, RawBufMut};
use crate::net::{Handle, NetEndpoint, NetSink, NetStats, Sent};
use crate::shm::Header;
use std::collections::VecDeque;

/// Smallest fragment a rendezvous message is cut into to have two of them in flight.
pub const MIN_SPLIT_BYTES: usize = 64 * 1024;

/// A rendezvous send, from its `RTS` until its last fragment left.
struct Send {
    peer: u32,
    data: RawBuf,
    /// The receiver's fetch (its token), from its `CTS`.
    rreq: u32,
    /// Bytes handed to the kernel so far.
    sent: usize,
    /// Fragment size the receiver asked for.
    frag_bytes: usize,
    /// The rail its fragments go on (`start_rendezvous_on_rail`); None: striped.
    rail: Option<u32>,
}

/// A fetch: where a rendezvous message's fragments go.
struct Fetch {
    peer: u32,
    dst: RawBufMut,
    /// Bytes counted in so far (placed ones from the moment they are placed).
    received: usize,
    /// Fragments being read straight into `dst` by the endpoint.
    placing: u8,
}

/// A `CTS` waiting to go out.
struct Cts {
    sreq: u32,
    flags: u8,
    body: [u8; CTS_BODY_BYTES],
}

/// Everything of the link but the endpoint, so the endpoint's sink can borrow it.
struct State {
    fragment_bytes: usize,
    small_fragment_bytes: usize,
    /// Per peer: in high-speed mode (mirrors the endpoint, for the fragment size asked).
    fast: Vec<bool>,
    /// Per token.
    sends: Vec<Option<Send>>,
    fetches: Vec<Option<Fetch>>,
    /// Per peer: `CTS`es to send, then sends streaming fragments (tokens).
    cts: Vec<VecDeque<Cts>>,
    streams: Vec<VecDeque<u32>>,
    /// Items in `cts` and `streams` together.
    queued: usize,
    /// Completions found outside a poll (a fetch of nothing), reported by the next one.
    finished: Vec<u32>,
    /// Sends (eager, or a rendezvous whose last fragments were taken) whose bytes a
    /// connection to the peer still held (peer, token): each is reported done once the
    /// peer's connections have written everything (their frames go out in order).
    kept: Vec<(u32, u32)>,
}

/// The TCP endpoint with the rendezvous protocol on top.
pub struct TcpLink {
    ep: Endpoint,
    st: State,
    eager_bytes: usize,
}

fn slot<T>(v: &mut Vec<Option<T>>, token: u32) -> &mut Option<T> {
    let i = token as usize;
    if v.len() <= i {
        v.resize_with(i + 1, || None);
    }
    &mut v[i]
}

impl TcpLink {
    /// Wraps `ep` (built with `small_fragment_bytes` as its memory-saving fragment size).
    pub fn new(ep: Endpoint, small_fragment_bytes: usize) -> TcpLink {
        let size = ep.size as usize;
        let limits = ep.limits;
        TcpLink {
            eager_bytes: limits.eager_bytes as usize,
            st: State {
                fragment_bytes: limits.fragment_bytes as usize,
                small_fragment_bytes,
                fast: vec![false; size],
                sends: Vec::new(),
                fetches: Vec::new(),
                cts: (0..size).map(|_| VecDeque::new()).collect(),
                streams: (0..size).map(|_| VecDeque::new()).collect(),
                queued: 0,
                finished: Vec::new(),
                kept: Vec::new(),
            },
            ep,
        }
    }

    /// The endpoint underneath (addresses, rails, counters).
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    /// The endpoint underneath, to set addresses and timeouts.
    pub fn endpoint_mut(&mut self) -> &mut Endpoint {
        &mut self.ep
    }

    /// Sends the `CTS`es queued for `peer` while the connection takes them.
    fn flush_cts(&mut self, peer: u32) -> bool {
        let mut moved = false;
        let q = &mut self.st.cts[peer as usize];
        while let Some(c) = q.front() {
            let h = Header {
                kind: KIND_CTS,
                aux: c.sreq,
                flags: c.flags,
                len: CTS_BODY_BYTES as u32,
                ..Header::default()
            };
            if !self.ep.try_send(peer, &h, &[&c.body]) {
                break;
            }
            q.pop_front();
            self.st.queued -= 1;
            moved = true;
        }
        moved
    }

    /// Sends queued work, peer by peer: `CTS`es first, then fragments. True if anything
    /// left.
    fn flush(&mut self, sink: &mut dyn NetSink) -> bool {
        let mut moved = false;
        for peer in 0..self.st.cts.len() as u32 {
            if !self.st.cts[peer as usize].is_empty() {
                moved |= self.flush_cts(peer);
                if !self.st.cts[peer as usize].is_empty() {
                    continue;
                }
            }
            let p = peer as usize;
            // Sends stream in order; one pinned to a rail that is busy lets the sends
            // behind it go meanwhile (each rail then carries its own message at once).
            let mut at = 0;
            while let Some(&token) = self.st.streams[p].get(at) {
                let Some(s) = self
                    .st
                    .sends
                    .get_mut(token as usize)
                    .and_then(Option::as_mut)
                else {
                    // Abandoned meanwhile.
                    self.st.streams[p].remove(at);
                    self.st.queued -= 1;
                    continue;
                };
                let mut finished = false;
                loop {
                    if s.sent >= s.data.len() {
                        finished = true;
                        break;
                    }
                    let n = (s.data.len() - s.sent).min(s.frag_bytes);
                    let offset = s.sent as u64;
                    let h = Header {
                        kind: KIND_FRAG,
                        aux: s.rreq,
                        len: n as u32,
                        ctx: offset as u32,
                        tag: (offset >> 32) as u32 as i32,
                        ..Header::default()
                    };
                    // SAFETY: the send's buffer stays valid until it is reported done.
                    let chunk = unsafe { s.data.slice(s.sent, n) };
                    let sent = match s.rail {
                        Some(rail) => self.ep.try_send_on_rail(peer, &h, &[chunk], rail),
                        None => self.ep.try_send(peer, &h, &[chunk]),
                    };
                    if !sent {
                        break;
                    }
                    s.sent += n;
                    moved = true;
                }
                if !finished {
                    if s.rail.is_some() {
                        at += 1;
                        continue;
                    }
                    break;
                }
                self.st.sends[token as usize] = None;
                self.st.streams[p].remove(at);
                self.st.queued -= 1;
                if self.ep.holds_for(peer) {
                    // The last fragments wait in a connection: done once they are written.
                    self.st.kept.push((peer, token));
                } else {
                    sink.done(token, Ok(()));
                }
                moved = true;
            }
        }
        moved
    }

    /// Forgets every operation of `peer` (gone: its connections are closed, so no placement
    /// is in progress).
    fn forget_peer(&mut self, peer: u32) {
        let st = &mut self.st;
        for s in st.sends.iter_mut() {
            if s.as_ref().is_some_and(|s| s.peer == peer) {
                *s = None;
            }
        }
        for f in st.fetches.iter_mut() {
            if f.as_ref().is_some_and(|f| f.peer == peer) {
                *f = None;
            }
        }
        // The engine fails the sends waiting on a lost peer.
        st.kept.retain(|&(w, _)| w != peer);
        let p = peer as usize;
        st.queued -= st.cts[p].len() + st.streams[p].len();
        st.cts[p].clear();
        st.streams[p].clear();
    }
}

/// What the endpoint reads: eager messages and announcements go to the engine's sink, the
/// rest of the protocol stays here.
struct Inbound<'a> {
    st: &'a mut State,
    sink: &'a mut dyn NetSink,
}

impl State {
    /// The fetch a `FRAG` from `peer` belongs to and the fragment's offset in it, if it is
    /// one that may take it (a fetch from `peer`, with room where the offset says).
    fn fragment_target(&mut self, peer: u32, h: &Header) -> Option<(&mut Fetch, usize)> {
        let f = self.fetches.get_mut(h.aux as usize)?.as_mut()?;
        let len = h.len as usize;
        let offset = (h.ctx as u64 | (h.tag as u32 as u64) << 32) as usize;
        let fits = f.peer == peer
            && f.received + len <= f.dst.len()
            && offset
                .checked_add(len)
                .is_some_and(|end| end <= f.dst.len());
        fits.then_some((f, offset))
    }

    /// Reports fetch `token` done once every byte is in and no placement is left.
    fn fetch_progress(&mut self, token: u32, sink: &mut dyn NetSink) {
        let Some(f) = self.fetches.get(token as usize).and_then(Option::as_ref) else {
            return;
        };
        if f.received == f.dst.len() && f.placing == 0 {
            self.fetches[token as usize] = None;
            sink.done(token, Ok(()));
        }
    }
}

// SAFETY: `place` hands out the part of a fetch's buffer that one fragment fills and counts
// the placement; the fetch is reported done only with every byte counted and no placement
// left (`placed` takes it back), so the buffer is not handed back to the engine while the
// endpoint writes into it. A fetch is forgotten early only when its peer is lost, which the
// endpoint reports after closing every connection of that peer (ending their placements).
unsafe impl Sink for Inbound<'_> {
    fn frame(&mut self, peer: u32, h: &Header, body: &[u8]) {
        match h.kind {
            KIND_EAGER => self.sink.eager(peer, h, body),
            KIND_RTS => {
                let len = u64::from_le_bytes(body[..8].try_into().expect("RTS body is 8 bytes"));
                let len = usize::try_from(len).unwrap_or(usize::MAX);
                self.sink.rendezvous(peer, h, len, h.aux.into());
            }
            KIND_CTS => {
                let rreq = u32::from_le_bytes(body[..4].try_into().expect("CTS body is 8 bytes"));
                let frag = u32::from_le_bytes(body[4..8].try_into().expect("CTS body is 8 bytes"));
                let frag_bytes = (frag as usize).clamp(1, self.st.fragment_bytes);
                let token = h.aux;
                let Some(s) = self
                    .st
                    .sends
                    .get_mut(token as usize)
                    .and_then(Option::as_mut)
                else {
                    return;
                };
                if s.peer != peer || s.frag_bytes != 0 {
                    return;
                }
                if h.flags & CTS_DISCARD != 0 {
                    self.st.sends[token as usize] = None;
                    self.sink.done(token, Ok(()));
                    return;
                }
                s.rreq = rreq;
                s.frag_bytes = frag_bytes;
                self.st.streams[peer as usize].push_back(token);
                self.st.queued += 1;
            }
            KIND_FRAG => {
                if let Some((f, offset)) = self.st.fragment_target(peer, h) {
                    // SAFETY: the fetch's buffer is valid and ours until the fetch is
                    // reported done; the fragment fits where its offset says.
                    let dst = unsafe { f.dst.slice_mut(offset, body.len()) };
                    dst.copy_from_slice(body);
                    f.received += body.len();
                    self.st.fetch_progress(h.aux, self.sink);
                }
            }
            other => {
                log::warn!(
                    "ignoring TCP frame of kind {other} from rank {peer} (the codec admits no such kind)"
                );
            }
        }
    }

    fn place(&mut self, peer: u32, h: &Header) -> Option<RawBufMut> {
        let (f, offset) = self.st.fragment_target(peer, h)?;
        if f.placing == u8::MAX {
            return None;
        }
        // Counted now, so bytes claimed twice (by a confused peer) find no room left.
        f.received += h.len as usize;
        f.placing += 1;
        // SAFETY: as for a whole `FRAG`: the buffer is valid and ours, the fragment fits.
        Some(RawBufMut::new(unsafe {
            f.dst.slice_mut(offset, h.len as usize)
        }))
    }

    fn placed(&mut self, _peer: u32, h: &Header) {
        let Some(f) = self
            .st
            .fetches
            .get_mut(h.aux as usize)
            .and_then(Option::as_mut)
        else {
            return;
        };
        if f.placing == 0 {
            return;
        }
        f.placing -= 1;
        self.st.fetch_progress(h.aux, self.sink);
    }
}

// SAFETY: a send's buffer is read only while its `Send` exists, which ends when it is
// reported done, abandoned or its peer lost; a fetch's buffer is written only while its
// `Fetch` exists, likewise (see the `Sink` implementation for placements).
unsafe impl NetEndpoint for TcpLink {
    fn transport(&self) -> &'static str {
        "tcp"
    }

    fn eager_bytes(&self) -> usize {
        self.eager_bytes
    }

    #[inline]
    fn try_send(&mut self, peer: u32, h: &Header, parts: &[&[u8]], token: u32) -> Sent {
        let h = Header {
            kind: KIND_EAGER,
            ..*h
        };
        if !self.ep.try_send(peer, &h, parts) {
            return Sent::NotNow;
        }
        if self.ep.holds_for(peer) {
            // The socket took part of it: the rest goes on later polls.
            self.st.kept.push((peer, token));
            return Sent::Kept;
        }
        Sent::Done
    }

    unsafe fn start_rendezvous(&mut self, peer: u32, h: &Header, data: RawBuf, token: u32) -> bool {
        let rts = Header {
            kind: KIND_RTS,
            len: frame::RTS_BODY_BYTES as u32,
            aux: token,
            ..*h
        };
        let body = (data.len() as u64).to_le_bytes();
        if !self.ep.try_send(peer, &rts, &[&body]) {
            return false;
        }
        *slot(&mut self.st.sends, token) = Some(Send {
            peer,
            data,
            rreq: 0,
            sent: 0,
            frag_bytes: 0,
            rail: None,
        });
        true
    }

    fn rails(&self) -> u32 {
        self.ep.rails()
    }

    unsafe fn start_rendezvous_on_rail(
        &mut self,
        peer: u32,
        h: &Header,
        data: RawBuf,
        token: u32,
        rail: u32,
    ) -> bool {
        // SAFETY: the caller's promise is the one start_rendezvous asks for.
        if !unsafe { self.start_rendezvous(peer, h, data, token) } {
            return false;
        }
        if let Some(s) = self.st.sends[token as usize].as_mut() {
            s.rail = Some(rail);
        }
        true
    }

    unsafe fn fetch(&mut self, peer: u32, handle: Handle, dst: RawBufMut, token: u32) {
        let len = dst.len();
        // A peer in memory-saving mode is asked for small fragments, which its
        // connection's small receive buffer holds.
        let frag = if self.st.fast[peer as usize] {
            self.st
                .fragment_bytes
                .min(len.div_ceil(2).max(MIN_SPLIT_BYTES))
        } else {
            self.st.small_fragment_bytes
        };
        let mut body = [0u8; CTS_BODY_BYTES];
        body[..4].copy_from_slice(&token.to_le_bytes());
        body[4..].copy_from_slice(&(frag as u32).to_le_bytes());
        *slot(&mut self.st.fetches, token) = Some(Fetch {
            peer,
            dst,
            received: 0,
            placing: 0,
        });
        if len == 0 {
            self.st.fetches[token as usize] = None;
            self.st.finished.push(token);
        }
        self.st.cts[peer as usize].push_back(Cts {
            sreq: handle as u32,
            flags: 0,
            body,
        });
        self.st.queued += 1;
        self.flush_cts(peer);
    }

    fn discard(&mut self, peer: u32, handle: Handle) {
        self.st.cts[peer as usize].push_back(Cts {
            sreq: handle as u32,
            flags: CTS_DISCARD,
            body: [0; CTS_BODY_BYTES],
        });
        self.st.queued += 1;
        self.flush_cts(peer);
    }

    fn abandon(&mut self, token: u32) {
        // What was written is in the kernel or the connection's own buffer: nothing of the
        // caller's is read after this. A fragment stream of this token ends at the next flush.
        if let Some(s) = self.st.sends.get_mut(token as usize) {
            *s = None;
        }
    }

    fn poll(&mut self, sink: &mut dyn NetSink) -> bool {
        let mut moved = false;
        for token in std::mem::take(&mut self.st.finished) {
            sink.done(token, Ok(()));
            moved = true;
        }
        moved |= self.ep.poll_into(&mut Inbound {
            st: &mut self.st,
            sink: &mut *sink,
        });
        if !self.st.kept.is_empty() {
            let ep = &self.ep;
            self.st.kept.retain(|&(peer, token)| {
                let held = ep.holds_for(peer);
                if !held {
                    sink.done(token, Ok(()));
                    moved = true;
                }
                held
            });
        }
        for w in self.ep.take_promoted() {
            self.st.fast[w as usize] = true;
        }
        if self.st.queued > 0 {
            moved |= self.flush(sink);
        }
        moved
    }

    fn take_lost(&mut self) -> Vec<(u32, String)> {
        let lost = self.ep.take_lost();
        for (w, _) in &lost {
            self.forget_peer(*w);
        }
        lost
    }

    fn reach(&mut self, peer: u32) {
        self.ep.connect(peer);
    }

    fn wants_polling(&self) -> bool {
        self.st.queued > 0
            || !self.st.finished.is_empty()
            || !self.st.kept.is_empty()
            || self.ep.busy()
            || self.ep.active()
    }

    fn connected(&self) -> bool {
        self.ep.connection_count() > 0
    }

    fn unsent(&self) -> bool {
        self.ep.unsent() || self.st.queued > 0
    }

    fn stats(&self) -> NetStats {
        NetStats {
            connections: self.ep.connection_count(),
            buffer_bytes: self.ep.buffer_bytes(),
            largest_receive_buffer: self.ep.largest_receive_buffer(),
            fast_peers: self.ep.fast_peer_count(),
            striped: self.ep.striped_count(),
            refused: self.ep.refused_count(),
        }
    }
}
