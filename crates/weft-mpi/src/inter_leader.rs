//! The blocking intercommunicator barrier, broadcast, reduce, allreduce and reduce-scatter
//! through each group's own collectives and one exchange between the two group leaders
//! (local rank 0): a local reduction to the leader, the leaders' swap on the bridge, a local
//! broadcast or scatter. Each rank then sends O(log |group|) messages, where the one-round
//! forms of inter_coll.rs send one per remote rank (|A|·|B| in all; whole vectors for an
//! allreduce or reduce-scatter), which is what a nonblocking call needs (nothing waits for
//! a later step) but not what a blocking one should pay in big groups.
//!
//! Under MPI_THREAD_MULTIPLE the blocking calls run as their nonblocking twins
//! (threads.rs), so this path serves the other thread levels. Bridge tags are inter_coll's.
//! Depends on the crate's own blocking intracommunicator collectives and point-to-point
//! calls (their internal forms, not the `MPI_*` entry points) on the intercommunicator's
//! hidden handles (`state::InterParts`).

use crate::coll::{bcast as local_bcast, comm_of, reduction, scatterv, Red};
use crate::consts::*;
use crate::error::R;
use crate::inter_coll::{
    check_reduction, inner, local_rank, no_in_place, recvcounts_total, role, Role, Scratch,
    TAG_ALLREDUCE, TAG_BARRIER, TAG_BCAST, TAG_REDSCAT, TAG_REDUCE,
};
use crate::p2p::{recv, send, sendrecv};
use crate::state::{state, InterParts};
use std::os::raw::{c_int, c_void};

/// A step's result, its error saying which step of the collective failed.
fn check(r: R<()>, what: &str) -> R<()> {
    r.map_err(|e| inner(e, what))
}

fn local_barrier(p: &InterParts) -> R<()> {
    Ok(comm_of(p.local, "MPI_Barrier")?.barrier()?)
}

/// The local group's reduction of `send` into `out` at local rank 0.
fn local_reduce(
    p: &InterParts,
    send: *const c_void,
    out: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    let r = reduction(
        "MPI_Reduce",
        Red::Reduce(0),
        Some(0),
        send,
        out,
        count as i64,
        dt,
        op,
        p.local,
    );
    check(r, "the local reduction")
}

/// MPI_Barrier on an intercommunicator: a local barrier, the leaders' empty exchange, a
/// local barrier; no rank leaves before every rank of both groups has entered.
pub(crate) fn barrier(p: InterParts) -> R<()> {
    check(local_barrier(&p), "the local barrier")?;
    if local_rank(&p)? == 0 {
        let null = std::ptr::null_mut::<c_void>();
        // Zero-byte messages on this library's hidden bridge handle.
        let r = sendrecv(
            null,
            0,
            MPI_BYTE,
            0,
            TAG_BARRIER,
            null,
            0,
            MPI_BYTE,
            0,
            TAG_BARRIER,
            p.bridge,
            std::ptr::null_mut(),
        );
        check(r, "the leaders' exchange")?;
    }
    check(local_barrier(&p), "the local barrier")
}

/// MPI_Bcast on an intercommunicator: the root sends to the remote leader, which
/// broadcasts in its group.
///
/// # Safety
/// MPI's contract: `buf` holds `count` items of `dt`.
pub(crate) unsafe fn bcast(
    p: InterParts,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
) -> R<()> {
    match role(root, &p)? {
        Role::Idle => Ok(()),
        Role::Root => check(
            send(buf, count as i64, dt, 0, TAG_BCAST, p.bridge, false),
            "the send to the remote leader",
        ),
        Role::Leaf(r) => {
            if local_rank(&p)? == 0 {
                let got = recv(
                    buf,
                    count as i64,
                    dt,
                    r,
                    TAG_BCAST,
                    p.bridge,
                    std::ptr::null_mut(),
                );
                check(got, "the receive from the root")?;
            }
            check(
                local_bcast(buf, count as i64, dt, 0, p.local),
                "the local broadcast",
            )
        }
    }
}

/// MPI_Reduce on an intercommunicator: the remote group reduces to its leader, which
/// sends the result to the root.
///
/// # Safety
/// MPI's contract: `send` holds `count` items of `dt` (at a leaf), `recv` as many (at the
/// root).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce(
    p: InterParts,
    send_buf: *const c_void,
    recv_buf: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
) -> R<()> {
    match role(root, &p)? {
        Role::Idle => Ok(()),
        Role::Root => {
            check_reduction(state("MPI_Reduce")?, op, dt)?;
            let got = recv(
                recv_buf,
                count as i64,
                dt,
                0,
                TAG_REDUCE,
                p.bridge,
                std::ptr::null_mut(),
            );
            check(got, "the receive from the remote leader")
        }
        Role::Leaf(r) => {
            check_reduction(state("MPI_Reduce")?, op, dt)?;
            no_in_place(send_buf, "sendbuf")?;
            let mut t = Scratch::new(count, dt)?;
            local_reduce(&p, send_buf, t.ptr(), count, dt, op)?;
            if local_rank(&p)? == 0 {
                check(
                    send(t.ptr(), count as i64, dt, r, TAG_REDUCE, p.bridge, false),
                    "the send to the root",
                )?;
            }
            Ok(())
        }
    }
}

/// The reduction of the local group's `send` at the local leader, swapped with the remote
/// leader's: the leader's `out` gets the remote group's reduction.
///
/// # Safety
/// `send` holds `count` items of `dt`; at the leader, `out` has room for as many.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_and_swap(
    p: &InterParts,
    send_buf: *const c_void,
    out: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    tag: c_int,
) -> R<()> {
    no_in_place(send_buf, "sendbuf")?;
    let mut t = Scratch::new(count, dt)?;
    local_reduce(p, send_buf, t.ptr(), count, dt, op)?;
    if local_rank(p)? == 0 {
        // The scratch and `out` hold `count` items of `dt`; the bridge is a hidden handle.
        let r = sendrecv(
            t.ptr(),
            count as i64,
            dt,
            0,
            tag,
            out,
            count as i64,
            dt,
            0,
            tag,
            p.bridge,
            std::ptr::null_mut(),
        );
        check(r, "the leaders' exchange")?;
    }
    Ok(())
}

/// MPI_Allreduce on an intercommunicator: each group gets the reduction of the other
/// group's data (local reduction, leaders' swap, local broadcast).
///
/// # Safety
/// MPI's contract: `send` and `recv` hold `count` items of `dt`.
pub(crate) unsafe fn allreduce(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    check_reduction(state("MPI_Allreduce")?, op, dt)?;
    // SAFETY: the caller's contract.
    unsafe { reduce_and_swap(&p, send, recv, count, dt, op, TAG_ALLREDUCE)? };
    check(
        local_bcast(recv, count as i64, dt, 0, p.local),
        "the local broadcast",
    )
}

/// MPI_Reduce_scatter(_block) on an intercommunicator: the remote group's reduction of
/// `sum(rcounts)` elements (at the leaders, swapped), scattered over the local group by
/// `rcounts` (one entry per local rank).
///
/// # Safety
/// MPI's contract: `send` holds `sum(rcounts)` elements of `dt`, `recv` this rank's
/// `rcounts[rank]`.
pub(crate) unsafe fn reduce_scatter(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: &[c_int],
    dt: Handle,
    op: Handle,
) -> R<()> {
    check_reduction(state("MPI_Reduce_scatter")?, op, dt)?;
    let total = recvcounts_total(rcounts)?;
    let mut theirs = Scratch::new(total, dt)?;
    let me = local_rank(&p)? as usize;
    let mut displs = Vec::with_capacity(rcounts.len());
    let mut d = 0;
    for &c in rcounts {
        displs.push(d);
        d += c;
    }
    // SAFETY: the caller's contract; the scratch holds `total` elements.
    unsafe { reduce_and_swap(&p, send, theirs.ptr(), total, dt, op, TAG_REDSCAT)? };
    let r = scatterv(
        theirs.ptr(),
        rcounts.as_ptr(),
        displs.as_ptr(),
        dt,
        recv,
        rcounts[me],
        dt,
        0,
        p.local,
    );
    check(r, "the local scatter")
}
