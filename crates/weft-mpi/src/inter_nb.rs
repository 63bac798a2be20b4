//! The nonblocking collectives on intercommunicators (MPI-4.1 §6.12 with the §6.2.2
//! semantics), as compound requests (compound.rs): the start call posts every message on
//! the intercommunicator's bridge context and returns; the engine moves them while the
//! program runs, and the completion call finishes them and, for reductions, reduces the
//! received contributions in rank order.
//!
//! Each one is a single round of messages, so nothing waits for a later step to be
//! started: the blocking forms' compositions (a local collective, then the leaders'
//! exchange, then a local one) would need the program to come back between steps. The price
//! is more messages: a broadcast root sends to every remote rank, an allreduce sends every
//! contribution to every remote rank (|A|·|B| messages), a reduce sends every contribution
//! to the root, which reduces them. MPI_Ireduce_scatter(_block): a sender does not know how
//! the other group splits the result, so it sends its whole vector to every remote rank
//! (|A|·|B| messages of the whole vector), and each rank reduces its own block of them.
//!
//! Bridge tags are the blocking forms' plus `NB`, so an unfinished nonblocking call and a
//! blocking one never take each other's messages. Depends on inter.rs's transfers and
//! compound.rs.

use crate::coll::make_op;
use crate::compound::{self, Then};
use crate::consts::*;
use crate::dtype::{check_op, map_of};
use crate::error::{err, R};
use crate::inter::{
    alltoall_post, alltoallw_post, gather_post, no_in_place, remote_size, role, scatter_post,
    Counts, Role, Scratch, Transfers, TAG_ALLGATHER, TAG_ALLREDUCE, TAG_ALLTOALL, TAG_BARRIER,
    TAG_BCAST, TAG_GATHER, TAG_REDSCAT, TAG_REDUCE, TAG_SCATTER,
};
use crate::state::{handle_index, state, InterParts, State, K_OP};
use std::os::raw::{c_int, c_void};

/// Added to a blocking form's bridge tag for its nonblocking form.
const NB: c_int = 16;

/// Files the posted transfers (and the final step) as request `*req` on `comm`.
fn file(comm: Handle, t: Transfers, then: Option<Then>, req: *mut Handle) -> R<()> {
    let s = state("nonblocking collective")?;
    compound::file(s, comm, t.into_parts(), then, req)
}

/// Checks `req` before anything is posted (an error then leaves nothing in flight).
fn check_req(req: *mut Handle) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    Ok(())
}

/// MPI_Ibarrier on an intercommunicator: every rank sends an empty message to every remote
/// rank and receives one from each, so the request completes only once every rank of the
/// other group has entered.
pub(crate) fn ibarrier(comm: Handle, p: InterParts, req: *mut Handle) -> R<()> {
    check_req(req)?;
    let mut t = Transfers::new();
    let null = std::ptr::null_mut::<c_void>();
    for i in 0..remote_size(&p)? {
        // SAFETY: zero-byte messages read and write nothing.
        unsafe {
            t.recv(&p, null, 0, MPI_BYTE, i, TAG_BARRIER + NB)?;
            t.send(&p, null, 0, MPI_BYTE, i, TAG_BARRIER + NB)?;
        }
    }
    file(comm, t, None, req)
}

/// MPI_Ibcast on an intercommunicator: the root sends to every remote rank.
pub(crate) unsafe fn ibcast(
    comm: Handle,
    p: InterParts,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    let mut t = Transfers::new();
    match role(root, &p)? {
        Role::Idle => {}
        Role::Root => {
            for i in 0..remote_size(&p)? {
                // SAFETY: MPI's contract for `buf` (count items of dt), which lives until the
                // request completes.
                unsafe { t.send(&p, buf, count, dt, i, TAG_BCAST + NB)? };
            }
        }
        // SAFETY: as for the root's sends: `buf` receives count items of dt and lives until
        // completion.
        Role::Leaf(r) => unsafe { t.recv(&p, buf, count, dt, r, TAG_BCAST + NB)? },
    }
    file(comm, t, None, req)
}

/// Checks that `op` can reduce `dt` before anything is posted, so a bad operation is
/// reported by the start call, not by the completion.
fn check_reduction(s: &State, op: Handle, dt: Handle) -> R<()> {
    if op == MPI_OP_NULL {
        return Err(err(MPI_ERR_OP, "op is MPI_OP_NULL"));
    }
    if !(MPI_SUM..=MPI_NO_OP).contains(&op) {
        return match handle_index(K_OP, op).and_then(|i| s.ops.get(i)) {
            Some(_) => Ok(()),
            None => Err(err(
                MPI_ERR_OP,
                format!("operation handle {op:#x} is not valid"),
            )),
        };
    }
    check_op(op, dt)?;
    let (tk, _) = map_of(dt)?.reduction_kind().ok_or_else(|| {
        err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} is not built from one basic type weft can reduce"),
        )
    })?;
    make_op(tk, op, dt).map(|_| ())
}

/// `inout = in op inout` (see [`crate::coll::reduce_local`]); an operation freed before the
/// reduction ends is reported as such.
///
/// # Safety
/// Both buffers hold `count` items of `dt` and do not overlap.
unsafe fn reduce_into(
    s: &mut State,
    inbuf: *mut c_void,
    inout: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    if !(MPI_SUM..=MPI_NO_OP).contains(&op)
        && handle_index(K_OP, op).and_then(|i| s.ops.get(i)).is_none()
    {
        return Err(err(
            MPI_ERR_OP,
            format!("operation handle {op:#x} was freed before the reduction ended"),
        ));
    }
    // SAFETY: the caller's contract.
    unsafe { crate::coll::reduce_local(s, inbuf, inout, count, dt, op) }
}

/// Posts receives of every remote rank's `count` items of `dt`: the last one's into
/// `recv`, the others' into scratch buffers; the returned final step reduces them into
/// `recv` in rank order (r0 op (r1 op (... op r_{n-1}))).
///
/// # Safety
/// `recv` holds `count` items of `dt` and lives until the request completes.
unsafe fn gather_contributions(
    p: &InterParts,
    t: &mut Transfers,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    tag: c_int,
) -> R<Then> {
    let n = remote_size(p)?;
    let mut scratch = Vec::with_capacity(n.max(1) as usize - 1);
    let mut post = || -> R<()> {
        for i in 0..n - 1 {
            let mut b = Scratch::new(count, dt)?;
            // SAFETY: the scratch holds `count` items of `dt` and moves into the final step,
            // which the request keeps until every part has completed (its heap block stays
            // put); on an error below the receives are finished before it is freed.
            unsafe { t.recv(p, b.ptr(), count, dt, i, tag)? };
            scratch.push(b);
        }
        // SAFETY: the caller's contract.
        unsafe { t.recv(p, recv, count, dt, n - 1, tag) }
    };
    if let Err(e) = post() {
        // Receives already posted point into `scratch`: finish them before it is freed.
        t.abandon();
        return Err(e);
    }
    let recv = recv as usize;
    Ok(Box::new(move |s: &mut State| {
        for b in scratch.iter_mut().rev() {
            // SAFETY: all receives have completed; `recv` is the caller's buffer, live
            // until completion by MPI's contract, and a scratch never overlaps it.
            unsafe { reduce_into(s, b.ptr(), recv as *mut c_void, count, dt, op)? };
        }
        Ok(())
    }))
}

/// MPI_Ireduce on an intercommunicator: every remote rank sends its contribution to the
/// root, which reduces them at completion.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    let mut t = Transfers::new();
    let mut then = None;
    match role(root, &p)? {
        Role::Idle => {}
        Role::Root => {
            check_reduction(state("MPI_Ireduce")?, op, dt)?;
            // SAFETY: MPI's contract for `recv`.
            then = Some(unsafe {
                gather_contributions(&p, &mut t, recv, count, dt, op, TAG_REDUCE + NB)?
            });
        }
        Role::Leaf(r) => {
            check_reduction(state("MPI_Ireduce")?, op, dt)?;
            no_in_place(send, "sendbuf")?;
            // SAFETY: MPI's contract for `send`.
            unsafe { t.send(&p, send, count, dt, r, TAG_REDUCE + NB)? };
        }
    }
    file(comm, t, then, req)
}

/// MPI_Iallreduce on an intercommunicator: every rank sends its contribution to every
/// remote rank and reduces the ones it receives at completion.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iallreduce(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    check_reduction(state("MPI_Iallreduce")?, op, dt)?;
    no_in_place(send, "sendbuf")?;
    let mut t = Transfers::new();
    // SAFETY: MPI's contract for `recv` and `send`.
    let then =
        unsafe { gather_contributions(&p, &mut t, recv, count, dt, op, TAG_ALLREDUCE + NB)? };
    let sent = (|| -> R<()> {
        for i in 0..remote_size(&p)? {
            // SAFETY: MPI's contract for `send`.
            unsafe { t.send(&p, send, count, dt, i, TAG_ALLREDUCE + NB)? };
        }
        Ok(())
    })();
    if let Err(e) = sent {
        // The posted receives point into the scratch `then` owns: finish them first.
        t.abandon();
        drop(then);
        return Err(e);
    }
    file(comm, t, Some(then), req)
}

/// MPI_Ireduce_scatter(_block) on an intercommunicator: the remote group's reduction of
/// `sum(rcounts)` elements, scattered over the local group by `rcounts` (one entry per
/// local rank; the remote group's vectors have as many elements). Every rank sends its
/// whole vector to every remote rank and receives every remote rank's; at completion it
/// reduces its own block of them in rank order (r0 op (r1 op (... op r_{n-1}))).
///
/// # Safety
/// MPI's contract: `send` holds `sum(rcounts)` elements of `dt`, `recv` this rank's
/// `rcounts[rank]`, both live until the request completes.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce_scatter(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: &[c_int],
    dt: Handle,
    op: Handle,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    check_reduction(state("MPI_Ireduce_scatter")?, op, dt)?;
    no_in_place(send, "sendbuf")?;
    let total = crate::inter::recvcounts_total(rcounts)?;
    let me = state("MPI_Ireduce_scatter")?.comm(p.local)?.comm.rank() as usize;
    let mine = rcounts[me];
    let offset = rcounts[..me].iter().map(|&c| c as i64).sum::<i64>() * map_of(dt)?.extent();
    let n = remote_size(&p)?;
    let tag = TAG_REDSCAT + NB;
    let mut t = Transfers::new();
    let mut scratch = Vec::with_capacity(n as usize);
    let posted = (|| -> R<()> {
        for i in 0..n {
            let mut b = Scratch::new(total, dt)?;
            // SAFETY: the scratch holds `total` elements of `dt` and moves into the final
            // step, which the request keeps until every part has completed (its heap block
            // stays put); on an error below the receives are finished before it is freed.
            unsafe { t.recv(&p, b.ptr(), total, dt, i, tag)? };
            scratch.push(b);
        }
        for i in 0..n {
            // SAFETY: MPI's contract for `send`.
            unsafe { t.send(&p, send, total, dt, i, tag)? };
        }
        Ok(())
    })();
    if let Err(e) = posted {
        // Receives already posted point into `scratch`: finish them before it is freed.
        t.abandon();
        return Err(e);
    }
    let recv = recv as usize;
    let then: Then = Box::new(move |s: &mut State| {
        if mine == 0 {
            return Ok(());
        }
        let block = |b: &mut Scratch| b.ptr().wrapping_byte_offset(offset as isize);
        let last = block(&mut scratch[n as usize - 1]);
        for i in (0..n as usize - 1).rev() {
            // SAFETY: all receives have completed; each scratch holds `total` elements, of
            // which this rank's block is `mine` from `offset`; two scratches never overlap.
            unsafe { reduce_into(s, block(&mut scratch[i]), last, mine, dt, op)? };
        }
        crate::coll::typed_copy(last, recv as *mut c_void, mine as i64, dt)
    });
    file(comm, t, Some(then), req)
}

/// MPI_Igather(v) on an intercommunicator (see inter::gather).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn igather(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    root: c_int,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        gather_post(
            p,
            send,
            scount,
            sdt,
            recv,
            rcounts,
            rdt,
            root,
            TAG_GATHER + NB,
        )?
    };
    file(comm, t, None, req)
}

/// MPI_Iscatter(v) on an intercommunicator (see inter::scatter).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iscatter(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        scatter_post(
            p,
            send,
            scounts,
            sdt,
            recv,
            rcount,
            rdt,
            root,
            TAG_SCATTER + NB,
        )?
    };
    file(comm, t, None, req)
}

/// MPI_Iallgather(v) on an intercommunicator (see inter::allgather).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iallgather(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        crate::inter::allgather_post(p, send, scount, sdt, recv, rcounts, rdt, TAG_ALLGATHER + NB)?
    };
    file(comm, t, None, req)
}

/// MPI_Ialltoall(v) on an intercommunicator (see inter::alltoall).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoall(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe { alltoall_post(p, send, scounts, sdt, recv, rcounts, rdt, TAG_ALLTOALL + NB)? };
    file(comm, t, None, req)
}

/// MPI_Ialltoallw on an intercommunicator (see inter::alltoallw).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoallw(
    comm: Handle,
    p: InterParts,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        alltoallw_post(
            p,
            [send as *mut c_void, recv],
            [scounts, sdispls],
            stypes,
            [rcounts, rdispls],
            rtypes,
            TAG_ALLTOALL + NB,
        )?
    };
    file(comm, t, None, req)
}
