//! `WEFT_YIELD=off` keeps the core: a rank waiting for a late message spins and never yields
//! (on a loaded machine each yield can cost a time slice), while `WEFT_YIELD=on` yields.
//! Under `auto` with a core per rank, a rank spins for `WEFT_YIELD_AFTER_US` before it yields.

mod common;

use common::run_job;
use std::time::Duration;

fn yields_while_waiting(mode: &'static str, rounds: u64) -> u64 {
    yields_while_waiting_with(&[("WEFT_YIELD", mode)], rounds)
}

/// Rounds for a mode that must never yield: each is a chance to yield wrongly.
const ROUNDS_NEVER: u64 = 50;

/// Rounds at most for a mode that must yield: it stops at the first yield, so this is only a
/// hang catcher (about 10 min). A mode that yields does so in the first round in which rank 0
/// polled before the message came (nearly always the first; a loaded machine that keeps rank 0
/// off its core for the whole 30 ms of a round only makes it take another round), so only a
/// mode that never yields runs them all.
const ROUNDS_UNTIL_YIELD: u64 = 20_000;

/// Idle yields of rank 0 over receives of a message that rank 1 sends 30 ms after rank 0 said
/// (outside weft) that it is about to receive, round after round until rank 0 has yielded
/// or `rounds` rounds passed.
fn yields_while_waiting_with(vars: &[(&str, &str)], rounds: u64) -> u64 {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = std::sync::Mutex::new(tx);
    // Round r + 1: rank 0 is about to receive round r; u64::MAX: no more rounds.
    let receiving = common::Signal::new();
    run_job(
        2,
        vars,
        |_| 0,
        move |rank, weft, _| {
            let world = weft.world();
            for round in 0..rounds {
                if rank == 1 {
                    receiving.wait_for(round + 1, "rank 0 about to receive");
                    if receiving.get() == u64::MAX {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(30));
                    world.send(&[7u8; 8], 0, 5).unwrap();
                } else {
                    if round > 0 && weft.idle_yields() > 0 {
                        receiving.raise_to(u64::MAX);
                        break;
                    }
                    let mut buf = [0u8; 8];
                    receiving.raise_to(round + 1);
                    world.recv(&mut buf, 1, 5).unwrap();
                    assert_eq!(buf, [7u8; 8]);
                }
            }
            if rank == 0 {
                receiving.raise_to(u64::MAX);
                tx.lock().unwrap().send(weft.idle_yields()).unwrap();
            }
            weft.finalize().unwrap();
        },
    );
    rx.recv().unwrap()
}

#[test]
fn yield_off_never_gives_the_core_away_and_on_does() {
    assert_eq!(yields_while_waiting("off", ROUNDS_NEVER), 0);
    assert!(yields_while_waiting("on", ROUNDS_UNTIL_YIELD) > 0);
}

#[test]
fn auto_spins_for_its_window_before_yielding() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Two ranks on one core are oversubscribed: auto yields at once whatever the window.
    // The window is ten minutes: a hang catcher, not a latency bound.
    let spin_long = yields_while_waiting_with(
        &[("WEFT_YIELD", "auto"), ("WEFT_YIELD_AFTER_US", "600000000")],
        ROUNDS_NEVER,
    );
    if cores >= 2 {
        // Each wait lasts 30 ms plus whatever the load adds: far inside the window.
        assert_eq!(
            spin_long, 0,
            "30 ms waits inside a 10 min spin window yielded"
        );
    }
    let spin_none = yields_while_waiting_with(
        &[("WEFT_YIELD", "auto"), ("WEFT_YIELD_AFTER_US", "0")],
        ROUNDS_UNTIL_YIELD,
    );
    assert!(
        spin_none > 0,
        "30 ms waits with no spin window never yielded"
    );
}
