//! Intercommunicators (MPI-4.1 §7.6): MPI_Intercomm_create/merge, Comm_test_inter,
//! Comm_remote_size/group, and their forms under MPI_THREAD_MULTIPLE that wait without the
//! lock. weft builds the intercommunicator (groups, contexts, merge); the collectives on
//! intercommunicators are in inter_coll.rs.
//! Depends on the state tables and the crate's own entry points.

use crate::consts::*;
use crate::dtype::put;
use crate::error::{err, finish, MpiError, R};
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
        unsafe {
            crate::icoll::start_iallgather(
                what,
                send as *const c_void,
                per as c_int,
                MPI_INT,
                recv as *mut c_void,
                per as c_int,
                MPI_INT,
                comm,
                &mut own.reqs[0],
            )
        }
        .map_err(|e| err(e.class, format!("{what}: MPI_Iallgather: {}", e.message)))?;
        Ok(own)
    }

    /// Whether every request is complete; an error once one failed.
    fn test(&mut self, what: &str) -> R<bool> {
        let done = state(what)
            .and_then(|s| crate::p2p::testall(s, &mut self.reqs[..], std::ptr::null_mut()));
        match done {
            Ok(done) => Ok(done),
            Err(e) => {
                std::mem::forget(std::mem::take(&mut self.bufs));
                Err(err(e.class, format!("{what}: {}", e.message)))
            }
        }
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
        // The buffers live in `trade` until its requests are complete.
        trade.reqs[0] = crate::p2p::start_own(
            false,
            recv_ptr as *const c_void,
            most as i64,
            MPI_INT,
            remote_leader,
            tag,
            peer_comm,
        )
        .map_err(|e| {
            err(
                e.class,
                format!("{what}: receiving the remote group: {}", e.message),
            )
        })?;
        let sent = crate::p2p::start_own(
            true,
            send_ptr as *const c_void,
            send_n as i64,
            MPI_INT,
            remote_leader,
            tag,
            peer_comm,
        );
        match sent {
            Ok(h) => trade.reqs[1] = h,
            Err(e) => {
                crate::p2p::cancel_own(state(what)?, trade.reqs[0]);
                // The cancelled receive completes before its buffer goes.
                let _ = crate::threads::wait_released(|| trade.test(what));
                return Err(err(
                    e.class,
                    format!("{what}: sending this group: {}", e.message),
                ));
            }
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
    unsafe {
        crate::icoll::start_ibcast(
            what,
            ptr as *mut c_void,
            (most + 2) as c_int,
            MPI_INT,
            local_leader,
            local_comm,
            &mut spread.reqs[0],
        )
    }
    .map_err(|e| {
        err(
            e.class,
            format!("{what}: spreading the remote group: {}", e.message),
        )
    })?;
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

/// MPI_Barrier on intercommunicator parts `p` (MPI_Comm_disconnect's barrier): see
/// [`crate::inter_coll::barrier`].
pub(crate) fn barrier(p: InterParts) -> R<()> {
    crate::inter_coll::barrier(p, crate::inter_coll::Mode::Blocking)
}
