//! The UCX endpoint (`ucp`, UCX 1.13 or later), loaded at run time: one worker per process,
//! its address published through the bootstrap store, endpoints made on first use with
//! error handling mode "peer" (a peer that dies fails its operations and is reported lost),
//! progress driven by weft's engine (no thread of ours, none of UCX's: single-thread mode).
//!
//! Messages are UCX active messages with a fixed 48-byte header: weft's message header (the
//! envelope), the sender's world rank, and a token derived from the job key (UCX does not
//! authenticate its peers: a message without the job's token is dropped and counted).
//! - Eager messages are copied into a send slot of ours (so the caller's buffer is free on
//!   return, and no allocation happens once the slots have grown) and sent with
//!   `UCP_AM_SEND_FLAG_EAGER`.
//! - Rendezvous messages are sent from the caller's buffer with `UCP_AM_SEND_FLAG_RNDV`: the
//!   receiver's worker hands weft a data descriptor, weft matches the header, and
//!   `ucp_am_recv_data_nbx` lets UCX move the data by its own rendezvous protocol (zero copy
//!   on RDMA hardware); a receive too small releases the descriptor, which completes the
//!   send without data. A send completes when UCX says the receiver has the data.
//!
//! Every request carries a slot of ours as its user data; its callback records completion
//! and frees the request. Nothing here is thread-safe: the engine is single-threaded.

use super::ffi::*;
use crate::buf::{RawBuf, RawBufMut};
use crate::net::{Handle, NetEndpoint, NetFailure, NetSink, NetStats};
use crate::shm::Header;
use crate::tcp::frame;
use crate::transport::Job;
use std::collections::VecDeque;
use std::ffi::{c_void, CString};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use weft_core::{Error, ErrorKind, Result};

/// The active-message id of weft's messages.
const AM_ID: u32 = 7;
/// Bytes of the header of every message.
pub const HEADER_BYTES: usize = 48;
/// Offset of the sender's world rank and of the job token in it.
const RANK_AT: usize = 24;
const TOKEN_AT: usize = 32;
const TOKEN_BYTES: usize = 16;
/// Idle polls after the last traffic during which the worker is polled on every call.
const ACTIVE_POLLS: u32 = 64;
/// Progress calls per poll at most (a flood must not keep the caller in here).
const PROGRESS_PER_POLL: u32 = 64;
/// How long giving up a rendezvous send or closing an endpoint may wait for UCX.
const CANCEL_WAIT: Duration = Duration::from_millis(200);

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
    /// The library to load (`WEFT_UCX_LIB`).
    pub library: String,
    /// UCX's `NET_DEVICES` for this endpoint's context (None: UCX's own choice).
    pub net_devices: Option<String>,
}

/// A message that arrived while nobody was polling (UCX ran a callback from inside a call
/// that progresses the worker, such as giving up a send): delivered by the next poll, in
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
    /// The engine's token (rendezvous sends and fetches); None for eager sends.
    token: Option<u32>,
    peer: u32,
    /// Whether a send (counted in `sends_in_flight`).
    send: bool,
    /// The request UCX returned (null until then, and once finished).
    request: *mut c_void,
    live: bool,
    header: [u8; HEADER_BYTES],
    /// An eager message's copy of the body.
    body: Vec<u8>,
}

/// The argument of a peer's endpoint error callback.
struct ErrArg {
    state: *mut State,
    peer: u32,
}

/// What UCX callbacks reach (boxed: its address is their argument).
struct State {
    ucp: &'static Ucp,
    worker: Worker,
    rank: u32,
    size: u32,
    token: [u8; TOKEN_BYTES],
    /// The engine's sink while a poll runs.
    sink: Option<*mut (dyn NetSink + 'static)>,
    early: VecDeque<Early>,
    /// Completions found while nobody polled, reported by the next poll.
    finished: Vec<(u32, std::result::Result<(), NetFailure>)>,
    lost: Vec<(u32, String)>,
    dead: Vec<bool>,
    eps: Vec<Ep>,
    // Boxed: UCX holds their addresses (error callback arguments, request user data) while
    // the vectors grow.
    #[allow(clippy::vec_box)]
    err_args: Vec<Box<ErrArg>>,
    #[allow(clippy::vec_box)]
    ops: Vec<Box<Op>>,
    free_ops: Vec<u32>,
    in_flight: usize,
    sends_in_flight: usize,
    active_polls: u32,
    /// Messages dropped because they did not carry the job's token.
    refused: u64,
    /// Endpoints ever made (for `connected`).
    endpoints: usize,
}

impl State {
    fn alloc_op(&mut self, token: Option<u32>, peer: u32, send: bool) -> *mut Op {
        let me: *mut State = self;
        let i = match self.free_ops.pop() {
            Some(i) => i,
            None => {
                let index = self.ops.len() as u32;
                self.ops.push(Box::new(Op {
                    state: me,
                    index,
                    token: None,
                    peer: 0,
                    send: false,
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
        op.peer = peer;
        op.send = send;
        op.request = std::ptr::null_mut();
        op.live = true;
        &mut **op
    }

    fn release_op(&mut self, index: u32) {
        let op = &mut self.ops[index as usize];
        op.live = false;
        op.request = std::ptr::null_mut();
        op.token = None;
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
        let (token, peer) = (op.token, op.peer);
        self.release_op(index);
        self.active_polls = ACTIVE_POLLS;
        let result = if status == UCS_OK {
            Ok(())
        } else {
            Err(self.failure(status))
        };
        match token {
            Some(t) => self.report(t, result),
            None => {
                if let Err(f) = result {
                    if f.peer_lost {
                        self.mark_lost(peer, f.why);
                    } else {
                        eprintln!("weft: UCX eager send to rank {peer} failed: {}", f.why);
                    }
                }
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
    // state, which outlives the worker that calls back.
    let op = unsafe { &*(user as *const Op) };
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

unsafe extern "C" fn close_done(request: *mut c_void, _status: Status, user: *mut c_void) {
    // SAFETY: `user` points to the caller's flag, alive while it waits for this.
    unsafe {
        *(user as *mut bool) = true;
        let _ = request;
    }
}

unsafe extern "C" fn ep_error(arg: *mut c_void, _ep: Ep, status: Status) {
    // SAFETY: `arg` is the peer's ErrArg, alive as long as the state.
    let a = unsafe { &*(arg as *const ErrArg) };
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
    // SAFETY: `arg` is the state registered with the handler.
    let st = unsafe { &mut *(arg as *mut State) };
    // SAFETY: UCX passes the header and its length, and the receive parameters.
    let rndv = unsafe { (*param).recv_attr } & UCP_AM_RECV_ATTR_FLAG_RNDV != 0;
    let hb: &[u8] = if header.is_null() {
        &[]
    } else {
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
            let h = frame::peek_header(&hb[..frame::FRAME_HEADER_BYTES])?;
            (ok && peer < st.size).then_some((peer, h))
        })
        .flatten();
    let Some((peer, h)) = parsed else {
        st.refused += 1;
        if rndv {
            // Not ours: let the sender's request end without data.
            // SAFETY: a rendezvous descriptor handed to this callback.
            unsafe { (st.ucp.ucp_am_data_release)(st.worker, data) };
        }
        return UCS_OK;
    };
    st.active_polls = ACTIVE_POLLS;
    if rndv {
        st.deliver(Early::Rendezvous {
            peer,
            h,
            len: length,
            handle: data as u64,
        });
        return UCS_INPROGRESS;
    }
    let body: &[u8] = if length == 0 {
        &[]
    } else {
        // SAFETY: an eager message's data, valid during the callback.
        unsafe { std::slice::from_raw_parts(data as *const u8, length) }
    };
    match st.sink {
        // SAFETY: the sink pointer is set only while `poll` runs, from its argument. Earlier
        // arrivals were delivered before the poll progressed the worker.
        Some(s) if st.early.is_empty() => unsafe { (*s).eager(peer, &h, body) },
        _ => st.early.push_back(Early::Eager {
            peer,
            h,
            body: body.to_vec(),
        }),
    }
    UCS_OK
}

/// One process's UCX endpoint: context, worker, endpoints to peers.
pub struct UcxLink {
    st: *mut State,
    ucp: &'static Ucp,
    context: Context,
    worker: Worker,
    address: Vec<u8>,
    peer_addrs: Vec<Vec<u8>>,
    eager_bytes: usize,
}

fn ucx_error(ucp: &Ucp, what: &str, status: Status) -> Error {
    Error::new(
        ErrorKind::Io,
        format!("UCX: {what}: {}", ucp.status_text(status)),
    )
}

impl UcxLink {
    /// Opens a context and worker; its address is [`UcxLink::address`].
    pub fn open(cfg: &UcxConfig) -> Result<UcxLink> {
        let ucp = library(&cfg.library).map_err(|e| {
            Error::new(
                ErrorKind::Unsupported,
                format!("UCX library {}: {e}", cfg.library),
            )
        })?;
        let mut config: Config = std::ptr::null_mut();
        // SAFETY: reads UCX_* variables; `config` receives the handle.
        let s = unsafe { (ucp.ucp_config_read)(std::ptr::null(), std::ptr::null(), &mut config) };
        if s != UCS_OK {
            return Err(ucx_error(ucp, "reading the configuration", s));
        }
        if let Some(dev) = &cfg.net_devices {
            let name = CString::new("NET_DEVICES").expect("no NUL");
            let value = CString::new(dev.as_str()).map_err(|_| {
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
            features: UCP_FEATURE_AM | UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64,
            rest: [0; 8],
        };
        let mut context: Context = std::ptr::null_mut();
        // SAFETY: valid parameters and config; `context` receives the handle.
        let s =
            unsafe { (ucp.ucp_init_version)(API_MAJOR, API_MINOR, &params, config, &mut context) };
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
        let size = cfg.size as usize;
        let st = Box::into_raw(Box::new(State {
            ucp,
            worker,
            rank: cfg.rank,
            size: cfg.size,
            token: job_token(&cfg.key),
            sink: None,
            early: VecDeque::new(),
            finished: Vec::new(),
            lost: Vec::new(),
            dead: vec![false; size],
            eps: vec![std::ptr::null_mut(); size],
            err_args: Vec::new(),
            ops: Vec::new(),
            free_ops: Vec::new(),
            in_flight: 0,
            sends_in_flight: 0,
            active_polls: 0,
            refused: 0,
            endpoints: 0,
        }));
        // SAFETY: `st` was just made and is only reached through raw pointers from now on.
        unsafe {
            let me = &mut *st;
            me.err_args = (0..cfg.size)
                .map(|peer| Box::new(ErrArg { state: st, peer }))
                .collect();
        }
        let link = UcxLink {
            st,
            ucp,
            context,
            worker,
            address,
            peer_addrs: vec![Vec::new(); size],
            eager_bytes: cfg.eager_bytes,
        };
        let hparams = AmHandlerParam {
            field_mask: UCP_AM_HANDLER_PARAM_FIELD_ID
                | UCP_AM_HANDLER_PARAM_FIELD_FLAGS
                | UCP_AM_HANDLER_PARAM_FIELD_CB
                | UCP_AM_HANDLER_PARAM_FIELD_ARG,
            id: AM_ID,
            flags: UCP_AM_FLAG_WHOLE_MSG,
            cb: Some(am_recv),
            arg: st as *mut c_void,
        };
        // SAFETY: a live worker; the state outlives it (dropped after the worker).
        let s = unsafe { (ucp.ucp_worker_set_am_recv_handler)(worker, &hparams) };
        if s != UCS_OK {
            return Err(ucx_error(ucp, "registering the message handler", s));
        }
        Ok(link)
    }

    /// This worker's address, for the bootstrap store.
    pub fn address(&self) -> &[u8] {
        &self.address
    }

    /// The library's version.
    pub fn version(&self) -> (u32, u32, u32) {
        self.ucp.version
    }

    /// Where to reach `peer` (its worker address).
    pub fn set_peer_address(&mut self, peer: u32, address: Vec<u8>) {
        self.peer_addrs[peer as usize] = address;
    }

    fn st(&mut self) -> &mut State {
        // SAFETY: the state is owned by this link and reached by UCX callbacks only while
        // this link calls into UCX; no reference to it is held across such calls.
        unsafe { &mut *self.st }
    }

    /// The endpoint to `peer`, made on first use; None when the peer is dead or unknown.
    fn ep(&mut self, peer: u32) -> Option<Ep> {
        let p = peer as usize;
        let st = self.st();
        if st.dead[p] {
            return None;
        }
        if !st.eps[p].is_null() {
            return Some(st.eps[p]);
        }
        if self.peer_addrs[p].is_empty() {
            let why = format!("no UCX worker address for rank {peer}");
            self.st().mark_lost(peer, why);
            return None;
        }
        let err_arg: *mut ErrArg = &mut *self.st().err_args[p];
        let params = EpParams {
            field_mask: UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                | UCP_EP_PARAM_FIELD_ERR_HANDLER,
            address: self.peer_addrs[p].as_ptr() as *const Address,
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
        // SAFETY: a live worker, a peer address of the job, an error callback whose argument
        // lives as long as the state.
        let s = unsafe { (self.ucp.ucp_ep_create)(self.worker, &params, &mut ep) };
        if s != UCS_OK {
            let why = format!("UCX: connecting: {}", self.ucp.status_text(s));
            self.st().mark_lost(peer, why);
            return None;
        }
        let st = self.st();
        st.eps[p] = ep;
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
        // SAFETY: as above.
        let index = unsafe { (*op).index };
        self.started(op, index, r, true);
    }

    /// Books what a `*_nbx` call returned for slot `op`.
    fn started(&mut self, op: *mut Op, index: u32, r: StatusPtr, send: bool) {
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

    /// Fills slot `op`'s header.
    fn fill_header(&mut self, op: *mut Op, h: &Header, kind: u8, len: usize) {
        let h = Header {
            kind,
            len: len as u32,
            ..*h
        };
        let st = self.st();
        let (rank, token) = (st.rank, st.token);
        // SAFETY: a live slot of the state.
        let op = unsafe { &mut *op };
        op.header[..frame::FRAME_HEADER_BYTES].copy_from_slice(&frame::encode_header(&h));
        op.header[RANK_AT..RANK_AT + 4].copy_from_slice(&rank.to_le_bytes());
        op.header[RANK_AT + 4..TOKEN_AT].fill(0);
        op.header[TOKEN_AT..].copy_from_slice(&token);
    }

    /// Progresses the worker until `done` holds or `limit` passed.
    fn progress_until(&mut self, limit: Duration, mut done: impl FnMut(&mut UcxLink) -> bool) {
        let start = Instant::now();
        while !done(self) && start.elapsed() < limit {
            // SAFETY: a live worker; callbacks reach the state through raw pointers.
            unsafe { (self.ucp.ucp_worker_progress)(self.worker) };
        }
    }

    /// Closes the endpoint to `peer` at once (its requests complete with an error).
    fn close_ep(&mut self, peer: u32) {
        let p = peer as usize;
        let ep = std::mem::replace(&mut self.st().eps[p], std::ptr::null_mut());
        if ep.is_null() {
            return;
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
            return;
        }
        let flag: *const bool = &closed;
        // SAFETY: `closed` is written by the callback from inside progress only.
        self.progress_until(CANCEL_WAIT, |_| unsafe { *flag });
        // SAFETY: the close request, finished or not: no callback is wanted any more.
        unsafe { (self.ucp.ucp_request_free)(r) };
    }
}

/// The token every message of the job carries: SHA-256 of a label and the job key.
fn job_token(key: &[u8]) -> [u8; TOKEN_BYTES] {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"weft ucx message token");
    h.update(key);
    let d = h.finalize();
    let mut t = [0u8; TOKEN_BYTES];
    t.copy_from_slice(&d[..TOKEN_BYTES]);
    t
}

// SAFETY: a rendezvous send's buffer is given to UCX, which reads it until the send's
// request completes (then the token is reported done); `abandon` cancels the request and,
// if UCX still holds it, closes the endpoint, which completes it. A fetch's buffer is
// written by UCX until its request completes (reported done) or the peer fails (its
// requests complete with an error, reported too). Lost peers' endpoints are closed, which
// completes their requests.
unsafe impl NetEndpoint for UcxLink {
    fn transport(&self) -> &'static str {
        "ucx"
    }

    fn eager_bytes(&self) -> usize {
        self.eager_bytes
    }

    fn try_send(&mut self, peer: u32, h: &Header, parts: &[&[u8]]) -> bool {
        let Some(ep) = self.ep(peer) else {
            // Dead: the engine learns it from `take_lost` and drops the message.
            return false;
        };
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let op = self.st().alloc_op(None, peer, true);
        self.fill_header(op, h, frame::KIND_EAGER, len);
        // SAFETY: a live slot; its body is ours until the slot is released.
        let body = unsafe { &mut (*op).body };
        body.clear();
        for p in parts {
            body.extend_from_slice(p);
        }
        let data = body.as_ptr();
        self.send(ep, op, data, len, UCP_AM_SEND_FLAG_EAGER);
        true
    }

    unsafe fn start_rendezvous(&mut self, peer: u32, h: &Header, data: RawBuf, token: u32) -> bool {
        let Some(ep) = self.ep(peer) else {
            return false;
        };
        let op = self.st().alloc_op(Some(token), peer, true);
        self.fill_header(op, h, frame::KIND_RTS, data.len());
        // SAFETY: the caller keeps `data` valid until the token is reported done.
        let ptr = unsafe { data.slice(0, data.len()) }.as_ptr();
        self.send(ep, op, ptr, data.len(), UCP_AM_SEND_FLAG_RNDV);
        true
    }

    unsafe fn fetch(&mut self, peer: u32, handle: Handle, dst: RawBufMut, token: u32) {
        if dst.is_empty() {
            // Nothing to move (a synchronous send of no bytes): releasing the descriptor
            // completes the sender (UCX 1.13 keeps a zero-length receive's descriptor).
            self.discard(peer, handle);
            self.st().finished.push((token, Ok(())));
            return;
        }
        let op = self.st().alloc_op(Some(token), peer, false);
        let param = RequestParam::with_callback(recv_done as *const c_void, op as *mut c_void);
        // SAFETY: the caller keeps `dst` valid and untouched until the token is reported done.
        let ptr = unsafe { dst.slice_mut(0, dst.len()) }.as_mut_ptr();
        // SAFETY: `handle` is a rendezvous descriptor this worker handed out; UCX owns it
        // from this call on.
        let r = unsafe {
            (self.ucp.ucp_am_recv_data_nbx)(
                self.worker,
                handle as *mut c_void,
                ptr as *mut c_void,
                dst.len(),
                &param,
            )
        };
        // SAFETY: a live slot.
        let index = unsafe { (*op).index };
        self.started(op, index, r, false);
    }

    fn discard(&mut self, _peer: u32, handle: Handle) {
        // SAFETY: a rendezvous descriptor this worker handed out and nobody received.
        unsafe { (self.ucp.ucp_am_data_release)(self.worker, handle as *mut c_void) };
    }

    fn abandon(&mut self, token: u32) {
        let st = self.st();
        let Some(i) = st
            .ops
            .iter()
            .position(|o| o.live && o.send && o.token == Some(token))
        else {
            return;
        };
        let index = i as u32;
        let (request, peer) = (st.ops[i].request, st.ops[i].peer);
        // Nothing more is reported for it, however it ends.
        st.ops[i].token = None;
        if request.is_null() {
            return;
        }
        // SAFETY: a request of this worker still in flight.
        unsafe { (self.ucp.ucp_request_cancel)(self.worker, request) };
        let live = |l: &mut UcxLink| !l.st().ops[index as usize].live;
        self.progress_until(CANCEL_WAIT, live);
        if self.st().ops[index as usize].live {
            // UCX still holds the buffer (the peer may yet fetch it): closing the endpoint
            // completes the request. The peer sees the connection drop.
            self.close_ep(peer);
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
            for (token, result) in std::mem::take(&mut st.finished) {
                st.report(token, result);
                moved = true;
            }
        }
        for _ in 0..PROGRESS_PER_POLL {
            // SAFETY: a live worker; callbacks reach the state and the sink through raw
            // pointers, and no reference to the state is held here.
            if unsafe { (self.ucp.ucp_worker_progress)(self.worker) } == 0 {
                break;
            }
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
            self.close_ep(*w);
        }
        lost
    }

    fn reach(&mut self, peer: u32) {
        let _ = self.ep(peer);
    }

    fn wants_polling(&self) -> bool {
        // SAFETY: reads of the state, no UCX call.
        let st = unsafe { &*self.st };
        st.in_flight > 0 || !st.early.is_empty() || !st.finished.is_empty() || st.active_polls > 0
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
            connections: st.eps.iter().filter(|e| !e.is_null()).count(),
            refused: st.refused,
            ..NetStats::default()
        }
    }
}

impl Drop for UcxLink {
    fn drop(&mut self) {
        for peer in 0..self.peer_addrs.len() as u32 {
            self.close_ep(peer);
        }
        // SAFETY: every endpoint is closed; the worker and context are ours. Requests still
        // in flight are released with the worker; their slots are freed with the state after.
        unsafe {
            (self.ucp.ucp_worker_destroy)(self.worker);
            (self.ucp.ucp_cleanup)(self.context);
            drop(Box::from_raw(self.st));
        }
    }
}

/// Opens the UCX endpoint for `job`: publishes this worker's address in the store and reads
/// those of the peers it reaches.
pub fn open(job: &Job) -> Result<Box<dyn NetEndpoint>> {
    let at = |what: &str| format!("rank {}: {what}", job.rank);
    let cfg = UcxConfig {
        rank: job.rank,
        size: job.size,
        key: job.key.to_vec(),
        eager_bytes: job.values.bytes("WEFT_UCX_EAGER_BYTES").unwrap_or(8 << 10) as usize,
        library: super::library_path(job.values),
        net_devices: job.lanes.first().and_then(|l| l.device.clone()),
    };
    let mut link = UcxLink::open(&cfg).map_err(|e| e.context(at("opening UCX")))?;
    job.exchange
        .publish(
            &format!("ucx/{}", job.rank),
            to_hex(link.address()).as_bytes(),
        )
        .map_err(|e| e.context(at("publishing the UCX worker address")))?;
    for r in 0..job.size {
        if r == job.rank || !job.peers[r as usize] {
            continue;
        }
        let rec = job
            .exchange
            .fetch(&format!("ucx/{r}"))
            .map_err(|e| e.context(at(&format!("waiting for rank {r}'s UCX worker address"))))?;
        let addr = from_hex(&rec).ok_or_else(|| {
            Error::new(
                ErrorKind::Protocol,
                at(&format!(
                    "rank {r} published a UCX worker address that is not hex"
                )),
            )
        })?;
        link.set_peer_address(r, addr);
    }
    Ok(Box::new(link))
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
