//! A peer that dies during MPI_Comm_idup's agreement (`Comm::idup`): the test binary starts
//! three copies of itself as ranks of a job (ranks 0 and 2 on one node, rank 1 on another,
//! so the dead rank 2 is a shared-memory peer of rank 0 and a TCP peer of rank 1). Rank 2
//! exits without starting the duplication; the others start it and their wait returns a
//! PeerDead error naming rank 2 instead of hanging.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_IDUP_DEAD_CHILD";

fn child() {
    let weft = weft::init().unwrap();
    let w = weft.world();
    let me = w.rank();
    w.barrier().unwrap();
    println!("rank {me}: started");
    // Rank 2 vanishes only once the others are past the barrier (its last barrier message
    // could otherwise still sit in its queues when it exits).
    match me {
        0 | 1 => w.send(&[1u8], 2, 8).unwrap(),
        _ => {
            let mut go = [0u8; 1];
            w.recv(&mut go, 0, 8).unwrap();
            w.recv(&mut go, 1, 8).unwrap();
            std::process::exit(3);
        }
    }
    let mut req = w.idup().unwrap();
    let e = req.wait().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    assert!(e.message().contains("rank 2"), "{e}");
    println!("rank {me}: dead peer reported: {e}");
    // The request is finished: asking again is an error, not a hang.
    assert_eq!(req.test().unwrap_err().kind(), ErrorKind::InvalidRequest);
    std::process::exit(0);
}

#[test]
fn a_peer_that_dies_fails_the_idup() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("idupdead{}", std::process::id());
    let outputs = common::run_procs(
        "a_peer_that_dies_fails_the_idup",
        CHILD,
        &job,
        &[0, 1, 0],
        &[],
        common::JOB_TIMEOUT,
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(
            text.contains("started"),
            "rank {rank} ({status}): {text}{err}"
        );
        if rank == 2 {
            assert_eq!(status.code(), Some(3), "rank {rank}: {text}{err}");
        } else {
            assert!(status.success(), "rank {rank} failed: {text}{err}");
            assert!(
                text.contains("dead peer reported"),
                "rank {rank}: {text}{err}"
            );
        }
    }
}
