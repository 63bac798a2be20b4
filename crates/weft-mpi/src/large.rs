//! The MPI-4 large-count (`_c`) forms (MPI-4.1 §2.5.8) of calls whose counts weft takes
//! as `int` internally: each checks that its counts fit and does the `int` form's work
//! through that form's internal `_as` form (never the exported `int` entry point), so a
//! count above 2^31 - 1 is an MPI_ERR_COUNT naming the argument, never truncated, and
//! every error names the `_c` function the program called. (The point-to-point, bcast,
//! reduce, allreduce and datatype-size forms take 64-bit counts natively elsewhere, and the
//! datatype constructors' `_c` forms are in dtype.rs over the same i64 cores as their `int`
//! forms.)

use crate::coll::*;
use crate::consts::*;
use crate::error::{err, finish, R};
use crate::icoll::*;
use crate::p2p::*;
use crate::topo::*;
use std::os::raw::{c_int, c_void};

/// `n` as an `int` count, or MPI_ERR_COUNT naming `what`.
fn fit(n: i64, what: &str) -> R<c_int> {
    c_int::try_from(n).map_err(|_| {
        err(
            MPI_ERR_COUNT,
            format!("{what} = {n} does not fit in an int; weft takes counts below 2^31 here"),
        )
    })
}

/// MPI_Allgather_c (MPI-4.1 §6.7, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Allgather_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Allgather_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe {
        allgather_as(
            "MPI_Allgather_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
        )
    }
}

/// MPI_Alltoall_c (MPI-4.1 §6.8, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Alltoall_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Alltoall_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe { alltoall_as("MPI_Alltoall_c", send, scount, sdt, recv, rcount, rdt, comm) }
}

/// MPI_Gather_c (MPI-4.1 §6.5, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Gather_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Gather_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe {
        gather_as(
            "MPI_Gather_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            root,
            comm,
        )
    }
}

/// MPI_Scatter_c (MPI-4.1 §6.6, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Scatter_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Scatter_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe {
        scatter_as(
            "MPI_Scatter_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            root,
            comm,
        )
    }
}

/// MPI_Scan_c (MPI-4.1 §6.11.1, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Scan_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe { scan_as("MPI_Scan_c", send, recv, count, dt, op, comm) }
}

/// MPI_Exscan_c (MPI-4.1 §6.11.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Exscan_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe { exscan_as("MPI_Exscan_c", send, recv, count, dt, op, comm) }
}

/// MPI_Reduce_scatter_block_c (MPI-4.1 §6.10.1, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Reduce_scatter_block_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe {
        reduce_scatter_block_as(
            "MPI_Reduce_scatter_block_c",
            send,
            recv,
            count,
            dt,
            op,
            comm,
        )
    }
}

/// MPI_Ibcast_c (MPI-4.1 §6.12.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { ibcast_c_as("MPI_Ibcast_c", buf, count, dt, root, comm, req) }
}

/// MPI_Ibcast_c's work for the call `func` the user made (MPI_Ibcast_c itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ibcast_c's contract.
#[inline(always)]
pub(crate) unsafe fn ibcast_c_as(
    func: &str,
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, func, Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { ibcast_as(func, buf, count, dt, root, comm, req) }
}

/// MPI_Ireduce_c (MPI-4.1 §6.12.4, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { ireduce_c_as("MPI_Ireduce_c", send, recv, count, dt, op, root, comm, req) }
}

/// MPI_Ireduce_c's work for the call `func` the user made (MPI_Ireduce_c itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ireduce_c's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce_c_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, func, Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { ireduce_as(func, send, recv, count, dt, op, root, comm, req) }
}

/// MPI_Iallreduce_c (MPI-4.1 §6.12.8, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { iallreduce_c_as("MPI_Iallreduce_c", send, recv, count, dt, op, comm, req) }
}

/// MPI_Iallreduce_c's work for the call `func` the user made (MPI_Iallreduce_c itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iallreduce_c's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iallreduce_c_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, func, Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { iallreduce_as(func, send, recv, count, dt, op, comm, req) }
}

/// MPI_Iscan_c (MPI-4.1 §6.12.11, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscan_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Iscan_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { iscan_as("MPI_Iscan_c", send, recv, count, dt, op, comm, req) }
}

/// MPI_Iexscan_c (MPI-4.1 §6.12.12, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iexscan_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Iexscan_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { iexscan_as("MPI_Iexscan_c", send, recv, count, dt, op, comm, req) }
}

/// MPI_Ireduce_scatter_block_c (MPI-4.1 §6.12.9, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_block_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Ireduce_scatter_block_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        ireduce_scatter_block_as(
            "MPI_Ireduce_scatter_block_c",
            send,
            recv,
            count,
            dt,
            op,
            comm,
            req,
        )
    }
}

/// MPI_Iallgather_c (MPI-4.1 §6.12.5, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgather_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Iallgather_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Iallgather_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        iallgather_as(
            "MPI_Iallgather_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
            req,
        )
    }
}

/// MPI_Ialltoall_c (MPI-4.1 §6.12.6, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoall_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Ialltoall_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Ialltoall_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        ialltoall_as(
            "MPI_Ialltoall_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
            req,
        )
    }
}

/// MPI_Igather_c (MPI-4.1 §6.12.3, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Igather_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Igather_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Igather_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        igather_as(
            "MPI_Igather_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            root,
            comm,
            req,
        )
    }
}

/// MPI_Iscatter_c (MPI-4.1 §6.12.4, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatter_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Iscatter_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Iscatter_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe {
        iscatter_as(
            "MPI_Iscatter_c",
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            root,
            comm,
            req,
        )
    }
}

/// MPI_Rsend_c (MPI-4.1 §3.4, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Rsend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Rsend_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe { rsend_as("MPI_Rsend_c", buf, count, dt, dest, tag, comm) }
}

/// MPI_Bsend_c (MPI-4.1 §3.6.1, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Bsend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
) -> c_int {
    // Never waits (see MPI_Bsend): no nonblocking twin under MPI_THREAD_MULTIPLE.
    let _entered = crate::threads::enter();
    let r = fit(count, "count").and_then(|count| bsend(buf, count, dt, dest, tag, comm));
    finish(comm, "MPI_Bsend_c", r)
}

/// MPI_Irsend_c (MPI-4.1 §3.7.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Irsend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Irsend_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { irsend_as("MPI_Irsend_c", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Ibsend_c (MPI-4.1 §3.7.2, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibsend_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = fit(count, "count").and_then(|count| ibsend(buf, count, dt, dest, tag, comm, req));
    finish(comm, "MPI_Ibsend_c", r)
}

/// MPI_Send_init_c (MPI-4.1 §3.9, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Send_init_c(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Send_init_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { send_init_as("MPI_Send_init_c", buf, count, dt, dest, tag, comm, req) }
}

/// MPI_Recv_init_c (MPI-4.1 §3.9, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv_init_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Recv_init_c", Err(e)),
    };
    // SAFETY: forwarded caller contract.
    unsafe { recv_init_as("MPI_Recv_init_c", buf, count, dt, source, tag, comm, req) }
}

/// MPI_Sendrecv_c (MPI-4.1 §3.10, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_c(
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
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let scount = match fit(scount, "scount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Sendrecv_c", Err(e)),
    };
    let rcount = match fit(rcount, "rcount") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Sendrecv_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe {
        sendrecv_as(
            "MPI_Sendrecv_c",
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

/// MPI_Sendrecv_replace_c (MPI-4.1 §3.10, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    stag: c_int,
    source: c_int,
    rtag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
) -> c_int {
    let entered = crate::threads::enter();
    let comm_h = comm;
    let count = match fit(count, "count") {
        Ok(v) => v,
        Err(e) => return finish(comm_h, "MPI_Sendrecv_replace_c", Err(e)),
    };
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract.
    unsafe {
        sendrecv_replace_as(
            "MPI_Sendrecv_replace_c",
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

/// `n` large counts or displacements as ints, or MPI_ERR_COUNT naming `what`.
fn fit_all(p: *const i64, n: usize, what: &str) -> R<Vec<c_int>> {
    if p.is_null() {
        return Ok(Vec::new());
    }
    // SAFETY: the array holds one entry per rank (the caller's contract).
    let v = unsafe { std::slice::from_raw_parts(p, n) };
    v.iter().map(|&x| fit(x, what)).collect()
}

/// Entries of a v-collective's per-rank arrays on `comm`: its size, or the size of the
/// remote group of an intercommunicator (MPI-4.1 §6.2.2).
fn peers_of(comm: Handle, func: &str) -> R<usize> {
    Ok(crate::state::state(func)?.comm(comm)?.comm.peer_size() as usize)
}

/// Converts the per-rank arrays, or reports through the handler of `comm`.
macro_rules! arrays {
    ($comm:expr, $func:literal, $n:expr, $($p:expr => $what:literal),*) => {
        ($(match fit_all($p, $n, $what) {
            Ok(v) => v,
            Err(e) => return finish($comm, $func, Err(e)),
        }),*)
    };
}

fn ptr_or_null(v: &[c_int]) -> *const c_int {
    if v.is_empty() {
        std::ptr::null()
    } else {
        v.as_ptr()
    }
}

/// MPI_Gatherv_c (MPI-4.1 §6.5, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let n = match peers_of(comm, "MPI_Gatherv_c") {
        Ok(n) => n,
        Err(e) => return finish(comm, "MPI_Gatherv_c", Err(e)),
    };
    let scount = match fit(scount, "sendcount") {
        Ok(v) => v,
        Err(e) => return finish(comm, "MPI_Gatherv_c", Err(e)),
    };
    let (rc, rd) = arrays!(comm, "MPI_Gatherv_c", n, rcounts => "recvcounts", displs as *const i64 => "displs");
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract; the converted arrays live across the call.
    unsafe {
        gatherv_as(
            "MPI_Gatherv_c",
            send,
            scount,
            sdt,
            recv,
            ptr_or_null(&rc),
            ptr_or_null(&rd),
            rdt,
            root,
            comm,
        )
    }
}

/// MPI_Scatterv_c (MPI-4.1 §6.6, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv_c(
    send: *const c_void,
    scounts: *const i64,
    displs: *const isize,
    sdt: Handle,
    recv: *mut c_void,
    rcount: i64,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let n = match peers_of(comm, "MPI_Scatterv_c") {
        Ok(n) => n,
        Err(e) => return finish(comm, "MPI_Scatterv_c", Err(e)),
    };
    let rcount = match fit(rcount, "recvcount") {
        Ok(v) => v,
        Err(e) => return finish(comm, "MPI_Scatterv_c", Err(e)),
    };
    let (sc, sd) = arrays!(comm, "MPI_Scatterv_c", n, scounts => "sendcounts", displs as *const i64 => "displs");
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract; the converted arrays live across the call.
    unsafe {
        scatterv_as(
            "MPI_Scatterv_c",
            send,
            ptr_or_null(&sc),
            ptr_or_null(&sd),
            sdt,
            recv,
            rcount,
            rdt,
            root,
            comm,
        )
    }
}

/// MPI_Allgatherv_c (MPI-4.1 §6.7, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv_c(
    send: *const c_void,
    scount: i64,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const i64,
    displs: *const isize,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let n = match peers_of(comm, "MPI_Allgatherv_c") {
        Ok(n) => n,
        Err(e) => return finish(comm, "MPI_Allgatherv_c", Err(e)),
    };
    let scount = match fit(scount, "sendcount") {
        Ok(v) => v,
        Err(e) => return finish(comm, "MPI_Allgatherv_c", Err(e)),
    };
    let (rc, rd) = arrays!(comm, "MPI_Allgatherv_c", n, rcounts => "recvcounts", displs as *const i64 => "displs");
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract; the converted arrays live across the call.
    unsafe {
        allgatherv_as(
            "MPI_Allgatherv_c",
            send,
            scount,
            sdt,
            recv,
            ptr_or_null(&rc),
            ptr_or_null(&rd),
            rdt,
            comm,
        )
    }
}

/// MPI_Alltoallv_c (MPI-4.1 §6.8, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv_c(
    send: *const c_void,
    scounts: *const i64,
    sdispls: *const isize,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const i64,
    rdispls: *const isize,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    let entered = crate::threads::enter();
    let n = match peers_of(comm, "MPI_Alltoallv_c") {
        Ok(n) => n,
        Err(e) => return finish(comm, "MPI_Alltoallv_c", Err(e)),
    };
    let (sc, sd, rc, rd) = arrays!(comm, "MPI_Alltoallv_c", n,
        scounts => "sendcounts", sdispls as *const i64 => "sdispls",
        rcounts => "recvcounts", rdispls as *const i64 => "rdispls");
    // The int form's work starts the nonblocking twin under MPI_THREAD_MULTIPLE,
    // which must not find the lock held here (crate::threads).
    drop(entered);
    // SAFETY: forwarded caller contract; the converted arrays live across the call.
    unsafe {
        alltoallv_as(
            "MPI_Alltoallv_c",
            send,
            ptr_or_null(&sc),
            ptr_or_null(&sd),
            sdt,
            recv,
            ptr_or_null(&rc),
            ptr_or_null(&rd),
            rdt,
            comm,
        )
    }
}

/// What a `_c` form keeps of its hold (`entered`) while the `_as` form runs: all of it for a
/// `hold` row, nothing for a `twin` row (a blocking call that takes its nonblocking twin
/// under MPI_THREAD_MULTIPLE and enters itself, so it must not find the lock held).
macro_rules! hold_for {
    (hold, $e:ident) => {
        Some($e)
    };
    (twin, $e:ident) => {{
        drop($e);
        None::<crate::threads::Entered>
    }};
}

/// `_c` forms whose large arguments are scalar counts: each count is converted (MPI_ERR_COUNT
/// through the handler of the row's communicator when it does not fit an `int`) and the
/// `int` form's work done by its `_as` form for this `_c` call, whose name its errors carry.
/// One row per function: `name, _as form, hold or twin, (arguments), [counts],
/// communicator;` (the names first on the line, so the build script sees them defined). A
/// `hold` row's `_as` form runs inside this call's hold; a `twin` row's (a blocking call)
/// takes its nonblocking twin under MPI_THREAD_MULTIPLE and enters itself, so it must not
/// find the lock held here (crate::threads): the hold is given back first.
macro_rules! scalar_c {
    ($($name:ident, $as:ident, $lock:ident, ($($arg:ident: $t:ty),*), [$($c:ident),*], $comm:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: the large-count form (MPI-4.1 §2.5.8) of its `int` form, whose work `", stringify!($as), "` does.")]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> c_int {
            let entered = crate::threads::enter();
            $(let $c = match fit($c, stringify!($c)) {
                Ok(v) => v,
                Err(e) => return finish($comm, stringify!($name), Err(e)),
            };)*
            let held = hold_for!($lock, entered);
            // SAFETY: forwarded caller contract.
            let rc = unsafe { $as(stringify!($name), $($arg),*) };
            drop(held);
            rc
        }
    )*};
}

scalar_c! {
    MPI_Allgather_init_c, allgather_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Alltoall_init_c, alltoall_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Gather_init_c, gather_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, root: c_int, comm: Handle, info: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Scatter_init_c, scatter_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, root: c_int, comm: Handle, info: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Bcast_init_c, bcast_init_as, hold, (buf: *mut c_void, count: i64, dt: Handle, root: c_int, comm: Handle, info: Handle, req: *mut Handle), [count], comm;
    MPI_Allreduce_init_c, allreduce_init_as, hold, (send: *const c_void, recv: *mut c_void, count: i64, dt: Handle, op: Handle, comm: Handle, info: Handle, req: *mut Handle), [count], comm;
    MPI_Reduce_init_c, reduce_init_as, hold, (send: *const c_void, recv: *mut c_void, count: i64, dt: Handle, op: Handle, root: c_int, comm: Handle, info: Handle, req: *mut Handle), [count], comm;
    MPI_Scan_init_c, scan_init_as, hold, (send: *const c_void, recv: *mut c_void, count: i64, dt: Handle, op: Handle, comm: Handle, info: Handle, req: *mut Handle), [count], comm;
    MPI_Exscan_init_c, exscan_init_as, hold, (send: *const c_void, recv: *mut c_void, count: i64, dt: Handle, op: Handle, comm: Handle, info: Handle, req: *mut Handle), [count], comm;
    MPI_Reduce_scatter_block_init_c, reduce_scatter_block_init_as, hold, (send: *const c_void, recv: *mut c_void, count: i64, dt: Handle, op: Handle, comm: Handle, info: Handle, req: *mut Handle), [count], comm;
    MPI_Neighbor_allgather_c, neighbor_allgather_as, twin, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle), [scount, rcount], comm;
    MPI_Neighbor_alltoall_c, neighbor_alltoall_as, twin, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle), [scount, rcount], comm;
    MPI_Ineighbor_allgather_c, ineighbor_allgather_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Ineighbor_alltoall_c, ineighbor_alltoall_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Neighbor_allgather_init_c, neighbor_allgather_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Neighbor_alltoall_init_c, neighbor_alltoall_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Ssend_init_c, ssend_init_as, hold, (buf: *const c_void, count: i64, dt: Handle, dest: c_int, tag: c_int, comm: Handle, req: *mut Handle), [count], comm;
    MPI_Rsend_init_c, rsend_init_as, hold, (buf: *const c_void, count: i64, dt: Handle, dest: c_int, tag: c_int, comm: Handle, req: *mut Handle), [count], comm;
    MPI_Bsend_init_c, bsend_init_as, hold, (buf: *const c_void, count: i64, dt: Handle, dest: c_int, tag: c_int, comm: Handle, req: *mut Handle), [count], comm;
    MPI_Isendrecv_c, isendrecv_as, hold, (sbuf: *const c_void, scount: i64, sdt: Handle, dest: c_int, stag: c_int, rbuf: *mut c_void, rcount: i64, rdt: Handle, source: c_int, rtag: c_int, comm: Handle, req: *mut Handle), [scount, rcount], comm;
    MPI_Isendrecv_replace_c, isendrecv_replace_as, hold, (buf: *mut c_void, count: i64, dt: Handle, dest: c_int, stag: c_int, source: c_int, rtag: c_int, comm: Handle, req: *mut Handle), [count], comm;
    MPI_Reduce_local_c, reduce_local_as, hold, (inbuf: *const c_void, inoutbuf: *mut c_void, count: i64, dt: Handle, op: Handle), [count], MPI_COMM_WORLD;
}

/// How many entries the count arrays of a `_c` form hold.
#[derive(Clone, Copy)]
enum Lengths {
    /// The communicator's peers (the remote group of an intercommunicator), both sides.
    Peers,
    /// The communicator's own (local) group, both sides (reduce-scatter).
    Local,
    /// The topology's in-degree (receive side) and out-degree (send side).
    Neighbors,
}

/// (receive side, send side) entries of the arrays of a call on `comm`.
fn lengths(comm: Handle, kind: Lengths, func: &str) -> R<(usize, usize)> {
    let s = crate::state::state(func)?;
    let c = &s.comm(comm)?.comm;
    Ok(match kind {
        Lengths::Local => (c.size() as usize, c.size() as usize),
        Lengths::Peers => {
            let n = c.peer_size() as usize;
            (n, n)
        }
        Lengths::Neighbors => crate::topo::degrees(s, comm)?,
    })
}

/// Keeps the `int` arrays converted by a large-count persistent call with its request
/// `*req`, which reads them at every start.
fn keep_counts(req: *mut Handle, arrays: Vec<Vec<c_int>>) {
    if req.is_null() {
        return;
    }
    // SAFETY: the int form wrote the new request there.
    let h = unsafe { *req };
    let Ok(s) = crate::state::state("persistent collective") else {
        return;
    };
    if let Some(e) =
        crate::state::handle_index(crate::state::K_REQ, h).and_then(|i| s.reqs.get_mut(i))
    {
        e.more_mut().counts = arrays;
    }
}

/// `_c` forms with count (MPI_Count) and displacement (MPI_Aint) arrays: the scalar counts
/// and the arrays named in braces (each on its receive or send side, for the lengths of
/// [`Lengths`]) are converted to `int` for the `int` form's work, done by its `_as` form for
/// this `_c` call, whose name its errors carry; `keep(req)` rows (persistent calls) keep the
/// converted arrays with the new request `*req` (its starts read them), `drop` rows free
/// them after the call. A `hold` row's `_as` form runs inside this call's hold; a `twin`
/// row's (a blocking call) takes its nonblocking twin under MPI_THREAD_MULTIPLE and enters
/// itself, so it must not find the lock held here (crate::threads): the hold is given back
/// first. One row per function: `name, _as form, hold or twin, (arguments), [counts],
/// {arrays}, lengths, communicator, keep(req) or drop;`.
macro_rules! array_c {
    (@keep keep, $req:ident, $keep:expr) => { keep_counts($req, $keep) };
    (@keep drop, $keep:expr) => { drop($keep) };
    (@len recv, $lens:expr) => { $lens.0 };
    (@len send, $lens:expr) => { $lens.1 };
    ($($name:ident, $as:ident, $lock:ident, ($($arg:ident: $t:ty),*), [$($c:ident),*], {$($a:ident @ $side:ident),*}, $kind:ident, $comm:ident, $life:ident $(($req:ident))?;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: the large-count form (MPI-4.1 §2.5.8) of its `int` form, whose work `", stringify!($as), "` does.")]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name($($arg: $t),*) -> c_int {
            let entered = crate::threads::enter();
            let func = stringify!($name);
            let lens = match lengths($comm, Lengths::$kind, func) {
                Ok(l) => l,
                Err(e) => return finish($comm, func, Err(e)),
            };
            $(let $c = match fit($c, stringify!($c)) {
                Ok(v) => v,
                Err(e) => return finish($comm, func, Err(e)),
            };)*
            // Moving the vectors into `keep` leaves their heap buffers (which the pointers
            // below name) where they are.
            let keep: Vec<Vec<c_int>> = vec![$(
                match fit_all($a as *const i64, array_c!(@len $side, lens), stringify!($a)) {
                    Ok(v) => v,
                    Err(e) => return finish($comm, func, Err(e)),
                }
            ),*];
            let mut _i = 0;
            $(let $a = {
                let p = ptr_or_null(&keep[_i]);
                _i += 1;
                p
            };)*
            let held = hold_for!($lock, entered);
            // SAFETY: forwarded caller contract; the converted arrays live across the call
            // (and with the request, for the persistent forms).
            let rc = unsafe { $as(func, $($arg),*) };
            if rc == MPI_SUCCESS {
                // Re-entrant: nested in `held` for a `hold` row.
                let _entered = crate::threads::enter();
                array_c!(@keep $life $(, $req)?, keep);
            }
            drop(held);
            rc
        }
    )*};
}

array_c! {
    MPI_Alltoallw_c, alltoallw_as, twin, (send: *const c_void, scounts: *const i64, sdispls: *const isize, stypes: *const Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rtypes: *const Handle, comm: Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Peers, comm, drop;
    MPI_Ialltoallw_c, ialltoallw_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, stypes: *const Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rtypes: *const Handle, comm: Handle, req: *mut Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Peers, comm, drop;
    MPI_Alltoallw_init_c, alltoallw_init_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, stypes: *const Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rtypes: *const Handle, comm: Handle, info: Handle, req: *mut Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Peers, comm, keep(req);
    MPI_Ialltoallv_c, ialltoallv_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, comm: Handle, req: *mut Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Peers, comm, drop;
    MPI_Alltoallv_init_c, alltoallv_init_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Peers, comm, keep(req);
    MPI_Iallgatherv_c, iallgatherv_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, comm: Handle, req: *mut Handle), [scount], {rcounts @ recv, displs @ recv}, Peers, comm, drop;
    MPI_Allgatherv_init_c, allgatherv_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [scount], {rcounts @ recv, displs @ recv}, Peers, comm, keep(req);
    MPI_Igatherv_c, igatherv_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, root: c_int, comm: Handle, req: *mut Handle), [scount], {rcounts @ recv, displs @ recv}, Peers, comm, drop;
    MPI_Gatherv_init_c, gatherv_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, root: c_int, comm: Handle, info: Handle, req: *mut Handle), [scount], {rcounts @ recv, displs @ recv}, Peers, comm, keep(req);
    MPI_Iscatterv_c, iscatterv_as, hold, (send: *const c_void, scounts: *const i64, displs: *const isize, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, root: c_int, comm: Handle, req: *mut Handle), [rcount], {scounts @ send, displs @ send}, Peers, comm, drop;
    MPI_Scatterv_init_c, scatterv_init_as, hold, (send: *const c_void, scounts: *const i64, displs: *const isize, sdt: Handle, recv: *mut c_void, rcount: i64, rdt: Handle, root: c_int, comm: Handle, info: Handle, req: *mut Handle), [rcount], {scounts @ send, displs @ send}, Peers, comm, keep(req);
    MPI_Reduce_scatter_c, reduce_scatter_as, twin, (send: *const c_void, recv: *mut c_void, rcounts: *const i64, dt: Handle, op: Handle, comm: Handle), [], {rcounts @ recv}, Local, comm, drop;
    MPI_Ireduce_scatter_c, ireduce_scatter_as, hold, (send: *const c_void, recv: *mut c_void, rcounts: *const i64, dt: Handle, op: Handle, comm: Handle, req: *mut Handle), [], {rcounts @ recv}, Local, comm, drop;
    MPI_Reduce_scatter_init_c, reduce_scatter_init_as, hold, (send: *const c_void, recv: *mut c_void, rcounts: *const i64, dt: Handle, op: Handle, comm: Handle, info: Handle, req: *mut Handle), [], {rcounts @ recv}, Local, comm, keep(req);
    MPI_Neighbor_allgatherv_c, neighbor_allgatherv_as, twin, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, comm: Handle), [scount], {rcounts @ recv, displs @ recv}, Neighbors, comm, drop;
    MPI_Ineighbor_allgatherv_c, ineighbor_allgatherv_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, comm: Handle, req: *mut Handle), [scount], {rcounts @ recv, displs @ recv}, Neighbors, comm, drop;
    MPI_Neighbor_allgatherv_init_c, neighbor_allgatherv_init_as, hold, (send: *const c_void, scount: i64, sdt: Handle, recv: *mut c_void, rcounts: *const i64, displs: *const isize, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [scount], {rcounts @ recv, displs @ recv}, Neighbors, comm, keep(req);
    MPI_Neighbor_alltoallv_c, neighbor_alltoallv_as, twin, (send: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, comm: Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Neighbors, comm, drop;
    MPI_Ineighbor_alltoallv_c, ineighbor_alltoallv_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, comm: Handle, req: *mut Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Neighbors, comm, drop;
    MPI_Neighbor_alltoallv_init_c, neighbor_alltoallv_init_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, sdt: Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rdt: Handle, comm: Handle, info: Handle, req: *mut Handle), [], {scounts @ send, sdispls @ send, rcounts @ recv, rdispls @ recv}, Neighbors, comm, keep(req);
    MPI_Neighbor_alltoallw_c, neighbor_alltoallw_as, twin, (send: *const c_void, scounts: *const i64, sdispls: *const isize, stypes: *const Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rtypes: *const Handle, comm: Handle), [], {scounts @ send, rcounts @ recv}, Neighbors, comm, drop;
    MPI_Ineighbor_alltoallw_c, ineighbor_alltoallw_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, stypes: *const Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rtypes: *const Handle, comm: Handle, req: *mut Handle), [], {scounts @ send, rcounts @ recv}, Neighbors, comm, drop;
    MPI_Neighbor_alltoallw_init_c, neighbor_alltoallw_init_as, hold, (send: *const c_void, scounts: *const i64, sdispls: *const isize, stypes: *const Handle, recv: *mut c_void, rcounts: *const i64, rdispls: *const isize, rtypes: *const Handle, comm: Handle, info: Handle, req: *mut Handle), [], {scounts @ send, rcounts @ recv}, Neighbors, comm, keep(req);
}
