//! Error recovery of a collective does not wait for sends the peer will never take: two
//! ranks that pass different roots to a 1 MiB bcast each post a rendezvous send the other
//! never matches; each sees the other's message for the same call, gives its own send up
//! and returns InvalidRoot instead of hanging, and the job goes on. One thread per rank (the
//! in-process harness), 2 ranks, under a watchdog so a regression fails instead of hanging.

mod common;

use std::sync::mpsc;
use std::time::Duration;
use weft::coll::Tuning;
use weft::{Comm, ErrorKind};

const COUNT: usize = 1 << 17; // u64s: 1 MiB, far above the eager limit

fn disagreeing_roots(w: &Comm) {
    let rank = w.rank();
    let mut buf = vec![rank as u64 + 1; COUNT];
    let e = w.bcast(&mut buf, rank).unwrap_err();
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

fn run_bounded(vars: &'static [(&'static str, &'static str)]) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        common::run_ranks(2, vars, |w| {
            // A linear-shaped tree: the root sends straight to the other rank.
            w.set_collective_tuning(Tuning::from_vars(&[("WEFT_BCAST_ALGO", "knomial")]).unwrap());
            disagreeing_roots(&w);
        });
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a rank failed (see its panic)"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("hang: a rank that found the disagreement waited for its unmatched send")
        }
    }
}

#[test]
fn large_bcast_with_disagreeing_roots_returns_invalid_root() {
    run_bounded(&[]);
}

#[test]
fn large_bcast_with_disagreeing_roots_without_cma() {
    run_bounded(&[("WEFT_SHM_CMA", "off")]);
}
