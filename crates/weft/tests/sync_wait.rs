//! The engine's wait policy at its sleeping end: with `WEFT_SYNC_SPIN_NS=0` and both yield
//! windows 0 every wait goes to sleep on the futex at once, so each put, get,
//! barrier and reduce hands over through a registered sleeper and a wake-up. A lost wake-up
//! would show as a wait that lasts until the sleeper's timeout (100 ms) instead of ending
//! soon after the event; many such rounds must finish quickly and with the right values.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weft::sync::{SyncEngine, SyncOp};

const SLEEP_AT_ONCE: &[(&str, &str)] = &[
    ("WEFT_SYNC_SPIN_NS", "0"),
    ("WEFT_SYNC_YIELD_US", "0"),
    ("WEFT_SYNC_OWN_CORE_YIELD_US", "0"),
];

#[test]
fn sleeping_getters_are_woken_by_the_put() {
    // Rank 0 puts 30 ms after rank 1 started waiting; rank 1 measures from the put.
    let put_at: Arc<Mutex<Option<Instant>>> = Arc::new(Mutex::new(None));
    let lat = Arc::new(Mutex::new(Vec::new()));
    let (p, l) = (put_at.clone(), lat.clone());
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
                    std::thread::sleep(Duration::from_millis(30));
                    *p.lock().unwrap() = Some(Instant::now());
                    e.put(2, i, 1).unwrap();
                } else {
                    assert_eq!(e.get::<i64>(2).unwrap(), i);
                    let at = p.lock().unwrap().take().expect("the put came first");
                    l.lock().unwrap().push(at.elapsed());
                }
            }
            weft.finalize().unwrap();
        },
    );
    let mut lat = lat.lock().unwrap().clone();
    lat.sort();
    // Woken: well under a millisecond on a quiet machine; a missed wake-up: about 70 ms.
    assert!(
        lat[lat.len() / 2] < Duration::from_millis(25),
        "hand-off latencies {lat:?}"
    );
}

#[test]
fn many_rounds_through_the_futex_lose_no_wake_up() {
    let start = Instant::now();
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
    // 600 rounds: lost wake-ups in a tenth of them would already cost 6 s.
    let took = start.elapsed();
    assert!(took < Duration::from_secs(6), "took {took:?}");
}
