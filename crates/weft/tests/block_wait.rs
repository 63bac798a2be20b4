//! Waits that sleep in the kernel (`WEFT_BLOCK`): a rank asleep in a receive or in a
//! collective is woken by the peer that delivers, and gets the right data, under `on` (ranks
//! as threads) and under `auto` (real processes: a wait with nothing arriving sleeps after
//! `weft::node_load::IDLE_SLEEP_AFTER` whatever the load; the decision from the load is
//! unit-tested on its inputs in `weft::node_load`); a peer killed while its partner sleeps
//! ends the partner's wait with the dead peer named.
//!
//! Nothing here depends on timing: each sender delivers only once it has seen its partner
//! announce its sleep in the node's segment (`Weft::peer_sleeping`), and the sleeps' timeout
//! (`WEFT_BLOCK_SLEEP_MS`) is 60 s in the wake tests, so a lost wake-up shows as a sleep
//! that ended without its bell rung (and a test that takes a minute), never as a pass.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use common::run_job;
use std::time::{Duration, Instant};
use weft::{ErrorKind, Weft};

/// Knobs of the wake tests: sleep at the first idle poll, for up to a minute.
const SLEEP_AT_ONCE: &[(&str, &str)] = &[("WEFT_BLOCK", "on"), ("WEFT_BLOCK_SLEEP_MS", "60000")];

/// Waits (bounded) until world rank `rank` of this node announced that it sleeps.
fn until_asleep(weft: &Weft, rank: u32) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !weft.peer_sleeping(rank) {
        assert!(Instant::now() < deadline, "rank {rank} never went to sleep");
        std::thread::yield_now();
    }
}

/// The payload rank `from` sends in round `round`: odd sizes and an empty one.
fn payload(from: u32, round: u32) -> Vec<u8> {
    let len = match (from + round) % 4 {
        0 => 0,
        1 => 1,
        2 => 4093,
        _ => 70_001,
    };
    (0..len)
        .map(|i| (i as u32 * 7 + from * 13 + round) as u8)
        .collect()
}

/// Runs `body` on each rank of an `np`-rank job on one node (ranks as threads) with knobs
/// `vars`, then finalizes every rank.
fn one_node_job(
    np: u32,
    vars: &'static [(&str, &str)],
    body: impl Fn(u32, &Weft) + Send + Sync + 'static,
) {
    run_job(
        np,
        vars,
        |_| 0,
        move |rank, weft, _| {
            body(rank, &weft);
            weft.finalize().unwrap();
        },
    );
}

/// Runs test `test` (which calls `body` when `child_var` is set) as an `np`-process job on
/// one node with knobs `vars`, and checks every rank succeeded.
fn one_node_procs(test: &str, child_var: &str, np: u32, vars: &[(&str, &str)]) {
    // Tests run at once in one process: each job its own id.
    static JOBS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let job = format!("blk{}j{n}n{np}", std::process::id());
    let nodes = vec![0; np as usize];
    let outputs = common::run_procs(
        test,
        child_var,
        &job,
        &nodes,
        vars,
        Duration::from_secs(120),
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(status.success(), "np {np} rank {rank} failed: {text}{err}");
    }
}

/// A rank of a process job made by [`one_node_procs`]: runs `body`, then finalizes.
fn procs_child(body: fn(u32, &Weft)) {
    let weft = weft::init().unwrap();
    body(weft.world().rank() as u32, &weft);
    weft.finalize().unwrap();
}

/// Rank 0 receives from every other rank in turn: it tells the sender its turn (a message),
/// and the sender sends only once rank 0 sleeps in the receive, so every receive sleeps and
/// is woken by its sender's delivery.
fn receiver_woken_by_each_sender(rank: u32, weft: &Weft) {
    let world = weft.world();
    let np = world.size();
    const ROUNDS: u32 = 3;
    if rank == 0 {
        for round in 0..ROUNDS {
            for from in 1..np {
                world.send(&[round as u8], from, 6).unwrap();
                let want = payload(from, round);
                let mut got = vec![0u8; want.len()];
                let st = world.recv(&mut got, from as i32, 7).unwrap();
                assert_eq!(st.bytes, want.len(), "from {from} round {round}");
                assert_eq!(got, want, "from {from} round {round}");
            }
        }
        let (sleeps, woken) = (weft.futex_sleeps(), weft.futex_sleeps_woken());
        let receives = ((np - 1) * ROUNDS) as u64;
        // Each receive slept (its sender waited for that) and the delivery rang the bell; a
        // lost wake-up ends a sleep only after 60 s, unrung.
        assert!(
            sleeps >= receives,
            "{sleeps} sleeps for {receives} receives"
        );
        assert!(
            woken >= receives,
            "{woken} of {sleeps} sleeps woken for {receives} receives"
        );
        if np == 1 {
            assert_eq!(sleeps, 0, "a rank alone has nobody to sleep for");
        }
    } else {
        for round in 0..ROUNDS {
            let mut turn = [0u8; 1];
            world.recv(&mut turn, 0, 6).unwrap();
            assert_eq!(turn, [round as u8]);
            until_asleep(weft, 0);
            world.send(&payload(rank, round), 0, 7).unwrap();
        }
    }
}

#[test]
fn a_sleeping_receiver_is_woken_by_its_sender_at_1_2_3_4_7() {
    for np in [1, 2, 3, 4, 7] {
        one_node_job(np, SLEEP_AT_ONCE, receiver_woken_by_each_sender);
    }
}

#[test]
fn a_rank_alone_receives_from_itself_with_sleeping_on() {
    one_node_job(1, SLEEP_AT_ONCE, |_, weft| {
        let world = weft.world();
        world.send(&[1u8, 2, 3], 0, 1).unwrap();
        let mut got = [0u8; 3];
        world.recv(&mut got, 0, 1).unwrap();
        assert_eq!(got, [1, 2, 3]);
        assert_eq!(weft.futex_sleeps(), 0);
    });
}

/// Every rank but the last sleeps in a barrier (and then an allreduce); the last arrives
/// only once all of them sleep, so its arrival must wake them all.
fn collective_sleepers_woken_by_the_last_arrival(rank: u32, weft: &Weft) {
    let world = weft.world();
    let np = world.size();
    let last = np - 1;
    for round in 0..2u32 {
        if rank == last {
            for r in 0..last {
                until_asleep(weft, r);
            }
        }
        world.barrier().unwrap();
        if rank == last {
            for r in 0..last {
                until_asleep(weft, r);
            }
        }
        let mine = [rank as i64 + round as i64; 3];
        let mut sum = [0i64; 3];
        world
            .allreduce(&mine, &mut sum, &weft::coll::Op::Sum)
            .unwrap();
        let want = (0..np as i64).sum::<i64>() + np as i64 * round as i64;
        assert_eq!(sum, [want; 3], "rank {rank} round {round}");
    }
    if rank != last {
        // Each sleep the last rank saw ends only by a rung bell (or after a minute); a sleep
        // it saw may be one already rung but not yet left, so at least one.
        let woken = weft.futex_sleeps_woken();
        assert!(woken >= 1, "rank {rank}: {woken} woken sleeps");
    }
}

#[test]
fn ranks_sleeping_in_collectives_are_woken_by_the_last_arrival() {
    for np in [2, 3, 4, 7] {
        one_node_job(
            np,
            SLEEP_AT_ONCE,
            collective_sleepers_woken_by_the_last_arrival,
        );
    }
}

#[test]
fn ranks_sleeping_in_shared_memory_collectives_are_woken_by_the_last_arrival() {
    const SHM: &[(&str, &str)] = &[
        ("WEFT_BLOCK", "on"),
        ("WEFT_BLOCK_SLEEP_MS", "60000"),
        ("WEFT_BARRIER_ALGO", "shm_counter"),
        ("WEFT_ALLREDUCE_ALGO", "shm"),
    ];
    for np in [2, 3, 4, 7] {
        one_node_job(np, SHM, collective_sleepers_woken_by_the_last_arrival);
    }
}

/// Knobs of the `auto` tests: sleeps (forced by a wait with nothing arriving for longer
/// than `weft::node_load::IDLE_SLEEP_AFTER`, whatever the node's load) last up to a minute.
const AUTO: &[(&str, &str)] = &[("WEFT_BLOCK", "auto"), ("WEFT_BLOCK_SLEEP_MS", "60000")];

const AUTO_RECV_CHILD: &str = "WEFT_TEST_BLOCK_AUTO_RECV_CHILD";

/// Under `auto` a receive that waits long sleeps whatever the load (each sender waits for
/// that before it sends) and its sender's delivery wakes it: real processes, 2, 3, 4, 7.
#[test]
fn auto_receivers_in_processes_sleep_when_nothing_comes_and_are_woken() {
    if std::env::var_os(AUTO_RECV_CHILD).is_some() {
        return procs_child(receiver_woken_by_each_sender);
    }
    for np in [2, 3, 4, 7] {
        one_node_procs(
            "auto_receivers_in_processes_sleep_when_nothing_comes_and_are_woken",
            AUTO_RECV_CHILD,
            np,
            AUTO,
        );
    }
}

const AUTO_COLL_CHILD: &str = "WEFT_TEST_BLOCK_AUTO_COLL_CHILD";

/// Under `auto` ranks waiting long in a barrier and an allreduce sleep, and the last
/// arrival wakes them all: real processes, 2, 3, 4, 7.
#[test]
fn auto_collectives_in_processes_sleep_when_nothing_comes_and_are_woken() {
    if std::env::var_os(AUTO_COLL_CHILD).is_some() {
        return procs_child(collective_sleepers_woken_by_the_last_arrival);
    }
    for np in [2, 3, 4, 7] {
        one_node_procs(
            "auto_collectives_in_processes_sleep_when_nothing_comes_and_are_woken",
            AUTO_COLL_CHILD,
            np,
            AUTO,
        );
    }
}

const CHILD: &str = "WEFT_TEST_BLOCK_CHILD";

/// A child of [`a_peer_killed_while_its_partner_sleeps_is_reported`]: rank 0 sleeps in a
/// receive from rank 1, which kills itself (SIGKILL) once rank 0 sleeps.
fn killed_child() {
    let weft = weft::init().unwrap();
    let world = weft.world();
    world.barrier().unwrap();
    if world.rank() == 1 {
        until_asleep(&weft, 0);
        // SAFETY: a signal to this very process; it ends here.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
        unreachable!("SIGKILL returned");
    }
    let mut buf = [0u8; 8];
    let e = world.recv(&mut buf, 1, 3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PeerDead, "{e}");
    assert!(weft.futex_sleeps() > 0, "rank 0 never slept");
    println!("rank 0: dead peer reported: {e}");
    std::process::exit(0);
}

#[test]
fn a_peer_killed_while_its_partner_sleeps_is_reported() {
    if std::env::var_os(CHILD).is_some() {
        killed_child();
        return;
    }
    let job = format!("blockk{}", std::process::id());
    let outputs = common::run_procs(
        "a_peer_killed_while_its_partner_sleeps_is_reported",
        CHILD,
        &job,
        &[0, 0],
        &[("WEFT_BLOCK", "on")],
        Duration::from_secs(60),
    );
    let (status, text, err) = &outputs[1];
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "rank 1: {text}{err}");
    let (status, text, err) = &outputs[0];
    assert!(status.success(), "rank 0 failed: {text}{err}");
    assert!(
        text.contains("dead peer reported") && text.contains("rank 1 is no longer running"),
        "rank 0: {text}{err}"
    );
}
