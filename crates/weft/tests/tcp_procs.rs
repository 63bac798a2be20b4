//! TCP across real processes: the test binary starts four copies of itself as ranks of a job
//! with a real bootstrap store and job secret, claiming two nodes of two ranks
//! (`WEFT_NODE_ID`), so ranks of a node talk over shared memory and across nodes over TCP
//! with the job secret as the handshake key. Point-to-point and collectives are checked, then
//! rank 3 exits: rank 0 (other node, TCP) and rank 2 (its node) report it dead. Each rank
//! also checks that init took the job secret out of its environment. A second job inits,
//! talks and finalizes three times in each rank's process.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use std::process::Command;
use weft::coll::Op;
use weft::ErrorKind;

const CHILD: &str = "WEFT_TEST_TCP_CHILD";
const NP: u32 = 4;

fn child() {
    assert!(std::env::var_os("WEFT_JOB_SECRET").is_some());
    let weft = weft::init().unwrap();
    // Read by init, then gone: a program this rank starts does not inherit it.
    assert!(std::env::var_os("WEFT_JOB_SECRET").is_none());
    let inherited = Command::new("sh")
        .args(["-c", "echo ${WEFT_JOB_SECRET-none}"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&inherited.stdout).trim(), "none");
    let w = weft.world();
    let me = w.rank() as u32;
    // A ring of 1 MiB + 5 bytes (rendezvous over TCP between ranks 1-2 and 3-0).
    let len = (1 << 20) + 5;
    let send: Vec<u8> = (0..len).map(|i| (i * 7 + me as usize) as u8).collect();
    let mut recv = vec![0u8; len];
    let prev = (me + NP - 1) % NP;
    w.sendrecv(&send, (me + 1) % NP, 1, &mut recv, prev as i32, 1)
        .unwrap();
    assert!(recv
        .iter()
        .enumerate()
        .all(|(i, &b)| b == (i * 7 + prev as usize) as u8));
    let mut out = [0u64; 3];
    w.allreduce(&[me as u64, 1, 2], &mut out, &Op::Sum).unwrap();
    assert_eq!(out, [6, 4, 8]);
    w.barrier().unwrap();
    println!("rank {me}: traffic checked");
    // Rank 3 vanishes only once ranks 0 and 2 are past the barrier: its last barrier message
    // could otherwise still sit in its queues when it exits without finalizing (flaky).
    match me {
        0 | 2 => w.send(&[1u8], 3, 8).unwrap(),
        3 => {
            let mut go = [0u8; 1];
            w.recv(&mut go, 0, 8).unwrap();
            w.recv(&mut go, 2, 8).unwrap();
        }
        _ => {}
    }
    match me {
        3 => std::process::exit(3),
        0 | 2 => {
            let mut b = [0u8; 1];
            let e = w.recv(&mut b, 3, 7).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
            assert!(e.message().contains("rank 3"), "{e}");
            println!("rank {me}: dead peer reported: {e}");
        }
        _ => {}
    }
    std::process::exit(0);
}

#[test]
fn tcp_between_processes_on_two_nodes_and_a_dead_peer() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("tcpp{}", std::process::id());
    let outputs = common::run_procs(
        "tcp_between_processes_on_two_nodes_and_a_dead_peer",
        CHILD,
        &job,
        &[0, 0, 1, 1],
        &[],
        common::JOB_TIMEOUT,
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(
            text.contains("traffic checked"),
            "rank {rank} ({status}): {text}{err}"
        );
        if rank == 3 {
            assert_eq!(status.code(), Some(3), "rank {rank}: {text}{err}");
        } else {
            assert!(status.success(), "rank {rank} failed: {text}{err}");
        }
        if rank == 0 || rank == 2 {
            assert!(
                text.contains("dead peer reported"),
                "rank {rank}: {text}{err}"
            );
        }
    }
}

const REINIT_CHILD: &str = "WEFT_TEST_REINIT_CHILD";
const INITS: u64 = 3;

/// One rank of a job that inits, talks and finalizes three times in one process: ranks 0
/// and 1 share a node (a new segment each time), rank 2 is on another (TCP, whose handshake
/// needs the job secret that left the environment at the first init).
fn reinit_child() {
    for round in 0..INITS {
        let weft = weft::init().unwrap_or_else(|e| panic!("init number {}: {e}", round + 1));
        assert!(std::env::var_os("WEFT_JOB_SECRET").is_none());
        let w = weft.world();
        let (me, np) = (w.rank() as u64, w.size() as u32);
        let mut out = [0u64; 2];
        w.allreduce(&[me + round, 1], &mut out, &Op::Sum).unwrap();
        assert_eq!(out, [3 + 3 * round, 3], "init number {}", round + 1);
        // Rendezvous-sized ring: CMA or fragments between 0 and 1, TCP to and from 2.
        let len = 100_000 + round as usize;
        let send: Vec<u8> = (0..len)
            .map(|i| (i as u64 * 5 + me + round) as u8)
            .collect();
        let mut recv = vec![0u8; len];
        let prev = (me as u32 + np - 1) % np;
        w.sendrecv(&send, (me as u32 + 1) % np, 4, &mut recv, prev as i32, 4)
            .unwrap();
        assert!(recv
            .iter()
            .enumerate()
            .all(|(i, &b)| b == (i as u64 * 5 + prev as u64 + round) as u8));
        weft.finalize().unwrap();
        println!("rank {me}: init number {} worked", round + 1);
    }
    std::process::exit(0);
}

#[test]
fn a_launched_rank_can_init_again_after_finalize() {
    if std::env::var_os(REINIT_CHILD).is_some() {
        reinit_child();
        return;
    }
    let job = format!("reinit{}", std::process::id());
    let outputs = common::run_procs(
        "a_launched_rank_can_init_again_after_finalize",
        REINIT_CHILD,
        &job,
        &[0, 0, 1],
        &[],
        common::JOB_TIMEOUT,
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(status.success(), "rank {rank} ({status}): {text}{err}");
        assert!(
            text.contains(&format!("init number {INITS} worked")),
            "rank {rank}: {text}{err}"
        );
    }
}
