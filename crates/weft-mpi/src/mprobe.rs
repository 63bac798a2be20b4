//! Matched probes (MPI-4.1 §3.8.2): MPI_Mprobe / MPI_Improbe take the probed message out of
//! matching at once — a receive for exactly its source and tag is posted right after the
//! probe, and since messages from one source on one tag never overtake each other it
//! receives that very message — and MPI_Mrecv / MPI_Imrecv deliver the kept bytes into
//! the user's buffer. Depends on the p2p statuses and the staging of datatypes.

use crate::consts::*;
use crate::dtype::put;
use crate::error::{err, finish, R};
use crate::p2p::MpiStatus;
use crate::stage::incoming;
use crate::state::{handle_index, make_handle, state, ReqEntry, K_MSG};
use std::os::raw::{c_int, c_void};

fn status_of(st: &weft::Status) -> MpiStatus {
    let mut m = MpiStatus {
        source: st.source,
        tag: st.tag,
        ..MpiStatus::default()
    };
    m.set_bytes(st.bytes as u64);
    m
}

fn store(out: *mut MpiStatus, st: MpiStatus) {
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

/// Probes (blocking or not) and, when a message is there, receives it into a kept buffer.
fn mprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    block: bool,
    flag: *mut c_int,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> R<()> {
    let s = state("MPI_Mprobe")?;
    let c = s.comm(comm)?.comm.clone();
    if tag < 0 && tag != MPI_ANY_TAG {
        return Err(err(MPI_ERR_TAG, format!("tag {tag} is invalid")));
    }
    let size = c.peer_size() as c_int;
    if !(source == MPI_ANY_SOURCE || source == MPI_PROC_NULL || (0..size).contains(&source)) {
        return Err(err(
            MPI_ERR_RANK,
            format!("source = {source} is not a rank of the communicator (size {size})"),
        ));
    }
    if source == MPI_PROC_NULL {
        store(
            status,
            MpiStatus {
                source: MPI_PROC_NULL,
                tag: MPI_ANY_TAG,
                ..MpiStatus::default()
            },
        );
        if !flag.is_null() {
            put!(flag, 1)?;
        }
        return put!(message, MPI_MESSAGE_NO_PROC);
    }
    let wtag = if tag == MPI_ANY_TAG {
        weft::ANY_TAG
    } else {
        tag
    };
    let found = if block {
        Some(c.probe(source, wtag)?)
    } else {
        c.iprobe(source, wtag)?
    };
    let Some(st) = found else {
        return put!(flag, 0);
    };
    // The length comes from the sender's announcement: a size this process cannot hold is
    // an error, not an abort in the allocator.
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(st.bytes).map_err(|_| {
        err(
            MPI_ERR_NO_MEM,
            format!(
                "a matched message of {} bytes does not fit in memory",
                st.bytes
            ),
        )
    })?;
    bytes.resize(st.bytes, 0u8);
    let got = c.recv(&mut bytes[..], st.source, st.tag)?;
    let idx = s.messages.insert((bytes, got));
    store(status, status_of(&got));
    if !flag.is_null() {
        put!(flag, 1)?;
    }
    put!(message, make_handle(K_MSG, idx))
}

/// MPI_Mprobe (MPI-4.1 §3.8.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    if crate::threads::twins() {
        // SAFETY: the caller's MPI contract, forwarded.
        return unsafe { crate::threads::mprobe("MPI_Mprobe", source, tag, comm, message, status) };
    }
    let _entered = crate::threads::enter();
    let r = mprobe(
        source,
        tag,
        comm,
        true,
        std::ptr::null_mut(),
        message,
        status,
    );
    finish(comm, "MPI_Mprobe", r)
}

/// MPI_Improbe (MPI-4.1 §3.8.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { improbe_as("MPI_Improbe", source, tag, comm, flag, message, status) }
}

/// MPI_Improbe's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Improbe's contract.
pub(crate) unsafe fn improbe_as(
    func: &str,
    source: c_int,
    tag: c_int,
    comm: Handle,
    flag: *mut c_int,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    let r = if flag.is_null() {
        Err(err(MPI_ERR_ARG, "flag is NULL"))
    } else {
        mprobe(source, tag, comm, false, flag, message, status)
    };
    finish(comm, func, r)
}

/// Delivers message `*message` into `count` items of `dt` at `buf`.
fn mrecv(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> R<()> {
    if message.is_null() {
        return Err(err(MPI_ERR_ARG, "message pointer is NULL"));
    }
    // SAFETY: non-null, readable and writable.
    let h = unsafe { *message };
    if h == MPI_MESSAGE_NO_PROC {
        store(
            status,
            MpiStatus {
                source: MPI_PROC_NULL,
                tag: MPI_ANY_TAG,
                ..MpiStatus::default()
            },
        );
        return put!(message, MPI_MESSAGE_NULL);
    }
    let s = state("MPI_Mrecv")?;
    let (bytes, st) = handle_index(K_MSG, h)
        .and_then(|i| s.messages.remove(i))
        .ok_or_else(|| {
            err(
                MPI_ERR_REQUEST,
                format!("message handle {h:#x} is not valid (already received?)"),
            )
        })?;
    put!(message, MPI_MESSAGE_NULL)?;
    let inc = incoming(buf, count, dt, false)?;
    if bytes.len() > inc.bytes {
        return Err(err(
            MPI_ERR_TRUNCATE,
            format!(
                "message of {} bytes, receive buffer of {} bytes",
                bytes.len(),
                inc.bytes
            ),
        ));
    }
    if !bytes.is_empty() {
        // SAFETY: the staged buffer holds `inc.bytes >= bytes.len()` bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), inc.ptr, bytes.len()) };
    }
    inc.finish_received(bytes.len())?;
    store(status, status_of(&st));
    Ok(())
}

/// MPI_Mrecv (MPI-4.1 §3.8.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::mprobe::imrecv_as("MPI_Mrecv", buf, count, dt, message); status);
    let _entered = crate::threads::enter();
    finish(
        MPI_COMM_WORLD,
        "MPI_Mrecv",
        mrecv(buf, count as i64, dt, message, status),
    )
}

/// MPI_Mrecv_c (MPI-4.1 §3.8.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    message: *mut Handle,
    status: *mut MpiStatus,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::mprobe::imrecv_c_as("MPI_Mrecv_c", buf, count, dt, message); status);
    let _entered = crate::threads::enter();
    finish(
        MPI_COMM_WORLD,
        "MPI_Mrecv_c",
        mrecv(buf, count, dt, message, status),
    )
}

fn imrecv(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    message: *mut Handle,
    req: *mut Handle,
) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    // The message is already here: deliver it now; the request is complete at once.
    let mut st = MpiStatus::default();
    mrecv(buf, count, dt, message, &mut st)?;
    let s = state("MPI_Imrecv")?;
    // The request reports the message's status when it is completed.
    let done = weft::Status {
        source: st.source,
        tag: st.tag,
        bytes: st.bytes() as usize,
        cancelled: false,
    };
    let raw = weft::raw::RawRequest::completed_with(&s.weft.world(), done);
    let h = s.add_req(ReqEntry::started(raw, true, MPI_COMM_WORLD));
    put!(req, h)
}

/// MPI_Imrecv (MPI-4.1 §3.8.3). Its status (source, tag, count) comes from MPI_Improbe
/// or MPI_Mprobe, which received the message.
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    message: *mut Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { imrecv_as("MPI_Imrecv", buf, count, dt, message, req) }
}

/// MPI_Imrecv's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Imrecv's contract.
pub(crate) unsafe fn imrecv_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    message: *mut Handle,
    req: *mut Handle,
) -> c_int {
    finish(
        MPI_COMM_WORLD,
        func,
        imrecv(buf, count as i64, dt, message, req),
    )
}

/// MPI_Imrecv_c (MPI-4.1 §3.8.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    message: *mut Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: forwarded caller contract.
    unsafe { imrecv_c_as("MPI_Imrecv_c", buf, count, dt, message, req) }
}

/// MPI_Imrecv_c's work, its errors named `func` (the call the user made).
///
/// # Safety
/// MPI_Imrecv_c's contract.
pub(crate) unsafe fn imrecv_c_as(
    func: &str,
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    message: *mut Handle,
    req: *mut Handle,
) -> c_int {
    finish(MPI_COMM_WORLD, func, imrecv(buf, count, dt, message, req))
}
