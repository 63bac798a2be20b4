//! The engine's wait policy at its sleeping end: with `WEFT_SYNC_SPIN_NS=0` and both yield
//! windows 0 every wait goes to sleep on the futex at once, so each put, get, barrier, reduce
//! and lock hands over through a registered sleeper and a wake-up. The sleepers sleep for up
//! to ten minutes (`WEFT_SYNC_SLEEP_MS`) before they would look again on their own: a lost
//! wake-up is not a slow round but a wait that never ends, which the harness's watchdog
//! reports (180 s). Nothing here measures time.

mod common;

use weft::sync::{SyncEngine, SyncOp};

const SLEEP_AT_ONCE: &[(&str, &str)] = &[
    ("WEFT_SYNC_SPIN_NS", "0"),
    ("WEFT_SYNC_YIELD_US", "0"),
    ("WEFT_SYNC_OWN_CORE_YIELD_US", "0"),
    ("WEFT_SYNC_SLEEP_MS", "600000"),
];

#[test]
fn sleeping_getters_are_woken_by_the_put() {
    common::run_job(
        2,
        SLEEP_AT_ONCE,
        |_| 0,
        move |rank, weft, _| {
            let e = SyncEngine::new(&weft, "wake").unwrap();
            assert_eq!(e.wait_policy().yield_us, 0);
            for i in 0..12i64 {
                e.barrier(1, 2).unwrap();
                if rank == 0 {
                    // Most often rank 1 is asleep by now; when it is not, it finds the value
                    // without sleeping, which passes too: nothing depends on the pause.
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    e.put(2, i, 1).unwrap();
                } else {
                    assert_eq!(e.get::<i64>(2).unwrap(), i);
                }
            }
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn many_rounds_through_the_futex_lose_no_wake_up() {
    common::run_job(
        3,
        SLEEP_AT_ONCE,
        |_| 0,
        |rank, weft, _| {
            let e = SyncEngine::new(&weft, "rounds").unwrap();
            for round in 0..300u64 {
                let s: u64 = e.reduce(1, rank as u64 * round, SyncOp::Sum, 3).unwrap();
                assert_eq!(s, 3 * round);
                e.barrier(2, 3).unwrap();
            }
            // Locks: every unlock must wake a sleeping contender.
            for _ in 0..50 {
                e.lock(3).unwrap();
                e.unlock(3).unwrap();
            }
            e.barrier(2, 3).unwrap();
            weft.finalize().unwrap();
        },
    );
    // 650 hand-overs, each through a futex sleep of up to ten minutes: finishing at all
    // says every one was woken.
}
