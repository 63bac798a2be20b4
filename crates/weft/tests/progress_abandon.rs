//! Error recovery of a collective does not wait for sends the peer will never take: two
//! ranks that pass different roots to a 1 MiB bcast each post a rendezvous send the other
//! never matches; each sees the other's message for the same call, gives its own send up
//! and returns InvalidRoot instead of hanging, and the job goes on. One thread per rank (the
//! in-process harness), 2 ranks, under a watchdog so a regression fails instead of hanging.

mod common;

use std::sync::mpsc;
use weft::coll::Tuning;
use weft::{Comm, ErrorKind};

const COUNT: usize = 1 << 17; // u64s: 1 MiB, far above the eager limit

/// `warm`: first two agreed calls of the same size, the last from root 1, so rank 1's
/// disagreeing call repeats it and runs directly (`coll::direct`, its rendezvous send
/// pending there) while rank 0's takes the schedule.
fn disagreeing_roots(w: &Comm, warm: bool) {
    let rank = w.rank();
    if warm {
        for root in [0u32, 1] {
            let mut b = vec![
                if rank == root {
                    5u64 + u64::from(root)
                } else {
                    0
                };
                COUNT
            ];
            w.bcast(&mut b, root).unwrap();
            assert!(
                b.iter().all(|&x| x == 5 + u64::from(root)),
                "warm-up from {root}"
            );
        }
    }
    let mut buf = vec![rank as u64 + 1; COUNT];
    let direct_before = w.coll_direct_runs();
    let e = w.bcast(&mut buf, rank).unwrap_err();
    assert_eq!(
        w.coll_direct_runs() > direct_before,
        warm && rank == 1,
        "rank {rank}: the call ran directly exactly when it repeated the last"
    );
    assert_eq!(e.kind(), ErrorKind::InvalidRoot, "rank {rank}: {e}");
    let peer = 1 - rank;
    assert!(
        e.message()
            .contains(&format!("rank {peer} passed root {peer}"))
            && e.message()
                .contains(&format!("this rank passed root {rank}")),
        "rank {rank}: {e}"
    );
    // The buffer is ours again and untouched by the peer (it sent nothing we took).
    assert!(buf.iter().all(|&x| x == rank as u64 + 1));
    // Both ranks started one collective: the next calls are in step and work.
    let mut again = vec![if rank == 0 { 7u64 } else { 0 }; COUNT];
    w.bcast(&mut again, 0).unwrap();
    assert!(
        again.iter().all(|&x| x == 7),
        "rank {rank}: bcast after the error"
    );
    w.barrier().unwrap();
}

fn run_bounded(vars: &'static [(&'static str, &'static str)], warm: bool) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        common::run_ranks(2, vars, move |w| {
            // A linear-shaped tree: the root sends straight to the other rank.
            w.set_collective_tuning(Tuning::from_vars(&[("WEFT_BCAST_ALGO", "knomial")]).unwrap());
            disagreeing_roots(&w, warm);
        });
        let _ = tx.send(());
    });
    // A hang catcher: the scenario takes milliseconds, minutes on a loaded machine.
    match rx.recv_timeout(common::STEP_WAIT) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a rank failed (see its panic)"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("hang: a rank that found the disagreement waited for its unmatched send")
        }
    }
}

#[test]
fn large_bcast_with_disagreeing_roots_returns_invalid_root() {
    run_bounded(CMA, false);
}

#[test]
fn a_repeated_large_bcast_with_disagreeing_roots_returns_invalid_root() {
    run_bounded(CMA, true);
}

/// CMA for every rendezvous (by default it starts at 64 MiB, far above these messages; the
/// `_without_cma` test covers the copy through the segment).
const CMA: &[(&str, &str)] = &[("WEFT_SHM_CMA_MIN_BYTES", "0")];

#[test]
fn large_bcast_with_disagreeing_roots_without_cma() {
    run_bounded(&[("WEFT_SHM_CMA", "off")], false);
    run_bounded(&[("WEFT_SHM_CMA", "off")], true);
}
