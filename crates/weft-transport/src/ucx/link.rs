//! The UCX endpoint (`ucp`, UCX 1.13 or later), loaded at run time: one worker per process
//! and rail, its address published through the bootstrap store, endpoints made on first use
//! with error handling mode "peer" (a peer that dies fails its operations and is reported
//! lost), progress driven by weft's engine (no thread of ours, none of UCX's: single-thread
//! mode).
//!
//! Messages are UCX active messages (the data of rendezvous messages aside) with a fixed
//! 48-byte header: weft's message header (the envelope), the sender's world rank, and a
//! token derived from the job key (UCX does not authenticate its peers: a message without
//! the job's token is dropped and counted).
//! - Eager messages up to `WEFT_UCX_COPY_BYTES` are copied into a send slot of ours (so the
//!   caller's buffer is free on return, and no allocation happens once the slots have grown)
//!   and sent with `UCP_AM_SEND_FLAG_EAGER` (a send UCX keeps past the call, as it does
//!   while it wires up a new endpoint, is reported done once UCX completes it: until then
//!   the sender's polls are needed to send it); larger ones up to `WEFT_UCX_EAGER_BYTES`
//!   (unless synchronous) are sent the same way straight from the caller's buffer
//!   ([`NetEndpoint::start_push`]), which the send holds until UCX is done with it: a copy of
//!   64 KiB costs about what a tenth of the message's trip does.
//! - Rendezvous messages (larger ones, and synchronous sends of any size) are an
//!   announcement and a UCX tag message: the announcement is an eager active message of the
//!   header alone (the length, and the sender's sequence number of the transfer), in order
//!   with the eager messages, so weft's matching stays authoritative; the data goes at once
//!   from the caller's buffer by `ucp_tag_send_sync_nbx` under a tag made of the sender's
//!   rank and that sequence number, masked with a value derived from the job key (UCX does
//!   not authenticate the tag messages' senders: a stranger cannot guess a tag). Once weft
//!   has matched the announcement, `ucp_tag_recv_nbx` with the exact tag receives the data
//!   into the matched buffer by UCX's tag rendezvous (zero copy where the transport allows:
//!   the data is never copied by weft); a receive too small receives the message into no
//!   buffer (UCX truncates it), which completes the send. A send completes when UCX says
//!   the receiver has matched it; a receive checks that it got the announced length. The
//!   receives posted for a peer found lost are cancelled before the engine fails them.
//!
//! Rails: with several lanes chosen (one UCX context and worker each, restricted to the
//! lane's device with UCX's `NET_DEVICES`), a rendezvous message of at least
//! `WEFT_STRIPE_BYTES` is cut into one piece per rail (4 KiB aligned), sent with UCX's
//! active-message rendezvous (`UCP_AM_SEND_FLAG_RNDV`): the first piece, on rail 0, is the
//! announcement the receiver matches (its header says how many pieces there are); every
//! piece carries the message's sequence number and its index, and the receiver keeps the
//! data descriptors until the match tells it where they go (`ucp_am_recv_data_nbx`). Eager
//! messages and announcements all go on rail 0, in order.
//!
//! Every request carries a slot of ours as its user data; its callback records completion
//! and frees the request. Nothing here is thread-safe: the engine is single-threaded.

use super::ffi::*;
use crate::buf::{RawBuf, RawBufMut};
use crate::net::{Handle, NetEndpoint, NetFailure, NetSink, NetStats, Sent};
use crate::shm::Header;
use crate::tcp::frame;
use crate::transport::{Job, Opening};
use std::collections::VecDeque;
use std::ffi::{c_void, CString};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// The active-message id of weft's messages.
const AM_ID: u32 = 7;
/// Bytes of the header of every message.
pub const HEADER_BYTES: usize = 48;
/// Offsets in it of the sender's world rank, the high word of a striped message's length
/// (the low word is the message header's `len`) and the job token.
const RANK_AT: usize = 24;
const LEN_HIGH_AT: usize = 28;
const TOKEN_AT: usize = 32;
const TOKEN_BYTES: usize = 16;
/// Idle polls after the last traffic during which the worker is polled on every call.
const ACTIVE_POLLS: u32 = 64;
/// How long giving up a rendezvous send or closing an endpoint may wait for UCX.
const CANCEL_WAIT: Duration = Duration::from_millis(200);
/// Marks a [`Handle`] of a striped message (an index into the striped table) rather than
/// a UCX data descriptor (a user-space address, below 2^63).
const STRIPED: Handle = 1 << 63;
/// Pieces of a striped message start at multiples of this.
const PIECE_ALIGN: usize = 4096;

/// Libraries loaded so far (by path): loaded once per process and never unloaded.
static LOADED: Mutex<Vec<(String, &'static std::result::Result<Ucp, String>)>> =
    Mutex::new(Vec::new());

/// The UCX library at `path` (loaded on first use), or why it cannot be used.
pub fn library(path: &str) -> std::result::Result<&'static Ucp, String> {
    let mut loaded = LOADED.lock().unwrap_or_else(|p| p.into_inner());
    let entry = match loaded.iter().find(|(p, _)| p == path) {
        Some((_, e)) => *e,
        None => {
            let e: &'static _ = Box::leak(Box::new(Ucp::load(path)));
            loaded.push((path.to_string(), e));
            e
        }
    };
    entry.as_ref().map_err(|e| e.clone())
}

/// How a [`UcxLink`] is set up.
#[derive(Clone, Debug)]
pub struct UcxConfig {
    /// This process's rank in the job and the job's size.
    pub rank: u32,
    pub size: u32,
    /// The job key: every message carries a token derived from it.
    pub key: Vec<u8>,
    /// Largest eager body; the same on every rank (`WEFT_UCX_EAGER_BYTES`).
    pub eager_bytes: usize,
    /// Largest eager body copied into a send slot (`WEFT_UCX_COPY_BYTES`); larger eager
    /// bodies go from the caller's buffer.
    pub copy_bytes: usize,
    /// The library to load (`WEFT_UCX_LIB`).
    pub library: String,
    /// One rail per entry: UCX's `NET_DEVICES` for its context (None: UCX's own choice).
    pub rails: Vec<Option<String>>,
    /// Rendezvous messages of at least this many bytes are striped over the rails.
    pub stripe_bytes: usize,
}

/// A message that arrived while nobody was polling (UCX ran a callback from inside a call
/// that progresses a worker, such as giving up a send): delivered by the next poll, in
/// order.
enum Early {
    Eager {
        peer: u32,
        h: Header,
        body: Vec<u8>,
    },
    Rendezvous {
        peer: u32,
        h: Header,
        len: usize,
        handle: Handle,
    },
}

/// One operation in flight: its request's user data.
struct Op {
    state: *mut State,
    index: u32,
    /// The engine's token (rendezvous sends and fetches); None for eager sends and pieces.
    token: Option<u32>,
    /// The striped send or receive this is a piece of.
    group: Option<u32>,
    peer: u32,
    rail: u32,
    /// Whether a send (counted in `sends_in_flight`).
    send: bool,
    /// Bytes a tag receive expects (the announced length).
    expect: usize,
    /// The request UCX returned (null until then, and once finished).
    request: *mut c_void,
    live: bool,
    header: [u8; HEADER_BYTES],
    /// An eager message's copy of the body.
    body: Vec<u8>,
}

/// A striped message: a send's pieces in flight, or a receive's pieces as they arrive.
struct Striped {
    /// A receive (from `peer`) rather than a send (to it).
    recv: bool,
    peer: u32,
    /// The sender's sequence number of the message (both sides: it names the message between
    /// them). Not the engine's token: the sender reuses a token as soon as its pieces are
    /// sent, which can be before this side has received the last of them.
    message_seq: u32,
    /// The engine's token to report when every piece is done (a receive: once fetched).
    token: Option<u32>,
    pieces: u32,
    /// Pieces not finished yet.
    left: u32,
    /// Bytes of the whole message (known once the announcement arrived, for a receive).
    len: usize,
    /// A receive's pieces that arrived and were not received yet: (index, rail, descriptor).
    held: Vec<(u32, u32, *mut c_void)>,
    /// A receive's buffer once matched.
    dst: Option<RawBufMut>,
    discarded: bool,
    /// The first failure among the pieces.
    failure: Option<NetFailure>,
}

/// Where piece `i` of `pieces` of a `len`-byte message starts and how long it is.
fn piece(len: usize, pieces: u32, i: u32) -> (usize, usize) {
    let chunk = len.div_ceil(pieces as usize).next_multiple_of(PIECE_ALIGN);
    let start = (chunk * i as usize).min(len);
    (start, chunk.min(len - start))
}

/// The argument of a peer's endpoint error callback.
struct ErrArg {
    state: *mut State,
    peer: u32,
}

/// The argument of a rail's message handler.
struct RailArg {
    state: *mut State,
    rail: u32,
}

/// What UCX callbacks reach (boxed: its address is their argument).
struct State {
    ucp: &'static Ucp,
    /// One worker per rail.
    workers: Vec<Worker>,
    rank: u32,
    size: u32,
    token: [u8; TOKEN_BYTES],
    /// Mixed into every UCX tag of a rendezvous message's data (derived from the job key:
    /// a stranger that can reach the worker cannot guess a transfer's tag).
    tag_mask: u64,
    /// The sequence number of this process's next rendezvous message.
    next_seq: u32,
    /// The engine's sink while a poll runs.
    sink: Option<*mut (dyn NetSink + 'static)>,
    early: VecDeque<Early>,
    /// Completions found while nobody polled, reported by the next poll.
    finished: Vec<(u32, std::result::Result<(), NetFailure>)>,
    lost: Vec<(u32, String)>,
    dead: Vec<bool>,
    /// Per rail, per peer.
    eps: Vec<Vec<Ep>>,
    // Boxed: UCX holds their addresses (callback arguments, request user data) while the
    // vectors grow.
    #[allow(clippy::vec_box)]
    err_args: Vec<Box<ErrArg>>,
    #[allow(clippy::vec_box)]
    rail_args: Vec<Box<RailArg>>,
    #[allow(clippy::vec_box)]
    ops: Vec<Box<Op>>,
    free_ops: Vec<u32>,
    striped: Vec<Option<Striped>>,
    /// Pieces to receive or release once the progress loop is out of UCX's callbacks.
    piece_work: Vec<u32>,
    in_flight: usize,
    sends_in_flight: usize,
    active_polls: u32,
    /// Messages dropped because they did not carry the job's token.
    refused: u64,
    /// Endpoints ever made (for `connected`).
    endpoints: usize,
    /// Pieces sent on a rail other than the first.
    pieces_striped: u64,
}

impl State {
    /// The sequence number of a new rendezvous message (single-rail or striped): its data
    /// tag and the receiver's key for its pieces. It comes back after 2^32 messages.
    fn take_seq(&mut self) -> u32 {
        let seq = self.next_seq;
        self.next_seq = seq.wrapping_add(1);
        seq
    }

    fn alloc_op(&mut self, token: Option<u32>, peer: u32, rail: u32, send: bool) -> *mut Op {
        let me: *mut State = self;
        let i = match self.free_ops.pop() {
            Some(i) => i,
            None => {
                let index = self.ops.len() as u32;
                self.ops.push(Box::new(Op {
                    state: me,
                    index,
                    token: None,
                    group: None,
                    peer: 0,
                    rail: 0,
                    send: false,
                    expect: 0,
                    request: std::ptr::null_mut(),
                    live: false,
                    header: [0; HEADER_BYTES],
                    body: Vec::new(),
                }));
                index
            }
        };
        let op = &mut self.ops[i as usize];
        op.token = token;
        op.group = None;
        op.peer = peer;
        op.rail = rail;
        op.send = send;
        op.request = std::ptr::null_mut();
        op.live = true;
        &mut **op
    }

    /// The UCX tag of rendezvous message `seq` of world rank `sender`.
    fn tag_of(&self, sender: u32, seq: u32) -> u64 {
        (u64::from(sender) << 32 | u64::from(seq)) ^ self.tag_mask
    }

    fn release_op(&mut self, index: u32) {
        let op = &mut self.ops[index as usize];
        op.live = false;
        op.request = std::ptr::null_mut();
        op.token = None;
        op.group = None;
        self.free_ops.push(index);
    }

    /// Reports `token` done to the sink, or keeps it for the next poll.
    fn report(&mut self, token: u32, result: std::result::Result<(), NetFailure>) {
        match self.sink {
            // SAFETY: the sink pointer is set only while `poll` runs, from its argument.
            Some(s) => unsafe { (*s).done(token, result) },
            None => self.finished.push((token, result)),
        }
    }

    fn failure(&self, status: Status) -> NetFailure {
        NetFailure {
            peer_lost: is_peer_failure(status),
            why: format!("UCX: {}", self.ucp.status_text(status)),
        }
    }

    /// An operation finished with `status` (request already freed or never made).
    fn finish(&mut self, index: u32, status: Status) {
        let op = &mut self.ops[index as usize];
        if !op.live {
            return;
        }
        if !op.request.is_null() {
            self.in_flight -= 1;
            if op.send {
                self.sends_in_flight -= 1;
            }
        }
        let (token, group, peer) = (op.token, op.group, op.peer);
        self.release_op(index);
        self.active_polls = ACTIVE_POLLS;
        let result = if status == UCS_OK {
            Ok(())
        } else {
            Err(self.failure(status))
        };
        if let Some(g) = group {
            self.piece_done(g, result);
            return;
        }
        match token {
            Some(t) => self.report(t, result),
            None => {
                if let Err(f) = result {
                    if f.peer_lost {
                        self.mark_lost(peer, f.why);
                    } else {
                        log::warn!("UCX eager send to rank {peer} failed: {}", f.why);
                    }
                }
            }
        }
    }

    /// A piece of striped message `g` finished.
    fn piece_done(&mut self, g: u32, result: std::result::Result<(), NetFailure>) {
        let Some(s) = self.striped.get_mut(g as usize).and_then(Option::as_mut) else {
            return;
        };
        if let Err(f) = result {
            s.failure.get_or_insert(f);
        }
        s.left -= 1;
        if s.left > 0 {
            return;
        }
        let s = self.striped[g as usize].take().expect("checked above");
        if let Some(t) = s.token {
            self.report(t, s.failure.map_or(Ok(()), Err));
        }
    }

    /// The striped receive of message `message_seq` from `peer` (a sender's sequence numbers
    /// come back only after 2^32 rendezvous messages, so one is open per number), made when
    /// its first piece arrives.
    fn striped_recv(&mut self, peer: u32, message_seq: u32, pieces: u32) -> u32 {
        if let Some(g) = self.striped.iter().position(|s| {
            s.as_ref()
                .is_some_and(|s| s.recv && s.peer == peer && s.message_seq == message_seq)
        }) {
            return g as u32;
        }
        let entry = Striped {
            recv: true,
            peer,
            message_seq,
            token: None,
            pieces,
            left: pieces,
            len: 0,
            held: Vec::new(),
            dst: None,
            discarded: false,
            failure: None,
        };
        match self.striped.iter().position(Option::is_none) {
            Some(g) => {
                self.striped[g] = Some(entry);
                g as u32
            }
            None => {
                self.striped.push(Some(entry));
                (self.striped.len() - 1) as u32
            }
        }
    }

    fn mark_lost(&mut self, peer: u32, why: String) {
        if let Some(d) = self.dead.get_mut(peer as usize) {
            if !*d {
                *d = true;
                self.lost.push((peer, why));
            }
        }
    }

    fn deliver(&mut self, e: Early) {
        let Some(s) = self.sink else {
            self.early.push_back(e);
            return;
        };
        // SAFETY: the sink pointer is set only while `poll` runs, from its argument.
        let sink = unsafe { &mut *s };
        match e {
            Early::Eager { peer, h, body } => sink.eager(peer, &h, &body),
            Early::Rendezvous {
                peer,
                h,
                len,
                handle,
            } => sink.rendezvous(peer, &h, len, handle),
        }
    }
}

unsafe extern "C" fn send_done(request: *mut c_void, status: Status, user: *mut c_void) {
    // SAFETY: `user` is the op this request was started with; ops live as long as the
    // state, which outlives the workers that call back.
    let op = unsafe { &*(user as *const Op) };
    // SAFETY: UCX calls back only inside the worker progress the link drives, which holds no
    // reference to the state across it, so this is the only one while the callback runs.
    let st = unsafe { &mut *op.state };
    // SAFETY: a request handed to its completion callback may be freed there.
    unsafe { (st.ucp.ucp_request_free)(request) };
    st.finish(op.index, status);
}

unsafe extern "C" fn recv_done(
    request: *mut c_void,
    status: Status,
    _len: usize,
    user: *mut c_void,
) {
    // SAFETY: as in `send_done`.
    unsafe { send_done(request, status, user) }
}

unsafe extern "C" fn tag_recv_done(
    request: *mut c_void,
    status: Status,
    info: *const TagRecvInfo,
    user: *mut c_void,
) {
    // SAFETY: `user` is the op this request was started with (as in `send_done`).
    let op = unsafe { &*(user as *const Op) };
    let status = if op.token.is_none() {
        // A refused message, received into no buffer to complete its sender: truncation
        // is what was asked for.
        if status == UCS_ERR_MESSAGE_TRUNCATED {
            UCS_OK
        } else {
            status
        }
    // SAFETY: UCX passes the receive's information with a successful completion.
    } else if status == UCS_OK && !info.is_null() && unsafe { (*info).length } != op.expect {
        // Fewer bytes than announced under the transfer's tag: not the announced message.
        UCS_ERR_MESSAGE_TRUNCATED
    } else {
        status
    };
    // SAFETY: as in `send_done`.
    unsafe { send_done(request, status, user) }
}

unsafe extern "C" fn close_done(_request: *mut c_void, _status: Status, user: *mut c_void) {
    // SAFETY: `user` points to the caller's flag, alive while it waits for this.
    unsafe { *(user as *mut bool) = true };
}

unsafe extern "C" fn ep_error(arg: *mut c_void, _ep: Ep, status: Status) {
    // SAFETY: `arg` is the peer's ErrArg, alive as long as the state.
    let a = unsafe { &*(arg as *const ErrArg) };
    // SAFETY: UCX calls back only inside the worker progress the link drives, which holds no
    // reference to the state across it, so this is the only one while the callback runs.
    let st = unsafe { &mut *a.state };
    let why = format!(
        "UCX reports the connection failed: {}",
        st.ucp.status_text(status)
    );
    st.mark_lost(a.peer, why);
}

unsafe extern "C" fn am_recv(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const AmRecvParam,
) -> Status {
    // SAFETY: `arg` is the rail's argument registered with the handler.
    let a = unsafe { &*(arg as *const RailArg) };
    // SAFETY: UCX calls back only inside the worker progress the link drives, which holds no
    // reference to the state across it, so this is the only one while the callback runs.
    let st = unsafe { &mut *a.state };
    // SAFETY: UCX passes the header and its length, and the receive parameters.
    let rndv = unsafe { (*param).recv_attr } & UCP_AM_RECV_ATTR_FLAG_RNDV != 0;
    let hb: &[u8] = if header.is_null() {
        &[]
    } else {
        // SAFETY: a non-null header is UCX's, `header_length` bytes, alive during the callback.
        unsafe { std::slice::from_raw_parts(header as *const u8, header_length) }
    };
    let parsed = (hb.len() == HEADER_BYTES)
        .then(|| {
            let ok = hb[TOKEN_AT..TOKEN_AT + TOKEN_BYTES]
                .iter()
                .zip(&st.token)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0;
            let peer = u32::from_le_bytes(hb[RANK_AT..RANK_AT + 4].try_into().unwrap());
            let high = u32::from_le_bytes(hb[LEN_HIGH_AT..TOKEN_AT].try_into().unwrap());
            let h = frame::peek_header(&hb[..frame::FRAME_HEADER_BYTES])?;
            (ok && peer < st.size).then_some((peer, h, high))
        })
        .flatten();
    let Some((peer, h, len_high)) = parsed else {
        st.refused += 1;
        if rndv {
            // Not ours: let the sender's request end without data.
            // SAFETY: a rendezvous descriptor handed to this callback.
            unsafe { (st.ucp.ucp_am_data_release)(st.workers[a.rail as usize], data) };
        }
        return UCS_OK;
    };
    st.active_polls = ACTIVE_POLLS;
    if rndv {
        let pieces = u32::from(h.flags).max(1);
        if h.kind == frame::KIND_FRAG || pieces > 1 {
            // A piece of a striped message: its announcement (piece 0) or another piece.
            let index = if h.kind == frame::KIND_FRAG { h.ctx } else { 0 };
            let g = st.striped_recv(peer, h.aux, pieces.max(2));
            let s = st.striped[g as usize].as_mut().expect("just found or made");
            s.held.push((index, a.rail, data));
            if s.dst.is_some() || s.discarded {
                st.piece_work.push(g);
            }
            if index == 0 {
                let total = (u64::from(len_high) << 32 | u64::from(h.len)) as usize;
                s.len = total;
                s.pieces = pieces;
                st.deliver(Early::Rendezvous {
                    peer,
                    h,
                    len: total,
                    handle: STRIPED | g as Handle,
                });
            }
            return UCS_INPROGRESS;
        }
        // Only striped pieces go by UCX's active-message rendezvous.
        log::warn!("UCX: rank {peer} sent an unstriped active-message rendezvous: refused");
        // SAFETY: a rendezvous descriptor handed to this callback.
        unsafe { (st.ucp.ucp_am_data_release)(st.workers[a.rail as usize], data) };
        return UCS_OK;
    }
    if h.kind == frame::KIND_RTS {
        // The announcement of a message whose data follows as a UCX tag message: its
        // sequence number names the transfer.
        let total = (u64::from(len_high) << 32 | u64::from(h.len)) as usize;
        let handle = Handle::from(h.aux);
        st.deliver(Early::Rendezvous {
            peer,
            h,
            len: total,
            handle,
        });
        return UCS_OK;
    }
    let body: &[u8] = if length == 0 {
        &[]
    } else {
        // SAFETY: an eager message's data, valid during the callback.
        unsafe { std::slice::from_raw_parts(data as *const u8, length) }
    };
    match st.sink {
        // SAFETY: the sink pointer is set only while `poll` runs, from its argument. Earlier
        // arrivals were delivered before the poll progressed the workers.
        Some(s) if st.early.is_empty() => unsafe { (*s).eager(peer, &h, body) },
        _ => st.early.push_back(Early::Eager {
            peer,
            h,
            body: body.to_vec(),
        }),
    }
    UCS_OK
}

/// One rail's UCX context.
struct Rail {
    context: Context,
    address: Vec<u8>,
}

/// One process's UCX endpoint: a context and worker per rail, endpoints to peers.
pub struct UcxLink {
    st: *mut State,
    ucp: &'static Ucp,
    rails: Vec<Rail>,
    /// Per rail, per peer: the peer's worker address on that rail.
    peer_addrs: Vec<Vec<Vec<u8>>>,
    push_bytes: usize,
    copy_bytes: usize,
    stripe_bytes: usize,
}

fn ucx_error(ucp: &Ucp, what: &str, status: Status) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("UCX: {what}: {}", ucp.status_text(status)),
    )
}

/// Makes a context (restricted to `device`) and a worker; returns them and its address.
fn open_rail(ucp: &Ucp, device: Option<&str>) -> Result<(Context, Worker, Vec<u8>)> {
    let mut config: Config = std::ptr::null_mut();
    // SAFETY: reads UCX_* variables; `config` receives the handle.
    let s = unsafe { (ucp.ucp_config_read)(std::ptr::null(), std::ptr::null(), &mut config) };
    if s != UCS_OK {
        return Err(ucx_error(ucp, "reading the configuration", s));
    }
    if let Some(dev) = device {
        let name = CString::new("NET_DEVICES").expect("no NUL");
        let value = CString::new(dev).map_err(|_| {
            Error::new(ErrorKind::Config, format!("UCX device {dev:?} holds a NUL"))
        })?;
        // SAFETY: a live config and two C strings.
        let s = unsafe { (ucp.ucp_config_modify)(config, name.as_ptr(), value.as_ptr()) };
        if s != UCS_OK {
            // SAFETY: the handle from ucp_config_read.
            unsafe { (ucp.ucp_config_release)(config) };
            return Err(ucx_error(ucp, &format!("NET_DEVICES={dev}"), s));
        }
    }
    let params = Params {
        field_mask: UCP_PARAM_FIELD_FEATURES,
        features: UCP_FEATURE_AM
            | UCP_FEATURE_TAG
            | UCP_FEATURE_RMA
            | UCP_FEATURE_AMO32
            | UCP_FEATURE_AMO64,
        rest: [0; 8],
    };
    let mut context: Context = std::ptr::null_mut();
    // SAFETY: valid parameters and config; `context` receives the handle.
    let s = unsafe { (ucp.ucp_init_version)(API_MAJOR, API_MINOR, &params, config, &mut context) };
    // SAFETY: the handle from ucp_config_read, no longer needed.
    unsafe { (ucp.ucp_config_release)(config) };
    if s != UCS_OK {
        return Err(ucx_error(ucp, "initialising", s));
    }
    let wparams = WorkerParams {
        field_mask: UCP_WORKER_PARAM_FIELD_THREAD_MODE,
        thread_mode: UCS_THREAD_MODE_SINGLE,
        rest: [0; 47],
    };
    let mut worker: Worker = std::ptr::null_mut();
    // SAFETY: a live context; `worker` receives the handle.
    let s = unsafe { (ucp.ucp_worker_create)(context, &wparams, &mut worker) };
    if s != UCS_OK {
        // SAFETY: the context made above, unused.
        unsafe { (ucp.ucp_cleanup)(context) };
        return Err(ucx_error(ucp, "creating the worker", s));
    }
    let mut addr: *mut Address = std::ptr::null_mut();
    let mut addr_len = 0usize;
    // SAFETY: a live worker; the address is copied and released at once.
    let s = unsafe { (ucp.ucp_worker_get_address)(worker, &mut addr, &mut addr_len) };
    if s != UCS_OK {
        // SAFETY: the worker and context made above, unused.
        unsafe {
            (ucp.ucp_worker_destroy)(worker);
            (ucp.ucp_cleanup)(context);
        }
        return Err(ucx_error(ucp, "getting the worker address", s));
    }
    // SAFETY: UCX returned `addr_len` bytes at `addr`.
    let address = unsafe { std::slice::from_raw_parts(addr as *const u8, addr_len) }.to_vec();
    // SAFETY: the address returned above.
    unsafe { (ucp.ucp_worker_release_address)(worker, addr) };
    Ok((context, worker, address))
}

impl UcxLink {
    /// Opens a context and worker per rail; their addresses are [`UcxLink::addresses`].
    pub fn open(cfg: &UcxConfig) -> Result<UcxLink> {
        let ucp = library(&cfg.library).map_err(|e| {
            Error::new(
                ErrorKind::Unsupported,
                format!("UCX library {}: {e}", cfg.library),
            )
        })?;
        let size = cfg.size as usize;
        let nrails = cfg.rails.len().max(1);
        let st = Box::into_raw(Box::new(State {
            ucp,
            workers: Vec::new(),
            rank: cfg.rank,
            size: cfg.size,
            token: job_token(&cfg.key),
            tag_mask: tag_mask(&cfg.key),
            next_seq: 0,
            sink: None,
            early: VecDeque::new(),
            finished: Vec::new(),
            lost: Vec::new(),
            dead: vec![false; size],
            eps: vec![vec![std::ptr::null_mut(); size]; nrails],
            err_args: Vec::new(),
            rail_args: Vec::new(),
            ops: Vec::new(),
            free_ops: Vec::new(),
            striped: Vec::new(),
            piece_work: Vec::new(),
            in_flight: 0,
            sends_in_flight: 0,
            active_polls: 0,
            refused: 0,
            endpoints: 0,
            pieces_striped: 0,
        }));
        // SAFETY: `st` was just made and is only reached through raw pointers from now on.
        unsafe {
            let me = &mut *st;
            me.err_args = (0..cfg.size)
                .map(|peer| Box::new(ErrArg { state: st, peer }))
                .collect();
            me.rail_args = (0..nrails as u32)
                .map(|rail| Box::new(RailArg { state: st, rail }))
                .collect();
        }
        // From here on the link owns the state and every rail opened (Drop releases them).
        let mut link = UcxLink {
            st,
            ucp,
            rails: Vec::new(),
            peer_addrs: vec![vec![Vec::new(); size]; nrails],
            push_bytes: cfg.eager_bytes,
            copy_bytes: cfg.copy_bytes.min(cfg.eager_bytes),
            stripe_bytes: cfg.stripe_bytes.max(PIECE_ALIGN),
        };
        let devices: Vec<Option<String>> = if cfg.rails.is_empty() {
            vec![None]
        } else {
            cfg.rails.clone()
        };
        for (r, dev) in devices.iter().enumerate() {
            let (context, worker, address) = open_rail(ucp, dev.as_deref())?;
            link.rails.push(Rail { context, address });
            link.st().workers.push(worker);
            let arg: *mut RailArg = &mut *link.st().rail_args[r];
            let hparams = AmHandlerParam {
                field_mask: UCP_AM_HANDLER_PARAM_FIELD_ID
                    | UCP_AM_HANDLER_PARAM_FIELD_FLAGS
                    | UCP_AM_HANDLER_PARAM_FIELD_CB
                    | UCP_AM_HANDLER_PARAM_FIELD_ARG,
                id: AM_ID,
                flags: UCP_AM_FLAG_WHOLE_MSG,
                cb: Some(am_recv),
                arg: arg as *mut c_void,
            };
            // SAFETY: a live worker; the state outlives it (dropped after the workers).
            let s = unsafe { (ucp.ucp_worker_set_am_recv_handler)(worker, &hparams) };
            if s != UCS_OK {
                return Err(ucx_error(ucp, "registering the message handler", s));
            }
        }
        Ok(link)
    }

    /// Each rail's worker address, for the bootstrap store.
    pub fn addresses(&self) -> Vec<&[u8]> {
        self.rails.iter().map(|r| r.address.as_slice()).collect()
    }

    /// The library's version.
    pub fn version(&self) -> (u32, u32, u32) {
        self.ucp.version
    }

    /// Where to reach `peer` on each rail (its workers' addresses; extra ones are ignored,
    /// missing ones leave that rail unused with this peer).
    pub fn set_peer_addresses(&mut self, peer: u32, addresses: Vec<Vec<u8>>) {
        for (r, a) in addresses.into_iter().enumerate().take(self.rails.len()) {
            self.peer_addrs[r][peer as usize] = a;
        }
    }

    fn st(&mut self) -> &mut State {
        // SAFETY: the state is owned by this link and reached by UCX callbacks only while
        // this link calls into UCX; no reference to it is held across such calls.
        unsafe { &mut *self.st }
    }

    /// Rails usable with `peer` (it published an address on them).
    fn rails_with(&self, peer: u32) -> u32 {
        self.peer_addrs
            .iter()
            .take_while(|a| !a[peer as usize].is_empty())
            .count() as u32
    }

    /// The endpoint to `peer` on `rail`, made on first use; None when the peer is dead or
    /// unknown.
    fn ep(&mut self, peer: u32, rail: u32) -> Option<Ep> {
        let (p, r) = (peer as usize, rail as usize);
        let st = self.st();
        if st.dead[p] {
            return None;
        }
        if !st.eps[r][p].is_null() {
            return Some(st.eps[r][p]);
        }
        if self.peer_addrs[r][p].is_empty() {
            let why = format!("no UCX worker address for rank {peer} (rail {rail})");
            self.st().mark_lost(peer, why);
            return None;
        }
        let err_arg: *mut ErrArg = &mut *self.st().err_args[p];
        let params = EpParams {
            field_mask: UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                | UCP_EP_PARAM_FIELD_ERR_HANDLER,
            address: self.peer_addrs[r][p].as_ptr() as *const Address,
            err_mode: UCP_ERR_HANDLING_MODE_PEER,
            pad0: 0,
            err_cb: Some(ep_error),
            err_arg: err_arg as *mut c_void,
            user_data: std::ptr::null_mut(),
            flags: 0,
            pad1: 0,
            rest: [0; 6],
        };
        let mut ep: Ep = std::ptr::null_mut();
        let worker = self.st().workers[r];
        // SAFETY: a live worker, a peer address of the job, an error callback whose argument
        // lives as long as the state.
        let s = unsafe { (self.ucp.ucp_ep_create)(worker, &params, &mut ep) };
        if s != UCS_OK {
            let why = format!("UCX: connecting: {}", self.ucp.status_text(s));
            self.st().mark_lost(peer, why);
            return None;
        }
        log::debug!("UCX endpoint to rank {peer} on rail {rail} made");
        let st = self.st();
        st.eps[r][p] = ep;
        st.endpoints += 1;
        Some(ep)
    }

    /// Starts a send from slot `op` (its header filled) of `len` bytes at `data`.
    fn send(&mut self, ep: Ep, op: *mut Op, data: *const u8, len: usize, flags: u32) {
        let mut param = RequestParam::with_callback(send_done as *const c_void, op as *mut c_void);
        param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = flags;
        // SAFETY: `op` is a live slot of the state; its header lives until it is released.
        let header = unsafe { (*op).header.as_ptr() };
        // SAFETY: a live endpoint; header and data stay valid until completion (the slot's
        // own copy, or a rendezvous buffer the caller keeps alive).
        let r = unsafe {
            (self.ucp.ucp_am_send_nbx)(
                ep,
                AM_ID,
                header as *const c_void,
                HEADER_BYTES,
                data as *const c_void,
                len,
                &param,
            )
        };
        self.started(op, r, true);
    }

    /// Books what a `*_nbx` call returned for slot `op`.
    fn started(&mut self, op: *mut Op, r: StatusPtr, send: bool) {
        // SAFETY: a live slot.
        let index = unsafe { (*op).index };
        if r.is_null() {
            self.st().finish(index, UCS_OK);
        } else if ptr_is_err(r) {
            self.st().finish(index, ptr_status(r));
        } else {
            let st = self.st();
            st.in_flight += 1;
            if send {
                st.sends_in_flight += 1;
            }
            // SAFETY: a live slot.
            unsafe { (*op).request = r };
        }
    }

    /// Fills slot `op`'s header; `len_high` is the high word of a striped message's length
    /// (its low word is in `h.len`).
    fn fill_header(&mut self, op: *mut Op, h: &Header, len_high: u32) {
        let st = self.st();
        let (rank, token) = (st.rank, st.token);
        // SAFETY: a live slot of the state.
        let op = unsafe { &mut *op };
        op.header[..frame::FRAME_HEADER_BYTES].copy_from_slice(&frame::encode_header(h));
        op.header[RANK_AT..RANK_AT + 4].copy_from_slice(&rank.to_le_bytes());
        op.header[LEN_HIGH_AT..TOKEN_AT].copy_from_slice(&len_high.to_le_bytes());
        op.header[TOKEN_AT..].copy_from_slice(&token);
    }

    /// The endpoint to `peer` (rail 0) and a send slot whose header says: an eager message
    /// of `len` bytes with `h`'s match fields; `token` is reported when it is done (`None`:
    /// nobody waits). `None` when the peer is lost.
    fn start_eager(
        &mut self,
        peer: u32,
        token: Option<u32>,
        h: &Header,
        len: usize,
    ) -> Option<(Ep, *mut Op)> {
        let ep = self.ep(peer, 0)?;
        let op = self.st().alloc_op(token, peer, 0, true);
        let h = Header {
            kind: frame::KIND_EAGER,
            len: len as u32,
            flags: 0,
            ..*h
        };
        self.fill_header(op, &h, 0);
        Some((ep, op))
    }

    /// Posts the receive of rendezvous message `seq` of `peer` (its data, a UCX tag message)
    /// into `len` bytes at `dst`; `token` is reported when it is done (None: a refused
    /// message, received into nothing).
    fn receive_tagged(
        &mut self,
        peer: u32,
        seq: u32,
        dst: *mut u8,
        len: usize,
        token: Option<u32>,
    ) {
        let st = self.st();
        let tag = st.tag_of(peer, seq);
        let worker = st.workers[0];
        let op = st.alloc_op(token, peer, 0, false);
        // SAFETY: a live slot.
        unsafe { (*op).expect = len };
        let mut param =
            RequestParam::with_callback(tag_recv_done as *const c_void, op as *mut c_void);
        // Completion always through the callback, which checks the length.
        param.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
        // SAFETY: a live worker; the caller keeps `dst` valid until the op finishes.
        let r = unsafe {
            (self.ucp.ucp_tag_recv_nbx)(worker, dst as *mut c_void, len, tag, u64::MAX, &param)
        };
        self.started(op, r, false);
    }

    /// Cancels the tag receives posted for `peer` (lost: its data will not come) and waits
    /// until UCX has let go of their buffers.
    fn cancel_receives(&mut self, peer: u32) {
        let st = self.st();
        let worker = st.workers[0];
        let pending: Vec<u32> = st
            .ops
            .iter()
            .filter(|o| {
                o.live && !o.send && o.group.is_none() && o.peer == peer && !o.request.is_null()
            })
            .map(|o| o.index)
            .collect();
        if pending.is_empty() {
            return;
        }
        for &i in &pending {
            let request = self.st().ops[i as usize].request;
            // SAFETY: a receive request of rail 0's worker still in flight.
            unsafe { (self.ucp.ucp_request_cancel)(worker, request) };
        }
        self.progress_until(0, CANCEL_WAIT, |l| {
            pending.iter().all(|&i| !l.st().ops[i as usize].live)
        });
    }

    /// Receives piece `index` (descriptor `desc` on `rail`) of striped receive `g` into its
    /// buffer.
    fn receive_piece(&mut self, g: u32, index: u32, rail: u32, desc: *mut c_void) {
        let st = self.st();
        let s = st.striped[g as usize]
            .as_ref()
            .expect("a live striped receive");
        let (peer, dst) = (s.peer, s.dst.expect("matched"));
        let (start, len) = piece(dst.len(), s.pieces, index);
        let op = st.alloc_op(None, peer, rail, false);
        // SAFETY: a live slot.
        unsafe { (*op).group = Some(g) };
        let param = RequestParam::with_callback(recv_done as *const c_void, op as *mut c_void);
        // SAFETY: the matched buffer stays valid until the fetch's token is reported done;
        // the piece lies within it.
        let ptr = unsafe { dst.slice_mut(start, len) }.as_mut_ptr();
        let worker = self.st().workers[rail as usize];
        // SAFETY: a rendezvous descriptor of that worker, received once.
        let r = unsafe {
            (self.ucp.ucp_am_recv_data_nbx)(worker, desc, ptr as *mut c_void, len, &param)
        };
        self.started(op, r, false);
    }

    /// Receives or releases the pieces held for matched or refused striped receives.
    fn work_pieces(&mut self) {
        while let Some(g) = self.st().piece_work.pop() {
            let Some(s) = self
                .st()
                .striped
                .get_mut(g as usize)
                .and_then(Option::as_mut)
            else {
                continue;
            };
            let held = std::mem::take(&mut s.held);
            let discarded = s.discarded;
            for (index, rail, desc) in held {
                if discarded {
                    let worker = self.st().workers[rail as usize];
                    // SAFETY: a rendezvous descriptor of that worker, never received.
                    unsafe { (self.ucp.ucp_am_data_release)(worker, desc) };
                    self.st().piece_done(g, Ok(()));
                } else {
                    self.receive_piece(g, index, rail, desc);
                }
            }
        }
    }

    /// Progresses `rail`'s worker until `done` holds or `limit` passed.
    fn progress_until(
        &mut self,
        rail: usize,
        limit: Duration,
        mut done: impl FnMut(&mut UcxLink) -> bool,
    ) {
        let start = Instant::now();
        while !done(self) && start.elapsed() < limit {
            let worker = self.st().workers[rail];
            // SAFETY: a live worker; callbacks reach the state through raw pointers.
            unsafe { (self.ucp.ucp_worker_progress)(worker) };
        }
    }

    /// Closes the endpoints to `peer` at once (their requests complete with an error).
    fn close_eps(&mut self, peer: u32) {
        for rail in 0..self.rails.len() {
            let ep = std::mem::replace(
                &mut self.st().eps[rail][peer as usize],
                std::ptr::null_mut(),
            );
            if ep.is_null() {
                continue;
            }
            let mut closed = false;
            let mut param = RequestParam::with_callback(
                close_done as *const c_void,
                &mut closed as *mut bool as *mut c_void,
            );
            param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
            param.flags = UCP_EP_CLOSE_FLAG_FORCE;
            // SAFETY: a live endpoint; `closed` outlives the wait below.
            let r = unsafe { (self.ucp.ucp_ep_close_nbx)(ep, &param) };
            if r.is_null() || ptr_is_err(r) {
                continue;
            }
            let flag: *const bool = &closed;
            // SAFETY: `closed` is written by the callback from inside progress only.
            self.progress_until(rail, CANCEL_WAIT, |_| unsafe { *flag });
            // SAFETY: the close request, finished or not: no callback is wanted any more.
            unsafe { (self.ucp.ucp_request_free)(r) };
        }
    }
}

/// The token every message of the job carries: the job secret's HMAC-SHA256 proof under a
/// label of its own (`weft_core::auth`), cut to `TOKEN_BYTES`.
fn job_token(key: &[u8]) -> [u8; TOKEN_BYTES] {
    let d = weft_core::auth::prove(key, b"weft ucx message token", &[], &[], &[]);
    let mut t = [0u8; TOKEN_BYTES];
    t.copy_from_slice(&d[..TOKEN_BYTES]);
    t
}

/// The mask mixed into the UCX tags of the job's rendezvous data: the job secret's
/// HMAC-SHA256 proof under a label of its own, cut to 64 bits.
fn tag_mask(key: &[u8]) -> u64 {
    let d = weft_core::auth::prove(key, b"weft ucx tag mask", &[], &[], &[]);
    u64::from_le_bytes(d[..8].try_into().expect("8 bytes"))
}

// SAFETY: a rendezvous send's buffer is given to UCX, which reads it until the send's
// requests complete (then the token is reported done); `abandon` cancels them and, if UCX
// still holds them, closes the peer's endpoints, which completes them. A fetch's buffer is
// written by UCX until its requests complete (reported done) or the peer fails (its
// requests complete with an error, reported too). Lost peers' endpoints are closed, which
// completes their requests.
unsafe impl NetEndpoint for UcxLink {
    fn transport(&self) -> &'static str {
        "ucx"
    }

    fn eager_bytes(&self) -> usize {
        self.copy_bytes
    }

    fn push_bytes(&self) -> usize {
        self.push_bytes
    }

    unsafe fn start_push(&mut self, peer: u32, h: &Header, data: RawBuf, token: u32) -> bool {
        let len = data.len();
        let Some((ep, op)) = self.start_eager(peer, Some(token), h, len) else {
            // Dead: the engine learns it from `take_lost` and fails the request.
            return false;
        };
        // SAFETY: the caller keeps `data` valid and unchanged until the token is reported done.
        let base = unsafe { data.slice(0, len) }.as_ptr();
        self.send(ep, op, base, len, UCP_AM_SEND_FLAG_EAGER);
        true
    }

    fn try_send(&mut self, peer: u32, h: &Header, parts: &[&[u8]], token: u32) -> Sent {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let Some((ep, op)) = self.start_eager(peer, None, h, len) else {
            // Dead: the engine learns it from `take_lost` and drops the message.
            return Sent::NotNow;
        };
        // SAFETY: a live slot; its body is ours until the slot is released.
        let body = unsafe { &mut (*op).body };
        body.clear();
        for p in parts {
            body.extend_from_slice(p);
        }
        let data = body.as_ptr();
        self.send(ep, op, data, len, UCP_AM_SEND_FLAG_EAGER);
        // SAFETY: the slot stays allocated (slots are never freed, only reused); `live`
        // says whether UCX still holds the send (a request in flight: an endpoint being
        // wired up, a socket full), and then its completion reports the token.
        let op = unsafe { &mut *op };
        if op.live {
            op.token = Some(token);
            Sent::Kept
        } else {
            Sent::Done
        }
    }

    unsafe fn start_rendezvous(&mut self, peer: u32, h: &Header, data: RawBuf, token: u32) -> bool {
        let Some(ep) = self.ep(peer, 0) else {
            return false;
        };
        let len = data.len();
        let rails = self.rails_with(peer);
        let pieces = if rails > 1 && len >= self.stripe_bytes {
            rails.min(u8::MAX as u32)
        } else {
            1
        };
        // SAFETY: the caller keeps `data` valid until the token is reported done.
        let base = unsafe { data.slice(0, len) }.as_ptr();
        if pieces == 1 {
            let st = self.st();
            let seq = st.take_seq();
            let tag = st.tag_of(st.rank, seq);
            // The announcement, in order with the eager messages (nobody waits for it).
            let announce = st.alloc_op(None, peer, 0, true);
            let rts = Header {
                kind: frame::KIND_RTS,
                len: len as u32,
                flags: 1,
                aux: seq,
                ..*h
            };
            self.fill_header(announce, &rts, (len as u64 >> 32) as u32);
            self.send(ep, announce, std::ptr::null(), 0, UCP_AM_SEND_FLAG_EAGER);
            // The data: a synchronous tag send (done once the receiver has matched it, and
            // UCX's rendezvous moves it into the receive's buffer).
            let op = self.st().alloc_op(Some(token), peer, 0, true);
            let param = RequestParam::with_callback(send_done as *const c_void, op as *mut c_void);
            // SAFETY: a live endpoint; the caller keeps `data` valid until the token is
            // reported done.
            let r = unsafe {
                (self.ucp.ucp_tag_send_sync_nbx)(ep, base as *const c_void, len, tag, &param)
            };
            self.started(op, r, true);
            return true;
        }
        // Striped: the group reports the token once every piece is done.
        let st = self.st();
        let seq = st.take_seq();
        let g = match st.striped.iter().position(Option::is_none) {
            Some(g) => g,
            None => {
                st.striped.push(None);
                st.striped.len() - 1
            }
        };
        st.striped[g] = Some(Striped {
            recv: false,
            peer,
            message_seq: seq,
            token: Some(token),
            pieces,
            left: pieces,
            len,
            held: Vec::new(),
            dst: None,
            discarded: false,
            failure: None,
        });
        for i in 0..pieces {
            let (start, n) = piece(len, pieces, i);
            let ep = if i == 0 { Some(ep) } else { self.ep(peer, i) };
            let Some(ep) = ep else {
                // Lost meanwhile: the engine fails the request when it reads the loss.
                self.st().piece_done(
                    g as u32,
                    Err(NetFailure {
                        peer_lost: true,
                        why: "UCX: the peer was lost".into(),
                    }),
                );
                continue;
            };
            let op = self.st().alloc_op(None, peer, i, true);
            // SAFETY: a live slot.
            unsafe { (*op).group = Some(g as u32) };
            let ph = if i == 0 {
                Header {
                    kind: frame::KIND_RTS,
                    len: len as u32,
                    flags: pieces as u8,
                    aux: seq,
                    ..*h
                }
            } else {
                Header {
                    kind: frame::KIND_FRAG,
                    ctx: i,
                    flags: pieces as u8,
                    aux: seq,
                    ..Header::default()
                }
            };
            let high = if i == 0 { (len as u64 >> 32) as u32 } else { 0 };
            self.fill_header(op, &ph, high);
            if i > 0 {
                self.st().pieces_striped += 1;
            }
            // SAFETY: the piece lies within the caller's buffer.
            let ptr = unsafe { base.add(start) };
            self.send(ep, op, ptr, n, UCP_AM_SEND_FLAG_RNDV);
        }
        true
    }

    unsafe fn fetch(&mut self, peer: u32, handle: Handle, dst: RawBufMut, token: u32) {
        if handle & STRIPED != 0 {
            let g = (handle & !STRIPED) as u32;
            let st = self.st();
            let Some(s) = st.striped.get_mut(g as usize).and_then(Option::as_mut) else {
                st.finished.push((
                    token,
                    Err(NetFailure {
                        peer_lost: false,
                        why: "UCX: a striped message was fetched twice".into(),
                    }),
                ));
                return;
            };
            s.dst = Some(dst);
            s.token = Some(token);
            st.piece_work.push(g);
            self.work_pieces();
            return;
        }
        // SAFETY: the caller keeps `dst` valid and untouched until the token is reported done.
        let ptr = unsafe { dst.slice_mut(0, dst.len()) }.as_mut_ptr();
        self.receive_tagged(peer, handle as u32, ptr, dst.len(), Some(token));
    }

    fn discard(&mut self, peer: u32, handle: Handle) {
        if handle & STRIPED != 0 {
            let g = (handle & !STRIPED) as u32;
            if let Some(s) = self
                .st()
                .striped
                .get_mut(g as usize)
                .and_then(Option::as_mut)
            {
                s.discarded = true;
                self.st().piece_work.push(g);
                self.work_pieces();
            }
            return;
        }
        // Received into no buffer (truncated): that completes the sender.
        self.receive_tagged(peer, handle as u32, std::ptr::null_mut(), 0, None);
    }

    fn abandon(&mut self, token: u32) {
        // The send's requests: its own, or its pieces'.
        let st = self.st();
        let group = st.striped.iter().position(|s| {
            s.as_ref()
                .is_some_and(|s| !s.recv && s.token == Some(token))
        });
        if let Some(g) = group {
            // Nothing more is reported for it.
            st.striped[g].as_mut().expect("found").token = None;
        }
        let pending: Vec<(u32, *mut c_void, u32, u32)> = st
            .ops
            .iter()
            .filter(|o| {
                o.live
                    && o.send
                    && (o.token == Some(token)
                        || (group.is_some() && o.group == group.map(|g| g as u32)))
            })
            .map(|o| (o.index, o.request, o.peer, o.rail))
            .collect();
        for &(index, request, _, _) in &pending {
            let st = self.st();
            st.ops[index as usize].token = None;
            if !request.is_null() {
                let worker = st.workers[st.ops[index as usize].rail as usize];
                // SAFETY: a request of that worker still in flight.
                unsafe { (self.ucp.ucp_request_cancel)(worker, request) };
            }
        }
        for (index, request, peer, rail) in pending {
            if request.is_null() {
                continue;
            }
            let live = |l: &mut UcxLink| !l.st().ops[index as usize].live;
            self.progress_until(rail as usize, CANCEL_WAIT, live);
            if self.st().ops[index as usize].live {
                // UCX still holds the buffer (the peer may yet fetch it): closing the
                // endpoints completes the request. The peer sees the connections drop.
                self.close_eps(peer);
            }
        }
    }

    fn poll(&mut self, sink: &mut dyn NetSink) -> bool {
        // SAFETY: the pointer is used only until this function returns (cleared below).
        let sink_ptr: *mut (dyn NetSink + 'static) = unsafe {
            std::mem::transmute::<*mut (dyn NetSink + '_), *mut (dyn NetSink + 'static)>(sink)
        };
        let mut moved = false;
        {
            let st = self.st();
            st.sink = Some(sink_ptr);
            while let Some(e) = st.early.pop_front() {
                st.deliver(e);
                moved = true;
            }
            if !st.finished.is_empty() {
                // Reported straight to the sink now (kept, with its capacity, for later).
                let mut finished = std::mem::take(&mut st.finished);
                for (token, result) in finished.drain(..) {
                    st.report(token, result);
                }
                st.finished = finished;
                moved = true;
            }
        }
        // One progress call per worker and poll: each is a system call (UCX's TCP transport
        // asks epoll), and whatever it found makes the caller poll again at once.
        for rail in 0..self.rails.len() {
            let worker = self.st().workers[rail];
            // SAFETY: a live worker; callbacks reach the state and the sink through raw
            // pointers, and no reference to the state is held here.
            if unsafe { (self.ucp.ucp_worker_progress)(worker) } != 0 {
                moved = true;
            }
        }
        if !self.st().piece_work.is_empty() {
            self.work_pieces();
            moved = true;
        }
        let st = self.st();
        st.sink = None;
        if moved {
            st.active_polls = ACTIVE_POLLS;
        } else {
            st.active_polls = st.active_polls.saturating_sub(1);
        }
        moved
    }

    fn take_lost(&mut self) -> Vec<(u32, String)> {
        if self.st().lost.is_empty() {
            return Vec::new();
        }
        let lost = std::mem::take(&mut self.st().lost);
        for (w, _) in &lost {
            self.close_eps(*w);
            self.cancel_receives(*w);
            let st = self.st();
            // Striped receives of that peer never complete: drop them (their requests were
            // completed by closing the endpoints; held descriptors go with the workers).
            for s in st.striped.iter_mut() {
                if s.as_ref().is_some_and(|s| s.peer == *w) {
                    *s = None;
                }
            }
        }
        lost
    }

    fn reach(&mut self, peer: u32) {
        let _ = self.ep(peer, 0);
    }

    fn wants_polling(&self) -> bool {
        // SAFETY: reads of the state, no UCX call.
        let st = unsafe { &*self.st };
        st.in_flight > 0
            || !st.early.is_empty()
            || !st.finished.is_empty()
            || !st.piece_work.is_empty()
            || st.active_polls > 0
    }

    fn connected(&self) -> bool {
        // SAFETY: a read of the state.
        unsafe { (*self.st).endpoints > 0 }
    }

    fn unsent(&self) -> bool {
        // SAFETY: a read of the state.
        unsafe { (*self.st).sends_in_flight > 0 }
    }

    fn stats(&self) -> NetStats {
        // SAFETY: reads of the state.
        let st = unsafe { &*self.st };
        NetStats {
            connections: st.eps.iter().flatten().filter(|e| !e.is_null()).count(),
            refused: st.refused,
            striped: st.pieces_striped,
            ..NetStats::default()
        }
    }
}

impl Drop for UcxLink {
    fn drop(&mut self) {
        let size = self.st().size;
        for peer in 0..size {
            self.close_eps(peer);
        }
        // SAFETY: every endpoint is closed; the workers and contexts are ours. Requests still
        // in flight are released with their worker; their slots are freed with the state
        // after.
        unsafe {
            let workers = std::mem::take(&mut (*self.st).workers);
            for (w, rail) in workers.into_iter().zip(&self.rails) {
                (self.ucp.ucp_worker_destroy)(w);
                (self.ucp.ucp_cleanup)(rail.context);
            }
            drop(Box::from_raw(self.st));
        }
    }
}

/// Opens the UCX endpoint for `job` on its lanes (one rail each) and publishes this
/// process's worker addresses; [`Opening::connect`] reads the peers' after the fence.
pub fn open(job: &Job) -> Result<Box<dyn Opening>> {
    let at = |what: &str| format!("rank {}: {what}", job.rank);
    let cfg = UcxConfig {
        rank: job.rank,
        size: job.size,
        key: job.key.to_vec(),
        eager_bytes: job.values.bytes("WEFT_UCX_EAGER_BYTES").unwrap_or(64 << 10) as usize,
        copy_bytes: job.values.bytes("WEFT_UCX_COPY_BYTES").unwrap_or(8 << 10) as usize,
        library: super::library_path(job.values),
        rails: job.lanes.iter().map(|l| l.device.clone()).collect(),
        stripe_bytes: job.values.bytes("WEFT_STRIPE_BYTES").unwrap_or(1 << 20) as usize,
    };
    let link = UcxLink::open(&cfg).map_err(|e| e.context(at("opening UCX")))?;
    let record: Vec<String> = link.addresses().iter().map(|a| to_hex(a)).collect();
    job.exchange
        .publish("ucx", record.join(",").as_bytes())
        .map_err(|e| e.context(at("publishing the UCX worker addresses")))?;
    Ok(Box::new(UcxOpening(link)))
}

/// A UCX endpoint whose workers are open and published, before it knows its peers'.
struct UcxOpening(UcxLink);

impl Opening for UcxOpening {
    fn connect(self: Box<Self>, job: &Job) -> Result<Box<dyn NetEndpoint>> {
        let at = |what: &str| format!("rank {}: {what}", job.rank);
        let mut link = self.0;
        let peers: Vec<u32> = (0..job.size)
            .filter(|&r| r != job.rank && job.peers[r as usize])
            .collect();
        let records = job
            .exchange
            .fetch_all(&peers, "ucx")
            .map_err(|e| e.context(at("reading the peers' UCX worker addresses")))?;
        for (&r, rec) in peers.iter().zip(records) {
            let addrs: Option<Vec<Vec<u8>>> = rec.split(|&b| b == b',').map(from_hex).collect();
            let addrs = addrs.filter(|a| !a.is_empty() && a.iter().all(|x| !x.is_empty()));
            let addrs = addrs.ok_or_else(|| {
                Error::new(
                    ErrorKind::Protocol,
                    at(&format!(
                        "rank {r} published UCX worker addresses that are not hex"
                    )),
                )
            })?;
            link.set_peer_addresses(r, addrs);
        }
        Ok(Box::new(link))
    }
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn from_hex(t: &[u8]) -> Option<Vec<u8>> {
    if !t.len().is_multiple_of(2) {
        return None;
    }
    t.chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_the_message_once_aligned() {
        for len in [1usize, 4095, 4096, 1 << 20, (1 << 20) + 13, 3 << 20] {
            for pieces in 2..=4u32 {
                let mut next = 0;
                for i in 0..pieces {
                    let (start, n) = piece(len, pieces, i);
                    assert_eq!(start, next, "len {len} pieces {pieces} piece {i}");
                    assert!(start.is_multiple_of(PIECE_ALIGN) || n == 0);
                    next = start + n;
                }
                assert_eq!(next, len, "len {len} pieces {pieces}");
            }
        }
    }
}
