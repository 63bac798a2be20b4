//! Shared-memory collectives (barrier, allreduce, bcast, reduce, allgather, alltoall) across
//! real processes: the test binary starts copies of itself as ranks (a real bootstrap store,
//! one segment, CMA between processes). One rank exits in the middle of the job; the
//! others, waiting in the node's collective area where no message will ever fail, must
//! notice and report the dead peer instead of hanging: the last rank, in the counter
//! barrier (the others wait for its arrival), or local rank 0, in the leader barrier (the
//! others wait for it to release them).

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use weft::coll::Op;
use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_COLL_CHILD";
/// The rank that exits in the middle (set by the test for its children).
const DYING: &str = "WEFT_TEST_COLL_DYING";
const NP: u32 = 3;

/// The body of one rank (in a child process).
fn child() {
    let dying: u32 = std::env::var(DYING).unwrap().parse().unwrap();
    let weft = weft::init().unwrap();
    eprintln!("rank {}: up", weft.world().rank());
    let w = weft.world();
    let me = w.rank();
    // The shared-memory algorithms work across processes.
    w.barrier().unwrap();
    let send = vec![me as i64 + 1; 100_000];
    let mut out = vec![0i64; send.len()];
    w.allreduce(&send, &mut out, &Op::Sum).unwrap();
    assert!(out.iter().all(|&x| x == 6), "allreduce across processes");
    let mut b = if me == 1 {
        vec![7u8; 3_000_000]
    } else {
        vec![0u8; 3_000_000]
    };
    w.bcast(&mut b, 1).unwrap();
    assert!(b.iter().all(|&x| x == 7), "bcast across processes");
    // Reduce, allgather and alltoall through the area (more than a slot's worth each).
    let mut red = vec![0i64; if me == 2 { send.len() } else { 0 }];
    w.reduce(&send, &mut red, &Op::Sum, 2).unwrap();
    assert!(red.iter().all(|&x| x == 6), "reduce across processes");
    let mine: Vec<u32> = (0..70_000).map(|i| i * 3 + me).collect();
    let mut all = vec![0u32; 3 * mine.len()];
    w.allgather(&mine, &mut all).unwrap();
    for (i, &x) in all.iter().enumerate() {
        let (r, k) = (i / mine.len(), i % mine.len());
        assert_eq!(x, k as u32 * 3 + r as u32, "allgather across processes");
    }
    let out: Vec<u32> = (0..3 * 50_000).map(|i| me * 1_000_000 + i).collect();
    let mut got = vec![0u32; out.len()];
    w.alltoall(&out, &mut got).unwrap();
    for (i, &x) in got.iter().enumerate() {
        let (r, k) = (i / 50_000, i % 50_000);
        assert_eq!(
            x,
            r as u32 * 1_000_000 + me * 50_000 + k as u32,
            "alltoall across processes"
        );
    }
    w.barrier().unwrap();
    eprintln!("rank {me}: collectives done");
    if me == dying {
        std::process::exit(3);
    }
    // A repeated barrier waits in the area without a schedule (coll::direct): that wait
    // must notice the dead rank too.
    let direct_before = w.coll_direct_runs();
    let e = w.barrier().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    assert!(e.message().contains("barrier"), "{e}");
    assert!(
        w.coll_direct_runs() > direct_before,
        "the repeated barrier ran directly"
    );
    println!("rank {me}: dead peer reported: {e}");
    std::process::exit(0);
}

#[test]
fn shared_memory_collectives_across_processes_and_a_dead_peer() {
    run(
        "shared_memory_collectives_across_processes_and_a_dead_peer",
        NP - 1,
        "shm_counter",
    );
}

#[test]
fn shared_memory_barrier_whose_releasing_rank_dies() {
    run(
        "shared_memory_barrier_whose_releasing_rank_dies",
        0,
        "shm_leader",
    );
}

/// Runs the job of test `name` (its children run `child`) with barrier algorithm `barrier`,
/// rank `dying` exiting in the middle.
fn run(name: &str, dying: u32, barrier: &str) {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("collp{}d{dying}", std::process::id());
    let dying_text = dying.to_string();
    let outputs = common::run_procs(
        name,
        CHILD,
        &job,
        &[0; NP as usize],
        &[
            (DYING, dying_text.as_str()),
            ("WEFT_BARRIER_ALGO", barrier),
            ("WEFT_ALLREDUCE_ALGO", "shm"),
            ("WEFT_BCAST_ALGO", "shm"),
            ("WEFT_REDUCE_ALGO", "shm"),
            ("WEFT_ALLGATHER_ALGO", "shm"),
            ("WEFT_ALLTOALL_ALGO", "shm"),
        ],
        common::JOB_TIMEOUT,
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        if rank as u32 == dying {
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
