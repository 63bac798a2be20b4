//! Waits that sleep in the kernel (`WEFT_BLOCK`): a rank asleep in a receive or in a
//! collective is woken by the peer that delivers, and gets the right data; a peer killed
//! while its partner sleeps ends the partner's wait with the dead peer named.
//!
//! Nothing here depends on timing: each sender delivers only once it has seen its partner
//! announce its sleep in the node's segment (`Weft::peer_sleeping`), and the sleeps' timeout
//! (`WEFT_BLOCK_SLEEP_MS`) is 60 s in the wake tests, so a lost wake-up shows as a sleep
//! that ended without its bell rung (and a test that takes a minute), never as a pass.

mod common;

use common::{run_job, Signal};
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

/// Rank 0 receives from every other rank in turn; each sends only once rank 0 sleeps.
fn receiver_woken_by_each_sender(np: u32) {
    let turn = Signal::new();
    run_job(
        np,
        SLEEP_AT_ONCE,
        |_| 0,
        move |rank, weft, _| {
            let world = weft.world();
            const ROUNDS: u32 = 3;
            if rank == 0 {
                for round in 0..ROUNDS {
                    for from in 1..np {
                        turn.raise_to((round * np + from) as u64);
                        let want = payload(from, round);
                        let mut got = vec![0u8; want.len()];
                        let st = world.recv(&mut got, from as i32, 7).unwrap();
                        assert_eq!(st.bytes, want.len(), "from {from} round {round}");
                        assert_eq!(got, want, "from {from} round {round}");
                    }
                }
                let (sleeps, woken) = (weft.futex_sleeps(), weft.futex_sleeps_woken());
                let receives = ((np - 1) * ROUNDS) as u64;
                // Each receive slept (its sender waited for that) and the delivery rang the
                // bell; a lost wake-up ends a sleep only after 60 s, unrung.
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
                    turn.wait_for((round * np + rank) as u64, "my turn");
                    until_asleep(&weft, 0);
                    world.send(&payload(rank, round), 0, 7).unwrap();
                }
            }
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn a_sleeping_receiver_is_woken_by_its_sender_at_1_2_3_4_7() {
    for np in [1, 2, 3, 4, 7] {
        receiver_woken_by_each_sender(np);
    }
}

#[test]
fn a_rank_alone_receives_from_itself_with_sleeping_on() {
    run_job(
        1,
        SLEEP_AT_ONCE,
        |_| 0,
        |_, weft, _| {
            let world = weft.world();
            world.send(&[1u8, 2, 3], 0, 1).unwrap();
            let mut got = [0u8; 3];
            world.recv(&mut got, 0, 1).unwrap();
            assert_eq!(got, [1, 2, 3]);
            assert_eq!(weft.futex_sleeps(), 0);
            weft.finalize().unwrap();
        },
    );
}

/// Every rank but the last sleeps in a barrier (and then an allreduce); the last arrives
/// only once all of them sleep, so its arrival must wake them all.
fn collective_sleepers_woken_by_the_last_arrival(np: u32, vars: &'static [(&str, &str)]) {
    run_job(
        np,
        vars,
        |_| 0,
        move |rank, weft, _| {
            let world = weft.world();
            let last = np - 1;
            for round in 0..2u32 {
                if rank == last {
                    for r in 0..last {
                        until_asleep(&weft, r);
                    }
                }
                world.barrier().unwrap();
                if rank == last {
                    for r in 0..last {
                        until_asleep(&weft, r);
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
                // Each sleep the last rank saw ends only by a rung bell (or after a minute); a
                // sleep it saw may be one already rung but not yet left, so at least one.
                let woken = weft.futex_sleeps_woken();
                assert!(woken >= 1, "rank {rank}: {woken} woken sleeps");
            }
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn ranks_sleeping_in_collectives_are_woken_by_the_last_arrival() {
    for np in [2, 3, 4, 7] {
        collective_sleepers_woken_by_the_last_arrival(np, SLEEP_AT_ONCE);
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
        collective_sleepers_woken_by_the_last_arrival(np, SHM);
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
