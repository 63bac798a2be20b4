//! What a network transport does for the progress engine: move matched-message traffic
//! between processes of the job, eager or by rendezvous, and say when a peer is gone.
//!
//! The engine matches; a [`NetEndpoint`] only carries. An eager message (header and body)
//! goes out whole with [`NetEndpoint::try_send`], which says whether it has left or is still
//! held by the endpoint (then a token is reported done once it has: a send completes only
//! when its bytes no longer need this process's polls). A larger one is announced with
//! [`NetEndpoint::start_rendezvous`]: the receiver's endpoint tells its engine
//! ([`NetSink::rendezvous`]) the envelope, the length and a [`Handle`]; once matched the
//! engine hands the endpoint the receive buffer ([`NetEndpoint::fetch`]) or refuses the data
//! ([`NetEndpoint::discard`], a truncated receive), and the endpoint moves the bytes however
//! its network does best: TCP streams fragments after a clear-to-send, UCX lets its own
//! rendezvous protocol read them (zero copy where the hardware allows). Both sides learn
//! that their part is over through [`NetSink::done`] with the token they gave.
//!
//! Headers carry the envelope (`ctx`, `src`, `tag`); `len` is the body's length for an eager
//! message and is set by the endpoint. Every message between one pair of processes is
//! delivered in the order it was sent (eager messages and rendezvous announcements alike),
//! which MPI's non-overtaking rule needs; rendezvous data may arrive in any order.
//!
//! An endpoint is driven from the engine's progress loop ([`NetEndpoint::poll`]); it has no
//! thread of its own.

use crate::buf::{RawBuf, RawBufMut};
use crate::shm::Header;

/// Names a rendezvous message announced to a [`NetSink`], for the endpoint that announced
/// it (the engine keeps it and gives it back; it means nothing to anyone else).
pub type Handle = u64;

/// What [`NetEndpoint::try_send`] did with an eager message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// Sent: it has left this process, and no poll of the sender is needed for it to
    /// arrive.
    Done,
    /// Taken, the caller's buffers free, but some of it is still held by the endpoint,
    /// which needs polls of this process to send it: the token is reported done once it has
    /// left. A sender that stopped polling now (MPI's progress rule lets a rank whose send
    /// is complete do so) would keep its receiver waiting.
    Kept,
    /// Not taken: the caller keeps it and tries again after a poll.
    NotNow,
}

/// Why an operation of a [`NetEndpoint`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetFailure {
    /// True when the peer is gone (its process died or its connection broke): the engine
    /// reports `PeerDead`. False for any other failure of the transport (an I/O error).
    pub peer_lost: bool,
    /// What the transport said, for the error message (the engine adds who and what).
    pub why: String,
}

/// Where a [`NetEndpoint`] delivers what arrived and what finished.
pub trait NetSink {
    /// An eager message from world rank `peer`: its envelope in `h`, its payload `body`.
    fn eager(&mut self, peer: u32, h: &Header, body: &[u8]);
    /// A rendezvous message of `len` bytes from `peer` with the envelope in `h`; its data
    /// waits for [`NetEndpoint::fetch`] or [`NetEndpoint::discard`] with `handle`.
    fn rendezvous(&mut self, peer: u32, h: &Header, len: usize, handle: Handle);
    /// Operation `token` (a rendezvous send, a fetch, or an eager send the endpoint kept)
    /// is over: its buffer is no longer touched by the endpoint, and a send's bytes have
    /// left. `Err` when it failed.
    fn done(&mut self, token: u32, result: Result<(), NetFailure>);
}

/// Counters of a network endpoint, for tools and tests (zero where a transport has no such
/// thing).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Connections (or endpoints) open or opening.
    pub connections: usize,
    /// Bytes of connection buffers held.
    pub buffer_bytes: usize,
    /// The largest receive buffer among the connections.
    pub largest_receive_buffer: usize,
    /// Peers in high-speed mode.
    pub fast_peers: u32,
    /// Fragments or pieces sent on an extra rail (striping).
    pub striped: u64,
    /// Inbound connections refused because they did not prove the job key.
    pub refused: u64,
}

/// One process's endpoint of a network transport (TCP, UCX, ...), reaching the peers its
/// transport was chosen for.
///
/// # Safety
/// An implementation reads the memory given to [`NetEndpoint::start_rendezvous`] and writes
/// the memory given to [`NetEndpoint::fetch`] until it reports that token done, the token
/// is abandoned ([`NetEndpoint::abandon`], which returns only once the memory is no longer
/// touched), or the peer is reported lost (after which nothing of that peer's is touched).
/// It touches that memory in no other way and none other of the caller's.
pub unsafe trait NetEndpoint {
    /// The transport's name (as in `WEFT_TRANSPORTS`).
    fn transport(&self) -> &'static str;

    /// Largest eager body this endpoint sends; the same on every rank of the job.
    fn eager_bytes(&self) -> usize;

    /// Sends an eager message to `peer` (body: `parts` in order, at most
    /// [`NetEndpoint::eager_bytes`] in all). [`Sent::Done`] when it has left this process
    /// (nothing more is needed from it); [`Sent::Kept`] when the endpoint took it (the
    /// caller's buffers are free on return) but holds some of it until later polls move it
    /// (a connection being made, a full socket): the endpoint reports `token` done through
    /// [`NetSink::done`] once it has left, or fails it. [`Sent::NotNow`] means "not now"
    /// (connecting, or the previous message is still being taken): the caller keeps it and
    /// tries again after a poll. `token` means nothing to the endpoint but for this report.
    fn try_send(&mut self, peer: u32, h: &Header, parts: &[&[u8]], token: u32) -> Sent;

    /// Announces a rendezvous message of `data.len()` bytes with envelope `h` to `peer`;
    /// the endpoint then moves the data when the peer fetches it, and reports `token` done
    /// once the data is no longer needed. False means "not now", as for
    /// [`NetEndpoint::try_send`] (nothing was announced).
    ///
    /// # Safety
    /// `data` stays valid and unchanged until `token` is reported done, abandoned, or the
    /// peer lost.
    unsafe fn start_rendezvous(&mut self, peer: u32, h: &Header, data: RawBuf, token: u32) -> bool;

    /// Rails (connections or devices) this endpoint can pin a rendezvous message's data to
    /// with [`NetEndpoint::start_rendezvous_on_rail`]; 1 (the default) when it cannot.
    fn rails(&self) -> u32 {
        1
    }

    /// [`NetEndpoint::start_rendezvous`] whose data goes on rail `rail` only (below
    /// [`NetEndpoint::rails`]) instead of striped over every rail, for callers that keep
    /// each rail busy with messages of their own. A rail that is not open (yet, or at all)
    /// leaves the message to the usual striping. The default ignores `rail`.
    ///
    /// # Safety
    /// As for [`NetEndpoint::start_rendezvous`].
    unsafe fn start_rendezvous_on_rail(
        &mut self,
        peer: u32,
        h: &Header,
        data: RawBuf,
        token: u32,
        rail: u32,
    ) -> bool {
        let _ = rail;
        // SAFETY: the caller's promise is the one start_rendezvous asks for.
        unsafe { self.start_rendezvous(peer, h, data, token) }
    }

    /// Largest message this endpoint sends eagerly from the caller's buffer
    /// ([`NetEndpoint::start_push`]) rather than by rendezvous, when the send need not wait
    /// for its receive (not synchronous); at most [`NetEndpoint::eager_bytes`] (the default)
    /// means it has no such path. The same on every rank of the job.
    fn push_bytes(&self) -> usize {
        self.eager_bytes()
    }

    /// Sends `data.len()` bytes (more than [`NetEndpoint::eager_bytes`], at most
    /// [`NetEndpoint::push_bytes`]) with envelope `h` to `peer` as an eager message straight
    /// from `data` (no copy of ours, no wait for the receiver's match), and reports `token`
    /// done once `data` is free again. False means "not now", as for
    /// [`NetEndpoint::try_send`]. The default announces it by rendezvous.
    ///
    /// # Safety
    /// As for [`NetEndpoint::start_rendezvous`].
    unsafe fn start_push(&mut self, peer: u32, h: &Header, data: RawBuf, token: u32) -> bool {
        // SAFETY: the caller's promise is the one start_rendezvous asks for.
        unsafe { self.start_rendezvous(peer, h, data, token) }
    }

    /// Takes the data of rendezvous message `handle` from `peer` into `dst` (exactly the
    /// message's length) and reports `token` done once it is all there.
    ///
    /// # Safety
    /// `dst` stays valid and is touched by nobody else until `token` is reported done or
    /// the peer lost.
    unsafe fn fetch(&mut self, peer: u32, handle: Handle, dst: RawBufMut, token: u32);

    /// Refuses the data of rendezvous message `handle` from `peer` (the receive that
    /// matched it is too small): the sender's operation completes without sending it.
    fn discard(&mut self, peer: u32, handle: Handle);

    /// Forgets rendezvous send `token` (its request was given up): the endpoint will not
    /// read its buffer again and reports nothing more for it. Returns once that holds.
    fn abandon(&mut self, token: u32);

    /// Moves traffic: delivers what arrived and what finished to `sink`, sends what was
    /// waiting. Never blocks. True if anything moved.
    fn poll(&mut self, sink: &mut dyn NetSink) -> bool;

    /// Peers found gone since the last call, each with the reason (an empty vector, which
    /// costs nothing, when none).
    fn take_lost(&mut self) -> Vec<(u32, String)>;

    /// Makes sure `peer` is being reached (a connection is made or opening), so that a peer
    /// that died before it ever sent anything is found.
    fn reach(&mut self, peer: u32);

    /// True while polling on every progress call is worth it: bytes of ours wait to go,
    /// connections are being made, operations are in flight or traffic moved recently.
    fn wants_polling(&self) -> bool;

    /// True once some peer is connected (before that the caller may poll rarely).
    fn connected(&self) -> bool;

    /// True while bytes of ours have not left (finalize waits for them).
    fn unsent(&self) -> bool;

    /// Counters for tools and tests.
    fn stats(&self) -> NetStats;
}
