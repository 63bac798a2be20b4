//! Nonblocking collectives (MPI-4.1 §6.12): each starts weft's nonblocking schedule
//! (`weft::coll::CollRequest`) on staged buffers and files it as a request that the wait and
//! test families complete. Buffers the library owns (packed copies, in-place copies) live in
//! the request until it completes.

use crate::coll::{make_op, root_of, Placed};
use crate::consts::*;
use crate::dtype::put;
use crate::error::{err, finish, R};
use crate::stage::{incoming, incoming_for_reduction, outgoing, outgoing_for_reduction, Unpack};
use crate::state::{state, ReqEntry};
use std::os::raw::{c_int, c_void};
use std::rc::Rc;
use weft::coll::CollRequest;
use weft::Comm;

/// A slice over staged memory that lives until the request completes.
///
/// # Safety
/// `p` readable for `n` bytes until the collective completes (MPI's buffer contract, or a
/// buffer kept in the request).
unsafe fn sl(p: *const u8, n: usize) -> &'static [u8] {
    if n == 0 {
        return &[];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts(p, n) }
}

/// # Safety
/// As [`sl`], writable and unaliased.
unsafe fn sl_mut(p: *mut u8, n: usize) -> &'static mut [u8] {
    if n == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(p, n) }
}

fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

fn comm_of(h: Handle, func: &str) -> R<Comm> {
    Ok(state(func)?.comm(h)?.comm.clone())
}

/// A collective just started, with the buffers its request must keep.
pub struct Started {
    q: Option<CollRequest<'static>>,
    keep: Vec<Vec<u8>>,
    unpack: Option<Unpack>,
    /// Or, instead of a collective of weft's, a compound request (compound.rs).
    compound: Option<crate::compound::Compound>,
}

impl Started {
    /// A started collective `q` whose request keeps `keep` alive and runs `unpack` (with its
    /// chained unpacks) at completion.
    pub(crate) fn new(q: CollRequest<'static>, keep: Vec<Vec<u8>>, unpack: Option<Unpack>) -> Self {
        Started {
            q: Some(q),
            keep,
            unpack,
            compound: None,
        }
    }

    /// A started compound request (its parts own what they use).
    pub(crate) fn compound(c: crate::compound::Compound) -> Self {
        Started {
            q: None,
            keep: Vec::new(),
            unpack: None,
            compound: Some(c),
        }
    }

    /// The compound request, which the caller files under the entry's index.
    pub(crate) fn take_compound(&mut self) -> Option<crate::compound::Compound> {
        self.compound.take()
    }

    /// Moves the collective and its buffers into request entry `e`.
    pub fn install(self, e: &mut ReqEntry) {
        let m = e.more_mut();
        m.coll = self.q.map(Box::new);
        m.keep = self.keep;
        m.unpack = self.unpack.map(Box::new);
    }
}

/// How a persistent collective starts again, for the call that starts it (MPI_Start or
/// MPI_Startall, MPI-4.1 §3.9), which its errors name.
pub type Restart = Rc<dyn Fn(&'static str) -> R<Started>>;

fn started(q: CollRequest<'static>, keep: Vec<Vec<u8>>, unpack: Option<Unpack>) -> R<Started> {
    Ok(Started::new(q, keep, unpack))
}

fn entry(comm: Handle) -> ReqEntry {
    ReqEntry::empty(false, comm)
}

/// Files a started collective as request `*req`, for the call `func` the user made.
/// `req` is checked before `start` runs: an error return must not leave a collective
/// started behind (dropping it would block until every rank finished it).
pub(crate) fn file(
    func: &str,
    comm: Handle,
    req: *mut Handle,
    start: impl FnOnce() -> R<Started>,
) -> R<()> {
    check_req(req)?;
    let mut st = start()?;
    let s = state(func)?;
    let compound = st.take_compound();
    let mut e = entry(comm);
    st.install(&mut e);
    let h = s.add_req(e);
    if let Some(c) = compound {
        let i = crate::state::handle_index(crate::state::K_REQ, h).expect("a request handle");
        s.compounds.insert(i, c);
    }
    put!(req, h)
}

/// Files an inactive persistent collective (MPI-4.1 §6.13) as request `*req`, for the init
/// call `func` the user made; each MPI_Start runs `restart`.
pub(crate) fn file_persistent(
    func: &str,
    comm: Handle,
    restart: Restart,
    req: *mut Handle,
) -> R<()> {
    check_req(req)?;
    if crate::inter_coll::parts(comm).is_some() {
        // The restarts start weft's intracommunicator schedules; refused here rather than
        // at every MPI_Start.
        return Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            "persistent collectives on intercommunicators are not implemented by weft yet \
             (the nonblocking forms are)",
        ));
    }
    // The call number is taken now, so the ranks match the starts by init order.
    let c = comm_of(comm, func)?;
    let seq = c.reserve_coll_seq();
    let restart: Restart = Rc::new(move |start| c.with_coll_seq(seq, || restart(start)));
    let s = state(func)?;
    let mut e = entry(comm);
    e.more_mut().restart = Some(restart);
    let h = s.add_req(e);
    put!(req, h)
}

fn check_req(req: *mut Handle) -> R<()> {
    if req.is_null() {
        return Err(err(MPI_ERR_ARG, "request pointer is NULL"));
    }
    Ok(())
}

/// MPI_Ibarrier (MPI-4.1 §6.12.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(comm: Handle, req: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { ibarrier_as("MPI_Ibarrier", comm, req) }
}

/// MPI_Ibarrier's work for the call `func` the user made (MPI_Ibarrier itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ibarrier's contract.
#[inline(always)]
pub(crate) unsafe fn ibarrier_as(func: &str, comm: Handle, req: *mut Handle) -> c_int {
    if let Some(p) = crate::inter_coll::parts(comm) {
        let r = crate::inter_coll::barrier(p, crate::inter_coll::Mode::Nonblocking { comm, req });
        return finish(comm, func, r);
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        file(func, comm, req, || started(c.ibarrier()?, Vec::new(), None))
    })();
    finish(comm, func, r)
}

/// Starts MPI_Ibcast for the call `func` the user made, which its errors name (also what
/// MPI_Start does for the persistent form).
fn ibcast(
    func: &str,
    buf: usize,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let root = root_of(&c, root)?;
    let inc = incoming(buf as *mut c_void, count as i64, dt, c.rank() == root)?;
    // SAFETY: the staged buffer lives until the request completes.
    let q = unsafe { c.ibcast(sl_mut(inc.ptr, inc.bytes), root)? };
    started(q, Vec::new(), inc.unpack)
}

/// MPI_Ibcast (MPI-4.1 §6.12.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { ibcast_as("MPI_Ibcast", buf, count, dt, root, comm, req) }
}

/// MPI_Ibcast's work for the call `func` the user made (MPI_Ibcast itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ibcast's contract.
#[inline(always)]
pub(crate) unsafe fn ibcast_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    let r = unsafe { start_ibcast(func, buf, count, dt, root, comm, req) };
    finish(comm, func, r)
}

/// MPI_Ibcast's work without the C boundary, for this library's own callers inside an MPI
/// call: starts the broadcast as request `*req` for the call `func` the user made, which its
/// errors name.
///
/// # Safety
/// MPI_Ibcast's contract.
pub(crate) unsafe fn start_ibcast(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    if let Some(p) = crate::inter_coll::parts(comm) {
        let mode = crate::inter_coll::Mode::Nonblocking { comm, req };
        // SAFETY: the caller's contract (MPI's, for the caller's buffers) passed on.
        return unsafe { crate::inter_coll::bcast(p, buf, count, dt, root, mode) };
    }
    file(func, comm, req, || {
        ibcast(func, buf as usize, count, dt, root, comm)
    })
}

#[derive(Clone, Copy)]
enum IRed {
    Reduce(c_int),
    Allreduce,
    Scan,
    Exscan,
    ReduceScatterBlock,
}

#[allow(clippy::too_many_arguments)]
fn ireduction(
    func: &str,
    kind: IRed,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let n = c.size() as i64;
    let count = count as i64;
    let (root, is_root) = match kind {
        IRed::Reduce(r) => {
            let r = root_of(&c, r)?;
            (r, c.rank() == r)
        }
        _ => (0, true),
    };
    let (send_items, recv_items) = match kind {
        IRed::Reduce(_) => (count, if is_root { count } else { 0 }),
        IRed::ReduceScatterBlock => (count * n, count),
        _ => (count, count),
    };
    // In place, MPI_Ireduce_scatter_block reads its input from all `n * count` items of
    // recvbuf (MPI-4.1 §6.10.1), so the whole span is staged and its first block receives.
    let rsb_in_place = in_place(send) && matches!(kind, IRed::ReduceScatterBlock);
    let staged_items = if rsb_in_place { send_items } else { recv_items };
    let inc = incoming_for_reduction(recv, staged_items, dt, in_place(send))?;
    let mut keep = Vec::new();
    let (sptr, sbytes, tk) = if in_place(send) {
        if !is_root {
            return Err(err(
                MPI_ERR_BUFFER,
                "MPI_IN_PLACE as sendbuf is only allowed at the root",
            ));
        }
        // SAFETY: the staged receive buffer holds `inc.bytes` bytes.
        let copy = unsafe { sl(inc.ptr, inc.bytes) }.to_vec();
        let p = copy.as_ptr();
        keep.push(copy);
        (p, inc.bytes, inc.kind)
    } else {
        let out = outgoing_for_reduction(send, send_items, dt)?;
        keep.extend(out.keep);
        (out.ptr, out.bytes, out.kind)
    };
    let tk = tk.ok_or_else(|| {
        err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} is not built from one basic type weft can reduce"),
        )
    })?;
    let wop = make_op(tk, op, dt)?;
    // SAFETY: user buffers live until completion (MPI's contract); staged ones live in the
    // request, which outlives the collective.
    let rbytes = if rsb_in_place {
        inc.bytes / n as usize
    } else {
        inc.bytes
    };
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let (sb, rb) = unsafe { (sl(sptr, sbytes), sl_mut(inc.ptr, rbytes)) };
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let q = unsafe {
        match kind {
            IRed::Reduce(_) => c.ireduce_bytes(sb, rb, tk, &wop, root)?,
            IRed::Allreduce => c.iallreduce_bytes(sb, rb, tk, &wop)?,
            IRed::Scan => c.iscan_bytes(sb, rb, tk, &wop)?,
            IRed::Exscan => c.iexscan_bytes(sb, rb, tk, &wop)?,
            IRed::ReduceScatterBlock => c.ireduce_scatter_block_bytes(sb, rb, tk, &wop)?,
        }
    };
    started(q, keep, inc.unpack)
}

/// MPI_Ireduce (MPI-4.1 §6.12.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { ireduce_as("MPI_Ireduce", send, recv, count, dt, op, root, comm, req) }
}

/// MPI_Ireduce's work for the call `func` the user made (MPI_Ireduce itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ireduce's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, Some(root)) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::reduce(
                p,
                send,
                recv,
                count,
                dt,
                op,
                root,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    if crate::coll::user_op_on_derived(op, dt) {
        // Items of a derived type reduced by a user function travel whole (see
        // crate::user_reduce).
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers).
        let r = unsafe {
            crate::user_reduce::start(
                func,
                send,
                recv,
                count as i64,
                dt,
                op,
                Some(root),
                comm,
                req,
            )
        };
        return finish(comm, func, r);
    }
    let r = file(func, comm, req, || {
        ireduction(func, IRed::Reduce(root), send, recv, count, dt, op, comm)
    });
    finish(comm, func, r)
}

/// MPI_Iallreduce (MPI-4.1 §6.12.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { iallreduce_as("MPI_Iallreduce", send, recv, count, dt, op, comm, req) }
}

/// MPI_Iallreduce's work for the call `func` the user made (MPI_Iallreduce itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iallreduce's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iallreduce_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::allreduce(
                p,
                send,
                recv,
                count,
                dt,
                op,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    if crate::coll::user_op_on_derived(op, dt) {
        // Items of a derived type reduced by a user function travel whole (see
        // crate::user_reduce).
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers).
        let r = unsafe {
            crate::user_reduce::start(func, send, recv, count as i64, dt, op, None, comm, req)
        };
        return finish(comm, func, r);
    }
    let r = file(func, comm, req, || {
        ireduction(func, IRed::Allreduce, send, recv, count, dt, op, comm)
    });
    finish(comm, func, r)
}

/// MPI_Iscan (MPI-4.1 §6.12.11).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscan(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { iscan_as("MPI_Iscan", send, recv, count, dt, op, comm, req) }
}

/// MPI_Iscan's work for the call `func` the user made (MPI_Iscan itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iscan's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iscan_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    let r = file(func, comm, req, || {
        ireduction(func, IRed::Scan, send, recv, count, dt, op, comm)
    });
    finish(comm, func, r)
}

/// MPI_Iexscan (MPI-4.1 §6.12.12).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iexscan(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { iexscan_as("MPI_Iexscan", send, recv, count, dt, op, comm, req) }
}

/// MPI_Iexscan's work for the call `func` the user made (MPI_Iexscan itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iexscan's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iexscan_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    let r = file(func, comm, req, || {
        ireduction(func, IRed::Exscan, send, recv, count, dt, op, comm)
    });
    finish(comm, func, r)
}

/// MPI_Ireduce_scatter_block (MPI-4.1 §6.12.9).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter_block(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        ireduce_scatter_block_as(
            "MPI_Ireduce_scatter_block",
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

/// MPI_Ireduce_scatter_block's work for the call `func` the user made (MPI_Ireduce_scatter_block itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ireduce_scatter_block's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce_scatter_block_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        let mode = crate::inter_coll::Mode::Nonblocking { comm, req };
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers)
        // passed on; hidden handles are this library's.
        let r =
            unsafe { crate::inter_coll::reduce_scatter_block(p, send, recv, count, dt, op, mode) };
        return finish(comm, func, r);
    }
    let r = file(func, comm, req, || {
        ireduction(
            func,
            IRed::ReduceScatterBlock,
            send,
            recv,
            count,
            dt,
            op,
            comm,
        )
    });
    finish(comm, func, r)
}

#[derive(Clone, Copy, PartialEq)]
enum Move {
    Gather(c_int),
    Scatter(c_int),
    Allgather,
    Alltoall,
}

#[allow(clippy::too_many_arguments)]
fn imove(
    func: &str,
    kind: Move,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let n = c.size() as i64;
    let me = c.rank();
    let root = match kind {
        Move::Gather(r) | Move::Scatter(r) => root_of(&c, r)?,
        _ => 0,
    };
    // Arguments the standard says are ignored are not validated (MPI-4.1 §6.5, §6.6: the
    // receive type at a gather's non-root, the send type at a scatter's non-root).
    let (sdt, rdt) = match kind {
        Move::Gather(_) if me != root => (sdt, MPI_BYTE),
        Move::Scatter(_) if me != root => (MPI_BYTE, rdt),
        _ => (sdt, rdt),
    };
    let (scount, rcount) = (scount as i64, rcount as i64);
    // Items on each side: the "all" side holds one block per rank.
    let (send_items, recv_items) = match kind {
        Move::Gather(_) => (scount, if me == root { rcount * n } else { 0 }),
        Move::Scatter(_) => (if me == root { scount * n } else { 0 }, rcount),
        Move::Allgather => (scount, rcount * n),
        Move::Alltoall => (scount * n, rcount * n),
    };
    let mut keep = Vec::new();
    if kind == Move::Scatter(root as c_int) && in_place(recv) {
        let out = outgoing(send, send_items, sdt)?;
        let block = out.bytes / n as usize;
        let mut scratch = vec![0u8; block];
        let rp = scratch.as_mut_ptr();
        let (sp, sb) = (out.ptr, out.bytes);
        keep.extend(out.keep);
        keep.push(scratch);
        // SAFETY: buffers live until completion (user's by contract, staged ones in `keep`).
        let q = unsafe { c.iscatter(sl(sp, sb), sl_mut(rp, block), root)? };
        return started(q, keep, None);
    }
    let inc = incoming(recv, recv_items, rdt, in_place(send))?;
    let (sptr, sbytes) = if in_place(send) {
        let block = inc.bytes / n as usize;
        // SAFETY: the staged receive buffer holds `inc.bytes` bytes.
        let whole = unsafe { sl(inc.ptr, inc.bytes) };
        let copy = match kind {
            Move::Alltoall => whole.to_vec(),
            Move::Allgather => whole[me as usize * block..(me as usize + 1) * block].to_vec(),
            Move::Gather(_) if me == root => {
                whole[root as usize * block..(root as usize + 1) * block].to_vec()
            }
            _ => return Err(err(MPI_ERR_BUFFER, "MPI_IN_PLACE is not allowed here")),
        };
        let p = copy.as_ptr();
        let len = copy.len();
        keep.push(copy);
        (p, len)
    } else {
        let out = outgoing(send, send_items, sdt)?;
        keep.extend(out.keep);
        (out.ptr, out.bytes)
    };
    // SAFETY: buffers live until completion (user's by contract, staged ones in `keep`).
    let (sb, rb) = unsafe { (sl(sptr, sbytes), sl_mut(inc.ptr, inc.bytes)) };
    // SAFETY: the slices live as the request does: the caller's buffers by MPI's contract for
    // nonblocking calls, the staged ones in `keep`, which the request holds.
    let q = unsafe {
        match kind {
            Move::Gather(_) => c.igather(sb, rb, root)?,
            Move::Scatter(_) => c.iscatter(sb, rb, root)?,
            Move::Allgather => c.iallgather(sb, rb)?,
            Move::Alltoall => c.ialltoall(sb, rb)?,
        }
    };
    started(q, keep, inc.unpack)
}

/// MPI_Igather (MPI-4.1 §6.12.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Igather(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        igather_as(
            "MPI_Igather",
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

/// MPI_Igather's work for the call `func` the user made (MPI_Igather itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Igather's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn igather_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, Some(root)) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    let r = unsafe { start_igather(func, send, scount, sdt, recv, rcount, rdt, root, comm, req) };
    finish(comm, func, r)
}

/// MPI_Igather's work without the C boundary (and its check of aliased buffers), for this
/// library's own callers inside an MPI call: starts the gather as request `*req` for the
/// call `func` the user made, which its errors name.
///
/// # Safety
/// MPI_Igather's contract.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn start_igather(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    if let Some(p) = crate::inter_coll::parts(comm) {
        let rcounts = crate::inter_coll::Counts::Same(rcount);
        let mode = crate::inter_coll::Mode::Nonblocking { comm, req };
        // SAFETY: the caller's contract (MPI's, for the caller's buffers) passed on.
        return unsafe {
            crate::inter_coll::gather(p, send, scount, sdt, recv, rcounts, rdt, root, mode)
        };
    }
    file(func, comm, req, || {
        imove(
            func,
            Move::Gather(root),
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
        )
    })
}

/// MPI_Iscatter (MPI-4.1 §6.12.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatter(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        iscatter_as(
            "MPI_Iscatter",
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

/// MPI_Iscatter's work for the call `func` the user made (MPI_Iscatter itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iscatter's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iscatter_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, Some(root)) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::scatter(
                p,
                send,
                crate::inter_coll::Counts::Same(scount),
                sdt,
                recv,
                rcount,
                rdt,
                root,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    let r = file(func, comm, req, || {
        imove(
            func,
            Move::Scatter(root),
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
        )
    });
    finish(comm, func, r)
}

/// MPI_Iallgather (MPI-4.1 §6.12.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgather(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        iallgather_as(
            "MPI_Iallgather",
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

/// MPI_Iallgather's work for the call `func` the user made (MPI_Iallgather itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iallgather's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iallgather_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, None) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    let r = unsafe { start_iallgather(func, send, scount, sdt, recv, rcount, rdt, comm, req) };
    finish(comm, func, r)
}

/// MPI_Iallgather's work without the C boundary (and its check of aliased buffers), for this
/// library's own callers inside an MPI call: starts the allgather as request `*req` for the
/// call `func` the user made, which its errors name.
///
/// # Safety
/// MPI_Iallgather's contract.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn start_iallgather(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> R<()> {
    if let Some(p) = crate::inter_coll::parts(comm) {
        let rcounts = crate::inter_coll::Counts::Same(rcount);
        let mode = crate::inter_coll::Mode::Nonblocking { comm, req };
        // SAFETY: the caller's contract (MPI's, for the caller's buffers) passed on.
        return unsafe {
            crate::inter_coll::allgather(p, send, scount, sdt, recv, rcounts, rdt, mode)
        };
    }
    file(func, comm, req, || {
        imove(
            func,
            Move::Allgather,
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
        )
    })
}

/// MPI_Ialltoall (MPI-4.1 §6.12.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoall(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        ialltoall_as(
            "MPI_Ialltoall",
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

/// MPI_Ialltoall's work for the call `func` the user made (MPI_Ialltoall itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ialltoall's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoall_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, None) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::alltoall(
                p,
                send,
                crate::inter_coll::Counts::Same(scount),
                sdt,
                recv,
                crate::inter_coll::Counts::Same(rcount),
                rdt,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    let r = file(func, comm, req, || {
        imove(
            func,
            Move::Alltoall,
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            comm,
        )
    });
    finish(comm, func, r)
}

// ------------------------------------------------------------------- persistent (MPI-4.1 §6.13)

/// Checks one side of a persistent collective at its init (MPI-4.1 §6.13: the init call
/// reports argument errors, as MPICH and Open MPI do, rather than a later MPI_Start): the
/// count, and the datatype (valid, committed). An MPI_IN_PLACE side has neither.
fn check_side(buf: usize, count: c_int, dt: Handle, what: &str) -> R<()> {
    if buf == MPI_IN_PLACE {
        return Ok(());
    }
    if count < 0 {
        return Err(err(MPI_ERR_COUNT, format!("{what} {count} is negative")));
    }
    crate::dtype::layout(dt)?;
    Ok(())
}

/// Checks a reduction's operation at a persistent init: a valid handle, and a predefined
/// one defined on the predefined datatype `dt` (MPI-4.1 §6.9.2); for the init call `func`.
fn check_reduction_op(func: &str, op: Handle, dt: Handle) -> R<()> {
    if op == MPI_OP_NULL {
        return Err(err(MPI_ERR_OP, "operation is MPI_OP_NULL"));
    }
    if (MPI_SUM..=MPI_NO_OP).contains(&op) {
        return crate::dtype::check_op(op, dt);
    }
    let s = state(func)?;
    if crate::state::handle_index(crate::state::K_OP, op)
        .and_then(|i| s.ops.get(i))
        .is_none()
    {
        return Err(err(
            MPI_ERR_OP,
            format!("operation handle {op:#x} is not valid"),
        ));
    }
    Ok(())
}

/// MPI_Barrier_init (MPI-4.1 §6.13.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier_init(comm: Handle, _info: Handle, req: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = comm_of(comm, "MPI_Barrier_init").and_then(|_| {
        let restart: Restart = Rc::new(move |start| {
            let c = comm_of(comm, start)?;
            started(c.ibarrier()?, Vec::new(), None)
        });
        file_persistent("MPI_Barrier_init", comm, restart, req)
    });
    finish(comm, "MPI_Barrier_init", r)
}

/// MPI_Bcast_init (MPI-4.1 §6.13.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_init(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    info: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { bcast_init_as("MPI_Bcast_init", buf, count, dt, root, comm, info, req) }
}

/// MPI_Bcast_init's work for the call `func` the user made (MPI_Bcast_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Bcast_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn bcast_init_as(
    func: &str,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
    _info: Handle,
    req: *mut Handle,
) -> c_int {
    let buf = buf as usize;
    let r = comm_of(comm, func).and_then(|c| {
        root_of(&c, root)?;
        check_side(buf, count, dt, "count")?;
        file_persistent(
            func,
            comm,
            Rc::new(move |start| ibcast(start, buf, count, dt, root, comm)),
            req,
        )
    });
    finish(comm, func, r)
}

macro_rules! reduction_init {
    ($(#[$doc:meta] $name:ident, $func:literal, $kind:expr, $as:ident;)*) => {$(
        #[$doc]
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            send: *const c_void,
            recv: *mut c_void,
            count: c_int,
            dt: Handle,
            op: Handle,
            comm: Handle,
            info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let _entered = crate::threads::enter();
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $as($func, send, recv, count, dt, op, comm, info, req) }
        }

        #[doc = concat!($func, "'s work for the call `func` the user made (", $func, " itself or a")]
        #[doc = "call built on it), which its errors name and whose handler they reach; runs inside"]
        #[doc = "the caller's hold (crate::threads::enter). Errors of a later start name the call"]
        #[doc = "that starts the request (MPI_Start or MPI_Startall, MPI-4.1 §3.9)."]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = concat!($func, "'s contract.")]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $as(
            func: &str,
            send: *const c_void,
            recv: *mut c_void,
            count: c_int,
            dt: Handle,
            op: Handle,
            comm: Handle,
            _info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let (send, recv) = (send as usize, recv as usize);
            let r = comm_of(comm, func).and_then(|_| {
                check_side(0, count, dt, "count")?;
                check_reduction_op(func, op, dt)?;
                let restart: Restart = Rc::new(move |start| {
                    ireduction(start, $kind, send as *const c_void, recv as *mut c_void, count, dt, op, comm)
                });
                file_persistent(func, comm, restart, req)
            });
            finish(comm, func, r)
        }
    )*};
}

reduction_init! {
    /// MPI_Allreduce_init (MPI-4.1 §6.13.2).
    MPI_Allreduce_init, "MPI_Allreduce_init", IRed::Allreduce, allreduce_init_as;
    /// MPI_Scan_init (MPI-4.1 §6.13.2).
    MPI_Scan_init, "MPI_Scan_init", IRed::Scan, scan_init_as;
    /// MPI_Exscan_init (MPI-4.1 §6.13.2).
    MPI_Exscan_init, "MPI_Exscan_init", IRed::Exscan, exscan_init_as;
    /// MPI_Reduce_scatter_block_init (MPI-4.1 §6.13.2).
    MPI_Reduce_scatter_block_init, "MPI_Reduce_scatter_block_init", IRed::ReduceScatterBlock, reduce_scatter_block_init_as;
}

/// MPI_Reduce_init (MPI-4.1 §6.13.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_init(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    info: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        reduce_init_as(
            "MPI_Reduce_init",
            send,
            recv,
            count,
            dt,
            op,
            root,
            comm,
            info,
            req,
        )
    }
}

/// MPI_Reduce_init's work for the call `func` the user made (MPI_Reduce_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
/// Errors of a later start name the call that starts the request (MPI_Start or
/// MPI_Startall, MPI-4.1 §3.9).
///
/// # Safety
/// MPI_Reduce_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce_init_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
    _info: Handle,
    req: *mut Handle,
) -> c_int {
    let (send, recv) = (send as usize, recv as usize);
    let r = comm_of(comm, func).and_then(|c| {
        root_of(&c, root)?;
        check_side(0, count, dt, "count")?;
        check_reduction_op(func, op, dt)?;
        let restart: Restart = Rc::new(move |start| {
            let (s, r) = (send as *const c_void, recv as *mut c_void);
            ireduction(start, IRed::Reduce(root), s, r, count, dt, op, comm)
        });
        file_persistent(func, comm, restart, req)
    });
    finish(comm, func, r)
}

macro_rules! move_init {
    ($(#[$doc:meta] $name:ident, $func:literal, rooted: $rooted:tt, $kind:expr, $as:ident;)*) => {$(
        move_init!(@one #[$doc] $name, $func, $rooted, $kind, $as);
    )*};
    (@doc $func:literal) => {
        concat!(
            $func, "'s work for the call `func` the user made (", $func, " itself or a call ",
            "built on it), which its errors name and whose handler they reach; runs inside the ",
            "caller's hold (crate::threads::enter). Errors of a later start name the call that ",
            "starts the request (MPI_Start or MPI_Startall, MPI-4.1 §3.9).\n\n# Safety\n",
            $func, "'s contract."
        )
    };
    (@one #[$doc:meta] $name:ident, $func:literal, true, $kind:expr, $as:ident) => {
        #[$doc]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            send: *const c_void,
            scount: c_int,
            sdt: Handle,
            recv: *mut c_void,
            rcount: c_int,
            rdt: Handle,
            root: c_int,
            comm: Handle,
            info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let _entered = crate::threads::enter();
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $as($func, send, scount, sdt, recv, rcount, rdt, root, comm, info, req) }
        }

        #[doc = move_init!(@doc $func)]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $as(
            func: &str,
            send: *const c_void,
            scount: c_int,
            sdt: Handle,
            recv: *mut c_void,
            rcount: c_int,
            rdt: Handle,
            root: c_int,
            comm: Handle,
            _info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let (send, recv) = (send as usize, recv as usize);
            let r = comm_of(comm, func).and_then(|c| {
                root_of(&c, root)?;
                // The root's side of a gather (its receive) or a scatter (its send) counts
                // at the root only (MPI-4.1 §6.5, §6.6).
                let at_root = c.rank() as c_int == root;
                let gather = stringify!($kind).contains("Gather");
                if at_root || gather {
                    check_side(send, scount, sdt, "sendcount")?;
                }
                if at_root || !gather {
                    check_side(recv, rcount, rdt, "recvcount")?;
                }
                let restart: Restart = Rc::new(move |start| {
                    let (s, r) = (send as *const c_void, recv as *mut c_void);
                    imove(start, $kind(root), s, scount, sdt, r, rcount, rdt, comm)
                });
                file_persistent(func, comm, restart, req)
            });
            finish(comm, func, r)
        }
    };
    (@one #[$doc:meta] $name:ident, $func:literal, false, $kind:expr, $as:ident) => {
        #[$doc]
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            send: *const c_void,
            scount: c_int,
            sdt: Handle,
            recv: *mut c_void,
            rcount: c_int,
            rdt: Handle,
            comm: Handle,
            info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let _entered = crate::threads::enter();
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $as($func, send, scount, sdt, recv, rcount, rdt, comm, info, req) }
        }

        #[doc = move_init!(@doc $func)]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $as(
            func: &str,
            send: *const c_void,
            scount: c_int,
            sdt: Handle,
            recv: *mut c_void,
            rcount: c_int,
            rdt: Handle,
            comm: Handle,
            _info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let (send, recv) = (send as usize, recv as usize);
            let r = comm_of(comm, func).and_then(|_| {
                check_side(send, scount, sdt, "sendcount")?;
                check_side(recv, rcount, rdt, "recvcount")?;
                let restart: Restart = Rc::new(move |start| {
                    let (s, r) = (send as *const c_void, recv as *mut c_void);
                    imove(start, $kind, s, scount, sdt, r, rcount, rdt, comm)
                });
                file_persistent(func, comm, restart, req)
            });
            finish(comm, func, r)
        }
    };
}

move_init! {
    /// MPI_Gather_init (MPI-4.1 §6.13.2).
    MPI_Gather_init, "MPI_Gather_init", rooted: true, Move::Gather, gather_init_as;
    /// MPI_Scatter_init (MPI-4.1 §6.13.2).
    MPI_Scatter_init, "MPI_Scatter_init", rooted: true, Move::Scatter, scatter_init_as;
    /// MPI_Allgather_init (MPI-4.1 §6.13.2).
    MPI_Allgather_init, "MPI_Allgather_init", rooted: false, Move::Allgather, allgather_init_as;
    /// MPI_Alltoall_init (MPI-4.1 §6.13.2).
    MPI_Alltoall_init, "MPI_Alltoall_init", rooted: false, Move::Alltoall, alltoall_init_as;
}

// ------------------------------------------------------------------- v-variants

/// Starts MPI_Ireduce_scatter for the call `func` the user made, which its errors name (also what
/// MPI_Start does for its persistent form).
#[allow(clippy::too_many_arguments)]
fn ireduce_scatter_start(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let (src, rp, mine, counts, tk, wop) =
        crate::coll::reduce_scatter_args(&c, send, recv, rcounts, dt, op)?;
    // SAFETY: the copy lives in the request; `recv` by MPI's contract.
    let q = unsafe {
        c.ireduce_scatter_bytes(
            sl(src.as_ptr(), src.len()),
            sl_mut(rp as *mut u8, mine),
            &counts,
            tk,
            &wop,
        )?
    };
    started(q, vec![src], None)
}

/// MPI_Ireduce_scatter (MPI-4.1 §6.12.10).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce_scatter(
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        ireduce_scatter_as(
            "MPI_Ireduce_scatter",
            send,
            recv,
            rcounts,
            dt,
            op,
            comm,
            req,
        )
    }
}

/// MPI_Ireduce_scatter's work for the call `func` the user made (MPI_Ireduce_scatter itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ireduce_scatter's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ireduce_scatter_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) =
        // SAFETY: scounts and rcounts are NULL or hold one count per rank of comm
        // (MPI_Ireduce_scatter's contract), as aliased_v requires.
        unsafe { crate::coll::aliased_v(comm, func, send, recv, rcounts, rcounts) }
    {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        let mode = crate::inter_coll::Mode::Nonblocking { comm, req };
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers, and
        // `rcounts` holding one count per local rank) passed on; hidden handles are this
        // library's.
        let r =
            unsafe { crate::inter_coll::reduce_scatter_v(p, send, recv, rcounts, dt, op, mode) };
        return finish(comm, func, r);
    }
    let st = || ireduce_scatter_start(func, send, recv, rcounts, dt, op, comm);
    let r = file(func, comm, req, st);
    finish(comm, func, r)
}

/// The bytes of a send side with `count` items of contiguous `dt` (a copy for in-place).
fn contiguous_send(send: *const c_void, count: c_int, dt: Handle) -> R<(usize, usize)> {
    let (n, _) = crate::dtype::bytes_of(count as i64, dt)?;
    if send.is_null() && n > 0 {
        return Err(err(MPI_ERR_BUFFER, "sendbuf is NULL"));
    }
    Ok((send as usize, n))
}

/// Starts MPI_Igatherv for the call `func` the user made, which its errors name (also what
/// MPI_Start does for its persistent form).
#[allow(clippy::too_many_arguments)]
fn igatherv_start(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let root = root_of(&c, root)?;
    let n = c.size() as usize;
    let (counts, ds, at) = if c.rank() == root {
        crate::coll::v_bytes(n, rcounts, displs, rdt, "recvcounts")?
    } else {
        (vec![0; n], vec![0; n], Placed::default())
    };
    let base = at.base(recv) as usize;
    let mut keep = Vec::new();
    let (sp, sn) = if in_place(send) {
        let me = c.rank() as usize;
        // SAFETY: the root's receive buffer covers its own block, `ds[me]` bytes past the
        // lowest byte a block touches.
        let copy = unsafe { sl((base as *const u8).wrapping_add(ds[me]), counts[me]) }.to_vec();
        let p = copy.as_ptr() as usize;
        let l = copy.len();
        keep.push(copy);
        (p, l)
    } else {
        contiguous_send(send, scount, sdt)?
    };
    // SAFETY: buffers live until completion (MPI's contract or `keep`).
    let q = unsafe {
        c.igatherv(
            sl(sp as *const u8, sn),
            sl_mut(base as *mut u8, at.span),
            &counts,
            &ds,
            root,
        )?
    };
    started(q, keep, None)
}

/// MPI_Igatherv (MPI-4.1 §6.12.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Igatherv(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        igatherv_as(
            "MPI_Igatherv",
            send,
            scount,
            sdt,
            recv,
            rcounts,
            displs,
            rdt,
            root,
            comm,
            req,
        )
    }
}

/// MPI_Igatherv's work for the call `func` the user made (MPI_Igatherv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Igatherv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn igatherv_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, Some(root)) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::gather(
                p,
                send,
                scount,
                sdt,
                recv,
                crate::inter_coll::Counts::V(rcounts, displs),
                rdt,
                root,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    let st = || {
        igatherv_start(
            func, send, scount, sdt, recv, rcounts, displs, rdt, root, comm,
        )
    };
    let r = file(func, comm, req, st);
    finish(comm, func, r)
}

/// Starts MPI_Iscatterv for the call `func` the user made, which its errors name (also what
/// MPI_Start does for its persistent form).
#[allow(clippy::too_many_arguments)]
fn iscatterv_start(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let root = root_of(&c, root)?;
    let n = c.size() as usize;
    let mut keep = Vec::new();
    let mut send = send as usize;
    let (counts, ds, span) = if c.rank() == root {
        match crate::coll::v_bytes(n, scounts, displs, sdt, "sendcounts") {
            Ok((counts, ds, at)) => {
                send = at.base(send as *const c_void) as usize;
                (counts, ds, at.span)
            }
            // A type with holes: the blocks are packed now, into a buffer the request keeps.
            Err(e) if e.class == MPI_ERR_UNSUPPORTED_OPERATION => {
                let (packed, counts, ds) =
                    crate::coll::pack_v_blocks(send as *const c_void, scounts, displs, sdt, n)?;
                let span = packed.len();
                send = packed.as_ptr() as usize;
                keep.push(packed);
                (counts, ds, span)
            }
            Err(e) => return Err(e),
        }
    } else {
        (vec![0; n], vec![0; n], 0)
    };
    let (rp, rn) = if in_place(recv) {
        let mut scratch = vec![0u8; counts[c.rank() as usize]];
        let p = scratch.as_mut_ptr() as usize;
        let l = scratch.len();
        keep.push(scratch);
        (p, l)
    } else {
        contiguous_send(recv, rcount, rdt)?
    };
    // SAFETY: buffers live until completion (MPI's contract or `keep`).
    let q = unsafe {
        c.iscatterv(
            sl(send as *const u8, span),
            &counts,
            &ds,
            sl_mut(rp as *mut u8, rn),
            root,
        )?
    };
    started(q, keep, None)
}

/// MPI_Iscatterv (MPI-4.1 §6.12.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatterv(
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        iscatterv_as(
            "MPI_Iscatterv",
            send,
            scounts,
            displs,
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

/// MPI_Iscatterv's work for the call `func` the user made (MPI_Iscatterv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iscatterv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iscatterv_as(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, rcount as i64, Some(root)) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::scatter(
                p,
                send,
                crate::inter_coll::Counts::V(scounts, displs),
                sdt,
                recv,
                rcount,
                rdt,
                root,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    let st = || {
        iscatterv_start(
            func, send, scounts, displs, sdt, recv, rcount, rdt, root, comm,
        )
    };
    let r = file(func, comm, req, st);
    finish(comm, func, r)
}

/// Starts MPI_Iallgatherv for the call `func` the user made, which its errors name (also what
/// MPI_Start does for its persistent form).
#[allow(clippy::too_many_arguments)]
fn iallgatherv_start(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let n = c.size() as usize;
    let (counts, ds, at) = crate::coll::v_bytes(n, rcounts, displs, rdt, "recvcounts")?;
    let base = at.base(recv) as usize;
    let mut keep = Vec::new();
    let (sp, sn) = if in_place(send) {
        let me = c.rank() as usize;
        // SAFETY: the receive buffer covers this rank's block, `ds[me]` bytes past the
        // lowest byte a block touches.
        let copy = unsafe { sl((base as *const u8).wrapping_add(ds[me]), counts[me]) }.to_vec();
        let p = copy.as_ptr() as usize;
        let l = copy.len();
        keep.push(copy);
        (p, l)
    } else {
        contiguous_send(send, scount, sdt)?
    };
    // SAFETY: buffers live until completion (MPI's contract or `keep`).
    let q = unsafe {
        c.iallgatherv(
            sl(sp as *const u8, sn),
            sl_mut(base as *mut u8, at.span),
            &counts,
            &ds,
        )?
    };
    started(q, keep, None)
}

/// MPI_Iallgatherv (MPI-4.1 §6.12.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgatherv(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        iallgatherv_as(
            "MPI_Iallgatherv",
            send,
            scount,
            sdt,
            recv,
            rcounts,
            displs,
            rdt,
            comm,
            req,
        )
    }
}

/// MPI_Iallgatherv's work for the call `func` the user made (MPI_Iallgatherv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Iallgatherv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn iallgatherv_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, None) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::allgather(
                p,
                send,
                scount,
                sdt,
                recv,
                crate::inter_coll::Counts::V(rcounts, displs),
                rdt,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    let st = || iallgatherv_start(func, send, scount, sdt, recv, rcounts, displs, rdt, comm);
    let r = file(func, comm, req, st);
    finish(comm, func, r)
}

/// Starts MPI_Ialltoallv for the call `func` the user made, which its errors name (also what
/// MPI_Start does for its persistent form).
#[allow(clippy::too_many_arguments)]
fn ialltoallv_start(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let n = c.size() as usize;
    let (rc, rd, rat) = crate::coll::v_bytes(n, rcounts, rdispls, rdt, "recvcounts")?;
    let (rp, rspan) = (rat.base(recv) as usize, rat.span);
    let mut keep = Vec::new();
    let (sc, sd, sp, sn) = if in_place(send) {
        // SAFETY: the receive buffer covers its span.
        let copy = unsafe { sl(rp as *const u8, rspan) }.to_vec();
        let p = copy.as_ptr() as usize;
        keep.push(copy);
        (rc.clone(), rd.clone(), p, rspan)
    } else {
        let (sc, sd, sat) = crate::coll::v_bytes(n, scounts, sdispls, sdt, "sendcounts")?;
        (sc, sd, sat.base(send) as usize, sat.span)
    };
    // SAFETY: buffers live until completion (MPI's contract or `keep`).
    let q = unsafe {
        c.ialltoallv(
            sl(sp as *const u8, sn),
            &sc,
            &sd,
            sl_mut(rp as *mut u8, rspan),
            &rc,
            &rd,
        )?
    };
    started(q, keep, None)
}

/// MPI_Ialltoallv (MPI-4.1 §6.12.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallv(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        ialltoallv_as(
            "MPI_Ialltoallv",
            send,
            scounts,
            sdispls,
            sdt,
            recv,
            rcounts,
            rdispls,
            rdt,
            comm,
            req,
        )
    }
}

/// MPI_Ialltoallv's work for the call `func` the user made (MPI_Ialltoallv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ialltoallv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoallv_as(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) =
        // SAFETY: scounts and rcounts are NULL or hold one count per rank of comm
        // (MPI_Ialltoallv's contract), as aliased_v requires.
        unsafe { crate::coll::aliased_v(comm, func, send, recv, scounts, rcounts) }
    {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        let r = unsafe {
            crate::inter_coll::alltoall(
                p,
                send,
                crate::inter_coll::Counts::V(scounts, sdispls),
                sdt,
                recv,
                crate::inter_coll::Counts::V(rcounts, rdispls),
                rdt,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        };
        return finish(comm, func, r);
    }
    let st = || {
        ialltoallv_start(
            func, send, scounts, sdispls, sdt, recv, rcounts, rdispls, rdt, comm,
        )
    };
    let r = file(func, comm, req, st);
    finish(comm, func, r)
}

/// Bytes per rank, byte displacement per rank from the lowest byte a block touches, and
/// where that byte lies around the buffer pointer.
type Blocks = (Vec<usize>, Vec<usize>, Placed);

/// Per-rank (bytes, byte displacement) of an alltoallw side whose datatypes are all
/// contiguous; `None` when one has holes. Displacements may be negative (MPI-4.1 §6.8).
fn w_bytes(
    n: usize,
    counts: *const c_int,
    displs: *const c_int,
    types: *const Handle,
    what: &str,
) -> R<Option<Blocks>> {
    if counts.is_null() || displs.is_null() || types.is_null() {
        return Err(err(MPI_ERR_ARG, format!("an array of {what} is NULL")));
    }
    // SAFETY: one entry per rank (the caller's contract).
    let (c, t) = unsafe {
        (
            std::slice::from_raw_parts(counts, n),
            std::slice::from_raw_parts(types, n),
        )
    };
    let mut bytes = Vec::with_capacity(n);
    for i in 0..n {
        match crate::dtype::bytes_of(c[i] as i64, t[i]) {
            Ok((b, _)) => bytes.push(b),
            Err(e) if e.class == MPI_ERR_UNSUPPORTED_OPERATION => return Ok(None),
            Err(e) => return Err(e),
        }
    }
    let (offs, at) = crate::coll::placed(&bytes, displs, 1, what)?;
    Ok(Some((bytes, offs, at)))
}

/// Starts MPI_Ialltoallw, for the call `func` the user made, which its errors name, as
/// weft's nonblocking alltoallv on bytes. Contiguous blocks are
/// sent from and received into the user's buffers; blocks of datatypes with holes are
/// packed now (send) or staged and unpacked at completion (receive), each with its own
/// datatype.
#[allow(clippy::too_many_arguments)]
fn ialltoallw_start(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
) -> R<Started> {
    let c = comm_of(comm, func)?;
    let n = c.size() as usize;
    let mut keep = Vec::new();
    let mut unpack: Option<Unpack> = None;
    let (rc, rd, rp, rspan) = match w_bytes(n, rcounts, rdispls, rtypes, "recvcounts")? {
        Some((rc, rd, rat)) => (rc, rd, rat.base(recv) as usize, rat.span),
        None => {
            if in_place(send) {
                return Err(err(
                    MPI_ERR_UNSUPPORTED_OPERATION,
                    "MPI_IN_PLACE with a receive datatype that has holes",
                ));
            }
            // SAFETY: one entry per rank (the caller's contract; w_bytes checked non-null).
            let (cs, ds, ts) = unsafe {
                (
                    std::slice::from_raw_parts(rcounts, n),
                    std::slice::from_raw_parts(rdispls, n),
                    std::slice::from_raw_parts(rtypes, n),
                )
            };
            let mut maps = Vec::with_capacity(n);
            let (mut rc, mut rd, mut total) = (Vec::with_capacity(n), Vec::with_capacity(n), 0);
            for i in 0..n {
                if cs[i] < 0 {
                    return Err(err(
                        MPI_ERR_COUNT,
                        format!("recvcounts has a negative entry {}", cs[i]),
                    ));
                }
                let map = Rc::new(crate::dtype::map_of(ts[i])?);
                let bytes = map.packed_bytes(cs[i] as u64)? as usize;
                rd.push(total);
                rc.push(bytes);
                total += bytes;
                maps.push(map);
            }
            let mut big = vec![0u8; total];
            let base = big.as_mut_ptr() as usize;
            for (i, map) in maps.into_iter().enumerate() {
                if rc[i] == 0 {
                    continue;
                }
                let user = (recv as usize).wrapping_add(ds[i] as isize as usize);
                let u = Unpack::from_block(map, user, cs[i] as u64, (base + rd[i], rc[i]));
                match unpack.as_mut() {
                    Some(first) => first.then(u),
                    None => unpack = Some(u),
                }
            }
            keep.push(big);
            (rc, rd, base, total)
        }
    };
    let (sc, sd, sp, sn) = if in_place(send) {
        // SAFETY: the receive buffer covers its span from `rp`.
        let copy = unsafe { sl(rp as *const u8, rspan) }.to_vec();
        let p = copy.as_ptr() as usize;
        keep.push(copy);
        (rc.clone(), rd.clone(), p, rspan)
    } else {
        match w_bytes(n, scounts, sdispls, stypes, "sendcounts")? {
            Some((sc, sd, sat)) => (sc, sd, sat.base(send) as usize, sat.span),
            None => {
                // SAFETY: as above, for the send side.
                let (cs, ds, ts) = unsafe {
                    (
                        std::slice::from_raw_parts(scounts, n),
                        std::slice::from_raw_parts(sdispls, n),
                        std::slice::from_raw_parts(stypes, n),
                    )
                };
                let (mut packed, mut sc, mut sd) =
                    (Vec::new(), Vec::with_capacity(n), Vec::with_capacity(n));
                for i in 0..n {
                    let p = (send as *const u8).wrapping_offset(ds[i] as isize);
                    let o = crate::stage::outgoing(p as *const c_void, cs[i] as i64, ts[i])?;
                    sd.push(packed.len());
                    sc.push(o.bytes);
                    // SAFETY: the staged block holds `o.bytes` bytes.
                    packed.extend_from_slice(unsafe { sl(o.ptr, o.bytes) });
                }
                let p = packed.as_ptr() as usize;
                let len = packed.len();
                keep.push(packed);
                (sc, sd, p, len)
            }
        }
    };
    // SAFETY: buffers live until completion (MPI's contract or `keep`).
    let q = unsafe {
        c.ialltoallv(
            sl(sp as *const u8, sn),
            &sc,
            &sd,
            sl_mut(rp as *mut u8, rspan),
            &rc,
            &rd,
        )?
    };
    started(q, keep, unpack)
}

/// MPI_Ialltoallw (MPI-4.1 §6.12.6): weft's nonblocking alltoallv on bytes, blocks of
/// datatypes with holes packed or staged (see `ialltoallw_start`). On an intercommunicator
/// it completes inside the call (see the `inter` module).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallw(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        ialltoallw_as(
            "MPI_Ialltoallw",
            send,
            scounts,
            sdispls,
            stypes,
            recv,
            rcounts,
            rdispls,
            rtypes,
            comm,
            req,
        )
    }
}

/// MPI_Ialltoallw's work for the call `func` the user made (MPI_Ialltoallw itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Ialltoallw's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn ialltoallw_as(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
    req: *mut Handle,
) -> c_int {
    if let Some(rc) =
        // SAFETY: scounts and rcounts are NULL or hold one count per rank of comm
        // (MPI_Ialltoallw's contract), as aliased_v requires.
        unsafe { crate::coll::aliased_v(comm, func, send, recv, scounts, rcounts) }
    {
        return rc;
    }
    let r = (|| {
        check_req(req)?;
        let Some(p) = crate::inter_coll::parts(comm) else {
            return file(func, comm, req, || {
                ialltoallw_start(
                    func, send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm,
                )
            });
        };
        // SAFETY: MPI's contract for the arguments.
        unsafe {
            crate::inter_coll::alltoallw(
                p,
                send,
                scounts,
                sdispls,
                stypes,
                recv,
                rcounts,
                rdispls,
                rtypes,
                crate::inter_coll::Mode::Nonblocking { comm, req },
            )
        }
    })();
    finish(comm, func, r)
}

/// MPI_Alltoallw_init (MPI-4.1 §6.13.6): each start is the nonblocking form's schedule.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw_init(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
    info: Handle,
    req: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        alltoallw_init_as(
            "MPI_Alltoallw_init",
            send,
            scounts,
            sdispls,
            stypes,
            recv,
            rcounts,
            rdispls,
            rtypes,
            comm,
            info,
            req,
        )
    }
}

/// MPI_Alltoallw_init's work for the call `func` the user made (MPI_Alltoallw_init itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Alltoallw_init's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallw_init_as(
    func: &str,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
    _info: Handle,
    req: *mut Handle,
) -> c_int {
    let p = [
        send as usize,
        scounts as usize,
        sdispls as usize,
        stypes as usize,
        recv as usize,
        rcounts as usize,
        rdispls as usize,
        rtypes as usize,
    ];
    let r = comm_of(comm, func).and_then(|_| {
        let restart: Restart = Rc::new(move |start| {
            ialltoallw_start(
                start, p[0] as _, p[1] as _, p[2] as _, p[3] as _, p[4] as _, p[5] as _, p[6] as _,
                p[7] as _, comm,
            )
        });
        file_persistent(func, comm, restart, req)
    });
    finish(comm, func, r)
}

/// The persistent v-collectives (MPI-4.1 §6.13): each MPI_Start starts the nonblocking
/// form again with the arguments given here (MPI requires the buffers and the count and
/// displacement arrays to stay valid while the request exists).
macro_rules! v_init {
    ($(#[$doc:meta] $name:ident, $func:literal, $start:ident, $as:ident,
       ($($p:ident: $t:ty),*), [$($ptr:ident),*];)*) => {$(
        #[$doc]
        #[no_mangle]
        #[allow(clippy::too_many_arguments)]
        pub unsafe extern "C" fn $name(
            $($p: $t,)*
            comm: Handle,
            info: Handle,
            req: *mut Handle,
        ) -> c_int {
            let _entered = crate::threads::enter();
            // SAFETY: the caller's MPI contract, passed on.
            unsafe { $as($func, $($p,)* comm, info, req) }
        }

        #[doc = concat!($func, "'s work for the call `func` the user made (", $func, " itself or a")]
        #[doc = "call built on it), which its errors name and whose handler they reach; runs inside"]
        #[doc = "the caller's hold (crate::threads::enter)."]
        #[doc = ""]
        #[doc = "# Safety"]
        #[doc = concat!($func, "'s contract.")]
        #[inline(always)]
        #[allow(clippy::too_many_arguments)]
        pub(crate) unsafe fn $as(
            func: &str,
            $($p: $t,)*
            comm: Handle,
            _info: Handle,
            req: *mut Handle,
        ) -> c_int {
            $(let $ptr = $ptr as usize;)*
            let r = comm_of(comm, func).and_then(|_| {
                let restart: Restart = Rc::new(move |start| {
                    $(let $ptr = $ptr as _;)*
                    $start(start, $($p,)* comm)
                });
                file_persistent(func, comm, restart, req)
            });
            finish(comm, func, r)
        }
    )*};
}

v_init! {
    /// MPI_Gatherv_init (MPI-4.1 §6.13.3).
    MPI_Gatherv_init, "MPI_Gatherv_init", igatherv_start, gatherv_init_as, (send: *const c_void, scount: c_int, sdt: Handle, recv: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Handle, root: c_int), [send, recv, rcounts, displs];
    /// MPI_Scatterv_init (MPI-4.1 §6.13.4).
    MPI_Scatterv_init, "MPI_Scatterv_init", iscatterv_start, scatterv_init_as, (send: *const c_void, scounts: *const c_int, displs: *const c_int, sdt: Handle, recv: *mut c_void, rcount: c_int, rdt: Handle, root: c_int), [send, scounts, displs, recv];
    /// MPI_Allgatherv_init (MPI-4.1 §6.13.5).
    MPI_Allgatherv_init, "MPI_Allgatherv_init", iallgatherv_start, allgatherv_init_as, (send: *const c_void, scount: c_int, sdt: Handle, recv: *mut c_void, rcounts: *const c_int, displs: *const c_int, rdt: Handle), [send, recv, rcounts, displs];
    /// MPI_Alltoallv_init (MPI-4.1 §6.13.6).
    MPI_Alltoallv_init, "MPI_Alltoallv_init", ialltoallv_start, alltoallv_init_as, (send: *const c_void, scounts: *const c_int, sdispls: *const c_int, sdt: Handle, recv: *mut c_void, rcounts: *const c_int, rdispls: *const c_int, rdt: Handle), [send, scounts, sdispls, recv, rcounts, rdispls];
    /// MPI_Reduce_scatter_init (MPI-4.1 §6.13.9).
    MPI_Reduce_scatter_init, "MPI_Reduce_scatter_init", ireduce_scatter_start, reduce_scatter_init_as, (send: *const c_void, recv: *mut c_void, rcounts: *const c_int, dt: Handle, op: Handle), [send, recv, rcounts];
}
