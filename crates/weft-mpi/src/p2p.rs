//! Point-to-point communication (MPI-4.1 chapter 3): blocking, buffered, ready and
//! nonblocking sends, receives, probes, requests (wait/test families, cancel, persistent
//! requests) and statuses. Contiguous datatypes map onto weft's byte messages; weft's
//! `raw` requests carry the nonblocking ones.

use crate::compound;
use crate::consts::*;
use crate::dtype::{map_of, put};
use crate::error::{err, finish, MpiError, R};
use crate::fast::{self, Plain};
use crate::greq;
use crate::stage::{incoming, outgoing};
use crate::state::{
    handle_index, make_handle, state, Persistent, ReqEntry, ReqMore, State, K_REQ, K_TYPE,
};
use std::os::raw::{c_int, c_void};
use weft::raw::RawRequest;
use weft::Status;

/// The standard ABI's MPI_Status: three public fields and five private ints, here the
/// message length in bytes (two ints) and the cancelled flag.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MpiStatus {
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
    pub bytes_lo: c_int,
    pub bytes_hi: c_int,
    pub cancelled: c_int,
    pub reserved: [c_int; 2],
}

impl MpiStatus {
    pub fn set_bytes(&mut self, n: u64) {
        self.bytes_lo = n as u32 as c_int;
        self.bytes_hi = (n >> 32) as u32 as c_int;
    }
    pub fn bytes(&self) -> u64 {
        (self.bytes_lo as u32 as u64) | ((self.bytes_hi as u32 as u64) << 32)
    }
}

/// The empty status (MPI-4.1 §3.7.3).
pub(crate) fn empty_status() -> MpiStatus {
    MpiStatus {
        source: MPI_ANY_SOURCE,
        tag: MPI_ANY_TAG,
        ..MpiStatus::default()
    }
}

fn proc_null_status() -> MpiStatus {
    MpiStatus {
        source: MPI_PROC_NULL,
        tag: MPI_ANY_TAG,
        ..MpiStatus::default()
    }
}

pub(crate) fn from_weft(st: &Status) -> MpiStatus {
    let mut m = MpiStatus {
        source: st.source,
        tag: st.tag,
        cancelled: st.cancelled as c_int,
        ..MpiStatus::default()
    };
    m.set_bytes(st.bytes as u64);
    m
}

/// Writes `st` unless the caller passed MPI_STATUS_IGNORE.
#[inline]
pub(crate) fn store(out: *mut MpiStatus, st: MpiStatus) {
    if !out.is_null() {
        // The error field is left alone: single-completion calls never set it, only the
        // multiple-completion ones report MPI_ERR_IN_STATUS there (MPI-4.1 §3.2.5).
        // SAFETY: non-null status pointers are writable by the MPI calling contract.
        unsafe {
            let error = (*out).error;
            *out = MpiStatus { error, ..st };
        }
    }
}

#[inline]
pub(crate) fn recv_tag(tag: c_int) -> c_int {
    if tag == MPI_ANY_TAG {
        weft::ANY_TAG
    } else {
        tag
    }
}

#[inline]
fn check_tag(tag: c_int, recv: bool) -> R<()> {
    if tag < 0 && !(recv && tag == MPI_ANY_TAG) {
        return Err(err(
            MPI_ERR_TAG,
            format!(
                "tag {tag} is invalid (0..=MPI_TAG_UB{})",
                if recv { " or MPI_ANY_TAG" } else { "" }
            ),
        ));
    }
    Ok(())
}

#[inline]
fn check_peer(peer: c_int, size: u32, recv: bool, what: &str) -> R<()> {
    let ok = (peer >= 0 && (peer as u32) < size)
        || peer == MPI_PROC_NULL
        || (recv && peer == MPI_ANY_SOURCE);
    if !ok {
        return Err(err(
            MPI_ERR_RANK,
            format!("{what} = {peer} is not a rank of the communicator (size {size})"),
        ));
    }
    Ok(())
}

/// Blocking send, shared by Send, Rsend, Ssend and the `_c` forms; a `synchronous` one
/// returns once a matching receive has taken the message.
#[cold]
#[inline(never)]
pub(crate) fn send(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    synchronous: bool,
) -> R<()> {
    let s = state("MPI_Send")?;
    let c = &s.comm(comm)?.comm;
    let out = outgoing(buf, count, dt)?;
    check_tag(tag, false)?;
    check_peer(dest, c.peer_size(), false, "dest")?;
    if dest == MPI_PROC_NULL {
        return Ok(());
    }
    // SAFETY: the staged bytes stay valid for the duration of this blocking call.
    let bytes = unsafe { slice(out.ptr as *const c_void, out.bytes) };
    if synchronous {
        c.ssend(bytes, dest as u32, tag)
    } else {
        c.send(bytes, dest as u32, tag)
    }?;
    Ok(())
}

/// # Safety
/// `buf` readable for `n` bytes when `n > 0`.
unsafe fn slice<'a>(buf: *const c_void, n: usize) -> &'a [u8] {
    if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(buf as *const u8, n) }
    }
}

#[cold]
#[inline(never)]
pub(crate) fn recv(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> R<()> {
    let s = state("MPI_Recv")?;
    let c = &s.comm(comm)?.comm;
    let inc = incoming(buf, count, dt, false)?;
    check_tag(tag, true)?;
    check_peer(source, c.peer_size(), true, "source")?;
    if source == MPI_PROC_NULL {
        store(status, proc_null_status());
        return Ok(());
    }
    let mut st = Status::default();
    // SAFETY: the staged buffer is writable and unaliased during the call.
    if let Err(x) = unsafe { c.raw_recv(inc.ptr, inc.bytes, source, recv_tag(tag), &mut st) } {
        // A truncated message still names its source and tag (MPI-4.1 §3.2.5).
        fast::store_failed(status, &x, &st);
        return Err(x.into());
    }
    inc.finish_received(st.bytes)?;
    // Messages that preceded this one may have completed freed receives.
    if !s.detached.is_empty() {
        reap_detached(s)?;
    }
    store(status, from_weft(&st));
    Ok(())
}

/// MPI_Send (MPI-4.1 §3.2.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Send(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::isend_as(
        "MPI_Send", buf, count, dt, dest, tag, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Send's rules, the contract fast::send
        // requires.
        unsafe { fast::send(buf, count as i64, dt, dest, tag, comm, false, "MPI_Send") }
    {
        return rc;
    }
    finish(
        comm,
        "MPI_Send",
        send(buf, count as i64, dt, dest, tag, comm, false),
    )
}

/// MPI_Send_c (MPI-4.1 §3.2.1, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Send_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::isend_c_as(
        "MPI_Send_c",
        buf,
        count,
        dt,
        dest,
        tag,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe { fast::send(buf, count, dt, dest, tag, comm, false, "MPI_Send_c") } {
        return rc;
    }
    finish(
        comm,
        "MPI_Send_c",
        send(buf, count, dt, dest, tag, comm, false),
    )
}

/// MPI_Rsend (MPI-4.1 §3.4): ready mode only adds a precondition, so a standard send is a
/// correct implementation.
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { rsend_as("MPI_Rsend", buf, count, dt, dest, tag, comm) }
}

/// MPI_Rsend's work for the call `func` the user made (MPI_Rsend itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Rsend's contract.
#[inline(always)]
pub(crate) unsafe fn rsend_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::irsend_as(func, buf, count, dt, dest, tag, comm));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Rsend's rules, the contract fast::send
        // requires.
        unsafe { fast::send(buf, count as i64, dt, dest, tag, comm, false, func) }
    {
        return rc;
    }
    finish(
        comm,
        func,
        send(buf, count as i64, dt, dest, tag, comm, false),
    )
}

/// MPI_Recv (MPI-4.1 §3.2.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::irecv_as("MPI_Recv", buf, count, dt, source, tag, comm); status);
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Recv's rules, the contract fast::recv
        // requires.
        unsafe { fast::recv(buf, count as i64, dt, source, tag, comm, status, "MPI_Recv") }
    {
        return rc;
    }
    finish(
        comm,
        "MPI_Recv",
        recv(buf, count as i64, dt, source, tag, comm, status),
    )
}

/// MPI_Recv_c (MPI-4.1 §3.2.4, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::irecv_c_as("MPI_Recv_c", buf, count, dt, source, tag, comm); status);
    let _entered = crate::threads::enter_untwinned();
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe { fast::recv(buf, count, dt, source, tag, comm, status, "MPI_Recv_c") }
    {
        return rc;
    }
    finish(
        comm,
        "MPI_Recv_c",
        recv(buf, count, dt, source, tag, comm, status),
    )
}

/// Stages the buffer and starts a nonblocking send or receive.
#[allow(clippy::too_many_arguments)]
fn start_op(
    s: &mut State,
    send: bool,
    synchronous: bool,
    buf: usize,
    count: i64,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
) -> R<ReqEntry> {
    let c = &s.comm(comm)?.comm;
    let mut e = ReqEntry {
        proc_null: peer == MPI_PROC_NULL,
        ..ReqEntry::empty(!send, comm)
    };
    if send {
        let out = outgoing(buf as *const c_void, count, dt)?;
        if peer != MPI_PROC_NULL {
            // SAFETY: MPI requires the buffer to stay valid until the request completes; a
            // packed copy lives in the request (moving the Vec keeps its heap buffer).
            e.raw = Some(unsafe {
                if synchronous {
                    c.raw_issend(out.ptr, out.bytes, peer as u32, tag)?
                } else {
                    c.raw_isend(out.ptr, out.bytes, peer as u32, tag)?
                }
            });
            if let Some(k) = out.keep {
                e.more_mut().keep.push(k);
            }
        }
    } else {
        let inc = incoming(buf as *mut c_void, count, dt, false)?;
        if peer != MPI_PROC_NULL {
            // SAFETY: as above, and unaliased until completion.
            e.raw = Some(unsafe { c.raw_irecv(inc.ptr, inc.bytes, peer, recv_tag(tag))? });
            if let Some(u) = inc.unpack {
                e.more_mut().unpack = Some(Box::new(u));
            }
        }
    }
    Ok(e)
}

/// Starts a send (`send`) or receive of this library's own on communicator `comm` (an
/// intercommunicator's bridge, say) and returns its request handle: MPI_Isend/MPI_Irecv
/// without the C boundary, for the library's callers inside an MPI call.
#[allow(clippy::too_many_arguments)]
pub(crate) fn start_own(
    send: bool,
    buf: *const c_void,
    count: i64,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
) -> R<Handle> {
    let s = state(if send { "MPI_Isend" } else { "MPI_Irecv" })?;
    let size = s.comm(comm)?.comm.peer_size();
    check_tag(tag, !send)?;
    check_peer(peer, size, !send, if send { "dest" } else { "source" })?;
    let e = start_op(s, send, false, buf as usize, count, dt, peer, tag, comm)?;
    Ok(s.add_req(e))
}

/// Cancels request `h` of this library if it is a receive that has not matched (MPI_Cancel
/// on a plain request; a send is left to complete).
pub(crate) fn cancel_own(s: &State, h: Handle) {
    if let Some(raw) = handle_index(K_REQ, h)
        .and_then(|i| s.reqs.get(i))
        .and_then(|e| e.raw.as_ref())
    {
        raw.cancel();
    }
}

#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
fn inonblocking(
    send: bool,
    synchronous: bool,
    buf: *const c_void,
    count: i64,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    let s = state("MPI_Isend")?;
    let size = s.comm(comm)?.comm.peer_size();
    check_tag(tag, !send)?;
    check_peer(peer, size, !send, if send { "dest" } else { "source" })?;
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    let e = start_op(
        s,
        send,
        synchronous,
        buf as usize,
        count,
        dt,
        peer,
        tag,
        comm,
    )?;
    let h = s.add_req(e);
    put!(req, h)
}

/// MPI_Isend (MPI-4.1 §3.7.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { isend_as("MPI_Isend", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Isend's work for the call `func` the user made (MPI_Isend itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Isend's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isend_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe {
        fast::start(
            false,
            false,
            buf,
            count as i64,
            dt,
            dest,
            tag,
            comm,
            req,
            func,
        )
    } {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(true, false, buf, count as i64, dt, dest, tag, comm, req),
    )
}

/// MPI_Isend_c (MPI-4.1 §3.7.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Isend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { isend_c_as("MPI_Isend_c", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Isend_c's work for the call `func` the user made (MPI_Isend_c itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Isend_c's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isend_c_as(
    func: &str,
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) =
        // SAFETY: the MPI calling contract, forwarded.
        unsafe { fast::start(false, false, buf, count, dt, dest, tag, comm, req, func) }
    {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(true, false, buf, count, dt, dest, tag, comm, req),
    )
}

/// MPI_Irsend (MPI-4.1 §3.7.2): as MPI_Isend (ready mode is a precondition only).
#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { irsend_as("MPI_Irsend", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Irsend's work for the call `func` the user made (MPI_Irsend itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Irsend's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn irsend_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe {
        fast::start(
            false,
            false,
            buf,
            count as i64,
            dt,
            dest,
            tag,
            comm,
            req,
            func,
        )
    } {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(true, false, buf, count as i64, dt, dest, tag, comm, req),
    )
}

/// MPI_Irecv (MPI-4.1 §3.7.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { irecv_as("MPI_Irecv", buf, count, dt, source, tag, comm, req) }
}

/// MPI_Irecv's work for the call `func` the user made (MPI_Irecv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Irecv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn irecv_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe {
        fast::start(
            true,
            false,
            buf,
            count as i64,
            dt,
            source,
            tag,
            comm,
            req,
            func,
        )
    } {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(false, false, buf, count as i64, dt, source, tag, comm, req),
    )
}

/// MPI_Irecv_c (MPI-4.1 §3.7.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { irecv_c_as("MPI_Irecv_c", buf, count, dt, source, tag, comm, req) }
}

/// MPI_Irecv_c's work for the call `func` the user made (MPI_Irecv_c itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Irecv_c's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn irecv_c_as(
    func: &str,
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) =
        // SAFETY: the MPI calling contract, forwarded.
        unsafe { fast::start(true, false, buf, count, dt, source, tag, comm, req, func) }
    {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(false, false, buf, count, dt, source, tag, comm, req),
    )
}

#[allow(clippy::too_many_arguments)]
#[cold]
#[inline(never)]
pub(crate) fn sendrecv(
    sbuf: *const c_void,
    scount: i64,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: i64,
    rdt: Handle,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> R<()> {
    let s = state("MPI_Sendrecv")?;
    let size = s.comm(comm)?.comm.peer_size();
    check_tag(stag, false)?;
    check_tag(rtag, true)?;
    check_peer(dest, size, false, "dest")?;
    check_peer(source, size, true, "source")?;
    // The receive is posted first so two ranks exchanging cannot deadlock.
    let mut r = start_op(
        s,
        false,
        false,
        rbuf as usize,
        rcount,
        rdt,
        source,
        rtag,
        comm,
    )?;
    let mut w = start_op(s, true, false, sbuf as usize, scount, sdt, dest, stag, comm)?;
    let sres = w.raw.as_mut().map(|q| q.wait()).transpose();
    let (rst, received) = match r.raw.as_mut() {
        Some(q) => match q.wait() {
            Ok(st) => (from_weft(&st), st.bytes),
            Err(e) => {
                // A truncated receive still says where the message came from (as the
                // fast path does).
                store(status, from_weft(&q.last_status()));
                return Err(e.into());
            }
        },
        None => (proc_null_status(), 0),
    };
    if let Some(u) = r.more.as_mut().and_then(|m| m.unpack.take()) {
        u.run_received(received)?;
    }
    sres?;
    store(status, rst);
    Ok(())
}

/// MPI_Sendrecv (MPI-4.1 §3.10).
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sbuf: *const c_void,
    scount: c_int,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        sendrecv_as(
            "MPI_Sendrecv",
            sbuf,
            scount,
            sdt,
            dest,
            stag,
            rbuf,
            rcount,
            rdt,
            source,
            rtag,
            comm,
            status,
        )
    }
}

/// MPI_Sendrecv's work for the call `func` the user made (MPI_Sendrecv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Sendrecv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sendrecv_as(
    func: &str,
    sbuf: *const c_void,
    scount: c_int,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::isendrecv_as(func, sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm); status);
    let _entered = crate::threads::enter_untwinned();
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe {
        fast::sendrecv(
            sbuf,
            scount as i64,
            sdt,
            dest,
            stag,
            rbuf,
            rcount as i64,
            rdt,
            source,
            rtag,
            comm,
            status,
        )
    } {
        return rc;
    }
    let r = sendrecv(
        sbuf,
        scount as i64,
        sdt,
        dest,
        stag,
        rbuf,
        rcount as i64,
        rdt,
        source,
        rtag,
        comm,
        status,
    );
    finish(comm, func, r)
}

/// MPI_Sendrecv_replace (MPI-4.1 §3.10): the outgoing data is copied first.
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        sendrecv_replace_as(
            "MPI_Sendrecv_replace",
            buf,
            count,
            dt,
            dest,
            stag,
            source,
            rtag,
            comm,
            status,
        )
    }
}

/// MPI_Sendrecv_replace's work for the call `func` the user made (MPI_Sendrecv_replace itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Sendrecv_replace's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sendrecv_replace_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::isendrecv_replace_as(func, buf, count, dt, dest, stag, source, rtag, comm); status);
    let _entered = crate::threads::enter_untwinned();
    let r = (|| {
        // The outgoing items are packed first (a copy), then received in place.
        let out = outgoing(buf, count as i64, dt)?;
        let copy = match out.keep {
            Some(v) => v,
            // SAFETY: `buf` holds the items' bytes (the caller's contract).
            None => unsafe { slice(out.ptr as *const c_void, out.bytes) }.to_vec(),
        };
        sendrecv(
            copy.as_ptr() as *const c_void,
            copy.len() as i64,
            MPI_BYTE,
            dest,
            stag,
            buf,
            count as i64,
            dt,
            source,
            rtag,
            comm,
            status,
        )
    })();
    finish(comm, func, r)
}

fn probe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: Option<*mut c_int>,
    status: *mut MpiStatus,
) -> R<()> {
    let s = state("MPI_Probe")?;
    let c = &s.comm(comm)?.comm;
    check_tag(tag, true)?;
    check_peer(source, c.peer_size(), true, "source")?;
    if source == MPI_PROC_NULL {
        store(status, proc_null_status());
        if let Some(f) = flag {
            put!(f, 1)?;
        }
        return Ok(());
    }
    match flag {
        None => {
            let st = c.probe(source, recv_tag(tag))?;
            store(status, from_weft(&st));
        }
        Some(f) => match c.iprobe(source, recv_tag(tag))? {
            Some(st) => {
                store(status, from_weft(&st));
                put!(f, 1)?;
            }
            None => put!(f, 0)?,
        },
    }
    Ok(())
}

/// MPI_Probe (MPI-4.1 §3.8.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    if crate::threads::twins() {
        // SAFETY: the caller's MPI contract, forwarded.
        return unsafe { crate::threads::probe("MPI_Probe", source, tag, comm, status) };
    }
    let _entered = crate::threads::enter();
    finish(comm, "MPI_Probe", probe(source, tag, comm, None, status))
}

/// MPI_Iprobe (MPI-4.1 §3.8.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { iprobe_as("MPI_Iprobe", source, tag, comm, flag, status) }
}

/// MPI_Iprobe's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Iprobe's contract.
pub(crate) unsafe fn iprobe_as(
    func: &str,
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    finish(comm, func, probe(source, tag, comm, Some(flag), status))
}

fn get_count(status: *const MpiStatus, dt: Handle) -> R<i64> {
    if status.is_null() {
        return Err(err(MPI_ERR_ARG, "status is NULL"));
    }
    let map = map_of(dt)?;
    // SAFETY: non-null status is readable.
    let bytes = unsafe { (*status).bytes() };
    Ok(map
        .count_in(bytes)
        .map_or(MPI_UNDEFINED as i64, |n| n as i64))
}

/// MPI_Get_count (MPI-4.1 §3.2.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r =
        get_count(status, dt).and_then(|n| put!(count, i32::try_from(n).unwrap_or(MPI_UNDEFINED)));
    finish(MPI_COMM_WORLD, "MPI_Get_count", r)
}

/// MPI_Get_count_c (MPI-4.1 §3.2.5, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_count_c(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = get_count(status, dt).and_then(|n| put!(count, n));
    finish(MPI_COMM_WORLD, "MPI_Get_count_c", r)
}

/// MPI_Get_elements (MPI-4.1 §5.1.11): basic elements received.
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut c_int,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if status.is_null() {
            return Err(err(MPI_ERR_ARG, "status is NULL"));
        }
        let map = map_of(dt)?;
        // SAFETY: non-null status is readable.
        let bytes = unsafe { (*status).bytes() };
        let n = map
            .elements_in(bytes)
            .map_or(MPI_UNDEFINED, |n| i32::try_from(n).unwrap_or(MPI_UNDEFINED));
        put!(count, n)
    })();
    finish(MPI_COMM_WORLD, "MPI_Get_elements", r)
}

/// MPI_Test_cancelled (MPI-4.1 §3.8.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Test_cancelled(status: *const MpiStatus, flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = if status.is_null() {
        Err(err(MPI_ERR_ARG, "status is NULL"))
    } else {
        // SAFETY: non-null status is readable.
        let c = unsafe { (*status).cancelled } & 1;
        put!(flag, c)
    };
    finish(MPI_COMM_WORLD, "MPI_Test_cancelled", r)
}

// ------------------------------------------------------------------- requests

fn req_index(s: &State, h: Handle) -> R<usize> {
    handle_index(K_REQ, h)
        .filter(|&i| s.reqs.get(i).is_some())
        .ok_or_else(|| {
            err(
                MPI_ERR_REQUEST,
                format!("request handle {h:#x} is not valid (freed or completed)"),
            )
        })
}

/// Finishes the freed receives that have completed (their unpacks run now); the others
/// stay detached. Called from every completion call so their data lands promptly.
pub(crate) fn reap_detached(s: &mut State) -> R<()> {
    let mut first_err = Ok(());
    let mut k = 0;
    while k < s.detached.len() {
        let done = match s.detached[k].0.test() {
            Ok(Some(st)) => Some(Ok(st)),
            Ok(None) => None,
            Err(x) => Some(Err(x)),
        };
        match done {
            None => k += 1,
            Some(r) => {
                let (_, unpack, _keep) = s.detached.swap_remove(k);
                let r = r.map_err(Into::into).and_then(|st| match unpack {
                    Some(u) if !st.cancelled => u.run_received(st.bytes),
                    _ => Ok(()),
                });
                if first_err.is_ok() {
                    first_err = r;
                }
            }
        }
    }
    first_err
}

/// Completes the request `*req` if `block` or it is done; returns whether it completed.
pub(crate) fn complete(
    s: &mut State,
    req: *mut Handle,
    block: bool,
    status: *mut MpiStatus,
) -> R<bool> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    if !s.detached.is_empty() {
        reap_detached(s)?;
    }
    // SAFETY: non-null request pointers are readable and writable.
    let h = unsafe { *req };
    if h == MPI_REQUEST_NULL {
        store(status, empty_status());
        return Ok(true);
    }
    let i = req_index(s, h)?;
    if compound::is_compound(s, i) {
        return compound::complete(s, i, req, block, status);
    }
    if crate::comm::is_idup(s, h) {
        let done = crate::comm::complete_idup(s, i, h, block);
        if !matches!(done, Ok(false)) {
            // Retired (also after an error): the handle goes.
            // SAFETY: as above.
            unsafe { *req = MPI_REQUEST_NULL };
            store(status, empty_status());
        }
        return done;
    }
    if greq::is_greq(h) {
        if !greq::wait(h, block, &s.weft.world()) {
            return Ok(false);
        }
        let g = greq::take(h).ok_or_else(|| {
            err(
                MPI_ERR_REQUEST,
                format!("generalized request {h:#x} was released while being waited for"),
            )
        })?;
        s.reqs.discard(i);
        // SAFETY: as above.
        unsafe { *req = MPI_REQUEST_NULL };
        g.finish(status)?;
        return Ok(true);
    }
    let e = s.reqs.get_mut(i).expect("checked");
    if let Some(m) = e.more.as_mut().filter(|m| m.coll.is_some()) {
        let r = if block {
            m.coll.take().expect("checked").wait()
        } else {
            match m.coll.as_mut().expect("checked").test() {
                Ok(false) => return Ok(false),
                Ok(true) => Ok(()),
                Err(x) => Err(x),
            }
        };
        m.coll = None;
        let unpack = m.unpack.take();
        // The staging buffers outlive the unpack, which may read a block of one of them.
        let keep = std::mem::take(&mut m.keep);
        if !e.stays() {
            s.reqs.discard(i);
            // SAFETY: as above.
            unsafe { *req = MPI_REQUEST_NULL };
        }
        r?;
        if let Some(u) = unpack {
            u.run()?;
        }
        drop(keep);
        store(status, empty_status());
        return Ok(true);
    }
    if e.partitions_unsent() {
        if block {
            // Nothing else can mark the partitions ready while this thread waits.
            return Err(err(
                MPI_ERR_REQUEST,
                format!(
                    "request {h:#x}: waiting for a partitioned send before every partition is marked ready (MPI_Pready)"
                ),
            ));
        }
        return Ok(false);
    }
    let partitioned = e.more.as_ref().is_some_and(|m| m.partitioned.is_some());
    // A failed unpack is reported only after the request is retired, so the handle never
    // points at a finished raw request.
    let mut unpacked = Ok(());
    let st = match e.raw.as_mut() {
        Some(raw) => {
            let r = if block {
                raw.wait().map(Some)
            } else {
                raw.test()
            };
            match r {
                Ok(Some(st)) => {
                    if let Some(m) = e.more.as_mut() {
                        m.keep.clear();
                        if let Some(u) = m.unpack.take() {
                            if !st.cancelled {
                                unpacked = u.run_received(st.bytes);
                            }
                        }
                    }
                    if e.recv {
                        from_weft(&st)
                    } else {
                        MpiStatus {
                            cancelled: st.cancelled as c_int,
                            ..empty_status()
                        }
                    }
                }
                Ok(None) => return Ok(false),
                Err(x) => {
                    if e.recv {
                        // A truncated message still names its source and tag.
                        store(status, from_weft(&raw.last_status()));
                    }
                    e.raw = None;
                    if e.persistent().is_none() {
                        s.reqs.discard(i);
                        // SAFETY: as above.
                        unsafe { *req = MPI_REQUEST_NULL };
                    }
                    return Err(x.into());
                }
            }
        }
        None if e.proc_null => proc_null_status(),
        None => empty_status(),
    };
    e.raw = None;
    // A persistent send or receive to MPI_PROC_NULL is inactive again once completed.
    e.proc_null = false;
    if partitioned {
        crate::partitioned::completed(s, i);
    }
    let e = s.reqs.get_mut(i).expect("checked");
    // An inactive persistent collective (MPI-4.1 §3.9: completing it returns at once and
    // keeps it) has `restart` instead.
    if !e.stays() {
        s.reqs.discard(i);
        // SAFETY: as above.
        unsafe { *req = MPI_REQUEST_NULL };
    }
    store(status, st);
    unpacked?;
    Ok(true)
}

fn req_comm(req: *const Handle) -> Handle {
    if req.is_null() {
        return MPI_COMM_WORLD;
    }
    // SAFETY: non-null request pointers are readable.
    let h = unsafe { *req };
    state_comm_of(h)
}

fn state_comm_of(h: Handle) -> Handle {
    crate::state::state_opt()
        .and_then(|s| {
            handle_index(K_REQ, h)
                .and_then(|i| s.reqs.get(i))
                .map(|e| e.comm)
        })
        .unwrap_or(MPI_COMM_WORLD)
}

/// MPI_Wait (MPI-4.1 §3.7.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(req: *mut Handle, status: *mut MpiStatus) -> c_int {
    if crate::threads::twins() {
        // SAFETY: the caller's MPI contract, forwarded.
        return unsafe { crate::threads::wait("MPI_Wait", req, status) };
    }
    let _entered = crate::threads::enter();
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Wait's rules, the contract fast::complete
        // requires.
        unsafe { fast::complete(req, false, std::ptr::null_mut(), status, "MPI_Wait") }
    {
        return rc;
    }
    wait_checked(req, status)
}

/// MPI_Wait on every request the fast path does not take.
#[cold]
#[inline(never)]
fn wait_checked(req: *mut Handle, status: *mut MpiStatus) -> c_int {
    let comm = req_comm(req);
    let r = state("MPI_Wait").and_then(|s| complete(s, req, true, status).map(|_| ()));
    finish(comm, "MPI_Wait", r)
}

/// MPI_Test (MPI-4.1 §3.7.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    req: *mut Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { test_as("MPI_Test", req, flag, status) }
}

/// MPI_Test's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Test's contract.
#[inline]
pub(crate) unsafe fn test_as(
    func: &str,
    req: *mut Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe { fast::complete(req, true, flag, status, func) } {
        return rc;
    }
    test_checked(func, req, flag, status)
}

/// MPI_Test on every request the fast path does not take.
#[cold]
#[inline(never)]
fn test_checked(func: &str, req: *mut Handle, flag: *mut c_int, status: *mut MpiStatus) -> c_int {
    let comm = req_comm(req);
    let r = state(func).and_then(|s| {
        let done = complete(s, req, false, status)?;
        if !done {
            s.weft.world().raw_progress();
        }
        put!(flag, done as c_int)
    });
    finish(comm, func, r)
}

/// Statuses array entry `i`, or null for MPI_STATUSES_IGNORE.
fn nth(statuses: *mut MpiStatus, i: usize) -> *mut MpiStatus {
    if statuses.is_null() {
        statuses
    } else {
        // SAFETY: a non-null statuses array has one entry per request.
        unsafe { statuses.add(i) }
    }
}

fn reqs_slice<'a>(count: c_int, reqs: *mut Handle) -> R<&'a mut [Handle]> {
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    if count == 0 {
        return Ok(&mut []);
    }
    if reqs.is_null() {
        return Err(err(MPI_ERR_ARG, "array_of_requests is NULL"));
    }
    // SAFETY: the array holds `count` handles (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(reqs, count as usize) })
}

/// MPI_Waitall (MPI-4.1 §3.7.5): on failure, each status's MPI_ERROR says which failed.
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    reqs: *mut Handle,
    statuses: *mut MpiStatus,
) -> c_int {
    if crate::threads::twins() {
        // SAFETY: the caller's MPI contract, forwarded.
        return unsafe { crate::threads::waitall("MPI_Waitall", count, reqs, statuses) };
    }
    let _entered = crate::threads::enter();
    // A request's error goes to its communicator's handler (MPI-4.1 §9.3): the first
    // failing one's, read before completion frees the handle.
    let mut raise_on = MPI_COMM_WORLD;
    let r = (|| {
        let s = state("MPI_Waitall")?;
        let hs = reqs_slice(count, reqs)?;
        // Error classes by request, made at the first failure.
        let mut codes: Option<Vec<c_int>> = None;
        let n = hs.len();
        for (i, h) in hs.iter_mut().enumerate() {
            let status = nth(statuses, i);
            // A send or receive that fast::start made (the usual request) is retired in
            // place; anything else takes the checked path.
            let plain = if s.detached.is_empty() {
                fast::finish_plain(s, h, false, status)
            } else {
                None
            };
            let failure = match plain {
                Some(Plain::Done) => continue,
                Some(Plain::Failed(comm, x)) => (comm, MpiError::from(x)),
                Some(Plain::Pending) => unreachable!("a wait completes"),
                None => {
                    let comm = handle_index(K_REQ, *h)
                        .and_then(|i| s.reqs.get(i))
                        .map_or(MPI_COMM_WORLD, |e| e.comm);
                    match complete(s, h, true, status) {
                        Ok(_) => continue,
                        Err(e) => (comm, e),
                    }
                }
            };
            let codes = codes.get_or_insert_with(|| {
                raise_on = failure.0;
                vec![MPI_SUCCESS; n]
            });
            codes[i] = failure.1.class;
        }
        if let Some(codes) = codes {
            if !statuses.is_null() {
                for (i, c) in codes.iter().enumerate() {
                    // SAFETY: one status per request.
                    unsafe { (*statuses.add(i)).error = *c };
                }
            }
            return Err(err(
                MPI_ERR_IN_STATUS,
                "a request of MPI_Waitall failed (see the statuses)",
            ));
        }
        Ok(())
    })();
    finish(raise_on, "MPI_Waitall", r)
}

/// MPI_Testall (MPI-4.1 §3.7.5): completes all or none.
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    reqs: *mut Handle,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { testall_as("MPI_Testall", count, reqs, flag, statuses) }
}

/// MPI_Testall's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Testall's contract.
pub(crate) unsafe fn testall_as(
    func: &str,
    count: c_int,
    reqs: *mut Handle,
    flag: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    let r = (|| {
        let s = state(func)?;
        let hs = reqs_slice(count, reqs)?;
        let done = testall(s, hs, statuses)?;
        put!(flag, done as c_int)
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Testall's work on requests `hs` without the C boundary: completes all of them
/// (statuses into `statuses`, MPI_STATUSES_IGNORE or one per request) or none.
pub(crate) fn testall(s: &mut State, hs: &mut [Handle], statuses: *mut MpiStatus) -> R<bool> {
    s.weft.world().raw_progress();
    for &h in hs.iter() {
        if h != MPI_REQUEST_NULL {
            let i = req_index(s, h)?;
            if !entry_ready(s, i)? {
                return Ok(false);
            }
        }
    }
    for (i, h) in hs.iter_mut().enumerate() {
        complete(s, h, true, nth(statuses, i))?;
    }
    Ok(true)
}

/// Waits for request `*h` of this library's own, which the library started inside an MPI
/// call (a compound request of a collective, say): under MPI_THREAD_MULTIPLE without
/// holding the lock ([`crate::threads::wait_released`]), as MPI_Wait does.
pub(crate) fn wait_own(h: &mut Handle) -> R<()> {
    if crate::threads::twins() {
        crate::threads::wait_released(|| {
            let s = state("MPI_Wait")?;
            complete(s, h, false, std::ptr::null_mut())
        })
    } else {
        let s = state("MPI_Wait")?;
        complete(s, h, true, std::ptr::null_mut()).map(|_| ())
    }
}

/// Whether request entry `i` has completed; advances a collective one step.
fn entry_ready(s: &mut State, i: usize) -> R<bool> {
    if let Some(done) = greq::done(make_handle(K_REQ, i)) {
        return Ok(done);
    }
    if crate::comm::is_idup(s, make_handle(K_REQ, i)) {
        return Ok(crate::comm::idup_ready(s, make_handle(K_REQ, i)));
    }
    if compound::is_compound(s, i) {
        return compound::ready(s, i, |s, h| {
            let k = req_index(s, h)?;
            entry_ready(s, k)
        });
    }
    let Some(e) = s.reqs.get_mut(i) else {
        return Ok(true);
    };
    if let Some(c) = e.coll_mut() {
        return Ok(c.test()?);
    }
    Ok(e.raw.as_ref().is_none_or(|r| r.is_done()))
}

/// Index of a request of `hs` that is complete (or null/inactive-ready), polling if `block`.
fn find_done(s: &mut State, hs: &[Handle], block: bool) -> R<Option<usize>> {
    let mut active = Vec::with_capacity(hs.len());
    let mut any_coll = false;
    for &h in hs {
        if h == MPI_REQUEST_NULL {
            active.push(None);
            continue;
        }
        let i = req_index(s, h)?;
        if s.req_inactive(i) {
            active.push(None);
            continue;
        }
        // Collectives and generalized requests are polled (weft's wait_any knows neither).
        any_coll |= s.reqs.get(i).is_some_and(ReqEntry::has_coll)
            || greq::is_greq(h)
            || crate::comm::is_idup(s, h)
            || compound::is_compound(s, i);
        active.push(Some(i));
    }
    if active.iter().all(Option::is_none) {
        return Ok(None);
    }
    let world = s.weft.world();
    loop {
        for (k, a) in active.iter().enumerate() {
            if let Some(i) = *a {
                if entry_ready(s, i)? {
                    return Ok(Some(k));
                }
            }
        }
        if !block {
            world.raw_progress();
            for (k, a) in active.iter().enumerate() {
                if let Some(i) = *a {
                    if entry_ready(s, i)? {
                        return Ok(Some(k));
                    }
                }
            }
            return Ok(None);
        }
        if !any_coll {
            let raws: Vec<Option<&RawRequest>> = active
                .iter()
                .map(|a| a.and_then(|i| s.reqs.get(i)).and_then(|e| e.raw.as_ref()))
                .collect();
            return Ok(Some(weft::raw::wait_any(&raws)?));
        }
        // Collectives advance only when tested: poll them all, giving the CPU away between
        // rounds so peers on the same core can run.
        if !world.raw_progress() {
            std::thread::yield_now();
        }
    }
}

/// Whether every handle is MPI_REQUEST_NULL or an inactive persistent request: Waitany
/// then returns MPI_UNDEFINED and Waitsome an outcount of MPI_UNDEFINED (MPI-4.1 §3.7.5).
fn all_null_or_inactive(s: &State, hs: &[Handle]) -> bool {
    hs.iter().all(|&h| skipped(s, h))
}

/// A handle the "any/some" calls ignore: null or an inactive persistent request.
fn skipped(s: &State, h: Handle) -> bool {
    h == MPI_REQUEST_NULL || handle_index(K_REQ, h).is_some_and(|i| s.req_inactive(i))
}

fn any(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: Option<*mut c_int>,
    status: *mut MpiStatus,
) -> R<()> {
    let s = state("MPI_Waitany")?;
    let hs = reqs_slice(count, reqs)?;
    match find_done(s, hs, flag.is_none())? {
        Some(k) => {
            complete(s, &mut hs[k], true, status)?;
            put!(index, k as c_int)?;
            if let Some(f) = flag {
                put!(f, 1)?;
            }
        }
        None => {
            let all_null = all_null_or_inactive(s, hs);
            if all_null {
                put!(index, MPI_UNDEFINED)?;
                store(status, empty_status());
            }
            if let Some(f) = flag {
                put!(f, all_null as c_int)?;
            }
        }
    }
    Ok(())
}

/// MPI_Waitany (MPI-4.1 §3.7.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    if crate::threads::twins() {
        // SAFETY: the caller's MPI contract, forwarded.
        return unsafe { crate::threads::waitany("MPI_Waitany", count, reqs, index, status) };
    }
    let _entered = crate::threads::enter();
    finish(
        MPI_COMM_WORLD,
        "MPI_Waitany",
        any(count, reqs, index, None, status),
    )
}

/// MPI_Testany (MPI-4.1 §3.7.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { testany_as("MPI_Testany", count, reqs, index, flag, status) }
}

/// MPI_Testany's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Testany's contract.
pub(crate) unsafe fn testany_as(
    func: &str,
    count: c_int,
    reqs: *mut Handle,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    finish(
        MPI_COMM_WORLD,
        func,
        any(count, reqs, index, Some(flag), status),
    )
}

fn some(
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
    block: bool,
) -> R<()> {
    let s = state("MPI_Waitsome")?;
    let hs = reqs_slice(incount, reqs)?;
    if outcount.is_null() {
        return Err(err(MPI_ERR_ARG, "outcount is NULL"));
    }
    if all_null_or_inactive(s, hs) {
        return put!(outcount, MPI_UNDEFINED);
    }
    // Checked before anything completes: a completed request's status must not be lost.
    if indices.is_null() {
        return Err(err(MPI_ERR_ARG, "array_of_indices is NULL"));
    }
    if block {
        find_done(s, hs, true)?;
    } else {
        s.weft.world().raw_progress();
    }
    let mut n = 0usize;
    for (k, h) in hs.iter_mut().enumerate() {
        if skipped(s, *h) {
            continue;
        }
        if complete(s, h, false, nth(statuses, n))? {
            // SAFETY: indices holds incount entries.
            unsafe { *indices.add(n) = k as c_int };
            n += 1;
        }
    }
    put!(outcount, n as c_int)
}

/// MPI_Waitsome (MPI-4.1 §3.7.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    if crate::threads::twins() {
        // SAFETY: the caller's MPI contract, forwarded.
        return unsafe {
            crate::threads::waitsome("MPI_Waitsome", incount, reqs, outcount, indices, statuses)
        };
    }
    let _entered = crate::threads::enter();
    finish(
        MPI_COMM_WORLD,
        "MPI_Waitsome",
        some(incount, reqs, outcount, indices, statuses, true),
    )
}

/// MPI_Testsome (MPI-4.1 §3.7.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { testsome_as("MPI_Testsome", incount, reqs, outcount, indices, statuses) }
}

/// MPI_Testsome's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Testsome's contract.
pub(crate) unsafe fn testsome_as(
    func: &str,
    incount: c_int,
    reqs: *mut Handle,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MpiStatus,
) -> c_int {
    finish(
        MPI_COMM_WORLD,
        func,
        some(incount, reqs, outcount, indices, statuses, false),
    )
}

/// MPI_Request_free (MPI-4.1 §3.7.3): a pending send still completes; the handle goes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_free(req: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let comm = req_comm(req);
    let r = (|| {
        let s = state("MPI_Request_free")?;
        if req.is_null() {
            return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
        }
        // SAFETY: non-null.
        let h = unsafe { *req };
        let i = req_index(s, h)?;
        if greq::is_greq(h) {
            if greq::free(h)? {
                s.reqs.discard(i);
            }
            return put!(req, MPI_REQUEST_NULL);
        }
        if s.reqs.get(i).is_some_and(ReqEntry::has_coll)
            || compound::is_compound(s, i)
            || crate::comm::is_idup(s, h)
        {
            return Err(err(
                MPI_ERR_REQUEST,
                "a nonblocking collective request cannot be freed before it completes; wait for it",
            ));
        }
        let mut e = s.reqs.remove(i).expect("checked");
        if let Some(dt) = e.persistent().filter(|p| p.own_type).map(|p| p.dt) {
            if let Some(t) = handle_index(K_TYPE, dt) {
                s.types.remove(t);
            }
        }
        if let Some(raw) = e.raw.take() {
            // A receive still matches and completes into the user's buffer (never
            // cancelled); a send keeps its packed copy until the data has left.
            let (unpack, keep) = match e.more.as_mut() {
                Some(m) => (m.unpack.take().map(|u| *u), std::mem::take(&mut m.keep)),
                None => (None, Vec::new()),
            };
            s.detached.push((raw, unpack, keep));
            reap_detached(s)?;
        }
        put!(req, MPI_REQUEST_NULL)
    })();
    finish(comm, "MPI_Request_free", r)
}

/// MPI_Cancel (MPI-4.1 §3.8.4): receives that have not matched are cancelled; a send is
/// left to complete (weft cannot withdraw a message already delivered).
#[no_mangle]
pub unsafe extern "C" fn MPI_Cancel(req: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let comm = req_comm(req);
    let r = (|| {
        let s = state("MPI_Cancel")?;
        if req.is_null() {
            return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
        }
        // SAFETY: non-null.
        let h = unsafe { *req };
        let i = req_index(s, h)?;
        if greq::is_greq(h) {
            return greq::cancel(h);
        }
        if crate::comm::is_idup(s, h) {
            return Err(err(
                MPI_ERR_REQUEST,
                "MPI_Comm_idup's request cannot be cancelled (MPI-4.1 §6.12: nonblocking \
                 collectives cannot be cancelled); wait for it",
            ));
        }
        if let Some(raw) = s.reqs.get(i).and_then(|e| e.raw.as_ref()) {
            raw.cancel();
        }
        Ok(())
    })();
    finish(comm, "MPI_Cancel", r)
}

/// MPI_Request_get_status (MPI-4.1 §3.7.3): tests without freeing.
#[no_mangle]
pub unsafe extern "C" fn MPI_Request_get_status(
    req: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { request_get_status_as("MPI_Request_get_status", req, flag, status) }
}

/// MPI_Request_get_status's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Request_get_status's contract.
pub(crate) unsafe fn request_get_status_as(
    func: &str,
    req: Handle,
    flag: *mut c_int,
    status: *mut MpiStatus,
) -> c_int {
    let r = (|| {
        let s = state(func)?;
        if req == MPI_REQUEST_NULL {
            store(status, empty_status());
            return put!(flag, 1);
        }
        let i = req_index(s, req)?;
        if greq::is_greq(req) {
            let done = greq::get_status(req, status)?;
            return put!(flag, done as c_int);
        }
        s.weft.world().raw_progress();
        let done = entry_ready(s, i)?;
        if done {
            // The status the completion will report, without completing (MPI-4.1 §3.7.3).
            let e = s.reqs.get(i).expect("checked");
            let st = match e.raw.as_ref().and_then(|r| r.peek_status()) {
                Some(st) if e.recv => from_weft(&st),
                Some(st) => MpiStatus {
                    cancelled: st.cancelled as c_int,
                    ..empty_status()
                },
                None if e.proc_null && e.recv => proc_null_status(),
                None => empty_status(),
            };
            store(status, st);
        }
        put!(flag, done as c_int)
    })();
    finish(MPI_COMM_WORLD, func, r)
}

// ------------------------------------------------------------------- persistent

#[allow(clippy::too_many_arguments)]
fn init_req(
    send: bool,
    synchronous: bool,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    let s = state("MPI_Send_init")?;
    let size = s.comm(comm)?.comm.peer_size();
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
    }
    crate::dtype::layout(dt)?;
    check_tag(tag, !send)?;
    check_peer(peer, size, !send, if send { "dest" } else { "source" })?;
    // MPI lets the program free the datatype right after the init call (MPI-4.1 §5.1.9:
    // pending operations keep using it), so a derived type is copied into a hidden entry the
    // request owns and frees with itself.
    let (dt, own_type) = match handle_index(K_TYPE, dt).and_then(|i| s.types.get(i)) {
        Some(d) => {
            let copy = d.clone();
            (make_handle(K_TYPE, s.types.insert(copy)), true)
        }
        None => (dt, false),
    };
    let p = Persistent {
        own_type,
        send,
        synchronous,
        buffered: false,
        buf: buf as usize,
        count: count as i64,
        dt,
        peer,
        tag,
        comm,
    };
    let h = s.add_req(ReqEntry {
        more: Some(Box::new(ReqMore {
            persistent: Some(Box::new(p)),
            ..Default::default()
        })),
        ..ReqEntry::empty(!send, comm)
    });
    put!(req, h)
}

/// MPI_Send_init (MPI-4.1 §3.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { send_init_as("MPI_Send_init", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Send_init's work for the call `func` the user made (MPI_Send_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Send_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn send_init_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    finish(
        comm,
        func,
        init_req(true, false, buf, count, dt, dest, tag, comm, req),
    )
}

/// MPI_Recv_init (MPI-4.1 §3.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { recv_init_as("MPI_Recv_init", buf, count, dt, source, tag, comm, req) }
}

/// MPI_Recv_init's work for the call `func` the user made (MPI_Recv_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Recv_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn recv_init_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    finish(
        comm,
        func,
        init_req(false, false, buf, count, dt, source, tag, comm, req),
    )
}

/// Starts persistent request `h` for the call `func` (MPI_Start or MPI_Startall), which the
/// errors of a persistent collective's start name.
fn start(s: &mut State, h: Handle, func: &'static str) -> R<()> {
    let i = req_index(s, h)?;
    if crate::partitioned::of(s, i).is_some() {
        return crate::partitioned::start(s, i, h);
    }
    let e = s.reqs.get_mut(i).expect("checked");
    if let Some(restart) = e.restart().cloned() {
        if e.has_coll() || compound::is_compound(s, i) {
            return Err(err(
                MPI_ERR_REQUEST,
                format!("request {h:#x} is already active"),
            ));
        }
        let mut st = restart(func)?;
        if let Some(c) = st.take_compound() {
            s.compounds.insert(i, c);
        }
        let e = s.reqs.get_mut(i).expect("checked");
        st.install(e);
        return Ok(());
    }
    let e = s.reqs.get(i).expect("checked");
    let Some(&p) = e.persistent() else {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("request {h:#x} is not persistent"),
        ));
    };
    if e.raw.is_some() {
        return Err(err(
            MPI_ERR_REQUEST,
            format!("request {h:#x} is already active"),
        ));
    }
    if p.buffered {
        // Buffered mode completes locally: the message is copied into the attached buffer
        // and the request is complete at once.
        bsend(
            p.buf as *const c_void,
            p.count as c_int,
            p.dt,
            p.peer,
            p.tag,
            p.comm,
        )?;
        let e = s.reqs.get_mut(i).expect("checked");
        e.proc_null = true;
        return Ok(());
    }
    let started = start_op(
        s,
        p.send,
        p.synchronous,
        p.buf,
        p.count,
        p.dt,
        p.peer,
        p.tag,
        p.comm,
    )?;
    let ReqEntry {
        raw,
        proc_null,
        more,
        ..
    } = started;
    let e = s.reqs.get_mut(i).expect("checked");
    e.raw = raw;
    e.proc_null = proc_null;
    let m = e.more_mut();
    (m.keep, m.unpack) = more.map_or((Vec::new(), None), |x| (x.keep, x.unpack));
    Ok(())
}

/// MPI_Start (MPI-4.1 §3.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Start(req: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let comm = req_comm(req);
    let r = (|| {
        if req.is_null() {
            return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
        }
        // SAFETY: non-null.
        start(state("MPI_Start")?, unsafe { *req }, "MPI_Start")
    })();
    finish(comm, "MPI_Start", r)
}

/// MPI_Startall (MPI-4.1 §3.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Startall(count: c_int, reqs: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Startall")?;
        for &h in reqs_slice(count, reqs)?.iter() {
            start(s, h, "MPI_Startall")?;
        }
        Ok(())
    })();
    finish(MPI_COMM_WORLD, "MPI_Startall", r)
}

// ------------------------------------------------------------------- buffered mode

/// MPI_Bsend (MPI-4.1 §3.6.1): the message is copied, counting its size plus
/// MPI_BSEND_OVERHEAD against the attached buffer, and sent from the copy. It never waits
/// (MPI_Ibsend is this and a completed request), so it has no nonblocking twin under
/// MPI_THREAD_MULTIPLE.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    finish(comm, "MPI_Bsend", bsend(buf, count, dt, dest, tag, comm))
}

/// The body of MPI_Bsend (and MPI_Bsend_c), also what a started MPI_Bsend_init request
/// does.
pub(crate) fn bsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> R<()> {
    {
        let s = state("MPI_Bsend")?;
        let size = s.comm(comm)?.comm.peer_size();
        let out = outgoing(buf, count as i64, dt)?;
        let n = out.bytes;
        check_tag(tag, false)?;
        check_peer(dest, size, false, "dest")?;
        if dest == MPI_PROC_NULL {
            return Ok(());
        }
        crate::buffer::admit(s, comm, n)?;
        let copy = match out.keep {
            Some(v) => v,
            // SAFETY: `buf` holds the items' bytes (the caller's contract).
            None => unsafe { slice(out.ptr as *const c_void, n) }.to_vec(),
        };
        let c = &s.comm(comm)?.comm;
        // SAFETY: the copy lives with the buffer's pending sends until the request
        // completes; moving the Vec does not move its heap buffer.
        let q = unsafe { c.raw_isend(copy.as_ptr(), n, dest as u32, tag)? };
        crate::buffer::track(s, comm, q, copy);
        Ok(())
    }
}

/// MPI_Rsend_init (MPI-4.1 §3.9): as MPI_Send_init (ready mode is a precondition only).
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { rsend_init_as("MPI_Rsend_init", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Rsend_init's work for the call `func` the user made (MPI_Rsend_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Rsend_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn rsend_init_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let r = init_req(true, false, buf, count, dt, dest, tag, comm, req);
    finish(comm, func, r)
}

/// MPI_Ibsend (MPI-4.1 §3.7.2): the message is copied into the attached buffer's
/// accounting as by MPI_Bsend, so the request is complete at once.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    finish(
        comm,
        "MPI_Ibsend",
        ibsend(buf, count, dt, dest, tag, comm, req),
    )
}

/// The body of MPI_Ibsend (and MPI_Ibsend_c): the buffered send, then a request that is
/// complete already.
pub(crate) fn ibsend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    bsend(buf, count, dt, dest, tag, comm)?;
    let s = state("MPI_Ibsend")?;
    let h = s.add_req(ReqEntry::empty(false, comm));
    put!(req, h)
}

/// MPI_Get_elements_c (MPI-4.1 §5.1.11, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Get_elements_c(
    status: *const MpiStatus,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { get_elements_c_as("MPI_Get_elements_c", status, dt, count) }
}

/// MPI_Get_elements_c's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Get_elements_c's contract.
pub(crate) unsafe fn get_elements_c_as(
    func: &str,
    status: *const MpiStatus,
    dt: Handle,
    count: *mut i64,
) -> c_int {
    let r = (|| {
        if status.is_null() {
            return Err(err(MPI_ERR_ARG, "status is NULL"));
        }
        let map = map_of(dt)?;
        // SAFETY: non-null status is readable.
        let bytes = unsafe { (*status).bytes() };
        put!(
            count,
            map.elements_in(bytes)
                .map_or(MPI_UNDEFINED as i64, |n| n as i64)
        )
    })();
    finish(MPI_COMM_WORLD, func, r)
}

/// MPI_Ssend (MPI-4.1 §3.4): completes only once the matching receive has started.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::issend_as(
        "MPI_Ssend",
        buf,
        count,
        dt,
        dest,
        tag,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Ssend's rules, the contract fast::send
        // requires.
        unsafe { fast::send(buf, count as i64, dt, dest, tag, comm, true, "MPI_Ssend") }
    {
        return rc;
    }
    finish(
        comm,
        "MPI_Ssend",
        send(buf, count as i64, dt, dest, tag, comm, true),
    )
}

/// MPI_Ssend_c (MPI-4.1 §3.4, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::p2p::issend_c_as(
        "MPI_Ssend_c",
        buf,
        count,
        dt,
        dest,
        tag,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe { fast::send(buf, count, dt, dest, tag, comm, true, "MPI_Ssend_c") } {
        return rc;
    }
    finish(
        comm,
        "MPI_Ssend_c",
        send(buf, count, dt, dest, tag, comm, true),
    )
}

/// MPI_Issend (MPI-4.1 §3.7.2): the request completes once the message has been matched.
#[no_mangle]
pub unsafe extern "C" fn MPI_Issend(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { issend_as("MPI_Issend", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Issend's work for the call `func` the user made (MPI_Issend itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Issend's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn issend_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the MPI calling contract, forwarded.
    if let Some(rc) = unsafe {
        fast::start(
            false,
            true,
            buf,
            count as i64,
            dt,
            dest,
            tag,
            comm,
            req,
            func,
        )
    } {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(true, true, buf, count as i64, dt, dest, tag, comm, req),
    )
}

/// MPI_Issend_c (MPI-4.1 §3.7.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Issend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { issend_c_as("MPI_Issend_c", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Issend_c's work for the call `func` the user made (MPI_Issend_c itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Issend_c's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn issend_c_as(
    func: &str,
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) =
        // SAFETY: the MPI calling contract, forwarded.
        unsafe { fast::start(false, true, buf, count, dt, dest, tag, comm, req, func) }
    {
        return rc;
    }
    finish(
        comm,
        func,
        inonblocking(true, true, buf, count, dt, dest, tag, comm, req),
    )
}

/// MPI_Ssend_init (MPI-4.1 §3.9): a persistent synchronous send.
#[no_mangle]
pub unsafe extern "C" fn MPI_Ssend_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { ssend_init_as("MPI_Ssend_init", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Ssend_init's work for the call `func` the user made (MPI_Ssend_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ssend_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ssend_init_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let r = init_req(true, true, buf, count, dt, dest, tag, comm, req);
    finish(comm, func, r)
}

/// MPI_Isendrecv / MPI_Isendrecv_replace: the send goes from a private packed copy and
/// lives on as a detached request (like a freed one, it completes on its own and keeps the
/// copy), so the request handed back is the receive's: it completes when the message has
/// arrived, its status is the receive's, and the send buffer is free at once. The copy is
/// taken before the receive starts, which is what makes the replace variant safe.
#[allow(clippy::too_many_arguments)]
unsafe fn isendrecv(
    sbuf: *const c_void,
    scount: c_int,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    req: *mut Handle,
    func: &str,
) -> R<()> {
    let s = state(func)?;
    let size = s.comm(comm)?.comm.peer_size();
    check_tag(stag, false)?;
    check_tag(rtag, true)?;
    check_peer(dest, size, false, "dest")?;
    check_peer(source, size, true, "source")?;
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    let copy = if dest == MPI_PROC_NULL {
        Vec::new()
    } else {
        let out = outgoing(sbuf, scount as i64, sdt)?;
        // SAFETY: the staged send side holds `out.bytes` bytes.
        unsafe { slice(out.ptr as *const c_void, out.bytes) }.to_vec()
    };
    let e = start_op(
        s,
        false,
        false,
        rbuf as usize,
        rcount as i64,
        rdt,
        source,
        rtag,
        comm,
    )?;
    if dest != MPI_PROC_NULL {
        let c = &s.comm(comm)?.comm;
        // SAFETY: the copy moves into the detached entry with the request (its heap buffer
        // does not move) and is dropped only after the send has finished.
        let raw = unsafe { c.raw_isend(copy.as_ptr(), copy.len(), dest as u32, stag)? };
        s.detached.push((raw, None, vec![copy]));
    }
    let h = s.add_req(e);
    put!(req, h)
}

/// MPI_Isendrecv (MPI-4.1 §3.10).
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv(
    sbuf: *const c_void,
    scount: c_int,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        isendrecv_as(
            "MPI_Isendrecv",
            sbuf,
            scount,
            sdt,
            dest,
            stag,
            rbuf,
            rcount,
            rdt,
            source,
            rtag,
            comm,
            req,
        )
    }
}

/// MPI_Isendrecv's work for the call `func` the user made (MPI_Isendrecv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Isendrecv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isendrecv_as(
    func: &str,
    sbuf: *const c_void,
    scount: c_int,
    sdt: Handle,
    dest: c_int,
    stag: c_int,
    rbuf: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: MPI_Isendrecv's contract for the caller's buffers, which isendrecv requires.
    let r = unsafe {
        isendrecv(
            sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, req, func,
        )
    };
    finish(comm, func, r)
}

/// MPI_Isendrecv_replace (MPI-4.1 §3.10).
#[no_mangle]
pub unsafe extern "C" fn MPI_Isendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        isendrecv_replace_as(
            "MPI_Isendrecv_replace",
            buf,
            count,
            dt,
            dest,
            stag,
            source,
            rtag,
            comm,
            req,
        )
    }
}

/// MPI_Isendrecv_replace's work for the call `func` the user made (MPI_Isendrecv_replace itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Isendrecv_replace's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn isendrecv_replace_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: MPI_Isendrecv_replace's contract for the caller's buffer, which isendrecv
    // requires.
    let r = unsafe {
        isendrecv(
            buf, count, dt, dest, stag, buf, count, dt, source, rtag, comm, req, func,
        )
    };
    finish(comm, func, r)
}

/// MPI_Bsend_init (MPI-4.1 §3.9): each MPI_Start sends as MPI_Bsend (copied into the
/// attached buffer), so the started request is complete at once.
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_init(
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { bsend_init_as("MPI_Bsend_init", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Bsend_init's work for the call `func` the user made (MPI_Bsend_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Bsend_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn bsend_init_as(
    func: &str,
    buf: *const c_void,
    count: c_int,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let r = init_req(true, false, buf, count, dt, dest, tag, comm, req).and_then(|()| {
        let s = state(func)?;
        // SAFETY: just written by init_req.
        let h = unsafe { *req };
        let i = req_index(s, h)?;
        if let Some(p) = s
            .reqs
            .get_mut(i)
            .and_then(|e| e.more.as_mut()?.persistent.as_mut())
        {
            p.buffered = true;
        }
        Ok(())
    });
    finish(comm, func, r)
}
