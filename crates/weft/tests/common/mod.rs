//! The in-process job harness shared by the runtime's integration tests: one thread per rank,
//! an in-memory bootstrap store and real shared-memory segments (and TCP on loopback between
//! ranks that claim different nodes).

// Each test crate includes this module and uses part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use weft::{Comm, Config, Launch, Weft};

/// Runs `body(rank, weft, store)` on `n` rank threads whose ranks read the knobs `vars`; rank
/// r claims node `node_of(r)`. The body finalizes (or, to play a vanishing rank, does not).
/// Panics if a rank panics; a watchdog aborts the test process after 180 s (threads share a
/// pid, so peer-death detection cannot see a panicked rank); checks that no segment of the
/// job is left in /dev/shm.
pub fn run_job(
    n: u32,
    vars: &[(&str, &str)],
    node_of: fn(u32) -> u32,
    body: impl Fn(u32, Weft, &Arc<weft_boot::MemStore>) + Send + Sync + 'static,
) {
    static JOBS: AtomicU64 = AtomicU64::new(0);
    let store = weft_boot::MemStore::new();
    let job = format!(
        "t{}x{}",
        std::process::id(),
        JOBS.fetch_add(1, Ordering::Relaxed)
    );
    let body = Arc::new(body);
    let vars: Vec<(String, String)> = vars
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    let handles: Vec<_> = (0..n)
        .map(|rank| {
            let (store, job, body, vars) = (store.clone(), job.clone(), body.clone(), vars.clone());
            std::thread::spawn(move || {
                let v: Vec<(&str, &str)> =
                    vars.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
                let launch = Launch {
                    rank,
                    size: n,
                    job_id: job,
                    node_id: format!("node{}", node_of(rank)),
                    store: Some(store.clone() as Arc<dyn weft_boot::Store>),
                };
                let weft = weft::init_with(launch, Config::from_vars(&v).unwrap()).unwrap();
                body(rank, weft, &store);
            })
        })
        .collect();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    std::thread::spawn(move || {
        for _ in 0..1800 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if flag.load(Ordering::Relaxed) {
                return;
            }
        }
        eprintln!("in-process job of {n} ranks did not finish in 180 s (a rank panicked or hung)");
        std::process::abort();
    });
    let mut panicked = false;
    for h in handles {
        panicked |= h.join().is_err();
    }
    finished.store(true, Ordering::Relaxed);
    assert!(!panicked, "a rank thread panicked");
    let leftover: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(&job))
        .collect();
    assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
}

/// Runs `body` on the world communicator of an `n`-rank in-process job on one node whose
/// ranks read the knobs `vars`, and finalizes each rank after it.
pub fn run_ranks(n: u32, vars: &[(&str, &str)], body: impl Fn(Comm) + Send + Sync + 'static) {
    run_job(
        n,
        vars,
        |_| 0,
        move |_, weft, _| {
            body(weft.world());
            weft.finalize().unwrap();
        },
    );
}
