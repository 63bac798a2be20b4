//! Intercommunicators through the Rust API: creation from two halves of world, point-to-point
//! across the groups (ranks name the remote group, statuses report remote ranks), dup,
//! split, create, merge ordering, the bridge and local communicators, and the errors of bad
//! input (intracommunicator-only collectives on an intercommunicator, overlapping groups, a
//! leader out of range, intercommunicator queries on an intracommunicator).

mod common;

use weft::{Comm, ErrorKind};

/// World split into a low half (group 0) and a high half (group 1) joined by an
/// intercommunicator; returns (group, local communicator, intercommunicator).
fn halves(w: &Comm) -> (u32, Comm, Comm) {
    let half = w.size() / 2;
    let g = (w.rank() >= half) as u32;
    let local = w.split(g as i32, w.rank() as i32).unwrap().unwrap();
    let remote_leader = if g == 0 { half } else { 0 };
    let ic = local.intercomm_create(0, w, remote_leader, 77).unwrap();
    (g, local, ic)
}

#[test]
fn create_p2p_dup_merge_split() {
    common::run_ranks(4, &[], |w| {
        let (g, local, ic) = halves(&w);
        assert!(ic.is_inter() && !local.is_inter() && !w.is_inter());
        assert_eq!(ic.size(), 2);
        assert_eq!(ic.remote_size().unwrap(), 2);
        let other: Vec<u32> = if g == 0 { vec![2, 3] } else { vec![0, 1] };
        assert_eq!(ic.remote_members().unwrap(), &other[..]);
        assert_eq!(ic.rank(), w.rank() % 2);

        // Rank r of each group sends to remote rank r; the status names the remote rank.
        let me = ic.rank();
        ic.send(&[100 * g + me], me, 5).unwrap();
        let mut got = [0u32];
        let st = ic.recv(&mut got, me as i32, 5).unwrap();
        assert_eq!(got[0], 100 * (1 - g) + me);
        assert_eq!(st.source, me as i32);
        // A rank of the local group beyond the remote group is refused by name.
        let e = ic.send(&[0u32], 2, 5).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidRank, "{e}");
        assert!(e.to_string().contains("remote"), "{e}");

        // The bridge carries its own traffic: a message there never meets one on `ic`.
        let b = ic.bridge().unwrap();
        b.send(&[7u32], me, 5).unwrap();
        ic.send(&[8u32], me, 5).unwrap();
        ic.recv(&mut got, me as i32, 5).unwrap();
        assert_eq!(got[0], 8);
        b.recv(&mut got, me as i32, 5).unwrap();
        assert_eq!(got[0], 7);

        // The local communicator runs collectives of the local group.
        let mut all = [0u32; 2];
        ic.local_comm()
            .unwrap()
            .allgather(&[w.rank()], &mut all)
            .unwrap();
        assert_eq!(all, if g == 0 { [0, 1] } else { [2, 3] });

        // Dup: same groups, new contexts.
        let d = ic.dup().unwrap();
        assert!(d.is_inter());
        assert_ne!(d.context_id(), ic.context_id());
        assert_eq!(d.remote_members().unwrap(), &other[..]);
        d.send(&[g], me, 1).unwrap();
        d.recv(&mut got, me as i32, 1).unwrap();
        assert_eq!(got[0], 1 - g);

        // Merge: the high half passes high = false, so it comes first.
        let m = ic.merge(g == 0).unwrap();
        assert!(!m.is_inter());
        assert_eq!(m.size(), 4);
        let want = if g == 1 { me } else { 2 + me };
        assert_eq!(m.rank(), want);
        assert_eq!(m.members(), &[2, 3, 0, 1]);

        // Split: rank 0 of each group together, rank 1 of each group together.
        let s = ic.split(me as i32, 0).unwrap().unwrap();
        assert_eq!((s.size(), s.remote_size().unwrap()), (1, 1));
        s.send(&[w.rank()], 0, 2).unwrap();
        s.recv(&mut got, 0, 2).unwrap();
        assert_eq!(got[0], if g == 0 { w.rank() + 2 } else { w.rank() - 2 });
        // A color the remote group does not have gives None.
        let color = if g == 0 { 1 } else { 2 };
        assert!(ic.split(color, 0).unwrap().is_none());

        // Create: each group keeps its rank 0.
        let keep = [local.members()[0]];
        let c = ic.create(&keep).unwrap();
        assert_eq!(c.is_some(), me == 0);
        if let Some(c) = c {
            assert_eq!(c.remote_members().unwrap(), &other[..1]);
            c.free().unwrap();
        }

        d.free().unwrap();
        ic.free().unwrap();
        let e = ic.send(&[0u32], 0, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
    });
}

#[test]
fn bad_input() {
    common::run_ranks(4, &[], |w| {
        // Intercommunicator queries on an intracommunicator.
        let e = w.remote_size().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
        let e = w.merge(false).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
        // A local leader out of range.
        let e = w.intercomm_create(4, &w, 0, 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidRank, "{e}");

        // Intracommunicator-only operations on an intercommunicator.
        let (_, _, ic) = halves(&w);
        let e = ic.barrier().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
        assert!(e.to_string().contains("intercommunicator"), "{e}");
        let mut out = [0u32];
        let e = ic
            .allreduce(&[1u32], &mut out, &weft::coll::Op::Sum)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
        let e = ic.create_group(&[0], 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");
        let e = ic.intercomm_create(0, &w, 0, 1).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidComm, "{e}");

        // Overlapping groups: world joined with itself. The leader finds the overlap and
        // the others learn that it failed instead of waiting for a remote group.
        let e = w.intercomm_create(0, &w, 0, 9).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        w.barrier().unwrap();
    });
}
