//! Fast path for predefined contiguous datatypes, of point-to-point (MPI_Send, MPI_Recv,
//! their synchronous, ready and large-count forms, MPI_Isend, MPI_Irecv, MPI_Sendrecv, and
//! MPI_Wait / MPI_Test on the requests those start) and of the blocking collectives on
//! intracommunicators (MPI_Barrier, MPI_Bcast, MPI_Reduce and MPI_Allreduce with predefined
//! operations, MPI_Gather, MPI_Scatter, MPI_Allgather, MPI_Alltoall with one datatype and
//! count on both sides, their v forms and MPI_Alltoallw with one datatype everywhere,
//! MPI_Reduce_scatter(_block), MPI_Scan and MPI_Exscan with predefined operations, not in
//! place): the element size (and a reduction's element kind and the operations defined on
//! it) comes from a table indexed by the predefined handle (no layout lookup, no staging;
//! a predefined operation is a static `Op`, borrowed),
//! blocking calls go straight to weft's blocking calls (no request in between), and no error
//! text travels on the way.
//!
//! Each function either handles the call completely or returns `None` before it has done
//! anything; the entry point then runs the checked path of `p2p.rs`, which finds what is
//! wrong and reports it with its message (or handles what the fast path leaves out:
//! MPI_PROC_NULL, derived and padded datatypes, persistent and collective requests). So
//! every check MPI requires still happens, once, where the message is made. Errors weft
//! itself reports once the operation has started (a truncated message, a dead peer) go
//! through [`raise_weft`], which builds the message on the error branch only.
//!
//! Nothing here allocates or makes a system call for a small message; the tables are built
//! at their first use, and the v-collectives convert their int counts and displacements
//! into a per-thread scratch vector that grows to the largest communicator and stays.
//! Depends on the state tables, the datatype layer (for the tables), the operation table
//! of `coll.rs` and the status helpers of `p2p.rs`.

use crate::coll::{place, Placed};
use crate::consts::*;
use crate::dtype::{layout, predefined, reduction_layout, Layout};
use crate::error::{raise, raise_weft};
use crate::p2p::{empty_status, from_weft, reap_detached, recv_tag, store, MpiStatus};
use crate::state::{handle_index, state_opt, ReqEntry, K_REQ};
use std::cell::{Cell, UnsafeCell};
use std::os::raw::{c_int, c_void};
use std::sync::LazyLock;
use weft::coll::{Op, TypeKind};
use weft::{Comm, ErrorKind, Status};

/// The first handle the table covers (MPI_DATATYPE_NULL; predefined datatypes follow it).
const FIRST: Handle = MPI_DATATYPE_NULL;
/// Handles covered: every predefined datatype of the standard ABI is below 0x300.
const SPAN: usize = 0x100;

/// Bytes per element of predefined datatype `FIRST + i` when its memory is its wire form
/// (the datatype layer lays it out contiguously); 0 for every other handle, which the
/// checked path handles (padded value-index pairs, which are packed, and non-datatypes).
static ELEMENT_BYTES: LazyLock<[u8; SPAN]> = LazyLock::new(|| {
    let mut t = [0u8; SPAN];
    for (i, b) in t.iter_mut().enumerate() {
        let h = FIRST + i;
        // Only predefined handles are asked, so `layout` never reaches the state.
        if predefined(h).is_some() {
            if let Ok(Layout::Contig { size, .. }) = layout(h) {
                *b = u8::try_from(size).unwrap_or(0);
            }
        }
    }
    t
});

/// The element size of `dt` when the fast path takes it.
#[inline]
pub fn element_bytes(dt: Handle) -> Option<usize> {
    let i = dt.wrapping_sub(FIRST);
    if i >= SPAN {
        return None;
    }
    match ELEMENT_BYTES[i] {
        0 => None,
        b => Some(b as usize),
    }
}

/// The bytes of `count` items of `size` bytes at `buf`, when the fast path takes them: the
/// count is not negative, the product fits, and the buffer is not NULL unless empty.
#[inline]
fn span(buf: *const c_void, count: i64, size: usize) -> Option<usize> {
    let n = usize::try_from(count).ok()?;
    let bytes = n.checked_mul(size)?;
    (bytes == 0 || !buf.is_null()).then_some(bytes)
}

/// A rank of a communicator (or remote group) of `size` ranks.
#[inline]
fn is_rank(peer: c_int, size: u32) -> bool {
    peer >= 0 && (peer as u32) < size
}

/// A receive's source: a rank or MPI_ANY_SOURCE (MPI_PROC_NULL goes the checked way).
#[inline]
fn is_source(peer: c_int, size: u32) -> bool {
    peer == MPI_ANY_SOURCE || is_rank(peer, size)
}

/// A receive's tag: not negative, or MPI_ANY_TAG.
#[inline]
fn is_recv_tag(tag: c_int) -> bool {
    tag >= 0 || tag == MPI_ANY_TAG
}

/// # Safety
/// For `n > 0`, `buf` is readable for `n` bytes while the slice is used.
#[inline]
unsafe fn bytes_at<'a>(buf: *const c_void, n: usize) -> &'a [u8] {
    if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(buf as *const u8, n) }
    }
}

/// MPI_Send, MPI_Rsend and MPI_Ssend (`synchronous`) and their `_c` forms.
///
/// # Safety
/// The MPI calling contract: `buf` holds `count` items of `dt`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn send(
    buf: *const c_void,
    count: i64,
    dt: Handle,
    dest: c_int,
    tag: c_int,
    comm: Handle,
    synchronous: bool,
    func: &str,
) -> Option<c_int> {
    let size = element_bytes(dt)?;
    let s = state_opt()?;
    let c = &s.comm_opt(comm)?.comm;
    if tag < 0 || !is_rank(dest, c.peer_size()) {
        return None;
    }
    let bytes = span(buf, count, size)?;
    // SAFETY: MPI requires `buf` to hold the items for the duration of this blocking call.
    let data = unsafe { bytes_at(buf, bytes) };
    let r = if synchronous {
        c.ssend(data, dest as u32, tag)
    } else {
        c.send(data, dest as u32, tag)
    };
    Some(match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_weft(comm, func, e),
    })
}

/// The status a failed receive reports: the matched message's source, tag and length for a
/// truncation (MPI-4.1 §3.2.5); other failures leave the status alone.
#[inline]
pub(crate) fn store_failed(status: *mut MpiStatus, e: &weft::Error, st: &Status) {
    if e.kind() == ErrorKind::Truncate {
        store(status, from_weft(st));
    }
}

/// MPI_Recv and MPI_Recv_c.
///
/// # Safety
/// The MPI calling contract: `buf` is writable for `count` items of `dt`; `status` is
/// writable or MPI_STATUS_IGNORE.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn recv(
    buf: *mut c_void,
    count: i64,
    dt: Handle,
    source: c_int,
    tag: c_int,
    comm: Handle,
    status: *mut MpiStatus,
    func: &str,
) -> Option<c_int> {
    let size = element_bytes(dt)?;
    let s = state_opt()?;
    let c = &s.comm_opt(comm)?.comm;
    if !is_recv_tag(tag) || !is_source(source, c.peer_size()) {
        return None;
    }
    let bytes = span(buf, count, size)?;
    let mut st = Status::default();
    // SAFETY: MPI requires `buf` to be writable for the items and unaliased during the call.
    let r = unsafe { c.raw_recv(buf as *mut u8, bytes, source, recv_tag(tag), &mut st) };
    if let Err(e) = r {
        store_failed(status, &e, &st);
        return Some(raise_weft(comm, func, e));
    }
    // Messages that preceded this one may have completed freed receives.
    if !s.detached.is_empty() {
        if let Err(e) = reap_detached(s) {
            return Some(raise(comm, func, e));
        }
    }
    store(status, from_weft(&st));
    Some(MPI_SUCCESS)
}

/// MPI_Sendrecv.
///
/// # Safety
/// The MPI calling contract: `sbuf` holds `scount` items of `sdt`, `rbuf` is writable for
/// `rcount` items of `rdt` and does not overlap `sbuf`; `status` writable or ignored.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn sendrecv(
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
) -> Option<c_int> {
    let ssize = element_bytes(sdt)?;
    let rsize = element_bytes(rdt)?;
    let s = state_opt()?;
    let c = &s.comm_opt(comm)?.comm;
    let n = c.peer_size();
    if stag < 0 || !is_recv_tag(rtag) || !is_rank(dest, n) || !is_source(source, n) {
        return None;
    }
    let sbytes = span(sbuf, scount, ssize)?;
    let rbytes = span(rbuf, rcount, rsize)?;
    let mut st = Status::default();
    // SAFETY: MPI requires both buffers to cover their items during the call, disjoint.
    let r = unsafe {
        c.raw_sendrecv(
            sbuf as *const u8,
            sbytes,
            dest as u32,
            stag,
            rbuf as *mut u8,
            rbytes,
            source,
            recv_tag(rtag),
            &mut st,
        )
    };
    if let Err(e) = r {
        store_failed(status, &e, &st);
        return Some(raise_weft(comm, "MPI_Sendrecv", e));
    }
    store(status, from_weft(&st));
    Some(MPI_SUCCESS)
}

/// MPI_Isend, MPI_Irsend, MPI_Issend (`synchronous`), MPI_Irecv (`recv`) and their `_c`
/// forms: the request holds weft's raw request and nothing else.
///
/// # Safety
/// The MPI calling contract: `buf` holds (for a receive: is writable for) `count` items of
/// `dt` until the request completes; `req` is writable.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn start(
    recv: bool,
    synchronous: bool,
    buf: *const c_void,
    count: i64,
    dt: Handle,
    peer: c_int,
    tag: c_int,
    comm: Handle,
    req: *mut Handle,
    func: &str,
) -> Option<c_int> {
    let size = element_bytes(dt)?;
    if req.is_null() {
        return None;
    }
    let s = state_opt()?;
    let c = &s.comm_opt(comm)?.comm;
    let n = c.peer_size();
    let ok = if recv {
        is_recv_tag(tag) && is_source(peer, n)
    } else {
        tag >= 0 && is_rank(peer, n)
    };
    if !ok {
        return None;
    }
    let bytes = span(buf, count, size)?;
    // SAFETY: MPI requires the buffer to stay valid (and for a receive, unaliased) until the
    // request completes; the request is finished or withdrawn before it is dropped.
    let r = unsafe {
        if recv {
            c.raw_irecv(buf as *mut u8, bytes, peer, recv_tag(tag))
        } else if synchronous {
            c.raw_issend(buf as *const u8, bytes, peer as u32, tag)
        } else {
            c.raw_isend(buf as *const u8, bytes, peer as u32, tag)
        }
    };
    let raw = match r {
        Ok(raw) => raw,
        Err(e) => return Some(raise_weft(comm, func, e)),
    };
    let h = s.add_req(ReqEntry::started(raw, recv, comm));
    // SAFETY: checked non-null; writable by the MPI calling contract.
    unsafe { *req = h };
    Some(MPI_SUCCESS)
}

/// MPI_Wait (`test` false) and MPI_Test on a request [`start`] made (or any started send or
/// receive with nothing to unpack, not persistent): completes it as the checked path does.
///
/// # Safety
/// The MPI calling contract: `req` readable and writable, `status` writable or ignored,
/// `flag` writable for MPI_Test.
#[inline(always)]
pub unsafe fn complete(
    req: *mut Handle,
    test: bool,
    flag: *mut c_int,
    status: *mut MpiStatus,
    func: &str,
) -> Option<c_int> {
    if req.is_null() || (test && flag.is_null()) {
        return None;
    }
    let s = state_opt()?;
    if !s.detached.is_empty() {
        return None;
    }
    // SAFETY: checked non-null; readable and writable by the MPI calling contract.
    match finish_plain(s, unsafe { &mut *req }, test, status)? {
        Plain::Done => {
            if test {
                // SAFETY: non-null for MPI_Test (checked above); writable by the contract.
                unsafe { *flag = 1 };
            }
        }
        Plain::Pending => {
            s.weft.world().raw_progress();
            // SAFETY: as above.
            unsafe { *flag = 0 };
        }
        Plain::Failed(comm, x) => return Some(raise_weft(comm, func, x)),
    }
    Some(MPI_SUCCESS)
}

/// What [`finish_plain`] did with a request.
pub enum Plain {
    /// Completed: the handle is MPI_REQUEST_NULL and the status stored.
    Done,
    /// Not complete yet (a test only).
    Pending,
    /// Completed with this error on this communicator: the handle is MPI_REQUEST_NULL (a
    /// receive's status names the message's source and tag).
    Failed(Handle, weft::Error),
}

/// Waits for (`test`: tests) request `*req` when it is one [`start`] made (or any started
/// send or receive with nothing to unpack, not persistent) and retires it once complete, as
/// the checked path does; None for any other handle (left untouched). The caller has
/// checked that no freed request waits to be reaped (`State::detached`).
#[inline(always)]
pub fn finish_plain(
    s: &mut crate::state::State,
    req: &mut Handle,
    test: bool,
    status: *mut MpiStatus,
) -> Option<Plain> {
    let i = handle_index(K_REQ, *req)?;
    let e = s.reqs.get_mut(i)?;
    if e.more.is_some() {
        return None;
    }
    let (recv, comm) = (e.recv, e.comm);
    let raw = e.raw.as_mut()?;
    let r = if test {
        raw.test()
    } else {
        raw.wait().map(Some)
    };
    let done = match r {
        Ok(Some(st)) if recv => from_weft(&st),
        Ok(Some(st)) => MpiStatus {
            cancelled: st.cancelled as c_int,
            ..empty_status()
        },
        Ok(None) => return Some(Plain::Pending),
        Err(x) => {
            if recv {
                // A truncated message still names its source and tag.
                store(status, from_weft(&raw.last_status()));
            }
            s.reqs.discard(i);
            *req = MPI_REQUEST_NULL;
            return Some(Plain::Failed(comm, x));
        }
    };
    s.reqs.discard(i);
    *req = MPI_REQUEST_NULL;
    store(status, done);
    Some(Plain::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_table_agrees_with_the_checked_path() {
        let mut allowed = 0;
        for dt in FIRST..FIRST + SPAN {
            // MPI_CHAR's operations follow WEFT_CHAR_REDUCTIONS: always the checked path.
            if crate::dtype::predefined(dt).is_none() || dt == MPI_CHAR {
                continue;
            }
            // The fast path takes the datatypes whose memory is their wire form and which
            // reduce as a kind of weft's (padded pairs and the like go the checked way).
            let kind = match reduction_layout(dt) {
                Ok(Layout::Contig { kind: Some(k), .. }) if element_bytes(dt).is_some() => Some(k),
                _ => None,
            };
            for op in MPI_SUM..=MPI_NO_OP + 1 {
                let checked = crate::coll::predefined_op(op).is_some()
                    && crate::dtype::check_op(op, dt).is_ok();
                let fast = reducible(dt, op);
                assert_eq!(
                    fast.is_some(),
                    checked && kind.is_some(),
                    "op {op:#x} dt {dt:#x}"
                );
                if let Some((bytes, k, _)) = fast {
                    assert_eq!(Some(bytes), element_bytes(dt), "dt {dt:#x}");
                    assert_eq!(Some(k), kind, "dt {dt:#x}");
                    allowed += 1;
                }
            }
        }
        // Spot checks against the standard's table: SUM on INT and DOUBLE, BAND on INT and
        // BYTE, MAXLOC on 2INT; not BAND on DOUBLE, SUM on CHAR, MAX on a user handle, not
        // a user operation's handle.
        for (dt, op) in [(0x209, MPI_SUM), (0x214, MPI_SUM), (0x209, MPI_BAND)] {
            assert!(reducible(dt, op).is_some(), "{op:#x} {dt:#x}");
        }
        assert!(reducible(MPI_BYTE, MPI_BAND).is_some());
        assert!(reducible(0x22b, MPI_MAXLOC).is_some());
        assert!(reducible(0x214, MPI_BAND).is_none());
        assert!(reducible(MPI_CHAR, MPI_SUM).is_none()); // the checked path decides
        assert!(reducible(0x1000, MPI_MAX).is_none());
        assert!(reducible(0x209, MPI_REPLACE).is_none());
        assert!(reducible(0x209, (crate::state::K_OP + 1) << 32).is_none());
        assert!(allowed > 100, "{allowed}");
    }

    #[test]
    fn table_follows_the_datatype_layer() {
        // Contiguous predefined types are in the table with their size...
        assert_eq!(element_bytes(MPI_BYTE), Some(1));
        assert_eq!(element_bytes(0x209), Some(4)); // MPI_INT
        assert_eq!(element_bytes(0x214), Some(8)); // MPI_DOUBLE
        assert_eq!(element_bytes(0x22b), Some(8)); // MPI_2INT: no padding
                                                   // ...padded pairs (packed on the wire), non-types and derived handles are not.
        assert_eq!(element_bytes(0x229), None); // MPI_DOUBLE_INT
        assert_eq!(element_bytes(MPI_DATATYPE_NULL), None);
        assert_eq!(element_bytes(0x2ff), None);
        assert_eq!(element_bytes(0x1ff), None);
        assert_eq!(element_bytes((K_REQ + 1) << 32), None);
        // Every handle agrees with the datatype layer.
        for h in 0..0x400usize {
            let want = match predefined(h).map(|_| layout(h)) {
                Some(Ok(Layout::Contig { size, .. })) => Some(size),
                _ => None,
            };
            assert_eq!(element_bytes(h), want, "handle {h:#x}");
        }
    }

    #[test]
    fn spans_refuse_what_the_checked_path_reports() {
        let b = 8usize as *const c_void;
        assert_eq!(span(b, 3, 4), Some(12));
        assert_eq!(span(b, -1, 4), None);
        assert_eq!(span(std::ptr::null(), 0, 4), Some(0));
        assert_eq!(span(std::ptr::null(), 1, 4), None);
        assert_eq!(span(b, i64::MAX, 8), None);
        assert!(is_source(MPI_ANY_SOURCE, 2) && !is_source(MPI_PROC_NULL, 2));
        assert!(is_rank(1, 2) && !is_rank(2, 2) && !is_rank(-7, 2));
        assert!(is_recv_tag(MPI_ANY_TAG) && is_recv_tag(0) && !is_recv_tag(-1));
    }
}

// ------------------------------------------------------------------- collectives

/// The predefined MPI_CHAR (MPI 5.0 ABI).
const MPI_CHAR: Handle = 0x243;

/// What a reduction on predefined datatype `FIRST + i` needs to know when its memory is its
/// wire form: the bytes per item, the element kind and the predefined operations defined on
/// it (bit `op - MPI_SUM`, MPI-4.1 §6.9.2 by `dtype::op_allowed`); None for every other
/// handle (the checked path handles those). One table, so that a reduction call looks up
/// its datatype once and does not walk the standard's table.
static REDUCIBLE: LazyLock<[Option<Reducible>; SPAN]> = LazyLock::new(|| {
    let mut t = [None; SPAN];
    for (i, r) in t.iter_mut().enumerate() {
        let h = FIRST + i;
        // MPI_CHAR's operations depend on WEFT_CHAR_REDUCTIONS, read at start (after this
        // table may have been built): the checked path decides them at each call.
        if h == MPI_CHAR {
            continue;
        }
        let (Some(item_bytes), Some(class)) = (element_bytes(h), crate::dtype::op_class(h)) else {
            continue;
        };
        let Ok(Layout::Contig {
            kind: Some(kind), ..
        }) = reduction_layout(h)
        else {
            continue;
        };
        let mut ops = 0;
        for op in MPI_SUM..=MPI_NO_OP {
            if crate::coll::predefined_op(op).is_some() && crate::dtype::op_allowed(op, class) {
                ops |= 1 << (op - MPI_SUM);
            }
        }
        *r = Some(Reducible {
            item_bytes,
            kind,
            // A power of two for every kind.
            align_mask: kind.align_bytes() - 1,
            ops,
        });
    }
    t
});

/// An entry of [`REDUCIBLE`].
#[derive(Clone, Copy)]
struct Reducible {
    item_bytes: usize,
    kind: TypeKind,
    /// The alignment weft requires of a buffer of elements of `kind`, less one.
    align_mask: usize,
    ops: u32,
}

/// For a reduction with predefined datatype `dt` and predefined operation `op` defined on
/// it: the bytes per item, the element kind and weft's operation (a static one, so nothing
/// is built or dropped per call); None for user operations, derived or padded datatypes and
/// pairs the standard does not define (the checked path reports those).
#[inline]
pub(crate) fn reducible(dt: Handle, op: Handle) -> Option<(usize, TypeKind, &'static Op)> {
    let (r, wop) = reducible_entry(dt, op)?;
    Some((r.item_bytes, r.kind, wop))
}

/// [`reducible`] with the datatype's whole table entry (its alignment too).
#[inline]
fn reducible_entry(dt: Handle, op: Handle) -> Option<(Reducible, &'static Op)> {
    let r = (*REDUCIBLE.get(dt.wrapping_sub(FIRST))?)?;
    let bit = op.wrapping_sub(MPI_SUM);
    if bit >= 32 || r.ops & (1 << bit) == 0 {
        return None;
    }
    Some((r, crate::coll::predefined_op(op)?))
}

/// The intracommunicator behind `comm` when the fast path takes it.
#[inline]
fn intra(comm: Handle) -> Option<&'static Comm> {
    let e = state_opt()?.comm_opt(comm)?;
    if e.inter.is_some() {
        return None;
    }
    Some(&e.comm)
}

/// A root of a communicator of `size` ranks.
#[inline]
fn root_of(root: c_int, size: u32) -> Option<u32> {
    is_rank(root, size).then_some(root as u32)
}

/// A buffer the fast path takes: not MPI_IN_PLACE (or MPI_BOTTOM-relative: NULL with items).
#[inline]
fn plain(buf: *const c_void) -> bool {
    buf as usize != MPI_IN_PLACE
}

/// # Safety
/// For `n > 0`, `buf` is writable and unaliased for `n` bytes while the slice is used.
#[inline]
unsafe fn bytes_at_mut<'a>(buf: *mut c_void, n: usize) -> &'a mut [u8] {
    if n == 0 {
        &mut []
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(buf as *mut u8, n) }
    }
}

/// The MPI return code of a finished weft call.
#[inline]
fn outcome(r: weft::Result<()>, comm: Handle, func: &str) -> c_int {
    match r {
        Ok(()) => MPI_SUCCESS,
        Err(e) => raise_weft(comm, func, e),
    }
}

/// MPI_Barrier.
#[inline(always)]
pub fn barrier(comm: Handle) -> Option<c_int> {
    let c = intra(comm)?;
    Some(outcome(c.barrier(), comm, "MPI_Barrier"))
}

/// MPI_Bcast.
///
/// # Safety
/// The MPI calling contract: `buf` holds (at the root) or receives `count` items of `dt`.
#[inline(always)]
pub unsafe fn bcast(
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    let size = element_bytes(dt)?;
    let c = intra(comm)?;
    let root = root_of(root, c.size())?;
    let n = span(buf, count.into(), size)?;
    // SAFETY: MPI requires `buf` to hold the items for the duration of this blocking call.
    let data = unsafe { bytes_at_mut(buf, n) };
    Some(outcome(c.bcast(data, root), comm, "MPI_Bcast"))
}

/// Which reduction [`reduction`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RedColl {
    /// MPI_Reduce to this root.
    Reduce(c_int),
    Allreduce,
    Scan,
    Exscan,
    ReduceScatterBlock,
}

/// Neither buffer is misaligned for the elements of a table entry whose alignment less one
/// is `mask` (set up with the table, so a call computes nothing). weft checks alignment and
/// reports a misaligned buffer; the checked path says it in MPI's words.
#[inline(always)]
fn aligned(mask: usize, s: &[u8], r: &[u8]) -> bool {
    let ok = |b: &[u8]| b.is_empty() || (b.as_ptr() as usize) & mask == 0;
    ok(s) && ok(r)
}

/// MPI_Reduce, MPI_Allreduce, MPI_Scan, MPI_Exscan and MPI_Reduce_scatter_block with a
/// predefined operation.
///
/// # Safety
/// The MPI calling contract: `send` holds `count` items of `dt` (`count` per rank for
/// MPI_Reduce_scatter_block); `recv` is writable for `count` items (at the root, for
/// MPI_Reduce) and does not overlap `send`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn reduction(
    which: RedColl,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
    func: &str,
) -> Option<c_int> {
    let (
        Reducible {
            item_bytes: size,
            kind,
            align_mask,
            ..
        },
        wop,
    ) = reducible_entry(dt, op)?;
    let c = intra(comm)?;
    if !plain(send) {
        return None;
    }
    let root = match which {
        RedColl::Reduce(r) => Some(root_of(r, c.size())?),
        _ => None,
    };
    let items = match which {
        RedColl::ReduceScatterBlock => i64::from(count).checked_mul(c.size().into())?,
        _ => count.into(),
    };
    let n = span(send, items, size)?;
    let out = match root {
        Some(r) if r != c.rank() => 0,
        _ => span(recv, count.into(), size)?,
    };
    // SAFETY: MPI requires the buffers to hold the items for this blocking call.
    let (s, r) = unsafe { (bytes_at(send, n), bytes_at_mut(recv, out)) };
    if !aligned(align_mask, s, r) {
        return None;
    }
    let res = match which {
        RedColl::Reduce(_) => c.reduce_bytes(s, r, kind, wop, root?),
        RedColl::Allreduce => c.allreduce_bytes(s, r, kind, wop),
        RedColl::Scan => c.scan_bytes(s, r, kind, wop),
        RedColl::Exscan => c.exscan_bytes(s, r, kind, wop),
        RedColl::ReduceScatterBlock => c.reduce_scatter_block_bytes(s, r, kind, wop),
    };
    Some(outcome(res, comm, func))
}

/// Which block collective [`blocks`] runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum BlockColl {
    Gather,
    Scatter,
    Allgather,
    Alltoall,
}

/// MPI_Gather, MPI_Scatter (`root` given), MPI_Allgather and MPI_Alltoall when both sides
/// name the same predefined datatype and count (the usual call; anything else, MPI_IN_PLACE
/// included, takes the checked path).
///
/// # Safety
/// The MPI calling contract for the collective: `send` holds its items, `recv` is writable
/// for its items where the collective writes it, and they do not overlap.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn blocks(
    which: BlockColl,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: Option<c_int>,
    comm: Handle,
    func: &str,
) -> Option<c_int> {
    if sdt != rdt {
        return None;
    }
    let size = element_bytes(sdt)?;
    let c = intra(comm)?;
    if !plain(send) || !plain(recv) {
        return None;
    }
    let p = c.size() as usize;
    let me = c.rank();
    let root = match root {
        Some(r) => Some(root_of(r, c.size())?),
        None => None,
    };
    let at_root = root == Some(me);
    // Counts that matter on this rank must agree; the others are ignored, as MPI says.
    let (sn, rn) = match which {
        BlockColl::Gather if at_root => (scount, rcount),
        BlockColl::Gather => (scount, scount),
        BlockColl::Scatter if at_root => (scount, rcount),
        BlockColl::Scatter => (rcount, rcount),
        _ => (scount, rcount),
    };
    if sn != rn {
        return None;
    }
    let blk = usize::try_from(sn).ok()?.checked_mul(size)?;
    let (send_bytes, recv_bytes) = match which {
        BlockColl::Gather => (blk, if at_root { blk.checked_mul(p)? } else { 0 }),
        BlockColl::Scatter => (if at_root { blk.checked_mul(p)? } else { 0 }, blk),
        BlockColl::Allgather => (blk, blk.checked_mul(p)?),
        BlockColl::Alltoall => (blk.checked_mul(p)?, blk.checked_mul(p)?),
    };
    if (send_bytes > 0 && send.is_null()) || (recv_bytes > 0 && recv.is_null()) {
        return None;
    }
    // SAFETY: MPI requires the buffers to hold these bytes for this blocking call.
    let (s, r) = unsafe { (bytes_at(send, send_bytes), bytes_at_mut(recv, recv_bytes)) };
    let res = match (which, root) {
        (BlockColl::Gather, Some(root)) => c.gather(s, r, root),
        (BlockColl::Scatter, Some(root)) => c.scatter(s, r, root),
        (BlockColl::Allgather, _) => c.allgather(s, r),
        (BlockColl::Alltoall, _) => c.alltoall(s, r),
        _ => return None,
    };
    Some(outcome(res, comm, func))
}

// ---------------------------------------------------------------- v-collectives

/// Counts and displacements of a v-collective in bytes (or a reduction's counts in
/// elements), converted from the caller's int arrays: kept between calls so a call
/// allocates only when the communicator is larger than any before. A plain static, not a
/// thread-local (which a shared library reaches through a call to the dynamic loader, about
/// 50 instructions a call with the borrow): MPI calls are serialised, as for the state
/// (by the lock of crate::threads under MPI_THREAD_MULTIPLE).
struct Scratch {
    entries: UnsafeCell<Vec<usize>>,
    /// Set while a call uses the entries.
    busy: Cell<bool>,
}

// SAFETY: no two threads are inside MPI calls at once (the program's promise below
// MPI_THREAD_MULTIPLE, crate::threads' lock under it; see `state::Global`), and the scratch
// is only reached from inside them.
unsafe impl Sync for Scratch {}

static SCRATCH: Scratch = Scratch {
    entries: UnsafeCell::new(Vec::new()),
    busy: Cell::new(false),
};

/// Runs `f` on `len` scratch entries; None (the checked path) if the scratch is in use
/// (a call from inside a call, which the fast path never makes, but costs nothing to refuse).
#[inline]
fn with_scratch(len: usize, f: impl FnOnce(&mut [usize]) -> Option<c_int>) -> Option<c_int> {
    if SCRATCH.busy.replace(true) {
        return None;
    }
    // SAFETY: calls are serialised (above) and `busy` was clear, so no other reference to
    // the entries exists until it is cleared again below.
    let v = unsafe { &mut *SCRATCH.entries.get() };
    if v.len() < len {
        v.resize(len, 0);
    }
    let r = f(&mut v[..len]);
    SCRATCH.busy.set(false);
    r
}

/// `out[i] = arr[i] * unit` for the caller's int array `arr` of `out.len()` entries; None
/// (the checked path reports it) when `arr` is NULL, an entry is negative or a product
/// overflows.
///
/// # Safety
/// `arr` is NULL or readable for `out.len()` ints (the MPI calling contract).
#[inline]
unsafe fn scale_into(arr: *const c_int, unit: usize, out: &mut [usize]) -> Option<()> {
    if arr.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: one entry per rank.
    let a = unsafe { std::slice::from_raw_parts(arr, out.len()) };
    for (o, &x) in out.iter_mut().zip(a) {
        *o = usize::try_from(x).ok()?.checked_mul(unit)?;
    }
    Some(())
}

/// The caller's displacements `displs` (one per block of `counts` bytes, in units of
/// `unit` bytes, any sign) placed by [`place`]: each block's displacement from the lowest
/// byte a block touches goes into `rel`. None (the checked path reports it) when `displs`
/// is NULL or an offset overflows.
///
/// # Safety
/// `displs` is NULL or readable for `counts.len()` ints (the MPI calling contract).
#[inline]
unsafe fn place_into(
    displs: *const c_int,
    counts: &[usize],
    unit: usize,
    rel: &mut [usize],
) -> Option<Placed> {
    if displs.is_null() {
        return None;
    }
    // SAFETY: the caller's contract: one entry per block.
    let d = unsafe { std::slice::from_raw_parts(displs, counts.len()) };
    place(counts, d, unit, rel)
}

/// The `n` bytes at `buf` when the fast path takes them: not NULL unless empty.
#[inline]
fn present(buf: *const c_void, n: usize) -> Option<()> {
    (n == 0 || !buf.is_null()).then_some(())
}

/// MPI_Gatherv with one predefined contiguous datatype (the receive side matters at the
/// root only, as MPI says).
///
/// # Safety
/// The MPI calling contract: `send` holds `scount` items of `sdt`; at the root `recv` is
/// writable for the blocks `rcounts` and `displs` (one entry per rank) describe, and does
/// not overlap `send`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn gatherv(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    let size = element_bytes(sdt)?;
    let c = intra(comm)?;
    if !plain(send) {
        return None;
    }
    let root = root_of(root, c.size())?;
    let sn = span(send, scount.into(), size)?;
    // SAFETY: MPI requires `send` to hold the items for this blocking call.
    let s = unsafe { bytes_at(send, sn) };
    if c.rank() != root {
        return Some(outcome(
            c.gatherv(s, &mut [], &[], &[], root),
            comm,
            "MPI_Gatherv",
        ));
    }
    if rdt != sdt || !plain(recv) {
        return None;
    }
    let p = c.size() as usize;
    with_scratch(2 * p, |b| {
        let (cs, ds) = b.split_at_mut(p);
        // SAFETY: one entry per rank at the root (the MPI calling contract).
        unsafe { scale_into(rcounts, size, cs)? };
        // SAFETY: as for rcounts: the root's displs hold one entry per rank.
        let at = unsafe { place_into(displs, cs, size, ds)? };
        present(recv, at.span)?;
        // SAFETY: MPI requires `recv` to cover every block for this blocking call: the span
        // from the lowest byte a block touches.
        let r = unsafe { bytes_at_mut(at.base(recv) as *mut c_void, at.span) };
        Some(outcome(c.gatherv(s, r, cs, ds, root), comm, "MPI_Gatherv"))
    })
}

/// MPI_Scatterv with one predefined contiguous datatype (the send side matters at the root
/// only).
///
/// # Safety
/// The MPI calling contract: at the root `send` holds the blocks `scounts` and `displs`
/// describe; `recv` is writable for `rcount` items of `rdt` and does not overlap `send`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn scatterv(
    send: *const c_void,
    scounts: *const c_int,
    displs: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    comm: Handle,
) -> Option<c_int> {
    let size = element_bytes(rdt)?;
    let c = intra(comm)?;
    if !plain(recv) {
        return None;
    }
    let root = root_of(root, c.size())?;
    let rn = span(recv, rcount.into(), size)?;
    // SAFETY: MPI requires `recv` to be writable for the items during this blocking call.
    let r = unsafe { bytes_at_mut(recv, rn) };
    if c.rank() != root {
        return Some(outcome(
            c.scatterv(&[], &[], &[], r, root),
            comm,
            "MPI_Scatterv",
        ));
    }
    if sdt != rdt || !plain(send) {
        return None;
    }
    let p = c.size() as usize;
    with_scratch(2 * p, |b| {
        let (cs, ds) = b.split_at_mut(p);
        // SAFETY: one entry per rank at the root (the MPI calling contract).
        unsafe { scale_into(scounts, size, cs)? };
        // SAFETY: as for scounts: the root's displs hold one entry per rank.
        let at = unsafe { place_into(displs, cs, size, ds)? };
        present(send, at.span)?;
        // SAFETY: MPI requires `send` to hold every block for this blocking call: the span
        // from the lowest byte a block touches.
        let s = unsafe { bytes_at(at.base(send) as *const c_void, at.span) };
        Some(outcome(
            c.scatterv(s, cs, ds, r, root),
            comm,
            "MPI_Scatterv",
        ))
    })
}

/// MPI_Allgatherv with one predefined contiguous datatype.
///
/// # Safety
/// The MPI calling contract: `send` holds `scount` items of `sdt`; `recv` is writable for
/// the blocks `rcounts` and `displs` (one entry per rank) describe, and does not overlap
/// `send`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn allgatherv(
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    displs: *const c_int,
    rdt: Handle,
    comm: Handle,
) -> Option<c_int> {
    if sdt != rdt {
        return None;
    }
    let size = element_bytes(sdt)?;
    let c = intra(comm)?;
    if !plain(send) || !plain(recv) {
        return None;
    }
    let sn = span(send, scount.into(), size)?;
    let p = c.size() as usize;
    with_scratch(2 * p, |b| {
        let (cs, ds) = b.split_at_mut(p);
        // SAFETY: one entry per rank (the MPI calling contract).
        unsafe { scale_into(rcounts, size, cs)? };
        // SAFETY: as for rcounts: displs hold one entry per rank.
        let at = unsafe { place_into(displs, cs, size, ds)? };
        present(recv, at.span)?;
        // SAFETY: MPI requires the buffers to hold these bytes for this blocking call (the
        // receive blocks: the span from the lowest byte one touches).
        let (s, r) = unsafe {
            (
                bytes_at(send, sn),
                bytes_at_mut(at.base(recv) as *mut c_void, at.span),
            )
        };
        Some(outcome(c.allgatherv(s, r, cs, ds), comm, "MPI_Allgatherv"))
    })
}

/// MPI_Alltoallv (`types` None) and MPI_Alltoallw (`types`: the send and receive datatype
/// arrays, all of which must be one predefined contiguous datatype; displacements are then
/// in bytes) with one predefined contiguous datatype `sdt` = `rdt`.
///
/// # Safety
/// The MPI calling contract: the int arrays (and datatype arrays) hold one entry per rank;
/// `send` holds the send blocks, `recv` is writable for the receive blocks and does not
/// overlap `send`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub unsafe fn alltoallv(
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rdt: Handle,
    types: Option<(*const Handle, *const Handle)>,
    comm: Handle,
    func: &str,
) -> Option<c_int> {
    let c = intra(comm)?;
    if !plain(send) || !plain(recv) {
        return None;
    }
    let p = c.size() as usize;
    let (sdt, rdt, unit) = match types {
        None => (sdt, rdt, None),
        Some((st, rt)) => {
            if st.is_null() || rt.is_null() {
                return None;
            }
            // SAFETY: one datatype per rank in each array (the MPI calling contract).
            let (st, rt) = unsafe {
                (
                    std::slice::from_raw_parts(st, p),
                    std::slice::from_raw_parts(rt, p),
                )
            };
            let t = st[0];
            if st.iter().chain(rt).any(|&x| x != t) {
                return None;
            }
            (t, t, Some(1))
        }
    };
    if sdt != rdt {
        return None;
    }
    let size = element_bytes(sdt)?;
    // Alltoallv's displacements count items; Alltoallw's count bytes.
    let dunit = unit.unwrap_or(size);
    with_scratch(4 * p, |b| {
        let (sc, rest) = b.split_at_mut(p);
        let (sd, rest) = rest.split_at_mut(p);
        let (rc, rd) = rest.split_at_mut(p);
        // SAFETY: one entry per rank (the MPI calling contract).
        let (sat, rat) = unsafe {
            scale_into(scounts, size, sc)?;
            scale_into(rcounts, size, rc)?;
            (
                place_into(sdispls, sc, dunit, sd)?,
                place_into(rdispls, rc, dunit, rd)?,
            )
        };
        present(send, sat.span)?;
        present(recv, rat.span)?;
        // SAFETY: MPI requires the buffers to hold these bytes for this blocking call: each
        // side's span from the lowest byte one of its blocks touches.
        let (s, r) = unsafe {
            (
                bytes_at(sat.base(send) as *const c_void, sat.span),
                bytes_at_mut(rat.base(recv) as *mut c_void, rat.span),
            )
        };
        Some(outcome(c.alltoallv(s, sc, sd, r, rc, rd), comm, func))
    })
}

/// MPI_Reduce_scatter with a predefined datatype and operation.
///
/// # Safety
/// The MPI calling contract: `rcounts` holds one entry per rank; `send` holds their sum of
/// items of `dt`; `recv` is writable for this rank's count and does not overlap `send`.
#[inline(always)]
pub unsafe fn reduce_scatter(
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    comm: Handle,
) -> Option<c_int> {
    let (
        Reducible {
            item_bytes: size,
            kind,
            align_mask,
            ..
        },
        wop,
    ) = reducible_entry(dt, op)?;
    let c = intra(comm)?;
    if !plain(send) {
        return None;
    }
    let es = kind.size_bytes();
    // Elements of `kind` per item (MPI_2INT: two).
    let per = size / es;
    let p = c.size() as usize;
    with_scratch(p, |counts| {
        // SAFETY: one entry per rank (the MPI calling contract).
        unsafe { scale_into(rcounts, per, counts)? };
        let mut total = 0usize;
        for &x in counts.iter() {
            total = total.checked_add(x)?;
        }
        let sn = total.checked_mul(es)?;
        let rn = counts[c.rank() as usize] * es;
        present(send, sn)?;
        present(recv, rn)?;
        // SAFETY: MPI requires the buffers to hold these bytes for this blocking call.
        let (s, r) = unsafe { (bytes_at(send, sn), bytes_at_mut(recv, rn)) };
        if !aligned(align_mask, s, r) {
            return None;
        }
        Some(outcome(
            c.reduce_scatter_bytes(s, r, counts, kind, wop),
            comm,
            "MPI_Reduce_scatter",
        ))
    })
}
