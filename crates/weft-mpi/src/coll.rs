//! Blocking collectives (MPI-4.1 chapter 6) including MPI_IN_PLACE, and reduction
//! operations (§6.9): the predefined ones map onto weft's, user functions (MPI_Op_create)
//! are called through the C calling convention. Data moves as bytes; reductions dispatch on
//! the datatype's element kind to weft's typed collectives.

use crate::consts::*;
use crate::dtype::{bytes_of, put};
use crate::error::{err, finish, R};
use crate::fast::RedColl as Fast;
use crate::stage::{incoming, incoming_for_reduction, outgoing, outgoing_for_reduction};
use crate::state::{handle_index, state, State, UserFn, UserOpEntry, K_OP};
use std::os::raw::{c_int, c_void};
use weft::coll::{Datatype, Op, TypeKind};
use weft::Comm;

pub(crate) fn comm_of(h: Handle, func: &str) -> R<Comm> {
    Ok(state(func)?.comm(h)?.comm.clone())
}

fn in_place(p: *const c_void) -> bool {
    p as usize == MPI_IN_PLACE
}

/// A send buffer that is the receive buffer without MPI_IN_PLACE (MPI-4.1 §6.1.1: the
/// buffers of a collective must not overlap unless in place) is an error of class
/// MPI_ERR_BUFFER, as MPICH reports it. Raised on `comm`'s handler; `root` limits the check
/// to the root of a rooted collective (elsewhere one of the two buffers is not used);
/// `count` is the count this rank's buffers use (-1 when it is per rank): with 0 nothing
/// moves and the same (empty) buffer may be passed twice, as MPICH allows (mpi4py does).
/// Costs one comparison when the buffers differ.
#[inline]
pub(crate) fn aliased(
    comm: Handle,
    func: &str,
    send: *const c_void,
    recv: *const c_void,
    count: i64,
    root: Option<c_int>,
) -> Option<c_int> {
    if send != recv {
        return None;
    }
    aliased_same(comm, func, send, count, root)
}

/// [`aliased`] once the two buffers are the same pointer: out of line, so that the usual
/// call (different buffers) costs one comparison.
#[cold]
#[inline(never)]
fn aliased_same(
    comm: Handle,
    func: &str,
    send: *const c_void,
    count: i64,
    root: Option<c_int>,
) -> Option<c_int> {
    if send.is_null() || in_place(send) || count == 0 {
        return None;
    }
    aliased_slow(comm, func, send, root)
}

/// [`aliased`] for the v and w forms, whose counts are per rank: `scounts` and `rcounts`
/// are this rank's send and receive counts (one per rank of `comm`; MPI_Reduce_scatter
/// passes its receive counts twice). When either side moves nothing its buffer is empty,
/// overlaps nothing, and may be the other one (mpi4py passes the same empty buffer twice;
/// MPICH accepts it). Costs one comparison when the buffers differ.
///
/// # Safety
/// `scounts` and `rcounts` are NULL or readable for the size of `comm` (MPI's contract).
#[inline]
pub(crate) unsafe fn aliased_v(
    comm: Handle,
    func: &str,
    send: *const c_void,
    recv: *const c_void,
    scounts: *const c_int,
    rcounts: *const c_int,
) -> Option<c_int> {
    if send != recv || send.is_null() || in_place(send) {
        return None;
    }
    // Counts of an intercommunicator are per remote rank; aliased_slow accepts it anyway.
    if matches!(state(func).and_then(|s| s.inter_parts(comm)), Ok(Some(_))) {
        return None;
    }
    let n = comm_of(comm, func).ok()?.size() as usize;
    let none = |p: *const c_int| {
        !p.is_null()
            // SAFETY: a non-null count array holds one entry per rank of comm (this function's
            // contract).
            && unsafe { std::slice::from_raw_parts(p, n) }
                .iter()
                .all(|&c| c == 0)
    };
    if none(scounts) || none(rcounts) {
        return None;
    }
    aliased_slow(comm, func, send, None)
}

#[cold]
#[inline(never)]
fn aliased_slow(
    comm: Handle,
    func: &str,
    send: *const c_void,
    root: Option<c_int>,
) -> Option<c_int> {
    // On an intercommunicator the two buffers meet different groups' data (and a side
    // that moves nothing may pass the same empty buffer twice, as mpi4py does): MPICH
    // checks aliasing on intracommunicators only.
    if matches!(state(func).and_then(|s| s.inter_parts(comm)), Ok(Some(_))) {
        return None;
    }
    if let Some(root) = root {
        // Inter-communicators have no rank equal to a root argument's meaning here; the
        // regular checks handle them.
        let me = comm_of(comm, func).ok()?.rank() as c_int;
        if me != root {
            return None;
        }
    }
    Some(crate::error::raise(
        comm,
        func,
        err(
            MPI_ERR_BUFFER,
            format!(
                "sendbuf and recvbuf are the same buffer ({send:p}): pass MPI_IN_PLACE as sendbuf to work in place"
            ),
        ),
    ))
}

fn check_root(c: &Comm, root: c_int) -> R<u32> {
    if root < 0 || root as u32 >= c.size() {
        return Err(err(
            MPI_ERR_ROOT,
            format!(
                "root {root} is not a rank of the communicator (size {})",
                c.size()
            ),
        ));
    }
    Ok(root as u32)
}

/// # Safety
/// `p` readable for `n` bytes when `n > 0`.
unsafe fn bytes<'a>(p: *const c_void, n: usize) -> R<&'a [u8]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_BUFFER, format!("buffer is NULL for {n} bytes")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p as *const u8, n) })
}

/// # Safety
/// `p` writable for `n` bytes when `n > 0`, unaliased.
unsafe fn bytes_mut<'a>(p: *mut c_void, n: usize) -> R<&'a mut [u8]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_BUFFER, format!("buffer is NULL for {n} bytes")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) })
}

/// MPI_Barrier (MPI-4.1 §6.3).
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: Handle) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ibarrier_as("MPI_Barrier", comm));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::fast::barrier(comm) {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        return finish(
            comm,
            "MPI_Barrier",
            crate::inter_coll::barrier(p, crate::inter_coll::Mode::Blocking),
        );
    }
    let r = comm_of(comm, "MPI_Barrier").and_then(|c| Ok(c.barrier()?));
    finish(comm, "MPI_Barrier", r)
}

pub(crate) fn bcast(buf: *mut c_void, count: i64, dt: Handle, root: c_int, comm: Handle) -> R<()> {
    let c = comm_of(comm, "MPI_Bcast")?;
    let root = check_root(&c, root)?;
    let inc = incoming(buf, count, dt, c.rank() == root)?;
    // SAFETY: the staged buffer holds `inc.bytes` bytes for this blocking call.
    let b = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
    c.bcast(b, root)?;
    inc.finish()
}

/// MPI_Bcast (MPI-4.1 §6.4).
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ibcast_as(
        "MPI_Bcast",
        buf,
        count,
        dt,
        root,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe { crate::fast::bcast(buf, count, dt, root, comm) } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Bcast's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::bcast requires and passes on to the calls it makes.
        return finish(comm, "MPI_Bcast", unsafe {
            crate::inter_coll::bcast(p, buf, count, dt, root, crate::inter_coll::Mode::Blocking)
        });
    }
    finish(comm, "MPI_Bcast", bcast(buf, count as i64, dt, root, comm))
}

/// MPI_Bcast_c (MPI-4.1 §6.4, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast_c(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::large::ibcast_c_as(
        "MPI_Bcast_c",
        buf,
        count,
        dt,
        root,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(p) = crate::inter_coll::parts(comm) {
        let r = inter_count(count, "count")
            // SAFETY: MPI_Bcast_c's contract for the caller's buffers, counts and datatypes,
            // which inter_coll::bcast requires and passes on to the calls it makes.
            .and_then(|count| unsafe {
                crate::inter_coll::bcast(p, buf, count, dt, root, crate::inter_coll::Mode::Blocking)
            });
        return finish(comm, "MPI_Bcast_c", r);
    }
    finish(comm, "MPI_Bcast_c", bcast(buf, count, dt, root, comm))
}

/// A large count as the `int` weft's intercommunicator collectives take (MPI_ERR_COUNT
/// when it does not fit).
fn inter_count(count: i64, what: &str) -> R<c_int> {
    c_int::try_from(count).map_err(|_| {
        err(
            MPI_ERR_COUNT,
            format!("{what} = {count}: intercommunicator collectives take counts below 2^31"),
        )
    })
}

// ------------------------------------------------------------------- operations

/// weft's operation for predefined operation handle `op` (MPI-4.1 §6.9.2), a static one
/// that a call may borrow without building or dropping anything; None for any other handle.
pub(crate) fn predefined_op(op: Handle) -> Option<&'static Op> {
    Some(match op {
        MPI_SUM => &Op::Sum,
        MPI_PROD => &Op::Prod,
        MPI_MIN => &Op::Min,
        MPI_MAX => &Op::Max,
        MPI_LAND => &Op::Land,
        MPI_LOR => &Op::Lor,
        MPI_LXOR => &Op::Lxor,
        MPI_BAND => &Op::Band,
        MPI_BOR => &Op::Bor,
        MPI_BXOR => &Op::Bxor,
        MPI_MINLOC => &Op::MinLoc,
        MPI_MAXLOC => &Op::MaxLoc,
        _ => return None,
    })
}

/// The weft operation for `op` on elements of `T` (datatype handle `dt`).
fn weft_op<T: Datatype>(op: Handle, dt: Handle) -> R<Op> {
    if let Some(o) = predefined_op(op) {
        return Ok(o.clone());
    }
    let s = state("operation")?;
    let u = handle_index(K_OP, op)
        .and_then(|i| s.ops.get(i))
        .copied()
        .ok_or_else(|| err(MPI_ERR_OP, format!("operation handle {op:#x} is not valid")))?;
    Ok(Op::user::<T>(
        "MPI_Op_create",
        u.commute,
        move |a: &[T], b: &mut [T]| {
            // SAFETY: `a` and `b` hold `a.len()` elements of `dt`.
            unsafe {
                u.call(
                    a.as_ptr() as *mut c_void,
                    b.as_mut_ptr() as *mut c_void,
                    a.len() as i64,
                    dt,
                )
            };
        },
    ))
}

/// Typed view of `n` elements at `p`, refusing misaligned buffers.
///
/// # Safety
/// `p` readable for `n` elements.
unsafe fn typed<'a, T: Datatype>(p: *const c_void, n: usize) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() || !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("buffer {p:p} is NULL or not aligned for its datatype"),
        ));
    }
    // SAFETY: aligned, non-null, `n` elements (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p as *const T, n) })
}

/// # Safety
/// `p` writable for `n` elements, unaliased.
unsafe fn typed_mut<'a, T: Datatype>(p: *mut c_void, n: usize) -> R<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() || !(p as usize).is_multiple_of(std::mem::align_of::<T>()) {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("buffer {p:p} is NULL or not aligned for its datatype"),
        ));
    }
    // SAFETY: aligned, non-null, `n` elements (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(p as *mut T, n) })
}

#[derive(Clone, Copy)]
pub(crate) enum Red {
    Reduce(u32),
    Allreduce,
    Scan,
    Exscan,
    ReduceScatterBlock,
}

/// One reduction collective: each rank contributes `count` elements of `T` at `send`
/// (`count * size` for reduce-scatter-block); results go to `recv`.
fn reduce_typed<T: Datatype>(
    c: &Comm,
    kind: Red,
    send: *const c_void,
    recv: *mut c_void,
    count: usize,
    dt: Handle,
    op: Handle,
) -> R<()> {
    let wop = weft_op::<T>(op, dt)?;
    let n = c.size() as usize;
    let (send_n, recv_n) = match kind {
        Red::Reduce(root) => (count, if c.rank() == root { count } else { 0 }),
        Red::ReduceScatterBlock => (count * n, count),
        _ => (count, count),
    };
    // SAFETY: the caller (`reduction`) stages `recv` to hold recv_n elements of T for this
    // call; no other view of it is live.
    let recv_s: &mut [T] = unsafe { typed_mut(recv, recv_n)? };
    // SAFETY: the caller stages `send` to hold send_n elements of T for this call.
    let send_s: &[T] = unsafe { typed(send, send_n)? };
    match kind {
        Red::Reduce(root) => c.reduce(send_s, recv_s, &wop, root)?,
        Red::Allreduce => c.allreduce(send_s, recv_s, &wop)?,
        Red::Scan => c.scan(send_s, recv_s, &wop)?,
        Red::Exscan => c.exscan(send_s, recv_s, &wop)?,
        Red::ReduceScatterBlock => c.reduce_scatter_block(send_s, recv_s, &wop)?,
    }
    Ok(())
}

macro_rules! by_kind {
    ($kind:expr, $f:ident, $($arg:expr),*) => {
        match $kind {
            TypeKind::I8 => $f::<i8>($($arg),*),
            TypeKind::I16 => $f::<i16>($($arg),*),
            TypeKind::I32 => $f::<i32>($($arg),*),
            TypeKind::I64 => $f::<i64>($($arg),*),
            TypeKind::U8 => $f::<u8>($($arg),*),
            TypeKind::U16 => $f::<u16>($($arg),*),
            TypeKind::U32 => $f::<u32>($($arg),*),
            TypeKind::U64 => $f::<u64>($($arg),*),
            TypeKind::F32 => $f::<f32>($($arg),*),
            TypeKind::F64 => $f::<f64>($($arg),*),
            TypeKind::F32I32 => $f::<weft::F32I32>($($arg),*),
            TypeKind::F64I32 => $f::<weft::F64I32>($($arg),*),
            TypeKind::I32I32 => $f::<weft::I32I32>($($arg),*),
            TypeKind::I64I32 => $f::<weft::I64I32>($($arg),*),
            TypeKind::I16I32 => $f::<weft::coll::datatype::I16I32>($($arg),*),
            TypeKind::LongDouble => $f::<weft::coll::datatype::LongDouble>($($arg),*),
            TypeKind::ComplexF32 => $f::<weft::coll::datatype::ComplexF32>($($arg),*),
            TypeKind::ComplexF64 => $f::<weft::coll::datatype::ComplexF64>($($arg),*),
            TypeKind::ComplexLongDouble => {
                $f::<weft::coll::datatype::ComplexLongDouble>($($arg),*)
            }
            TypeKind::LongDoubleI32 => $f::<weft::coll::datatype::LongDoubleI32>($($arg),*),
            TypeKind::F32F32 => $f::<weft::coll::datatype::F32F32>($($arg),*),
            TypeKind::F64F64 => $f::<weft::coll::datatype::F64F64>($($arg),*),
            #[allow(unreachable_patterns)]
            k => Err(err(MPI_ERR_TYPE, format!("element kind {k:?} cannot be reduced"))),
        }
    };
}

/// Whether `op` is a user operation and `dt` a derived datatype: such reductions go through
/// [`crate::user_reduce`].
pub(crate) fn user_op_on_derived(op: Handle, dt: Handle) -> bool {
    op != MPI_OP_NULL
        && !(MPI_SUM..=MPI_NO_OP).contains(&op)
        && crate::dtype::predefined(dt).is_none()
}

/// Copies `count` items of `dt` from `src` to `dst` (both laid out as user buffers).
pub(crate) fn typed_copy(src: *const c_void, dst: *mut c_void, count: i64, dt: Handle) -> R<()> {
    let out = outgoing(src, count, dt)?;
    let inc = incoming(dst, count, dt, false)?;
    // SAFETY: both staged buffers hold the items' packed bytes.
    unsafe {
        let from = bytes(out.ptr as *const c_void, out.bytes)?;
        bytes_mut(inc.ptr as *mut c_void, inc.bytes)?.copy_from_slice(from);
    }
    inc.finish()
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn reduction(
    func: &str,
    kind: Red,
    root: Option<c_int>,
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> R<()> {
    let c = comm_of(comm, func)?;
    let kind = match (kind, root) {
        (Red::Reduce(_), Some(r)) => Red::Reduce(check_root(&c, r)?),
        (k, _) => k,
    };
    if op == MPI_OP_NULL {
        return Err(err(MPI_ERR_OP, "op is MPI_OP_NULL"));
    }
    crate::dtype::check_op(op, dt)?;
    let predefined_op = (MPI_SUM..=MPI_NO_OP).contains(&op);
    if !predefined_op && crate::dtype::predefined(dt).is_none() {
        // weft may cut a reduction into chunks of basic elements, which would split the
        // derived items a user function expects whole: reduce and allreduce gather the
        // items instead (see crate::user_reduce).
        let root = match kind {
            Red::Reduce(root) => Some(Some(root as c_int)),
            Red::Allreduce => Some(None),
            _ => None,
        };
        if let Some(root) = root {
            // SAFETY: the caller's MPI contract for the buffers, passed on.
            return unsafe {
                crate::user_reduce::blocking(func, send, recv, count, dt, op, root, comm)
            };
        }
        return Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("user operation on derived datatype {dt:#x}"),
        ));
    }
    let n = c.size() as i64;
    let is_root = match kind {
        Red::Reduce(r) => c.rank() == r,
        _ => true,
    };
    let (send_items, recv_items) = match kind {
        Red::Reduce(_) => (count, if is_root { count } else { 0 }),
        Red::ReduceScatterBlock => (count * n, count),
        _ => (count, count),
    };
    // In place, MPI_Reduce_scatter_block reads its input from all `n * count` items of
    // recvbuf (MPI-4.1 §6.10.1), so the whole span is staged and its first block receives.
    let rsb_in_place = in_place(send) && matches!(kind, Red::ReduceScatterBlock);
    let staged_items = if rsb_in_place { send_items } else { recv_items };
    let inc = incoming_for_reduction(recv, staged_items, dt, in_place(send))?;
    let copy: Vec<u8>;
    let out;
    let (sptr, sbytes, tk) = if in_place(send) {
        if !is_root {
            return Err(err(
                MPI_ERR_BUFFER,
                "MPI_IN_PLACE as sendbuf is only allowed at the root",
            ));
        }
        // SAFETY: the staged receive buffer holds `inc.bytes` bytes.
        copy = unsafe { bytes(inc.ptr as *const c_void, inc.bytes)? }.to_vec();
        (copy.as_ptr(), copy.len(), inc.kind)
    } else {
        out = outgoing_for_reduction(send, send_items, dt)?;
        (out.ptr, out.bytes, out.kind)
    };
    let Some(tk) = tk else {
        return Err(err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} is not built from one basic type weft can reduce"),
        ));
    };
    let es = elem_bytes(tk);
    let elems = match kind {
        Red::ReduceScatterBlock => sbytes / es / n as usize,
        Red::Reduce(_) => sbytes / es,
        _ => inc.bytes / es,
    };
    by_kind!(
        tk,
        reduce_typed,
        &c,
        kind,
        sptr as *const c_void,
        inc.ptr as *mut c_void,
        elems,
        dt,
        op
    )?;
    inc.finish()
}

fn elem_bytes(k: TypeKind) -> usize {
    k.size_bytes()
}

/// MPI_Reduce (MPI-4.1 §6.9.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ireduce_as(
        "MPI_Reduce",
        send,
        recv,
        count,
        dt,
        op,
        root,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, "MPI_Reduce", send, recv, count as i64, Some(root))
    {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::reduction(
            Fast::Reduce(root),
            send,
            recv,
            count,
            dt,
            op,
            comm,
            "MPI_Reduce",
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Reduce's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::reduce requires and passes on to the calls it makes.
        return finish(comm, "MPI_Reduce", unsafe {
            crate::inter_coll::reduce(
                p,
                send,
                recv,
                count,
                dt,
                op,
                root,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    finish(
        comm,
        "MPI_Reduce",
        reduction(
            "MPI_Reduce",
            Red::Reduce(0),
            Some(root),
            send,
            recv,
            count as i64,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Reduce_c (MPI-4.1 §6.9.1, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::large::ireduce_c_as(
        "MPI_Reduce_c",
        send,
        recv,
        count,
        dt,
        op,
        root,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(p) = crate::inter_coll::parts(comm) {
        let r = inter_count(count, "count")
            // SAFETY: MPI_Reduce_c's contract for the caller's buffers, counts and datatypes,
            // which inter_coll::reduce requires and passes on to the calls it makes.
            .and_then(|count| unsafe {
                crate::inter_coll::reduce(
                    p,
                    send,
                    recv,
                    count,
                    dt,
                    op,
                    root,
                    crate::inter_coll::Mode::Blocking,
                )
            });
        return finish(comm, "MPI_Reduce_c", r);
    }
    finish(
        comm,
        "MPI_Reduce_c",
        reduction(
            "MPI_Reduce_c",
            Red::Reduce(0),
            Some(root),
            send,
            recv,
            count,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Allreduce (MPI-4.1 §6.9.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iallreduce_as(
        "MPI_Allreduce",
        send,
        recv,
        count,
        dt,
        op,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, "MPI_Allreduce", send, recv, count as i64, None) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::reduction(
            Fast::Allreduce,
            send,
            recv,
            count,
            dt,
            op,
            comm,
            "MPI_Allreduce",
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Allreduce's contract for the caller's buffers, counts and datatypes,
        // which inter_coll::allreduce requires and passes on to the calls it makes.
        return finish(comm, "MPI_Allreduce", unsafe {
            crate::inter_coll::allreduce(
                p,
                send,
                recv,
                count,
                dt,
                op,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    finish(
        comm,
        "MPI_Allreduce",
        reduction(
            "MPI_Allreduce",
            Red::Allreduce,
            None,
            send,
            recv,
            count as i64,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Allreduce_c (MPI-4.1 §6.9.6, large count).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allreduce_c(
    send: *const c_void,
    recv: *mut c_void,
    count: i64,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::large::iallreduce_c_as(
        "MPI_Allreduce_c",
        send,
        recv,
        count,
        dt,
        op,
        comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(p) = crate::inter_coll::parts(comm) {
        let r = inter_count(count, "count")
            // SAFETY: MPI_Allreduce_c's contract for the caller's buffers, counts and
            // datatypes, which inter_coll::allreduce requires and passes on to the calls it makes.
            .and_then(|count| unsafe {
                crate::inter_coll::allreduce(
                    p,
                    send,
                    recv,
                    count,
                    dt,
                    op,
                    crate::inter_coll::Mode::Blocking,
                )
            });
        return finish(comm, "MPI_Allreduce_c", r);
    }
    finish(
        comm,
        "MPI_Allreduce_c",
        reduction(
            "MPI_Allreduce_c",
            Red::Allreduce,
            None,
            send,
            recv,
            count,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Scan (MPI-4.1 §6.11.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Scan(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { scan_as("MPI_Scan", send, recv, count, dt, op, comm) }
}

/// MPI_Scan's work for the call `func` the user made (MPI_Scan itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Scan's contract.
#[inline(always)]
pub(crate) unsafe fn scan_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iscan_as(
        func, send, recv, count, dt, op, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Scan's rules, the contract fast::reduction
        // requires.
        unsafe { crate::fast::reduction(Fast::Scan, send, recv, count, dt, op, comm, func) }
    {
        return rc;
    }
    finish(
        comm,
        func,
        reduction(
            func,
            Red::Scan,
            None,
            send,
            recv,
            count as i64,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Exscan (MPI-4.1 §6.11.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Exscan(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { exscan_as("MPI_Exscan", send, recv, count, dt, op, comm) }
}

/// MPI_Exscan's work for the call `func` the user made (MPI_Exscan itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Exscan's contract.
#[inline(always)]
pub(crate) unsafe fn exscan_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iexscan_as(
        func, send, recv, count, dt, op, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    if let Some(rc) =
        // SAFETY: the caller's MPI contract, passed on.
        unsafe {
            crate::fast::reduction(Fast::Exscan, send, recv, count, dt, op, comm, func)
        }
    {
        return rc;
    }
    finish(
        comm,
        func,
        reduction(
            func,
            Red::Exscan,
            None,
            send,
            recv,
            count as i64,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Reduce_scatter_block (MPI-4.1 §6.10.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter_block(
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { reduce_scatter_block_as("MPI_Reduce_scatter_block", send, recv, count, dt, op, comm) }
}

/// MPI_Reduce_scatter_block's work for the call `func` the user made (MPI_Reduce_scatter_block itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Reduce_scatter_block's contract.
#[inline(always)]
pub(crate) unsafe fn reduce_scatter_block_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ireduce_scatter_block_as(
        func, send, recv, count, dt, op, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, count as i64, None) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::reduction(
            Fast::ReduceScatterBlock,
            send,
            recv,
            count,
            dt,
            op,
            comm,
            func,
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Reduce_scatter_block's contract for the caller's buffers, counts and
        // datatypes, which inter_coll::reduce_scatter_block requires and passes on to the calls it
        // makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::reduce_scatter_block(
                p,
                send,
                recv,
                count,
                dt,
                op,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    finish(
        comm,
        func,
        reduction(
            func,
            Red::ReduceScatterBlock,
            None,
            send,
            recv,
            count as i64,
            dt,
            op,
            comm,
        ),
    )
}

/// MPI_Op_create (MPI-4.1 §6.9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create(
    f: Option<UserFn>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = op_create(f, commute, op, false);
    finish(MPI_COMM_WORLD, "MPI_Op_create", r)
}

/// MPI_Op_create_c (MPI-4.1 §6.9.5): the function takes its count as an MPI_Count.
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_create_c(
    f: Option<UserFn>,
    commute: c_int,
    op: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = op_create(f, commute, op, true);
    finish(MPI_COMM_WORLD, "MPI_Op_create_c", r)
}

fn op_create(f: Option<UserFn>, commute: c_int, op: *mut Handle, large: bool) -> R<()> {
    let f = f.ok_or_else(|| err(MPI_ERR_ARG, "user function is NULL"))?;
    let s = state("MPI_Op_create")?;
    let h = crate::state::make_handle(
        K_OP,
        s.ops.insert(UserOpEntry {
            f,
            commute: commute != 0,
            large,
        }),
    );
    put!(op, h)
}

/// MPI_Op_free (MPI-4.1 §6.9.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_free(op: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        if op.is_null() {
            return Err(err(MPI_ERR_ARG, "op pointer is NULL"));
        }
        let s = state("MPI_Op_free")?;
        // SAFETY: non-null.
        let h = unsafe { *op };
        handle_index(K_OP, h)
            .and_then(|i| s.ops.remove(i))
            .ok_or_else(|| {
                err(
                    MPI_ERR_OP,
                    format!("operation {h:#x} is predefined or not valid"),
                )
            })?;
        put!(op, MPI_OP_NULL)
    })();
    finish(MPI_COMM_WORLD, "MPI_Op_free", r)
}

/// MPI_Op_commutative (MPI-4.1 §6.9.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Op_commutative(op: Handle, commute: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let v = match op {
            MPI_SUM | MPI_PROD | MPI_MIN | MPI_MAX | MPI_LAND | MPI_LOR | MPI_LXOR | MPI_BAND
            | MPI_BOR | MPI_BXOR | MPI_MINLOC | MPI_MAXLOC | MPI_REPLACE | MPI_NO_OP => true,
            _ => {
                let s = state("MPI_Op_commutative")?;
                handle_index(K_OP, op)
                    .and_then(|i| s.ops.get(i))
                    .map(|u| u.commute)
                    .ok_or_else(|| err(MPI_ERR_OP, format!("operation {op:#x} is not valid")))?
            }
        };
        put!(commute, v as c_int)
    })();
    finish(MPI_COMM_WORLD, "MPI_Op_commutative", r)
}

// ------------------------------------------------------------------- data movement

/// MPI_Gather (MPI-4.1 §6.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Gather(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        gather_as(
            "MPI_Gather",
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

/// MPI_Gather's work for the call `func` the user made (MPI_Gather itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Gather's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gather_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::igather_as(
        func, send, scount, sdt, recv, rcount, rdt, root, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, Some(root)) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::blocks(
            crate::fast::BlockColl::Gather,
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            Some(root),
            comm,
            func,
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Gather's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::gather requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::gather(
                p,
                send,
                scount,
                sdt,
                recv,
                crate::inter_coll::Counts::Same(rcount),
                rdt,
                root,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let root = check_root(&c, root)?;
        let me = c.rank() == root;
        // The receive arguments are ignored at non-roots (MPI-4.1 §6.5): not validated.
        let rdt = if me { rdt } else { MPI_BYTE };
        let n = c.size() as i64;
        let inc = incoming(
            recv,
            if me { rcount as i64 * n } else { 0 },
            rdt,
            me && in_place(send),
        )?;
        let block = inc.bytes / n as usize;
        // SAFETY: the staged buffers hold their bytes for this blocking call.
        let rb = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
        let copy: Vec<u8>;
        let out;
        let sb = if in_place(send) {
            if !me {
                return Err(err(
                    MPI_ERR_BUFFER,
                    "MPI_IN_PLACE as sendbuf is only allowed at the root",
                ));
            }
            copy = rb[root as usize * block..(root as usize + 1) * block].to_vec();
            &copy[..]
        } else {
            out = outgoing(send, scount as i64, sdt)?;
            // SAFETY: `out` is the send data as `outgoing` staged it (its own copy, or the
            // caller's contiguous buffer): readable for out.bytes bytes during this call.
            unsafe { bytes(out.ptr as *const c_void, out.bytes)? }
        };
        c.gather(sb, rb, root)?;
        inc.finish()
    })();
    finish(comm, func, r)
}

/// MPI_Scatter (MPI-4.1 §6.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatter(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        scatter_as(
            "MPI_Scatter",
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

/// MPI_Scatter's work for the call `func` the user made (MPI_Scatter itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Scatter's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn scatter_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iscatter_as(
        func, send, scount, sdt, recv, rcount, rdt, root, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, Some(root)) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::blocks(
            crate::fast::BlockColl::Scatter,
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            Some(root),
            comm,
            func,
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Scatter's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::scatter requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::scatter(
                p,
                send,
                crate::inter_coll::Counts::Same(scount),
                sdt,
                recv,
                rcount,
                rdt,
                root,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let root = check_root(&c, root)?;
        let me = c.rank() == root;
        // The send arguments are ignored at non-roots (MPI-4.1 §6.6): not validated.
        let sdt = if me { sdt } else { MPI_BYTE };
        let n = c.size() as i64;
        let out = outgoing(send, if me { scount as i64 * n } else { 0 }, sdt)?;
        // SAFETY: the staged buffers hold their bytes for this blocking call.
        let sb = unsafe { bytes(out.ptr as *const c_void, out.bytes)? };
        if in_place(recv) {
            if !me {
                return Err(err(
                    MPI_ERR_BUFFER,
                    "MPI_IN_PLACE as recvbuf is only allowed at the root",
                ));
            }
            let mut scratch = vec![0u8; out.bytes / n as usize];
            return Ok(c.scatter(sb, &mut scratch, root)?);
        }
        let inc = incoming(recv, rcount as i64, rdt, false)?;
        // SAFETY: `inc` is the receive buffer as `incoming` staged it (its own, or the caller's
        // contiguous one): writable for inc.bytes bytes and apart from the send data (MPI
        // forbids overlap; MPI_IN_PLACE returned above).
        let rb = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
        c.scatter(sb, rb, root)?;
        inc.finish()
    })();
    finish(comm, func, r)
}

/// MPI_Allgather (MPI-4.1 §6.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgather(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { allgather_as("MPI_Allgather", send, scount, sdt, recv, rcount, rdt, comm) }
}

/// MPI_Allgather's work for the call `func` the user made (MPI_Allgather itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Allgather's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allgather_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iallgather_as(
        func, send, scount, sdt, recv, rcount, rdt, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, None) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::blocks(
            crate::fast::BlockColl::Allgather,
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            None,
            comm,
            func,
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Allgather's contract for the caller's buffers, counts and datatypes,
        // which inter_coll::allgather requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::allgather(
                p,
                send,
                scount,
                sdt,
                recv,
                crate::inter_coll::Counts::Same(rcount),
                rdt,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let n = c.size() as i64;
        let inc = incoming(recv, rcount as i64 * n, rdt, in_place(send))?;
        let block = inc.bytes / n as usize;
        // SAFETY: the staged buffers hold their bytes for this blocking call.
        let rb = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
        let copy: Vec<u8>;
        let out;
        let sb = if in_place(send) {
            let me = c.rank() as usize;
            copy = rb[me * block..(me + 1) * block].to_vec();
            &copy[..]
        } else {
            out = outgoing(send, scount as i64, sdt)?;
            // SAFETY: `out` is the send data as `outgoing` staged it (its own copy, or the
            // caller's contiguous buffer): readable for out.bytes bytes during this call.
            unsafe { bytes(out.ptr as *const c_void, out.bytes)? }
        };
        c.allgather(sb, rb)?;
        inc.finish()
    })();
    finish(comm, func, r)
}

/// MPI_Alltoall (MPI-4.1 §6.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoall(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { alltoall_as("MPI_Alltoall", send, scount, sdt, recv, rcount, rdt, comm) }
}

/// MPI_Alltoall's work for the call `func` the user made (MPI_Alltoall itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Alltoall's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoall_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ialltoall_as(
        func, send, scount, sdt, recv, rcount, rdt, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, None) {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::blocks(
            crate::fast::BlockColl::Alltoall,
            send,
            scount,
            sdt,
            recv,
            rcount,
            rdt,
            None,
            comm,
            func,
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Alltoall's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::alltoall requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::alltoall(
                p,
                send,
                crate::inter_coll::Counts::Same(scount),
                sdt,
                recv,
                crate::inter_coll::Counts::Same(rcount),
                rdt,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let n = c.size() as i64;
        let inc = incoming(recv, rcount as i64 * n, rdt, in_place(send))?;
        // SAFETY: the staged buffers hold their bytes for this blocking call.
        let rb = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
        let copy: Vec<u8>;
        let out;
        let sb = if in_place(send) {
            copy = rb.to_vec();
            &copy[..]
        } else {
            out = outgoing(send, scount as i64 * n, sdt)?;
            // SAFETY: `out` is the send data as `outgoing` staged it (its own copy, or the
            // caller's contiguous buffer): readable for out.bytes bytes during this call.
            unsafe { bytes(out.ptr as *const c_void, out.bytes)? }
        };
        c.alltoall(sb, rb)?;
        inc.finish()
    })();
    finish(comm, func, r)
}

/// Counts in bytes: `n` entries of `p` times `unit`; a negative entry is MPI_ERR_COUNT.
fn scaled(p: *const c_int, n: usize, unit: usize, what: &str) -> R<Vec<usize>> {
    ints(p, n, what)?
        .iter()
        .map(|&x| {
            usize::try_from(x)
                .map_err(|_| err(MPI_ERR_COUNT, format!("{what} has a negative entry {x}")))?
                .checked_mul(unit)
                .ok_or_else(|| err(MPI_ERR_COUNT, format!("{what} entry {x} overflows")))
        })
        .collect()
}

/// The caller's per-rank int array `p` of `n` entries, or MPI_ERR_ARG naming it if NULL.
fn ints<'a>(p: *const c_int, n: usize, what: &str) -> R<&'a [c_int]> {
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: the array holds one entry per rank (the caller's contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Where a v-collective's blocks lie around its buffer pointer. MPI-4.1 §6.5 measures
/// displacements from the buffer and lets them be negative: only the bytes the blocks
/// address must be valid. The runtime gets a slice starting at the lowest of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Offset in bytes from the buffer pointer of the lowest byte a non-empty block
    /// touches (0 when every block is empty).
    pub(crate) lowest: isize,
    /// Bytes from that byte to the end of the highest-reaching block.
    pub(crate) span: usize,
}

impl Placed {
    /// The lowest byte a block touches, for buffer `buf`.
    pub(crate) fn base(self, buf: *const c_void) -> *const u8 {
        (buf as *const u8).wrapping_offset(self.lowest)
    }
}

/// Places blocks of `counts` bytes at the caller's displacements `displs` (each in units
/// of `unit` bytes, any sign): writes into `rel` each block's displacement in bytes from
/// the lowest byte any non-empty block touches, and returns where that byte lies. An empty
/// block touches nothing whatever its displacement (MPI gives it none): its `rel` is 0 and
/// it does not widen the span. None when an offset does not fit an `isize`. Allocates
/// nothing (the fast paths call it).
pub(crate) fn place(
    counts: &[usize],
    displs: &[c_int],
    unit: usize,
    rel: &mut [usize],
) -> Option<Placed> {
    let unit = isize::try_from(unit).ok()?;
    let (mut lo, mut hi) = (isize::MAX, isize::MIN);
    for ((r, &c), &d) in rel.iter_mut().zip(counts).zip(displs) {
        *r = 0;
        if c > 0 {
            let start = (d as isize).checked_mul(unit)?;
            // The start itself for now; made relative to `lo` below.
            *r = start as usize;
            lo = lo.min(start);
            hi = hi.max(start.checked_add(isize::try_from(c).ok()?)?);
        }
    }
    if lo > hi {
        return Some(Placed { lowest: 0, span: 0 });
    }
    let span = hi.checked_sub(lo)? as usize;
    for (r, &c) in rel.iter_mut().zip(counts) {
        if c > 0 {
            // start - lo, which is in 0..span: two's complement makes the wrapping
            // difference of the stored starts exact.
            *r = r.wrapping_sub(lo as usize);
        }
    }
    Some(Placed { lowest: lo, span })
}

/// [`place`] for the checked paths: the caller's `n` displacements `displs` (named `what`)
/// in units of `unit` bytes around blocks of `counts` bytes, as displacements from the
/// lowest touched byte and where that byte lies.
pub(crate) fn placed(
    counts: &[usize],
    displs: *const c_int,
    unit: usize,
    what: &str,
) -> R<(Vec<usize>, Placed)> {
    let d = ints(displs, counts.len(), what)?;
    let mut rel = vec![0; counts.len()];
    let p = place(counts, d, unit, &mut rel).ok_or_else(|| {
        err(
            MPI_ERR_ARG,
            format!("{what}: a block lies beyond the address space"),
        )
    })?;
    Ok((rel, p))
}

/// # Safety
/// The `p.span` bytes from `p.base(buf)` are readable (the blocks `p` places lie in the
/// caller's buffer).
unsafe fn placed_bytes<'a>(buf: *const c_void, p: Placed) -> R<&'a [u8]> {
    if buf.is_null() && p.span > 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("buffer is NULL for {} bytes", p.span),
        ));
    }
    // SAFETY: the caller's contract.
    unsafe { bytes(p.base(buf) as *const c_void, p.span) }
}

/// # Safety
/// The `p.span` bytes from `p.base(buf)` are writable and unaliased.
unsafe fn placed_bytes_mut<'a>(buf: *mut c_void, p: Placed) -> R<&'a mut [u8]> {
    if buf.is_null() && p.span > 0 {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("buffer is NULL for {} bytes", p.span),
        ));
    }
    // SAFETY: the caller's contract.
    unsafe { bytes_mut(p.base(buf) as *mut c_void, p.span) }
}

/// MPI_Gatherv (MPI-4.1 §6.5).
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        gatherv_as(
            "MPI_Gatherv",
            send,
            scount,
            sdt,
            recv,
            rcounts,
            displs,
            rdt,
            root,
            comm,
        )
    }
}

/// MPI_Gatherv's work for the call `func` the user made (MPI_Gatherv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Gatherv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gatherv_as(
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
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::igatherv_as(
        func, send, scount, sdt, recv, rcounts, displs, rdt, root, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, Some(root)) {
        return rc;
    }
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Gatherv's rules, the contract fast::gatherv
        // requires.
        unsafe {
            crate::fast::gatherv(send, scount, sdt, recv, rcounts, displs, rdt, root, comm)
        }
    {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Gatherv's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::gather requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::gather(
                p,
                send,
                scount,
                sdt,
                recv,
                crate::inter_coll::Counts::V(rcounts, displs),
                rdt,
                root,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let root = check_root(&c, root)?;
        let n = c.size() as usize;
        let (mut counts, mut ds) = (vec![0; n], vec![0; n]);
        let mut rb: &mut [u8] = &mut [];
        if c.rank() == root {
            let (es, _) = bytes_of(1, rdt)?;
            counts = scaled(rcounts, n, es, "recvcounts")?;
            let at;
            (ds, at) = placed(&counts, displs, es, "displs")?;
            // SAFETY: MPI buffer contract: `recv` is writable for every block.
            rb = unsafe { placed_bytes_mut(recv, at)? };
        }
        let copy: Vec<u8>;
        let sb = if in_place(send) {
            let me = c.rank() as usize;
            copy = rb[ds[me]..ds[me] + counts[me]].to_vec();
            &copy[..]
        } else {
            let (sn, _) = bytes_of(scount as i64, sdt)?;
            // SAFETY: MPI_Gatherv's contract: `send` holds scount items of sdt, which bytes_of
            // accepts only without holes: sn contiguous bytes.
            unsafe { bytes(send, sn)? }
        };
        Ok(c.gatherv(sb, rb, &counts, &ds, root)?)
    })();
    finish(comm, func, r)
}

/// MPI_Scatterv (MPI-4.1 §6.6).
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        scatterv_as(
            "MPI_Scatterv",
            send,
            scounts,
            displs,
            sdt,
            recv,
            rcount,
            rdt,
            root,
            comm,
        )
    }
}

/// MPI_Scatterv's work for the call `func` the user made (MPI_Scatterv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Scatterv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn scatterv_as(
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
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iscatterv_as(
        func, send, scounts, displs, sdt, recv, rcount, rdt, root, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, rcount as i64, Some(root)) {
        return rc;
    }
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Scatterv's rules, the contract
        // fast::scatterv requires.
        unsafe {
            crate::fast::scatterv(send, scounts, displs, sdt, recv, rcount, rdt, root, comm)
        }
    {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Scatterv's contract for the caller's buffers, counts and datatypes, which
        // inter_coll::scatter requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::scatter(
                p,
                send,
                crate::inter_coll::Counts::V(scounts, displs),
                sdt,
                recv,
                rcount,
                rdt,
                root,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = scatterv(send, scounts, displs, sdt, recv, rcount, rdt, root, comm);
    finish(comm, func, r)
}

/// MPI_Scatterv's general path on an intracommunicator (no fast path, no aliasing check),
/// for this library's own callers inside an MPI call.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scatterv(
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> R<()> {
    let c = comm_of(comm, "MPI_Scatterv")?;
    let root = check_root(&c, root)?;
    let n = c.size() as usize;
    let (mut counts, mut ds) = (vec![0; n], vec![0; n]);
    let mut sb: &[u8] = &[];
    let packed: Vec<u8>;
    if c.rank() == root {
        match bytes_of(1, sdt) {
            Ok((es, _)) => {
                counts = scaled(scounts, n, es, "sendcounts")?;
                let at;
                (ds, at) = placed(&counts, displs, es, "displs")?;
                // SAFETY: MPI buffer contract: `send` holds every block.
                sb = unsafe { placed_bytes(send, at)? };
            }
            // A type with holes: the blocks are packed one after another.
            Err(e) if e.class == MPI_ERR_UNSUPPORTED_OPERATION => {
                (packed, counts, ds) = pack_v_blocks(send, scounts, displs, sdt, n)?;
                sb = &packed;
            }
            Err(e) => return Err(e),
        }
    }
    if in_place(recv) {
        let mut scratch = vec![0; counts[c.rank() as usize]];
        return Ok(c.scatterv(sb, &counts, &ds, &mut scratch, root)?);
    }
    let inc = incoming(recv, rcount as i64, rdt, false)?;
    // SAFETY: the staged buffer holds `inc.bytes` bytes for this blocking call.
    let rb = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
    c.scatterv(sb, &counts, &ds, rb, root)?;
    inc.finish()
}

/// The `n` blocks of a v-collective's send side whose datatype has holes, packed one after
/// another: (packed bytes, bytes per block, offset of each block).
pub(crate) fn pack_v_blocks(
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    n: usize,
) -> R<(Vec<u8>, Vec<usize>, Vec<usize>)> {
    let items = scaled(scounts, n, 1, "sendcounts")?;
    if displs.is_null() {
        return Err(err(MPI_ERR_ARG, "displs is NULL"));
    }
    let ext = crate::dtype::map_of(sdt)?.extent() as isize;
    let (mut packed, mut counts, mut ds) = (Vec::new(), vec![0; n], vec![0; n]);
    for (i, &k) in items.iter().enumerate() {
        // SAFETY: one displacement per rank (the caller's contract).
        let d = unsafe { *displs.add(i) } as isize;
        let p = (send as *const u8).wrapping_offset(d * ext);
        let o = outgoing(p as *const c_void, k as i64, sdt)?;
        ds[i] = packed.len();
        counts[i] = o.bytes;
        // SAFETY: the staged block holds `o.bytes` bytes.
        packed.extend_from_slice(unsafe { bytes(o.ptr as *const c_void, o.bytes)? });
    }
    Ok((packed, counts, ds))
}

/// MPI_Allgatherv (MPI-4.1 §6.7).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        allgatherv_as(
            "MPI_Allgatherv",
            send,
            scount,
            sdt,
            recv,
            rcounts,
            displs,
            rdt,
            comm,
        )
    }
}

/// MPI_Allgatherv's work for the call `func` the user made (MPI_Allgatherv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Allgatherv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allgatherv_as(
    func: &str,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::iallgatherv_as(
        func, send, scount, sdt, recv, rcounts, displs, rdt, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) = crate::coll::aliased(comm, func, send, recv, scount as i64, None) {
        return rc;
    }
    if let Some(rc) =
        // SAFETY: the caller's arguments follow MPI_Allgatherv's rules, the contract
        // fast::allgatherv requires.
        unsafe {
            crate::fast::allgatherv(send, scount, sdt, recv, rcounts, displs, rdt, comm)
        }
    {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Allgatherv's contract for the caller's buffers, counts and datatypes,
        // which inter_coll::allgather requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::allgather(
                p,
                send,
                scount,
                sdt,
                recv,
                crate::inter_coll::Counts::V(rcounts, displs),
                rdt,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let n = c.size() as usize;
        let (es, _) = bytes_of(1, rdt)?;
        let counts = scaled(rcounts, n, es, "recvcounts")?;
        let (ds, at) = placed(&counts, displs, es, "displs")?;
        // SAFETY: MPI buffer contract: `recv` is writable for every block.
        let rb = unsafe { placed_bytes_mut(recv, at)? };
        let copy: Vec<u8>;
        let sb = if in_place(send) {
            let me = c.rank() as usize;
            copy = rb[ds[me]..ds[me] + counts[me]].to_vec();
            &copy[..]
        } else {
            let (sn, _) = bytes_of(scount as i64, sdt)?;
            // SAFETY: MPI_Allgatherv's contract: `send` holds scount items of sdt, which
            // bytes_of accepts only without holes: sn contiguous bytes.
            unsafe { bytes(send, sn)? }
        };
        Ok(c.allgatherv(sb, rb, &counts, &ds)?)
    })();
    finish(comm, func, r)
}

/// MPI_Alltoallv (MPI-4.1 §6.8).
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        alltoallv_as(
            "MPI_Alltoallv",
            send,
            scounts,
            sdispls,
            sdt,
            recv,
            rcounts,
            rdispls,
            rdt,
            comm,
        )
    }
}

/// MPI_Alltoallv's work for the call `func` the user made (MPI_Alltoallv itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Alltoallv's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallv_as(
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
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ialltoallv_as(
        func, send, scounts, sdispls, sdt, recv, rcounts, rdispls, rdt, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: scounts and rcounts are NULL or hold one count per rank of comm
        // (MPI_Alltoallv's contract), as aliased_v requires.
        unsafe { crate::coll::aliased_v(comm, func, send, recv, scounts, rcounts) }
    {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::alltoallv(
            send, scounts, sdispls, sdt, recv, rcounts, rdispls, rdt, None, comm, func,
        )
    } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Alltoallv's contract for the caller's buffers, counts and datatypes,
        // which inter_coll::alltoall requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::alltoall(
                p,
                send,
                crate::inter_coll::Counts::V(scounts, sdispls),
                sdt,
                recv,
                crate::inter_coll::Counts::V(rcounts, rdispls),
                rdt,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let n = c.size() as usize;
        let (res, _) = bytes_of(1, rdt)?;
        let rc = scaled(rcounts, n, res, "recvcounts")?;
        let (rd, rat) = placed(&rc, rdispls, res, "rdispls")?;
        // SAFETY: MPI buffer contract: `recv` is writable for every block.
        let rb = unsafe { placed_bytes_mut(recv, rat)? };
        if in_place(send) {
            let copy = rb.to_vec();
            return Ok(c.alltoallv(&copy, &rc, &rd, rb, &rc, &rd)?);
        }
        let (ses, _) = bytes_of(1, sdt)?;
        let sc = scaled(scounts, n, ses, "sendcounts")?;
        let (sd, sat) = placed(&sc, sdispls, ses, "sdispls")?;
        // SAFETY: MPI_Alltoallv's contract: every send block lies in `send`, so the bytes
        // from the lowest block's start to the highest block's end are readable.
        let sb = unsafe { placed_bytes(send, sat)? };
        Ok(c.alltoallv(sb, &sc, &sd, rb, &rc, &rd)?)
    })();
    finish(comm, func, r)
}

/// The weft operation for MPI operation `op` on elements of kind `tk` (datatype `dt`).
pub(crate) fn make_op(tk: TypeKind, op: Handle, dt: Handle) -> R<Op> {
    if op == MPI_OP_NULL {
        return Err(err(MPI_ERR_OP, "op is MPI_OP_NULL"));
    }
    crate::dtype::check_op(op, dt)?;
    if !(MPI_SUM..=MPI_NO_OP).contains(&op) && crate::dtype::predefined(dt).is_none() {
        return Err(err(
            MPI_ERR_UNSUPPORTED_OPERATION,
            format!("user operation on derived datatype {dt:#x}"),
        ));
    }
    by_kind!(tk, weft_op, op, dt)
}

/// The root as a rank of `c`, or MPI_ERR_ROOT.
pub(crate) fn root_of(c: &Comm, root: c_int) -> R<u32> {
    check_root(c, root)
}

/// Elements of kind `tk` in one item of `dt`, for counts given in items.
fn elems_per_item(dt: Handle, tk: TypeKind) -> R<usize> {
    let (size, _) = bytes_of(1, dt)?;
    Ok(size / elem_bytes(tk))
}

/// Arguments of MPI_Reduce_scatter checked and converted: the staged send bytes, the
/// receive bytes, the counts in elements, the kind and the operation.
#[allow(clippy::type_complexity)]
pub(crate) fn reduce_scatter_args(
    c: &Comm,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
) -> R<(Vec<u8>, usize, usize, Vec<usize>, TypeKind, Op)> {
    let n = c.size() as usize;
    let (_, tk) = bytes_of(1, dt)?;
    let tk = tk.ok_or_else(|| err(MPI_ERR_TYPE, format!("datatype {dt:#x} cannot be reduced")))?;
    let per = elems_per_item(dt, tk)?;
    let counts: Vec<usize> = scaled(rcounts, n, per, "recvcounts")?;
    let es = elem_bytes(tk);
    let total: usize = counts.iter().sum::<usize>() * es;
    let mine = counts[c.rank() as usize] * es;
    let wop = make_op(tk, op, dt)?;
    // The send side is copied: in place it is the receive buffer itself (larger than the
    // result), and a copy keeps the nonblocking form's buffer alive in its request.
    // SAFETY: MPI requires `send` (or `recv` in place) to hold every rank's counts.
    let src = if in_place(send) {
        // SAFETY: in place, MPI requires `recv` to hold every rank's counts: `total` bytes.
        unsafe { bytes(recv as *const c_void, total)? }.to_vec()
    } else {
        // SAFETY: MPI requires `send` to hold every rank's counts: `total` bytes.
        unsafe { bytes(send, total)? }.to_vec()
    };
    if recv.is_null() && mine > 0 {
        return Err(err(MPI_ERR_BUFFER, "recvbuf is NULL"));
    }
    Ok((src, recv as usize, mine, counts, tk, wop))
}

/// MPI_Reduce_scatter (MPI-4.1 §6.10.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_scatter(
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { reduce_scatter_as("MPI_Reduce_scatter", send, recv, rcounts, dt, op, comm) }
}

/// MPI_Reduce_scatter's work for the call `func` the user made (MPI_Reduce_scatter itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Reduce_scatter's contract.
#[inline(always)]
pub(crate) unsafe fn reduce_scatter_as(
    func: &str,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ireduce_scatter_as(
        func, send, recv, rcounts, dt, op, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: scounts and rcounts are NULL or hold one count per rank of comm
        // (MPI_Reduce_scatter's contract), as aliased_v requires.
        unsafe { crate::coll::aliased_v(comm, func, send, recv, rcounts, rcounts) }
    {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe { crate::fast::reduce_scatter(send, recv, rcounts, dt, op, comm) } {
        return rc;
    }
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Reduce_scatter's contract for the caller's buffers, counts and datatypes,
        // which inter_coll::reduce_scatter_v requires and passes on to the calls it makes.
        return finish(comm, func, unsafe {
            crate::inter_coll::reduce_scatter_v(
                p,
                send,
                recv,
                rcounts,
                dt,
                op,
                crate::inter_coll::Mode::Blocking,
            )
        });
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let (src, rp, mine, counts, tk, wop) =
            reduce_scatter_args(&c, send, recv, rcounts, dt, op)?;
        // SAFETY: `recv` holds this rank's count (MPI's contract).
        let rb = unsafe { bytes_mut(rp as *mut c_void, mine)? };
        Ok(c.reduce_scatter_bytes(&src, rb, &counts, tk, &wop)?)
    })();
    finish(comm, func, r)
}

/// MPI_Alltoallw with datatypes that have holes: each send block is packed, the packed
/// blocks are exchanged with weft's alltoallv, and each received block is unpacked into its
/// place. Displacements are in bytes, of either sign.
///
/// # Safety
/// The per-rank arrays hold one entry per rank; the buffers follow MPI's contract.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoallw_staged(
    c: &Comm,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
) -> R<()> {
    let n = c.size() as usize;
    let sc = scaled(scounts, n, 1, "sendcounts")?;
    let sd = ints(sdispls, n, "sdispls")?;
    let rc = scaled(rcounts, n, 1, "recvcounts")?;
    let rd = ints(rdispls, n, "rdispls")?;
    if stypes.is_null() || rtypes.is_null() {
        return Err(err(MPI_ERR_ARG, "sendtypes or recvtypes is NULL"));
    }
    let mut sbuf = Vec::new();
    let (mut sbytes, mut soffs) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        // SAFETY: one type per rank; the block lies in the user's send buffer.
        let (t, p) = unsafe {
            (
                *stypes.add(i),
                (send as *const u8).wrapping_offset(sd[i] as isize),
            )
        };
        let o = outgoing(p as *const c_void, sc[i] as i64, t)?;
        soffs.push(sbuf.len());
        sbytes.push(o.bytes);
        // SAFETY: `out` is the send data as `outgoing` staged it (its own copy, or the caller's
        // contiguous buffer): readable for out.bytes bytes during this call.
        sbuf.extend_from_slice(unsafe { bytes(o.ptr as *const c_void, o.bytes)? });
    }
    let mut incs = Vec::with_capacity(n);
    let (mut rbytes, mut roffs, mut total) = (Vec::with_capacity(n), Vec::with_capacity(n), 0);
    for i in 0..n {
        // SAFETY: as above, for the receive buffer.
        let (t, p) = unsafe {
            (
                *rtypes.add(i),
                (recv as *mut u8).wrapping_offset(rd[i] as isize),
            )
        };
        let inc = incoming(p as *mut c_void, rc[i] as i64, t, false)?;
        roffs.push(total);
        rbytes.push(inc.bytes);
        total += inc.bytes;
        incs.push(inc);
    }
    let mut rbuf = vec![0u8; total];
    c.alltoallv(&sbuf, &sbytes, &soffs, &mut rbuf, &rbytes, &roffs)?;
    for (i, inc) in incs.into_iter().enumerate() {
        // SAFETY: the staged block holds `inc.bytes` bytes.
        let dst = unsafe { bytes_mut(inc.ptr as *mut c_void, inc.bytes)? };
        dst.copy_from_slice(&rbuf[roffs[i]..roffs[i] + rbytes[i]]);
        inc.finish()?;
    }
    Ok(())
}

/// MPI_Alltoallw (MPI-4.1 §6.8): per-peer datatypes and byte displacements; each type
/// must be laid out without holes here.
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallw(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
) -> c_int {
    // SAFETY: the caller's MPI contract, passed on.
    unsafe {
        alltoallw_as(
            "MPI_Alltoallw",
            send,
            scounts,
            sdispls,
            stypes,
            recv,
            rcounts,
            rdispls,
            rtypes,
            comm,
        )
    }
}

/// MPI_Alltoallw's work for the call `func` the user made (MPI_Alltoallw itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs the twin check and enters itself.
///
/// # Safety
/// MPI_Alltoallw's contract.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallw_as(
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
) -> c_int {
    crate::threads::blocking_by_twin!(crate::icoll::ialltoallw_as(
        func, send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm
    ));
    let _entered = crate::threads::enter_untwinned();
    if let Some(rc) =
        // SAFETY: scounts and rcounts are NULL or hold one count per rank of comm
        // (MPI_Alltoallw's contract), as aliased_v requires.
        unsafe { crate::coll::aliased_v(comm, func, send, recv, scounts, rcounts) }
    {
        return rc;
    }
    // SAFETY: the caller's MPI contract, passed on.
    if let Some(rc) = unsafe {
        crate::fast::alltoallv(
            send,
            scounts,
            sdispls,
            MPI_DATATYPE_NULL,
            recv,
            rcounts,
            rdispls,
            MPI_DATATYPE_NULL,
            Some((stypes, rtypes)),
            comm,
            func,
        )
    } {
        return rc;
    }
    // SAFETY: this function's contract is MPI_Alltoallw's, which alltoallw requires.
    let r = unsafe {
        alltoallw(
            send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes, comm, func,
        )
    };
    finish(comm, func, r)
}

/// The body of MPI_Alltoallw and MPI_Ialltoallw (`func` names the caller).
///
/// # Safety
/// MPI's contract for MPI_Alltoallw's arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallw(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    comm: Handle,
    func: &str,
) -> R<()> {
    if let Some(p) = crate::inter_coll::parts(comm) {
        // SAFETY: MPI_Alltoallw's contract for the caller's buffers, counts and datatypes,
        // which inter_coll::alltoallw requires and passes on to the calls it makes.
        return unsafe {
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
                crate::inter_coll::Mode::Blocking,
            )
        };
    }
    let r = (|| {
        let c = comm_of(comm, func)?;
        let n = c.size() as usize;
        let bytes_per = |counts: *const c_int, types: *const Handle, what: &str| -> R<Vec<usize>> {
            let cs = scaled(counts, n, 1, what)?;
            if types.is_null() {
                return Err(err(MPI_ERR_ARG, format!("types for {what} is NULL")));
            }
            (0..n)
                // SAFETY: one type per rank (the caller's contract).
                .map(|i| Ok(bytes_of(cs[i] as i64, unsafe { *types.add(i) })?.0))
                .collect()
        };
        let rc = match bytes_per(rcounts, rtypes, "recvcounts") {
            Ok(rc) => rc,
            // A type with holes: every block goes through a contiguous staging buffer.
            Err(e) if e.class == MPI_ERR_UNSUPPORTED_OPERATION && !in_place(send) => {
                // SAFETY: the caller's per-rank arrays and buffers (MPI contract).
                return unsafe {
                    alltoallw_staged(
                        &c, send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes,
                    )
                };
            }
            Err(e) => return Err(e),
        };
        let (rd, rat) = placed(&rc, rdispls, 1, "rdispls")?;
        // SAFETY: MPI buffer contract: `recv` is writable for every block.
        let rb = unsafe { placed_bytes_mut(recv, rat)? };
        if in_place(send) {
            let copy = rb.to_vec();
            return Ok(c.alltoallv(&copy, &rc, &rd, rb, &rc, &rd)?);
        }
        let sc = match bytes_per(scounts, stypes, "sendcounts") {
            Ok(sc) => sc,
            Err(e) if e.class == MPI_ERR_UNSUPPORTED_OPERATION => {
                // SAFETY: as above.
                return unsafe {
                    alltoallw_staged(
                        &c, send, scounts, sdispls, stypes, recv, rcounts, rdispls, rtypes,
                    )
                };
            }
            Err(e) => return Err(e),
        };
        let (sd, sat) = placed(&sc, sdispls, 1, "sdispls")?;
        // SAFETY: MPI_Alltoallw's contract: every send block lies in `send`, so the bytes
        // from the lowest block's start to the highest block's end are readable.
        let sb = unsafe { placed_bytes(send, sat)? };
        Ok(c.alltoallv(sb, &sc, &sd, rb, &rc, &rd)?)
    })();
    r
}

/// Counts of a v-collective in bytes, its displacements in bytes from the lowest byte a
/// block touches, and where that byte lies around the buffer pointer (see [`place`]).
pub(crate) fn v_bytes(
    n: usize,
    counts: *const c_int,
    displs: *const c_int,
    dt: Handle,
    what: &str,
) -> R<(Vec<usize>, Vec<usize>, Placed)> {
    let (es, _) = bytes_of(1, dt)?;
    let c = scaled(counts, n, es, what)?;
    let (d, at) = placed(&c, displs, es, "displs")?;
    Ok((c, d, at))
}

/// `inout = in op inout` on `count` items of `dt` (MPI-4.1 §6.9.7): a user operation is
/// called on the items as they are; a predefined one runs weft's kernel on the type's basic
/// elements. For MPI_Reduce_local and for completions that combine received items.
///
/// # Safety
/// Both buffers hold `count` items of `dt` and do not overlap.
pub(crate) unsafe fn reduce_local(
    s: &State,
    inbuf: *mut c_void,
    inout: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    if !(MPI_SUM..=MPI_NO_OP).contains(&op) {
        let f = handle_index(K_OP, op)
            .and_then(|i| s.ops.get(i))
            .copied()
            .ok_or_else(|| err(MPI_ERR_OP, format!("operation handle {op:#x} is not valid")))?;
        // SAFETY: the buffers hold `count` items of `dt`.
        unsafe { f.call(inbuf, inout, count as i64, dt) };
        return Ok(());
    }
    // MPI_CHAR reduces as the signed 8-bit integer it is in C (make_op refuses it when
    // WEFT_CHAR_REDUCTIONS asks for the standard's strict table).
    let map = match crate::dtype::predefined(dt) {
        Some((1, Some(TypeKind::I8))) => weft::dtype::TypeMap::basic(weft::dtype::BasicKind::I8),
        _ => crate::dtype::map_of(dt)?,
    };
    let (tk, _) = map.reduction_kind().ok_or_else(|| {
        err(
            MPI_ERR_TYPE,
            format!("datatype {dt:#x} is not built from one basic type weft can reduce"),
        )
    })?;
    let wop = make_op(tk, op, dt)?;
    // SAFETY: both buffers hold `count` items of `dt` (the caller's contract); they do not
    // overlap.
    let (a, ai) = unsafe { crate::dtype::user_span(&map, inbuf, count as u64)? };
    // SAFETY: as for `inbuf`: `inout` holds `count` items of `dt` and does not overlap it.
    let (b, bi) = unsafe { crate::dtype::user_span(&map, inout, count as u64)? };
    Ok(weft::dtype::reduce_local(
        &wop,
        &map,
        count as u64,
        (&*a, ai),
        (b, bi),
    )?)
}

/// MPI_Reduce_local (MPI-4.1 §6.9.7): `inoutbuf = inbuf op inoutbuf` on this process. A
/// user operation is called on the buffers as they are; a predefined one runs weft's
/// kernel on the elements of a type built from one basic type.
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce_local(
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    // SAFETY: the caller's MPI contract, passed on.
    unsafe { reduce_local_as("MPI_Reduce_local", inbuf, inoutbuf, count, dt, op) }
}

/// MPI_Reduce_local's work for the call `func` the user made (MPI_Reduce_local itself or a call
/// built on it), which its errors name and whose handler they reach;
/// runs inside the caller's hold (crate::threads::enter).
///
/// # Safety
/// MPI_Reduce_local's contract.
#[inline(always)]
pub(crate) unsafe fn reduce_local_as(
    func: &str,
    inbuf: *const c_void,
    inoutbuf: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> c_int {
    let r = (|| {
        if count < 0 {
            return Err(err(MPI_ERR_COUNT, format!("count {count} is negative")));
        }
        if op == MPI_OP_NULL {
            return Err(err(MPI_ERR_OP, "op is MPI_OP_NULL"));
        }
        crate::dtype::map_of(dt)?;
        let s = state(func)?;
        // SAFETY: the caller's MPI contract, passed on.
        unsafe { reduce_local(s, inbuf as *mut c_void, inoutbuf, count, dt, op) }
    })();
    finish(MPI_COMM_WORLD, func, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_placed_from_the_lowest_byte_they_touch() {
        let mut rel = [9; 4];
        // Blocks of 8, 0, 4 and 4 bytes at items -3, wild, 1 and -1 of 4 bytes.
        let at = place(&[8, 0, 4, 4], &[-3, i32::MIN, 1, -1], 4, &mut rel).unwrap();
        assert_eq!(
            at,
            Placed {
                lowest: -12,
                span: 20
            }
        );
        assert_eq!(rel, [0, 0, 16, 8]);
        let buf = [0u8; 32];
        let p = buf[16..].as_ptr() as *const c_void;
        assert_eq!(at.base(p), buf[4..].as_ptr());
    }

    #[test]
    fn empty_blocks_place_nothing_and_offsets_that_overflow_are_refused() {
        let mut rel = [7; 2];
        let none = place(&[0, 0], &[-5, i32::MAX], 8, &mut rel).unwrap();
        assert_eq!(none, Placed::default());
        assert_eq!(rel, [0, 0]);
        let mut one = [0; 1];
        assert!(place(&[usize::MAX], &[1], 1, &mut one).is_none());
        assert!(place(&[1], &[i32::MAX], usize::MAX / 2, &mut one).is_none());
        // Each start fits, the distance between them does not.
        let mut two = [0; 2];
        let unit = 1 << 32;
        assert!(place(&[1, 1], &[i32::MIN, i32::MAX], unit, &mut two).is_none());
        // Positive displacements only: the slice starts at the first block, not the buffer.
        let at = place(&[2], &[3], 2, &mut one).unwrap();
        assert_eq!(at, Placed { lowest: 6, span: 2 });
        assert_eq!(one, [0]);
    }
}
