//! The collectives on intercommunicators (MPI-4.1 §6.2.2 semantics: MPI_ROOT /
//! MPI_PROC_NULL roots, each group receiving what the other group contributes), one path
//! each for the blocking and the nonblocking form (`Mode`): the start posts every message
//! of the call on the intercommunicator's bridge context (see `state::InterParts`) and
//! files them, with a final local step, as a compound request (compound.rs), which the
//! nonblocking form returns and the blocking form waits for. The completion finishes the
//! messages and, for reductions, reduces the received contributions in rank order.
//!
//! The blocking barrier, broadcast, reduce, allreduce and reduce-scatter go through the
//! groups' own collectives and the leaders instead (inter_leader.rs), which scales with the
//! groups; the rest is below.
//!
//! Each collective is a single round of messages, so nothing waits for a later step to be
//! started by the program. The price is more messages than a composition of intracommunicator
//! collectives would send: a broadcast root sends to every remote rank, a barrier and an
//! allreduce send to every remote rank from every rank (|A|·|B| messages), a reduce sends
//! every contribution to the root, which reduces them. MPI_Reduce_scatter(_block): a sender
//! does not know how the other group splits the result, so it sends its whole vector to
//! every remote rank (|A|·|B| messages of the whole vector), and each rank reduces its own
//! block of them.
//!
//! Bridge tags are one per collective, so a rank that calls the wrong collective gets no
//! data of another (the bridge carries nothing else), plus `NB` for the nonblocking
//! forms. Depends on the state tables, p2p.rs's requests and compound.rs.

use crate::coll::make_op;
use crate::compound::{self, Then};
use crate::consts::*;
use crate::dtype::{check_op, map_of};
use crate::error::{err, MpiError, R};
use crate::state::{handle_index, state, InterParts, State, K_OP};
use std::os::raw::{c_int, c_void};

/// The hidden companions of `comm` when it is a valid intercommunicator; `None` otherwise
/// (the intracommunicator path then reports an invalid handle itself).
pub(crate) fn parts(comm: Handle) -> Option<InterParts> {
    state("collective")
        .ok()
        .and_then(|s| s.inter_parts(comm).ok().flatten())
}

/// Bridge tags, one per collective, so a rank that calls the wrong collective gets no
/// data of another (the bridge carries nothing else).
pub(crate) const TAG_BARRIER: c_int = 1;
pub(crate) const TAG_BCAST: c_int = 2;
pub(crate) const TAG_REDUCE: c_int = 3;
pub(crate) const TAG_ALLREDUCE: c_int = 4;
const TAG_GATHER: c_int = 5;
const TAG_SCATTER: c_int = 6;
const TAG_ALLGATHER: c_int = 7;
const TAG_ALLTOALL: c_int = 8;
pub(crate) const TAG_REDSCAT: c_int = 9;

/// Who the caller is in a rooted collective on an intercommunicator.
pub(crate) enum Role {
    /// The root (MPI_ROOT).
    Root,
    /// Another rank of the root's group (MPI_PROC_NULL): takes no part.
    Idle,
    /// A rank of the other group; the root is this remote rank.
    Leaf(c_int),
}

pub(crate) fn role(root: c_int, p: &InterParts) -> R<Role> {
    match root {
        MPI_ROOT => Ok(Role::Root),
        MPI_PROC_NULL => Ok(Role::Idle),
        r if r >= 0 && r < remote_size(p)? => Ok(Role::Leaf(r)),
        r => Err(err(
            MPI_ERR_ROOT,
            format!(
                "root {r} is not MPI_ROOT, MPI_PROC_NULL or a rank of the remote group (size {})",
                remote_size(p)?
            ),
        )),
    }
}

fn remote_size(p: &InterParts) -> R<c_int> {
    Ok(state("collective")?.comm(p.bridge)?.comm.peer_size() as c_int)
}

pub(crate) fn local_rank(p: &InterParts) -> R<c_int> {
    Ok(state("collective")?.comm(p.local)?.comm.rank() as c_int)
}

fn local_size(p: &InterParts) -> R<c_int> {
    Ok(state("collective")?.comm(p.local)?.comm.size() as c_int)
}

pub(crate) fn no_in_place(b: *const c_void, what: &str) -> R<()> {
    if b as usize == MPI_IN_PLACE {
        return Err(err(
            MPI_ERR_BUFFER,
            format!("MPI_IN_PLACE as {what} is not allowed on an intercommunicator"),
        ));
    }
    Ok(())
}

/// A scratch buffer for `count` elements of `dt`, laid out like a user buffer.
pub(crate) struct Scratch {
    buf: Vec<u8>,
    /// Added to the buffer's address to get the address the datatype's offsets start from.
    shift: isize,
}

impl Scratch {
    pub(crate) fn new(count: c_int, dt: Handle) -> R<Scratch> {
        let m = map_of(dt)?;
        let n = if count <= 0 {
            0
        } else {
            (count as i64 - 1) * m.extent() + m.true_extent()
        };
        Ok(Scratch {
            buf: vec![0u8; n.max(0) as usize],
            shift: -(m.true_lb() as isize),
        })
    }

    pub(crate) fn ptr(&mut self) -> *mut c_void {
        self.buf.as_mut_ptr().wrapping_offset(self.shift) as *mut c_void
    }
}

/// `base` moved by `index` blocks of `count` elements of `dt`.
fn at(base: *const c_void, index: i64, dt: Handle) -> R<*mut c_void> {
    let ext = map_of(dt)?.extent();
    Ok((base as *const u8).wrapping_offset((index * ext) as isize) as *mut c_void)
}

/// Per-rank array `p` of `n` entries (counts, displacements, types).
///
/// # Safety
/// `p` holds `n` entries when non-null.
unsafe fn array<'a, T>(p: *const T, n: c_int, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

pub(crate) fn recvcounts_total(rcounts: &[c_int]) -> R<c_int> {
    if rcounts.iter().any(|&c| c < 0) {
        return Err(err(
            MPI_ERR_COUNT,
            format!("recvcounts {rcounts:?} has a negative entry"),
        ));
    }
    let total: i64 = rcounts.iter().map(|&c| c as i64).sum();
    c_int::try_from(total).map_err(|_| err(MPI_ERR_COUNT, format!("{total} elements in all")))
}

/// Posts the messages of [`gather`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
unsafe fn gather_post(
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    root: c_int,
    tag: c_int,
) -> R<Transfers> {
    let mut t = Transfers::new();
    match role(root, &p)? {
        Role::Idle => Ok(t),
        Role::Leaf(r) => {
            no_in_place(send, "sendbuf")?;
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe { t.send(&p, send, scount, sdt, r, tag)? };
            Ok(t)
        }
        Role::Root => {
            let n = remote_size(&p)?;
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            let (counts, displs) = unsafe { rcounts.resolve(n)? };
            for i in 0..n as usize {
                // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                // hidden handles are this library's.
                unsafe {
                    t.recv(
                        &p,
                        at(recv, displs[i], rdt)?,
                        counts[i],
                        rdt,
                        i as c_int,
                        tag,
                    )?
                };
            }
            Ok(t)
        }
    }
}

/// Posts the messages of [`scatter`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
unsafe fn scatter_post(
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    tag: c_int,
) -> R<Transfers> {
    let mut t = Transfers::new();
    match role(root, &p)? {
        Role::Idle => Ok(t),
        Role::Leaf(r) => {
            no_in_place(recv, "recvbuf")?;
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe { t.recv(&p, recv, rcount, rdt, r, tag)? };
            Ok(t)
        }
        Role::Root => {
            let n = remote_size(&p)?;
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            let (counts, displs) = unsafe { scounts.resolve(n)? };
            for i in 0..n as usize {
                // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                // hidden handles are this library's.
                unsafe {
                    t.send(
                        &p,
                        at(send, displs[i], sdt)?,
                        counts[i],
                        sdt,
                        i as c_int,
                        tag,
                    )?
                };
            }
            Ok(t)
        }
    }
}

/// Counts and displacements of a collective's per-rank blocks: the same count for every
/// rank (blocks back to back), or the `v` arrays.
#[derive(Clone, Copy)]
pub(crate) enum Counts {
    Same(c_int),
    V(*const c_int, *const c_int),
}

impl Counts {
    /// (count, displacement in elements) of every one of `n` ranks.
    ///
    /// # Safety
    /// The `V` arrays hold `n` entries.
    unsafe fn resolve(self, n: c_int) -> R<(Vec<c_int>, Vec<i64>)> {
        match self {
            Counts::Same(c) => {
                if c < 0 {
                    return Err(err(MPI_ERR_COUNT, format!("count {c} is negative")));
                }
                Ok((
                    vec![c; n as usize],
                    (0..n as i64).map(|i| i * c as i64).collect(),
                ))
            }
            Counts::V(counts, displs) => {
                // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                // hidden handles are this library's.
                let c = unsafe { array(counts, n, "counts")? }.to_vec();
                // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                // hidden handles are this library's.
                let d = unsafe { array(displs, n, "displs")? };
                if let Some(x) = c.iter().find(|&&x| x < 0) {
                    return Err(err(MPI_ERR_COUNT, format!("count {x} is negative")));
                }
                Ok((c, d.iter().map(|&x| x as i64).collect()))
            }
        }
    }
}

/// Posts the messages of [`allgather`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
unsafe fn allgather_post(
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    tag: c_int,
) -> R<Transfers> {
    no_in_place(send, "sendbuf")?;
    if scount < 0 {
        // Checked before the receives are posted, which the peers' sends would not match.
        return Err(err(
            MPI_ERR_COUNT,
            format!("sendcount {scount} is negative"),
        ));
    }
    let n = remote_size(&p)?;
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let (counts, displs) = unsafe { rcounts.resolve(n)? };
    let mut t = Transfers::new();
    for i in 0..n {
        let k = i as usize;
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe {
            t.recv(&p, at(recv, displs[k], rdt)?, counts[k], rdt, i, tag)?;
        }
    }
    for i in 0..n {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe { t.send(&p, send, scount, sdt, i, tag)? };
    }
    Ok(t)
}

/// Posts the messages of [`alltoall`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
unsafe fn alltoall_post(
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    tag: c_int,
) -> R<Transfers> {
    no_in_place(send, "sendbuf")?;
    let n = remote_size(&p)?;
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let (sc, sd) = unsafe { scounts.resolve(n)? };
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let (rc, rd) = unsafe { rcounts.resolve(n)? };
    let mut t = Transfers::new();
    for i in 0..n as usize {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe { t.recv(&p, at(recv, rd[i], rdt)?, rc[i], rdt, i as c_int, tag)? };
    }
    for i in 0..n as usize {
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe { t.send(&p, at(send, sd[i], sdt)?, sc[i], sdt, i as c_int, tag)? };
    }
    Ok(t)
}

/// Posts the messages of [`alltoallw`] with bridge tag `tag`: buffers (send, receive),
/// (counts, byte displacements) of the sends, their types, the same of the receives.
unsafe fn alltoallw_post(
    p: InterParts,
    [send, recv]: [*mut c_void; 2],
    [scounts, sdispls]: [*const c_int; 2],
    stypes: *const Handle,
    [rcounts, rdispls]: [*const c_int; 2],
    rtypes: *const Handle,
    tag: c_int,
) -> R<Transfers> {
    no_in_place(send, "sendbuf")?;
    let n = remote_size(&p)?;
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let (sc, sd, st) = unsafe {
        (
            array(scounts, n, "sendcounts")?,
            array(sdispls, n, "sdispls")?,
            array(stypes, n, "sendtypes")?,
        )
    };
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let (rc, rd, rt) = unsafe {
        (
            array(rcounts, n, "recvcounts")?,
            array(rdispls, n, "rdispls")?,
            array(rtypes, n, "recvtypes")?,
        )
    };
    let mut t = Transfers::new();
    for i in 0..n as usize {
        let b = (recv as *mut u8).wrapping_offset(rd[i] as isize) as *mut c_void;
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe { t.recv(&p, b, rc[i], rt[i], i as c_int, tag)? };
    }
    for i in 0..n as usize {
        let b = (send as *const u8).wrapping_offset(sd[i] as isize) as *const c_void;
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe { t.send(&p, b, sc[i], st[i], i as c_int, tag)? };
    }
    Ok(t)
}

/// The requests a collective posted on the bridge, until they become a compound request's
/// parts ([`Mode::finish`]).
struct Transfers {
    reqs: Vec<Handle>,
}

impl Transfers {
    fn new() -> Transfers {
        Transfers { reqs: Vec::new() }
    }

    /// Posts a receive of `count` items of `dt` from remote rank `from`.
    ///
    /// # Safety
    /// `buf` holds `count` items of `dt` and lives, unaliased, until the request completes.
    unsafe fn recv(
        &mut self,
        p: &InterParts,
        buf: *mut c_void,
        count: c_int,
        dt: Handle,
        from: c_int,
        tag: c_int,
    ) -> R<()> {
        let r = crate::p2p::start_own(false, buf, count as i64, dt, from, tag, p.bridge)
            .map_err(|e| inner(e, "a receive from the remote group"))?;
        self.reqs.push(r);
        Ok(())
    }

    /// Posts a send of `count` items of `dt` to remote rank `to`.
    ///
    /// # Safety
    /// `buf` holds `count` items of `dt` and lives until the request completes.
    unsafe fn send(
        &mut self,
        p: &InterParts,
        buf: *const c_void,
        count: c_int,
        dt: Handle,
        to: c_int,
        tag: c_int,
    ) -> R<()> {
        let r = crate::p2p::start_own(true, buf, count as i64, dt, to, tag, p.bridge)
            .map_err(|e| inner(e, "a send to the remote group"))?;
        self.reqs.push(r);
        Ok(())
    }

    /// The posted requests, now the caller's to complete.
    fn into_parts(mut self) -> Vec<Handle> {
        std::mem::take(&mut self.reqs)
    }

    /// Cancels what can be cancelled and waits for the rest, so no posted request uses a
    /// buffer after this returns (an error path calls it before freeing scratch the
    /// requests point into).
    fn abandon(&mut self) {
        // Receives are cancelled first: the peers may have refused the call too and never
        // send (an unmatched receive would wait forever). A send is left to complete.
        if self.reqs.is_empty() {
            return;
        }
        if let Ok(s) = state("intercommunicator collective") {
            for &r in &self.reqs {
                crate::p2p::cancel_own(s, r);
            }
            for r in self.reqs.iter_mut() {
                // The error of a cancelled or failed part is the caller's error already.
                let _ = crate::p2p::complete(s, r, true, std::ptr::null_mut());
            }
        }
        self.reqs.clear();
    }
}

impl Drop for Transfers {
    fn drop(&mut self) {
        self.abandon();
    }
}

/// An inner step's error, saying which step of the intercommunicator collective failed.
pub(crate) fn inner(e: MpiError, what: &str) -> MpiError {
    err(
        e.class,
        format!(
            "{what} of the intercommunicator collective failed: {}",
            e.message
        ),
    )
}

/// Added to a blocking form's bridge tag for its nonblocking form.
const NB: c_int = 16;

/// How a collective completes. Both forms are the same start (every message of the call
/// posted at once, see the file's comment) and the same compound request: the nonblocking
/// form returns it as `*req`, the blocking form waits for it. Their bridge tags differ by
/// [`NB`], so an unfinished nonblocking call and a blocking one never take each other's
/// messages.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Blocking,
    /// Request `*req` on intercommunicator `comm`.
    Nonblocking {
        comm: Handle,
        req: *mut Handle,
    },
}

impl Mode {
    /// Checks `req` before anything is posted (an error then leaves nothing in flight).
    fn check(self) -> R<()> {
        match self {
            Mode::Nonblocking { req, .. } if req.is_null() => {
                Err(err(MPI_ERR_ARG, "request pointer is NULL"))
            }
            _ => Ok(()),
        }
    }

    /// The bridge tag of collective `base` (one of the `TAG_*`) in this mode.
    fn tag(self, base: c_int) -> c_int {
        match self {
            Mode::Blocking => base,
            Mode::Nonblocking { .. } => base + NB,
        }
    }

    /// Files the posted transfers and the final step as a compound request: returned as
    /// `*req`, or waited for.
    fn finish(self, p: &InterParts, t: Transfers, then: Option<Then>) -> R<()> {
        let s = state("intercommunicator collective")?;
        match self {
            Mode::Nonblocking { comm, req } => compound::file(s, comm, t.into_parts(), then, req),
            Mode::Blocking => {
                let mut h = MPI_REQUEST_NULL;
                compound::file(s, p.bridge, t.into_parts(), then, &mut h)?;
                crate::p2p::wait_own(&mut h)
            }
        }
    }
}

/// MPI_Barrier on an intercommunicator: every rank sends an empty message to every remote
/// rank and receives one from each, so the request completes only once every rank of the
/// other group has entered.
pub(crate) fn barrier(p: InterParts, mode: Mode) -> R<()> {
    if let Mode::Blocking = mode {
        return crate::inter_leader::barrier(p);
    }
    mode.check()?;
    let mut t = Transfers::new();
    let null = std::ptr::null_mut::<c_void>();
    for i in 0..remote_size(&p)? {
        // SAFETY: zero-byte messages read and write nothing.
        unsafe {
            t.recv(&p, null, 0, MPI_BYTE, i, mode.tag(TAG_BARRIER))?;
            t.send(&p, null, 0, MPI_BYTE, i, mode.tag(TAG_BARRIER))?;
        }
    }
    mode.finish(&p, t, None)
}

/// MPI_Bcast on an intercommunicator: the root sends to every remote rank.
pub(crate) unsafe fn bcast(
    p: InterParts,
    buf: *mut c_void,
    count: c_int,
    dt: Handle,
    root: c_int,
    mode: Mode,
) -> R<()> {
    if let Mode::Blocking = mode {
        // SAFETY: the caller's contract.
        return unsafe { crate::inter_leader::bcast(p, buf, count, dt, root) };
    }
    mode.check()?;
    let mut t = Transfers::new();
    match role(root, &p)? {
        Role::Idle => {}
        Role::Root => {
            for i in 0..remote_size(&p)? {
                // SAFETY: MPI's contract for `buf` (count items of dt), which lives until the
                // request completes.
                unsafe { t.send(&p, buf, count, dt, i, mode.tag(TAG_BCAST))? };
            }
        }
        // SAFETY: as for the root's sends: `buf` receives count items of dt and lives until
        // completion.
        Role::Leaf(r) => unsafe { t.recv(&p, buf, count, dt, r, mode.tag(TAG_BCAST))? },
    }
    mode.finish(&p, t, None)
}

/// Checks that `op` can reduce `dt` before anything is posted, so a bad operation is
/// reported by the start call, not by the completion.
pub(crate) fn check_reduction(s: &State, op: Handle, dt: Handle) -> R<()> {
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

/// MPI_Reduce on an intercommunicator: every remote rank sends its contribution to the
/// root, which reduces them at completion.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
    mode: Mode,
) -> R<()> {
    if let Mode::Blocking = mode {
        // SAFETY: the caller's contract.
        return unsafe { crate::inter_leader::reduce(p, send, recv, count, dt, op, root) };
    }
    mode.check()?;
    let mut t = Transfers::new();
    let mut then = None;
    match role(root, &p)? {
        Role::Idle => {}
        Role::Root => {
            check_reduction(state("MPI_Reduce")?, op, dt)?;
            // SAFETY: MPI's contract for `recv`.
            then = Some(unsafe {
                gather_contributions(&p, &mut t, recv, count, dt, op, mode.tag(TAG_REDUCE))?
            });
        }
        Role::Leaf(r) => {
            check_reduction(state("MPI_Reduce")?, op, dt)?;
            no_in_place(send, "sendbuf")?;
            // SAFETY: MPI's contract for `send`.
            unsafe { t.send(&p, send, count, dt, r, mode.tag(TAG_REDUCE))? };
        }
    }
    mode.finish(&p, t, then)
}

/// MPI_Allreduce on an intercommunicator: every rank sends its contribution to every
/// remote rank and reduces the ones it receives at completion.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allreduce(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    mode: Mode,
) -> R<()> {
    if let Mode::Blocking = mode {
        // SAFETY: the caller's contract.
        return unsafe { crate::inter_leader::allreduce(p, send, recv, count, dt, op) };
    }
    mode.check()?;
    check_reduction(state("MPI_Allreduce")?, op, dt)?;
    no_in_place(send, "sendbuf")?;
    let mut t = Transfers::new();
    // SAFETY: MPI's contract for `recv` and `send`.
    let then =
        unsafe { gather_contributions(&p, &mut t, recv, count, dt, op, mode.tag(TAG_ALLREDUCE))? };
    let sent = (|| -> R<()> {
        for i in 0..remote_size(&p)? {
            // SAFETY: MPI's contract for `send`.
            unsafe { t.send(&p, send, count, dt, i, mode.tag(TAG_ALLREDUCE))? };
        }
        Ok(())
    })();
    if let Err(e) = sent {
        // The posted receives point into the scratch `then` owns: finish them first.
        t.abandon();
        drop(then);
        return Err(e);
    }
    mode.finish(&p, t, Some(then))
}

/// MPI_Reduce_scatter(_block) on an intercommunicator: the remote group's reduction of
/// `sum(rcounts)` elements, scattered over the local group by `rcounts` (one entry per
/// local rank; the remote group's vectors have as many elements). Every rank sends its
/// whole vector to every remote rank and receives every remote rank's; at completion it
/// reduces its own block of them in rank order (r0 op (r1 op (... op r_{n-1}))).
///
/// # Safety
/// MPI's contract: `send` holds `sum(rcounts)` elements of `dt`, `recv` this rank's
/// `rcounts[rank]`, both live until the request completes.
#[allow(clippy::too_many_arguments)]
unsafe fn reduce_scatter(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: &[c_int],
    dt: Handle,
    op: Handle,
    mode: Mode,
) -> R<()> {
    if let Mode::Blocking = mode {
        // SAFETY: the caller's contract.
        return unsafe { crate::inter_leader::reduce_scatter(p, send, recv, rcounts, dt, op) };
    }
    mode.check()?;
    check_reduction(state("MPI_Reduce_scatter")?, op, dt)?;
    no_in_place(send, "sendbuf")?;
    let total = recvcounts_total(rcounts)?;
    let me = local_rank(&p)? as usize;
    let mine = rcounts[me];
    let offset = rcounts[..me].iter().map(|&c| c as i64).sum::<i64>() * map_of(dt)?.extent();
    let n = remote_size(&p)?;
    let tag = mode.tag(TAG_REDSCAT);
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
    mode.finish(&p, t, Some(then))
}

/// MPI_Reduce_scatter_block on an intercommunicator: [`reduce_scatter`] with `rcount` for
/// every local rank.
///
/// # Safety
/// As [`reduce_scatter`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce_scatter_block(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcount: c_int,
    dt: Handle,
    op: Handle,
    mode: Mode,
) -> R<()> {
    let counts = vec![rcount; local_size(&p)? as usize];
    // SAFETY: the caller's contract.
    unsafe { reduce_scatter(p, send, recv, &counts, dt, op, mode) }
}

/// MPI_Reduce_scatter on an intercommunicator: [`reduce_scatter`] with the C array
/// `rcounts` (one entry per local rank).
///
/// # Safety
/// As [`reduce_scatter`]; `rcounts` holds one count per local rank.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce_scatter_v(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
    mode: Mode,
) -> R<()> {
    // SAFETY: the caller's contract.
    let counts = unsafe { array(rcounts, local_size(&p)?, "recvcounts")? };
    // SAFETY: the caller's contract.
    unsafe { reduce_scatter(p, send, recv, counts, dt, op, mode) }
}

/// MPI_Gather(v) on an intercommunicator (see gather).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gather(
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    root: c_int,
    mode: Mode,
) -> R<()> {
    mode.check()?;
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
            mode.tag(TAG_GATHER),
        )?
    };
    mode.finish(&p, t, None)
}

/// MPI_Scatter(v) on an intercommunicator (see scatter).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn scatter(
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcount: c_int,
    rdt: Handle,
    root: c_int,
    mode: Mode,
) -> R<()> {
    mode.check()?;
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
            mode.tag(TAG_SCATTER),
        )?
    };
    mode.finish(&p, t, None)
}

/// MPI_Allgather(v) on an intercommunicator (see allgather).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allgather(
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    mode: Mode,
) -> R<()> {
    mode.check()?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        allgather_post(
            p,
            send,
            scount,
            sdt,
            recv,
            rcounts,
            rdt,
            mode.tag(TAG_ALLGATHER),
        )?
    };
    mode.finish(&p, t, None)
}

/// MPI_Alltoall(v) on an intercommunicator (see alltoall).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoall(
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
    mode: Mode,
) -> R<()> {
    mode.check()?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        alltoall_post(
            p,
            send,
            scounts,
            sdt,
            recv,
            rcounts,
            rdt,
            mode.tag(TAG_ALLTOALL),
        )?
    };
    mode.finish(&p, t, None)
}

/// MPI_Alltoallw on an intercommunicator (see alltoallw).
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoallw(
    p: InterParts,
    send: *const c_void,
    scounts: *const c_int,
    sdispls: *const c_int,
    stypes: *const Handle,
    recv: *mut c_void,
    rcounts: *const c_int,
    rdispls: *const c_int,
    rtypes: *const Handle,
    mode: Mode,
) -> R<()> {
    mode.check()?;
    // SAFETY: MPI's contract for the buffers and arrays.
    let t = unsafe {
        alltoallw_post(
            p,
            [send as *mut c_void, recv],
            [scounts, sdispls],
            stypes,
            [rcounts, rdispls],
            rtypes,
            mode.tag(TAG_ALLTOALL),
        )?
    };
    mode.finish(&p, t, None)
}
