//! Intercommunicators (MPI-4.1 §7.6): MPI_Intercomm_create/merge, Comm_test_inter,
//! Comm_remote_size/group, and the collectives on intercommunicators (§6.2.2 semantics:
//! MPI_ROOT / MPI_PROC_NULL roots, each group receiving what the other group contributes).
//!
//! weft builds the intercommunicator (groups, contexts, merge); the collectives here are
//! compositions of weft's intracommunicator collectives on the local group and
//! point-to-point transfers to the remote group on the intercommunicator's private bridge
//! context (see `state::InterParts`), so there is no second collective engine: a rooted
//! collective moves data straight between the root and the remote ranks, a reduction
//! reduces in the local group, swaps the result between the leaders (local rank 0) and
//! spreads it in the local group.
//!
//! The nonblocking forms (MPI_Ibcast, ... on an intercommunicator) are in inter_nb.rs: one
//! round of messages each, posted by the start call (the `*_post` functions here post the
//! direct transfers for both forms). MPI_Ireduce_scatter(_block) is the exception: it runs
//! the blocking composition and returns a completed request (a sender cannot know how the
//! other group splits the result, so it has no one-round form).
//! Depends on the state tables and the crate's own entry points.

use crate::coll::{MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Scatterv};
use crate::consts::*;
use crate::dtype::{map_of, put};
use crate::error::{class_text, err, finish, MpiError, R};
use crate::p2p::{
    MPI_Cancel, MPI_Irecv, MPI_Isend, MPI_Recv, MPI_Send, MPI_Sendrecv, MPI_Waitall, MpiStatus,
};
use crate::state::{state, InterParts};
use std::os::raw::{c_int, c_void};

// ------------------------------------------------------------------- communicators

/// MPI_Comm_test_inter (MPI-4.1 §7.6.1).
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_test_inter(comm: Handle, flag: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Comm_test_inter")
        .and_then(|s| put!(flag, s.comm(comm)?.comm.is_inter() as c_int));
    finish(comm, "MPI_Comm_test_inter", r)
}

/// MPI_Comm_remote_size (MPI-4.1 §7.6.1): MPI_ERR_COMM on an intracommunicator.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_size(comm: Handle, size: *mut c_int) -> c_int {
    let _entered = crate::threads::enter();
    let r = state("MPI_Comm_remote_size")
        .and_then(|s| put!(size, s.comm(comm)?.comm.remote_size()? as c_int));
    finish(comm, "MPI_Comm_remote_size", r)
}

/// MPI_Comm_remote_group (MPI-4.1 §7.6.1): MPI_ERR_COMM on an intracommunicator.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_remote_group(comm: Handle, group: *mut Handle) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_remote_group")?;
        let g = s.comm(comm)?.comm.remote_members()?.to_vec();
        let h = s.add_group(g);
        put!(group, h)
    })();
    finish(comm, "MPI_Comm_remote_group", r)
}

/// MPI_Intercomm_create (MPI-4.1 §7.6.2): `peer_comm` and `remote_leader` matter only at
/// the local leader, as the standard says (other ranks may pass MPI_COMM_NULL).
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_create(
    local_comm: Handle,
    local_leader: c_int,
    peer_comm: Handle,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    if crate::threads::twins() {
        // SAFETY: the caller's contract, forwarded.
        let r = unsafe {
            intercomm_create_released(
                local_comm,
                local_leader,
                peer_comm,
                remote_leader,
                tag,
                newintercomm,
            )
        };
        return finish(local_comm, "MPI_Intercomm_create", r);
    }
    let r = (|| {
        let s = state("MPI_Intercomm_create")?;
        if newintercomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newintercomm is NULL"));
        }
        let local = s.comm(local_comm)?.comm.clone();
        if local_leader < 0 || local_leader as u32 >= local.size() {
            return Err(err(
                MPI_ERR_RANK,
                format!(
                    "local_leader {local_leader} is not a rank of local_comm (size {})",
                    local.size()
                ),
            ));
        }
        let peer = if local.rank() == local_leader as u32 {
            let p = s.comm(peer_comm)?.comm.clone();
            if remote_leader < 0 || remote_leader as u32 >= p.peer_size() {
                return Err(err(
                    MPI_ERR_RANK,
                    format!(
                        "remote_leader {remote_leader} is not a rank of peer_comm (size {})",
                        p.peer_size()
                    ),
                ));
            }
            p
        } else {
            local.clone()
        };
        let c =
            local.intercomm_create(local_leader as u32, &peer, remote_leader.max(0) as u32, tag)?;
        let h = s.add_comm(c);
        put!(newintercomm, h)
    })();
    finish(local_comm, "MPI_Intercomm_create", r)
}

/// Requests this library started for itself on the program's communicators, and the
/// buffers they read and write: polled inside [`crate::threads::wait_released`] until all
/// are complete. Should one fail, the buffers are leaked rather than freed under requests
/// that may still be in flight.
struct Own {
    reqs: Vec<Handle>,
    bufs: Vec<Vec<c_int>>,
}

impl Own {
    /// Starts an MPI_Iallgather of `mine` on intercommunicator `comm`: `bufs[1]` receives
    /// as many ints from each of the `remote` members of the remote group.
    fn allgather(what: &str, comm: Handle, mine: Vec<c_int>, remote: usize) -> R<Own> {
        let per = mine.len();
        let mut own = Own {
            reqs: vec![MPI_REQUEST_NULL],
            bufs: vec![mine, vec![-1; per * remote]],
        };
        let send = own.bufs[0].as_ptr();
        let recv = own.bufs[1].as_mut_ptr();
        // SAFETY: the buffers live in `own` until its request is complete.
        let rc = unsafe {
            crate::icoll::MPI_Iallgather(
                send as *const c_void,
                per as c_int,
                MPI_INT,
                recv as *mut c_void,
                per as c_int,
                MPI_INT,
                comm,
                &mut own.reqs[0],
            )
        };
        if rc != MPI_SUCCESS {
            return Err(err(
                rc,
                format!("{what}: MPI_Iallgather: {}", class_text(rc)),
            ));
        }
        Ok(own)
    }

    /// Whether every request is complete; an error once one failed.
    fn test(&mut self, what: &str) -> R<bool> {
        let mut flag: c_int = 0;
        // SAFETY: the requests are this library's, their buffers in `self.bufs`.
        let rc = unsafe {
            crate::p2p::MPI_Testall(
                self.reqs.len() as c_int,
                self.reqs.as_mut_ptr(),
                &mut flag,
                std::ptr::null_mut(),
            )
        };
        if rc != MPI_SUCCESS {
            std::mem::forget(std::mem::take(&mut self.bufs));
            return Err(err(rc, format!("{what}: {}", class_text(rc))));
        }
        Ok(flag != 0)
    }
}

/// MPI_Intercomm_create under MPI_THREAD_MULTIPLE, waiting without the lock
/// ([`crate::threads::wait_released`]): the leaders trade their groups over `peer_comm`
/// with `tag` (MPI_Isend/MPI_Irecv), each leader broadcasts the remote group in its local
/// group with their tag (MPI_Ibcast; a failed trade broadcasts an empty group so no member
/// waits for it), then both groups agree on the new contexts on that tag
/// ([`weft::Comm::iagree_intercomm`]).
///
/// # Safety
/// MPI_Intercomm_create's contract.
unsafe fn intercomm_create_released(
    local_comm: Handle,
    local_leader: c_int,
    peer_comm: Handle,
    remote_leader: c_int,
    tag: c_int,
    newintercomm: *mut Handle,
) -> R<()> {
    let what = "MPI_Intercomm_create";
    if newintercomm.is_null() {
        return Err(err(MPI_ERR_ARG, "newintercomm is NULL"));
    }
    let (local, world) = {
        let s = state(what)?;
        (s.comm(local_comm)?.comm.clone(), s.weft.world())
    };
    if local.is_inter() {
        return Err(err(MPI_ERR_COMM, "local_comm is an intercommunicator"));
    }
    if local_leader < 0 || local_leader as u32 >= local.size() {
        return Err(err(
            MPI_ERR_RANK,
            format!(
                "local_leader {local_leader} is not a rank of local_comm (size {})",
                local.size()
            ),
        ));
    }
    // A group is at most the world; the broadcast carries the count, the leaders' tag (the
    // others' tag arguments need not match it), then the members.
    let most = world.size() as usize;
    let mut trade_failed = None;
    let mut shared: Vec<c_int> = vec![0; most + 2];
    shared[1] = tag;
    if local.rank() == local_leader as u32 {
        let peer_size = state(what)?.comm(peer_comm)?.comm.peer_size();
        if remote_leader < 0 || remote_leader as u32 >= peer_size {
            return Err(err(
                MPI_ERR_RANK,
                format!(
                    "remote_leader {remote_leader} is not a rank of peer_comm (size {peer_size})"
                ),
            ));
        }
        let mine: Vec<c_int> = local.members().iter().map(|&w| w as c_int).collect();
        let mut trade = Own {
            reqs: vec![MPI_REQUEST_NULL; 2],
            bufs: vec![mine, vec![-1; most]],
        };
        let (send_ptr, send_n) = (trade.bufs[0].as_ptr(), trade.bufs[0].len() as c_int);
        let recv_ptr = trade.bufs[1].as_mut_ptr();
        // SAFETY: the buffers live in `trade` until its requests are complete.
        let rc = unsafe {
            MPI_Irecv(
                recv_ptr as *mut c_void,
                most as c_int,
                MPI_INT,
                remote_leader,
                tag,
                peer_comm,
                &mut trade.reqs[0],
            )
        };
        if rc != MPI_SUCCESS {
            return Err(err(
                rc,
                format!("{what}: receiving the remote group: {}", class_text(rc)),
            ));
        }
        // SAFETY: as above.
        let rc = unsafe {
            MPI_Isend(
                send_ptr as *const c_void,
                send_n,
                MPI_INT,
                remote_leader,
                tag,
                peer_comm,
                &mut trade.reqs[1],
            )
        };
        if rc != MPI_SUCCESS {
            // SAFETY: the receive is this function's own.
            unsafe { MPI_Cancel(&mut trade.reqs[0]) };
            // The cancelled receive completes before its buffer goes.
            let _ = crate::threads::wait_released(|| trade.test(what));
            return Err(err(
                rc,
                format!("{what}: sending this group: {}", class_text(rc)),
            ));
        }
        match crate::threads::wait_released(|| trade.test(what)) {
            Ok(()) => {
                let theirs: Vec<c_int> = trade.bufs[1]
                    .iter()
                    .copied()
                    .take_while(|&w| w >= 0)
                    .collect();
                shared[0] = theirs.len() as c_int;
                shared[2..2 + theirs.len()].copy_from_slice(&theirs);
            }
            Err(e) => {
                shared[0] = 0;
                trade_failed = Some(e);
            }
        }
    }
    let mut spread = Own {
        reqs: vec![MPI_REQUEST_NULL],
        bufs: vec![shared],
    };
    let ptr = spread.bufs[0].as_mut_ptr();
    // SAFETY: the buffer lives in `spread` until the broadcast is complete.
    let rc = unsafe {
        crate::icoll::MPI_Ibcast(
            ptr as *mut c_void,
            (most + 2) as c_int,
            MPI_INT,
            local_leader,
            local_comm,
            &mut spread.reqs[0],
        )
    };
    if rc != MPI_SUCCESS {
        return Err(err(
            rc,
            format!("{what}: spreading the remote group: {}", class_text(rc)),
        ));
    }
    crate::threads::wait_released(|| spread.test(what))?;
    if let Some(e) = trade_failed {
        return Err(e);
    }
    let got = &spread.bufs[0];
    let n = got[0].clamp(0, most as c_int) as usize;
    let tag = got[1];
    if n == 0 {
        return Err(err(
            MPI_ERR_OTHER,
            format!("the local leader (rank {local_leader}) failed to reach the remote leader"),
        ));
    }
    let members = &got[2..2 + n];
    if let Some(&w) = members.iter().find(|&&w| w < 0 || w as usize >= most) {
        return Err(err(
            MPI_ERR_OTHER,
            format!("the remote leader sent world rank {w}"),
        ));
    }
    let remote: Vec<u32> = members.iter().map(|&w| w as u32).collect();
    if let Some(w) = remote.iter().find(|w| local.members().contains(w)) {
        return Err(err(
            MPI_ERR_ARG,
            format!("world rank {w} is in both groups (they must be disjoint)"),
        ));
    }
    let agreed = crate::comm::made_by(local.iagree_intercomm(&world, &remote, tag)?)?;
    let c = local.intercomm_from(agreed, &remote)?;
    let s = state(what)?;
    let h = s.add_comm(c);
    put!(newintercomm, h)
}

/// MPI_Intercomm_merge under MPI_THREAD_MULTIPLE, waiting without the lock
/// ([`crate::threads::wait_released`]): the contexts come from a nonblocking duplication of
/// the intercommunicator (both groups take part), the remote group's `high` from an
/// MPI_Iallgather on it.
fn merge_released(intercomm: Handle, high: bool, newintracomm: *mut Handle) -> R<()> {
    let what = "MPI_Intercomm_merge";
    if newintracomm.is_null() {
        return Err(err(MPI_ERR_ARG, "newintracomm is NULL"));
    }
    let c = state(what)?.comm(intercomm)?.comm.clone();
    let remote = c.remote_size()? as usize;
    let mut dup = c.idup()?;
    let mut gather = Own::allgather(what, intercomm, vec![high as c_int], remote)?;
    let (mut fresh, mut gathered) = (None, false);
    let mut failed = None;
    crate::threads::wait_released(|| -> R<bool> {
        if fresh.is_none() && failed.is_none() {
            match dup.test() {
                Ok(f) => fresh = f,
                Err(e) => failed = Some(e),
            }
        }
        if !gathered {
            gathered = gather.test(what)?;
        }
        Ok(gathered && (fresh.is_some() || failed.is_some()))
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    let fresh = fresh.expect("the wait returned once the duplicate was made");
    let remote_high = gather.bufs[1].first().is_some_and(|&h| h != 0);
    let m = c.merge_from(fresh, high, remote_high)?;
    let s = state(what)?;
    let h = s.add_comm(m);
    put!(newintracomm, h)
}

/// The split of intercommunicator `comm` (`parent`) under MPI_THREAD_MULTIPLE, waiting
/// without the lock ([`crate::threads::wait_released`]): the contexts come from a
/// nonblocking duplication of the intercommunicator (both groups take part), the local
/// members' colors and keys from a nonblocking allgather in the local group, the remote
/// members' from an MPI_Iallgather on the intercommunicator.
pub(crate) fn split_released(
    what: &str,
    comm: Handle,
    parent: weft::Comm,
    color: c_int,
    key: c_int,
) -> R<Option<weft::Comm>> {
    let local = parent.local_comm()?.clone();
    let remote = parent.remote_size()? as usize;
    let mine = [color, key];
    let mut local_all: Vec<c_int> = vec![0; 2 * local.size() as usize];
    let mut dup = parent.idup()?;
    let mut gather = Own::allgather(what, comm, mine.to_vec(), remote)?;
    let (mut fresh, mut failed) = (None, None);
    let (mut remote_done, mut local_done) = (false, false);
    {
        // SAFETY: `local_gather` is finished or dropped (which waits) before its buffers go.
        let mut local_gather = unsafe { local.iallgather(&mine[..], &mut local_all[..])? };
        crate::threads::wait_released(|| -> R<bool> {
            if fresh.is_none() && failed.is_none() {
                match dup.test() {
                    Ok(f) => fresh = f,
                    Err(e) => failed = Some(MpiError::from(e)),
                }
            }
            if !local_done && failed.is_none() {
                match local_gather.test() {
                    Ok(done) => local_done = done,
                    Err(e) => failed = Some(MpiError::from(e)),
                }
            }
            if !remote_done {
                remote_done = gather.test(what)?;
            }
            Ok(remote_done && (failed.is_some() || (fresh.is_some() && local_done)))
        })?;
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let fresh = fresh.expect("the wait returned once the duplicate was made");
    let pairs =
        |v: &[c_int]| -> Vec<(c_int, c_int)> { v.chunks_exact(2).map(|c| (c[0], c[1])).collect() };
    Ok(parent.inter_split_from(fresh, &pairs(&local_all), &pairs(&gather.bufs[1]))?)
}

/// MPI_Intercomm_merge (MPI-4.1 §7.6.2).
#[no_mangle]
pub unsafe extern "C" fn MPI_Intercomm_merge(
    intercomm: Handle,
    high: c_int,
    newintracomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    if crate::threads::twins() {
        let r = merge_released(intercomm, high != 0, newintracomm);
        return finish(intercomm, "MPI_Intercomm_merge", r);
    }
    let r = (|| {
        let s = state("MPI_Intercomm_merge")?;
        if newintracomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newintracomm is NULL"));
        }
        let c = s.comm(intercomm)?.comm.merge(high != 0)?;
        let h = s.add_comm(c);
        put!(newintracomm, h)
    })();
    finish(intercomm, "MPI_Intercomm_merge", r)
}

// ------------------------------------------------------------------- collectives

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
pub(crate) const TAG_GATHER: c_int = 5;
pub(crate) const TAG_SCATTER: c_int = 6;
pub(crate) const TAG_ALLGATHER: c_int = 7;
pub(crate) const TAG_ALLTOALL: c_int = 8;
pub(crate) const TAG_REDSCAT: c_int = 9;

/// An inner call's return code as a result naming what failed.
pub(crate) fn check(rc: c_int, what: &str) -> R<()> {
    if rc == MPI_SUCCESS {
        Ok(())
    } else {
        Err(err(
            rc,
            format!(
                "{what} of the intercommunicator collective failed: {}",
                class_text(rc)
            ),
        ))
    }
}

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

pub(crate) fn remote_size(p: &InterParts) -> R<c_int> {
    Ok(state("collective")?.comm(p.bridge)?.comm.peer_size() as c_int)
}

fn local_rank(p: &InterParts) -> R<c_int> {
    Ok(state("collective")?.comm(p.local)?.comm.rank() as c_int)
}

pub(crate) fn local_size(p: &InterParts) -> R<c_int> {
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
pub(crate) unsafe fn array<'a, T>(p: *const T, n: c_int, what: &str) -> R<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(err(MPI_ERR_ARG, format!("{what} is NULL")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// Posts receives and sends on the bridge and waits for all of them (or hands them to a
/// compound request, for the nonblocking forms).
pub(crate) struct Transfers {
    reqs: Vec<Handle>,
}

impl Transfers {
    pub(crate) fn new() -> Transfers {
        Transfers { reqs: Vec::new() }
    }

    pub(crate) unsafe fn recv(
        &mut self,
        p: &InterParts,
        buf: *mut c_void,
        count: c_int,
        dt: Handle,
        from: c_int,
        tag: c_int,
    ) -> R<()> {
        let mut r = MPI_REQUEST_NULL;
        check(
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe { MPI_Irecv(buf, count, dt, from, tag, p.bridge, &mut r) },
            "a receive from the remote group",
        )?;
        self.reqs.push(r);
        Ok(())
    }

    pub(crate) unsafe fn send(
        &mut self,
        p: &InterParts,
        buf: *const c_void,
        count: c_int,
        dt: Handle,
        to: c_int,
        tag: c_int,
    ) -> R<()> {
        let mut r = MPI_REQUEST_NULL;
        check(
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe { MPI_Isend(buf, count, dt, to, tag, p.bridge, &mut r) },
            "a send to the remote group",
        )?;
        self.reqs.push(r);
        Ok(())
    }

    /// The posted requests, now the caller's to complete.
    pub(crate) fn into_parts(mut self) -> Vec<Handle> {
        std::mem::take(&mut self.reqs)
    }

    pub(crate) fn wait(mut self) -> R<()> {
        let n = self.reqs.len() as c_int;
        // SAFETY: the requests are this library's; statuses are ignored.
        let rc =
            unsafe { MPI_Waitall(n, self.reqs.as_mut_ptr(), std::ptr::null_mut::<MpiStatus>()) };
        self.reqs.clear();
        check(rc, "a transfer between the groups")
    }
}

impl Transfers {
    /// Cancels what can be cancelled and waits for the rest, so no posted request uses a
    /// buffer after this returns (an error path calls it before freeing scratch the
    /// requests point into).
    pub(crate) fn abandon(&mut self) {
        // An error left requests behind: finish them so no buffer is used after return.
        // Receives are cancelled first: the peers may have refused the call too and never
        // send (an unmatched receive would wait forever).
        if !self.reqs.is_empty() {
            for r in self.reqs.iter_mut() {
                // SAFETY: the requests are this library's; a send is left to complete.
                unsafe { MPI_Cancel(r) };
            }
            let n = self.reqs.len() as c_int;
            // SAFETY: as in `wait`.
            unsafe { MPI_Waitall(n, self.reqs.as_mut_ptr(), std::ptr::null_mut::<MpiStatus>()) };
            self.reqs.clear();
        }
    }
}

impl Drop for Transfers {
    fn drop(&mut self) {
        self.abandon();
    }
}

/// MPI_Barrier on an intercommunicator: the local groups synchronise, their leaders
/// exchange a message, and the local groups synchronise again, so no rank leaves before
/// every rank of both groups has entered.
pub(crate) fn barrier(p: InterParts) -> R<()> {
    // SAFETY: hidden handles of this library; zero-byte messages.
    unsafe {
        check(MPI_Barrier(p.local), "the local barrier")?;
        if local_rank(&p)? == 0 {
            let null = std::ptr::null_mut::<c_void>();
            check(
                MPI_Sendrecv(
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
                ),
                "the leaders' exchange",
            )?;
        }
        check(MPI_Barrier(p.local), "the local barrier")
    }
}

/// MPI_Bcast on an intercommunicator: the root sends to the remote leader, which
/// broadcasts in its group.
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
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe { MPI_Send(buf, count, dt, 0, TAG_BCAST, p.bridge) },
            "the send to the remote leader",
        ),
        Role::Leaf(r) => {
            if local_rank(&p)? == 0 {
                check(
                    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                    // hidden handles are this library's.
                    unsafe {
                        MPI_Recv(buf, count, dt, r, TAG_BCAST, p.bridge, std::ptr::null_mut())
                    },
                    "the receive from the root",
                )?;
            }
            check(
                // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                // hidden handles are this library's.
                unsafe { MPI_Bcast(buf, count, dt, 0, p.local) },
                "the local broadcast",
            )
        }
    }
}

/// MPI_Reduce on an intercommunicator: the remote group reduces to its leader, which
/// sends the result to the root.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn reduce(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    root: c_int,
) -> R<()> {
    match role(root, &p)? {
        Role::Idle => Ok(()),
        Role::Root => check(
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe {
                MPI_Recv(
                    recv,
                    count,
                    dt,
                    0,
                    TAG_REDUCE,
                    p.bridge,
                    std::ptr::null_mut(),
                )
            },
            "the receive from the remote leader",
        ),
        Role::Leaf(r) => {
            no_in_place(send, "sendbuf")?;
            let mut t = Scratch::new(count, dt)?;
            check(
                // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                // hidden handles are this library's.
                unsafe { MPI_Reduce(send, t.ptr(), count, dt, op, 0, p.local) },
                "the local reduction",
            )?;
            if local_rank(&p)? == 0 {
                check(
                    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
                    // hidden handles are this library's.
                    unsafe { MPI_Send(t.ptr(), count, dt, r, TAG_REDUCE, p.bridge) },
                    "the send to the root",
                )?;
            }
            Ok(())
        }
    }
}

/// The reduction of the local group's `send` at the local leader, swapped with the remote
/// leader's: the leader's `out` gets the remote group's reduction.
unsafe fn reduce_and_swap(
    p: &InterParts,
    send: *const c_void,
    out: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
    tag: c_int,
) -> R<()> {
    no_in_place(send, "sendbuf")?;
    let mut t = Scratch::new(count, dt)?;
    check(
        // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
        // hidden handles are this library's.
        unsafe { MPI_Reduce(send, t.ptr(), count, dt, op, 0, p.local) },
        "the local reduction",
    )?;
    if local_rank(p)? == 0 {
        check(
            // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
            // hidden handles are this library's.
            unsafe {
                MPI_Sendrecv(
                    t.ptr(),
                    count,
                    dt,
                    0,
                    tag,
                    out,
                    count,
                    dt,
                    0,
                    tag,
                    p.bridge,
                    std::ptr::null_mut(),
                )
            },
            "the leaders' exchange",
        )?;
    }
    Ok(())
}

/// MPI_Allreduce on an intercommunicator: each group gets the reduction of the other
/// group's data.
pub(crate) unsafe fn allreduce(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    count: c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe {
        reduce_and_swap(&p, send, recv, count, dt, op, TAG_ALLREDUCE)?;
        check(
            MPI_Bcast(recv, count, dt, 0, p.local),
            "the local broadcast",
        )
    }
}

/// The elements of a reduce-scatter's `rcounts` in all: MPI_ERR_COUNT for a negative entry
/// or a sum beyond an `int`.
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

/// MPI_Reduce_scatter(_block) on an intercommunicator: the remote group's reduction of
/// `sum(rcounts)` elements is scattered over the local group by `rcounts` (one entry per
/// local rank).
pub(crate) unsafe fn reduce_scatter(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: &[c_int],
    dt: Handle,
    op: Handle,
) -> R<()> {
    let total = recvcounts_total(rcounts)?;
    let mut theirs = Scratch::new(total, dt)?;
    let me = local_rank(&p)? as usize;
    let mut displs = Vec::with_capacity(rcounts.len());
    let mut d = 0;
    for &c in rcounts {
        displs.push(d);
        d += c;
    }
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe {
        reduce_and_swap(&p, send, theirs.ptr(), total, dt, op, TAG_REDSCAT)?;
        check(
            MPI_Scatterv(
                theirs.ptr(),
                rcounts.as_ptr(),
                displs.as_ptr(),
                dt,
                recv,
                rcounts[me],
                dt,
                0,
                p.local,
            ),
            "the local scatter",
        )
    }
}

/// MPI_Reduce_scatter_block on an intercommunicator.
pub(crate) unsafe fn reduce_scatter_block(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcount: c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    let n = local_size(&p)?;
    let counts = vec![rcount; n as usize];
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe { reduce_scatter(p, send, recv, &counts, dt, op) }
}

/// MPI_Reduce_scatter on an intercommunicator (`rcounts` has one entry per local rank).
pub(crate) unsafe fn reduce_scatter_v(
    p: InterParts,
    send: *const c_void,
    recv: *mut c_void,
    rcounts: *const c_int,
    dt: Handle,
    op: Handle,
) -> R<()> {
    let n = local_size(&p)?;
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    let counts = unsafe { array(rcounts, n, "recvcounts")? }.to_vec();
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe { reduce_scatter(p, send, recv, &counts, dt, op) }
}

/// MPI_Gather(v) on an intercommunicator: the root receives block `i` from remote rank `i`
/// (at `displs[i]` blocks, or `i * counts[0]` when `displs` is `None`).
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
) -> R<()> {
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe { gather_post(p, send, scount, sdt, recv, rcounts, rdt, root, TAG_GATHER) }?.wait()
}

/// Posts the messages of [`gather`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gather_post(
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

/// MPI_Scatter(v) on an intercommunicator: the root sends block `i` to remote rank `i`.
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
) -> R<()> {
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe { scatter_post(p, send, scounts, sdt, recv, rcount, rdt, root, TAG_SCATTER) }?.wait()
}

/// Posts the messages of [`scatter`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn scatter_post(
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

/// MPI_Allgather(v) on an intercommunicator: every rank sends its block to every remote
/// rank and receives block `i` from remote rank `i`.
pub(crate) unsafe fn allgather(
    p: InterParts,
    send: *const c_void,
    scount: c_int,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
) -> R<()> {
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe { allgather_post(p, send, scount, sdt, recv, rcounts, rdt, TAG_ALLGATHER) }?.wait()
}

/// Posts the messages of [`allgather`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn allgather_post(
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

/// MPI_Alltoall(v) on an intercommunicator: block `j` goes to remote rank `j`, block `i`
/// comes from remote rank `i`.
pub(crate) unsafe fn alltoall(
    p: InterParts,
    send: *const c_void,
    scounts: Counts,
    sdt: Handle,
    recv: *mut c_void,
    rcounts: Counts,
    rdt: Handle,
) -> R<()> {
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe { alltoall_post(p, send, scounts, sdt, recv, rcounts, rdt, TAG_ALLTOALL) }?.wait()
}

/// Posts the messages of [`alltoall`] with bridge tag `tag`.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn alltoall_post(
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

/// MPI_Alltoallw on an intercommunicator: per-rank counts, byte displacements and types.
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
) -> R<()> {
    // SAFETY: the enclosing function's contract (MPI's, for the caller's buffers) passed on;
    // hidden handles are this library's.
    unsafe {
        alltoallw_post(
            p,
            [send as *mut c_void, recv],
            [scounts, sdispls],
            stypes,
            [rcounts, rdispls],
            rtypes,
            TAG_ALLTOALL,
        )
    }?
    .wait()
}

/// Posts the messages of [`alltoallw`] with bridge tag `tag`: buffers (send, receive),
/// (counts, byte displacements) of the sends, their types, the same of the receives.
pub(crate) unsafe fn alltoallw_post(
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
