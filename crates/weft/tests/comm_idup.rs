//! Nonblocking duplication (`Comm::idup`, MPI_Comm_idup) at 1-4 ranks, on one node (shared
//! memory) and across nodes (TCP on loopback): it returns before the other ranks have called
//! it, so ranks may communicate first; several run at once on one communicator and on
//! overlapping ones; blocking creations in between never take the id it agrees on; it works
//! on intercommunicators; bad input gives errors.

mod common;

use weft::{Comm, ErrorKind};

/// Every rank's context id of `c`, gathered over `w`.
fn ctx_of_all(w: &Comm, c: &Comm) -> Vec<u32> {
    let mut all = vec![0u32; w.size() as usize];
    w.allgather(&[c.context_id()], &mut all).unwrap();
    all
}

/// The new communicator is usable: a ring of sends on it carries each rank's number.
fn ring_works(c: &Comm) {
    let n = c.size();
    let me = c.rank();
    let mut got = [0u32];
    c.sendrecv(
        &[me + 1000],
        (me + 1) % n,
        3,
        &mut got,
        ((me + n - 1) % n) as i32,
        3,
    )
    .unwrap();
    assert_eq!(got[0], (me + n - 1) % n + 1000);
}

/// Rank 0 receives from every other rank before it calls idup; the others start theirs,
/// then send synchronously to rank 0 (a blocking idup would deadlock here), then wait.
fn starts_before_the_peers_call(w: Comm) {
    let n = w.size();
    let mut req;
    if w.rank() == 0 {
        for r in 1..n {
            let mut b = [0u32];
            w.recv(&mut b, r as i32, 0).unwrap();
            assert_eq!(b[0], r);
        }
        req = w.idup().unwrap();
    } else {
        req = w.idup().unwrap();
        w.ssend(&[w.rank()], 0, 0).unwrap();
    }
    let d = req.wait().unwrap();
    assert_eq!(d.size(), n);
    assert_eq!(d.rank(), w.rank());
    assert_ne!(d.context_id(), w.context_id());
    let all = ctx_of_all(&w, &d);
    assert!(all.iter().all(|&c| c == all[0]), "ranks disagree: {all:?}");
    ring_works(&d);
    // A finished request is not a request any more.
    assert_eq!(req.test().unwrap_err().kind(), ErrorKind::InvalidRequest);
    d.free().unwrap();
}

#[test]
fn idup_returns_before_the_peers_call_it() {
    for n in 1..=4 {
        common::run_ranks(n, &[], starts_before_the_peers_call);
    }
}

#[test]
fn idup_returns_before_the_peers_call_it_over_tcp() {
    common::run_job(
        3,
        &[],
        |r| r,
        |_, weft, _| {
            starts_before_the_peers_call(weft.world());
            weft.finalize().unwrap();
        },
    );
}

/// Each pair (r, r+1) of ranks has a communicator; every rank duplicates its two at once
/// (MPICH's comm_idup_overlap: with blocking duplications this deadlocks), 20 times.
#[test]
fn overlapping_idups_complete() {
    for n in 2..=4 {
        common::run_ranks(n, &[], |w| {
            let n = w.size();
            let me = w.rank();
            let (mut primary, mut secondary) = (None, None);
            for i in 0..n {
                let color = if me == i || me == (i + 1) % n { 0 } else { 1 };
                let c = w.split(color, (me != i) as i32).unwrap().unwrap();
                if me == i {
                    primary = Some(c);
                } else if me == (i + 1) % n {
                    secondary = Some(c);
                } else {
                    c.free().unwrap();
                }
            }
            let (p, s) = (primary.unwrap(), secondary.unwrap());
            // Repeated: the two agreements of a rank often propose each other's ids and
            // must retry, in an order that differs between rounds.
            for _ in 0..20 {
                let mut rp = p.idup().unwrap();
                let mut rs = s.idup().unwrap();
                // Waited for in the order that makes each rank wait on a pair its partner
                // waits on second.
                let ds = rs.wait().unwrap();
                let dp = rp.wait().unwrap();
                assert_ne!(dp.context_id(), ds.context_id());
                // Checked pair by pair in the order of the pairs' creation (comm i joins ranks
                // i and i + 1), so no two ranks wait on each other's other pair.
                let mut pairs = [(me, p.clone(), dp), ((me + n - 1) % n, s.clone(), ds)];
                pairs.sort_by_key(|x| x.0);
                for (_, parent, dup) in &pairs {
                    ring_works(dup);
                    // The partners agree on the new context.
                    let other = 1 - parent.rank();
                    let mut theirs = [0u32];
                    parent
                        .sendrecv(&[dup.context_id()], other, 9, &mut theirs, other as i32, 9)
                        .unwrap();
                    assert_eq!(theirs[0], dup.context_id());
                }
            }
        });
    }
}

/// Even ranks make a blocking duplication and a group creation before their idup, odd ranks
/// after it (MPICH's comm_create_group_idup): all communicators get ids agreed by every rank
/// and distinct on each.
#[test]
fn blocking_creations_around_an_idup_take_other_ids() {
    for n in [2, 4] {
        common::run_ranks(n, &[], |w| {
            let everyone: Vec<u32> = (0..w.size()).collect();
            let (req, g, d);
            if w.rank() % 2 == 0 {
                g = w.create_group(&everyone, 0).unwrap();
                d = w.dup().unwrap();
                req = w.idup().unwrap();
            } else {
                req = w.idup().unwrap();
                g = w.create_group(&everyone, 0).unwrap();
                d = w.dup().unwrap();
            }
            let mut req = req;
            let i = req.wait().unwrap();
            let ids = [g.context_id(), d.context_id(), i.context_id()];
            assert!(
                ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
                "{ids:?}"
            );
            for c in [&g, &d, &i] {
                let all = ctx_of_all(&w, c);
                assert!(all.iter().all(|&x| x == all[0]), "ranks disagree: {all:?}");
                ring_works(c);
            }
        });
    }
}

/// Five idups in flight on one communicator, finished in reverse order, and ranks whose
/// next free ids differ (odd ranks made extra communicators first).
#[test]
fn several_idups_in_flight_on_one_communicator() {
    for n in 1..=4 {
        common::run_ranks(n, &[], |w| {
            let half = w.split((w.rank() % 2) as i32, 0).unwrap().unwrap();
            if w.rank() % 2 == 1 {
                let _extra = half.dup().unwrap();
            }
            let mut reqs: Vec<_> = (0..5).map(|_| w.idup().unwrap()).collect();
            let mut comms = Vec::new();
            while let Some(mut r) = reqs.pop() {
                comms.push(r.wait().unwrap());
            }
            let mut ids: Vec<u32> = comms.iter().map(|c| c.context_id()).collect();
            for c in &comms {
                let all = ctx_of_all(&w, c);
                assert!(all.iter().all(|&x| x == all[0]), "ranks disagree: {all:?}");
                ring_works(c);
            }
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), 5);
        });
    }
}

/// An intercommunicator's duplicate, started by the members of one group before the other
/// group calls it; point-to-point across the new one.
#[test]
fn idup_of_an_intercommunicator() {
    for n in [2, 3, 4] {
        common::run_ranks(n, &[], |w| {
            let half = w.size() / 2;
            let g = (w.rank() >= half) as u32;
            let local = w.split(g as i32, w.rank() as i32).unwrap().unwrap();
            let ic = local
                .intercomm_create(0, &w, if g == 0 { half } else { 0 }, 7)
                .unwrap();
            // Group 1 waits for a message of group 0's leader, which sends it after
            // starting its idup.
            let mut req;
            if g == 1 && ic.rank() == 0 {
                let mut b = [0u32];
                ic.recv(&mut b, 0, 1).unwrap();
                req = ic.idup().unwrap();
            } else {
                req = ic.idup().unwrap();
                if g == 0 && ic.rank() == 0 {
                    ic.ssend(&[1u32], 0, 1).unwrap();
                }
            }
            let d = req.wait().unwrap();
            assert!(d.is_inter());
            assert_eq!(d.remote_size().unwrap(), ic.remote_size().unwrap());
            let all = ctx_of_all(&w, &d);
            assert!(all.iter().all(|&x| x == all[0]), "ranks disagree: {all:?}");
            // Rank 0 of each group exchanges with the other group's rank 0.
            if d.rank() == 0 {
                let mut got = [0u32];
                d.sendrecv(&[g], 0, 4, &mut got, 0, 4).unwrap();
                assert_eq!(got[0], 1 - g);
            }
        });
    }
}

#[test]
fn idup_of_a_freed_communicator_is_an_error() {
    common::run_ranks(2, &[], |w| {
        let d = w.dup().unwrap();
        d.free().unwrap();
        let e = d.idup().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
    });
}
