//! Communicators made from groups alone, with no parent communicator (MPI-4.1 §7.4.2
//! MPI_Comm_create_from_group, §7.6.2 MPI_Intercomm_create_from_groups): what a program of
//! the Sessions model uses. Groups here are lists of world ranks, so the parent is the world
//! communicator's collective context, on which weft agrees the new context ids among the
//! group's members only (`Comm::create_group`). The string tag is hashed into the
//! agreement's tag: it keeps apart creations that run at the same time on overlapping
//! groups, as the standard asks of it; two distinct strings that hash alike still create
//! correct communicators unless they also run at the same time between the same two ranks.
//! Depends on weft's communicators and this crate's tables.

use crate::consts::*;
use crate::dtype::put;
use crate::env::{c_str, valid_errhandler};
use crate::error::{err, finish, R};
use crate::state::{state, State};
use std::os::raw::{c_char, c_int};

/// The agreement tag of `stringtag` (FNV-1a folded to 15 bits, so two tags derived from it
/// stay below weft's 16-bit field).
fn tag_of(stringtag: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in stringtag.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    ((h ^ (h >> 15)) & 0x7fff) as i32
}

/// The group's world ranks; MPI_ERR_GROUP unless the caller is one of them.
fn members_with_me(s: &State, group: Handle, what: &str) -> R<Vec<u32>> {
    let g = s.group(group)?.to_vec();
    let me = s.world_rank();
    if !g.contains(&me) {
        return Err(err(
            MPI_ERR_GROUP,
            format!("{what} does not contain the calling process (world rank {me})"),
        ));
    }
    Ok(g)
}

/// MPI_Comm_create_from_group (MPI-4.1 §7.4.2): collective over the group's members, who
/// pass the same group and `stringtag`; MPI_GROUP_EMPTY gives MPI_COMM_NULL at once. The new
/// communicator gets `errhandler`; `info` holds hints, none of which weft uses.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_create_from_group(
    group: Handle,
    stringtag: *const c_char,
    _info: Handle,
    errhandler: Handle,
    newcomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Comm_create_from_group")?;
        if newcomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newcomm is NULL"));
        }
        // SAFETY: a non-null stringtag is a C string (MPI's contract).
        let tag = tag_of(&unsafe { c_str(stringtag, "stringtag")? });
        valid_errhandler(s, errhandler)?;
        if group == MPI_GROUP_EMPTY {
            return put!(newcomm, MPI_COMM_NULL);
        }
        let g = members_with_me(s, group, "group")?;
        let c = crate::comm::group_of("MPI_Comm_create_from_group", None, &g, tag)?;
        let s = state("MPI_Comm_create_from_group")?;
        let h = s.add_comm(c);
        s.comm_mut(h)?.errhandler = errhandler;
        s.bsend.comm_from_group(h, group);
        put!(newcomm, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Comm_create_from_group", r)
}

/// MPI_Intercomm_create_from_groups (MPI-4.1 §7.6.2): collective over both groups, which
/// must be disjoint; every member passes its own group as `local_group`, the other as
/// `remote_group`, the leaders as ranks in them, and the same `stringtag`. The leaders
/// trade the groups' context ids over a private communicator of both groups (no program
/// message can meet theirs). The new intercommunicator gets `errhandler`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn MPI_Intercomm_create_from_groups(
    local_group: Handle,
    local_leader: c_int,
    remote_group: Handle,
    remote_leader: c_int,
    stringtag: *const c_char,
    _info: Handle,
    errhandler: Handle,
    newintercomm: *mut Handle,
) -> c_int {
    let _entered = crate::threads::enter();
    let r = (|| {
        let s = state("MPI_Intercomm_create_from_groups")?;
        if newintercomm.is_null() {
            return Err(err(MPI_ERR_ARG, "newintercomm is NULL"));
        }
        // SAFETY: a non-null stringtag is a C string (MPI's contract).
        let tag = tag_of(&unsafe { c_str(stringtag, "stringtag")? });
        valid_errhandler(s, errhandler)?;
        let local = members_with_me(s, local_group, "local_group")?;
        let remote = s.group(remote_group)?.to_vec();
        // Everything below is checked from arguments every member shares, before any
        // message, so all refuse alike and none waits for another.
        let leader = |r: c_int, n: usize, what: &str| {
            if r < 0 || r as usize >= n {
                return Err(err(
                    MPI_ERR_RANK,
                    format!("{what} {r} is not a rank of its group (size {n})"),
                ));
            }
            Ok(r as usize)
        };
        let ll = leader(local_leader, local.len(), "local_leader")?;
        let rl = leader(remote_leader, remote.len(), "remote_leader")?;
        if let Some(w) = remote.iter().find(|w| local.contains(w)) {
            return Err(err(
                MPI_ERR_GROUP,
                format!("world rank {w} is in both groups (they must be disjoint)"),
            ));
        }
        // Both sides list the union the same way: sorted world ranks.
        let mut both: Vec<u32> = local.iter().chain(remote.iter()).copied().collect();
        both.sort_unstable();
        let what = "MPI_Intercomm_create_from_groups";
        let mine = crate::comm::group_of(what, None, &local, tag | 0x8000)?;
        if crate::threads::twins() {
            // Both groups are known here: they agree on the contexts without the leaders'
            // trade, waiting without the lock.
            let world = state(what)?.weft.world();
            let agreed = crate::comm::made_by(mine.iagree_intercomm(&world, &remote, tag)?)?;
            let c = mine.intercomm_from(agreed, &remote)?;
            let s = state(what)?;
            let h = s.add_comm(c);
            s.comm_mut(h)?.errhandler = errhandler;
            return put!(newintercomm, h);
        }
        let peer = crate::comm::group_of(what, None, &both, tag)?;
        let s = state(what)?;
        let remote_in_peer = both
            .binary_search(&remote[rl])
            .expect("the remote leader is in the union") as u32;
        let c = mine.intercomm_create(ll as u32, &peer, remote_in_peer, 0)?;
        let h = s.add_comm(c);
        s.comm_mut(h)?.errhandler = errhandler;
        put!(newintercomm, h)
    })();
    finish(MPI_COMM_WORLD, "MPI_Intercomm_create_from_groups", r)
}

#[cfg(test)]
mod tests {
    #[test]
    fn string_tags_hash_into_15_bits_and_differ() {
        let a = super::tag_of("weft-a");
        let b = super::tag_of("weft-b");
        assert_ne!(a, b);
        for t in ["", "x", "a much longer tag with spaces", "weft-a"] {
            let h = super::tag_of(t);
            assert!((0..0x8000).contains(&h), "{t}: {h}");
        }
        assert_eq!(super::tag_of("same"), super::tag_of("same"));
    }
}
