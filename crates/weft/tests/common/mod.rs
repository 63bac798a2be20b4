//! The in-process job harness shared by the runtime's integration tests: one thread per rank,
//! an in-memory bootstrap store and real shared-memory segments (and TCP on loopback between
//! ranks that claim different nodes).

// Each test crate includes this module and uses part of it.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use weft::{Comm, Config, Launch, Weft};

/// How long an in-process job may run before the watchdog ends the test process: a hang
/// catcher only. Ranks that spin in lock step run 70-100x slower on a 2-core machine beside
/// two busy processes (a job of 2 s takes minutes), so it is far above any honest run.
pub(crate) const WATCHDOG: std::time::Duration = std::time::Duration::from_secs(900);

/// How long [`Signal::wait_for`] waits for another rank's step: a hang catcher, as
/// [`WATCHDOG`] (below it, so that a broken order fails with its own message).
pub(crate) const STEP_WAIT: std::time::Duration = std::time::Duration::from_secs(600);

/// The timeout tests give [`run_procs`] jobs: a hang catcher, as [`WATCHDOG`].
pub(crate) const JOB_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Runs `body(rank, weft, store)` on `n` rank threads whose ranks read the knobs `vars`; rank
/// r claims node `node_of(r)`. The body finalizes (or, to play a vanishing rank, does not).
/// A rank that panics ends the test process at once (exit code 101, after removing the
/// job's segments): the other ranks would wait for it, since threads share a pid and
/// peer-death detection cannot see a panicked rank. A watchdog aborts the test process
/// after [`WATCHDOG`] (a hung rank); checks that no segment of the job is left in /dev/shm.
pub(crate) fn run_job(
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
                    job_id: job.clone(),
                    node_id: format!("node{}", node_of(rank)),
                    store: Some(store.clone() as Arc<dyn weft_boot::Store>),
                };
                let weft = weft::init_with(launch, Config::from_vars(&v).unwrap()).unwrap();
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    body(rank, weft, &store)
                }));
                if let Err(payload) = ran {
                    // The other ranks would wait for this one (in a call or in finalize)
                    // until the watchdog: end the test process now, and its segments. The
                    // test harness would never show its captured output, so the panic's
                    // message goes straight to the process's stderr. Every job of the
                    // process goes with it (tests run side by side), so all their segments.
                    remove_segments(&format!("-t{}x", std::process::id()));
                    let why = payload
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| payload.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)");
                    let _ = std::io::Write::write_all(
                        &mut std::io::stderr(),
                        format!("rank {rank} of in-process job {job} panicked: {why}\nending the test\n")
                            .as_bytes(),
                    );
                    std::process::exit(101);
                }
            })
        })
        .collect();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + WATCHDOG;
        while std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            if flag.load(Ordering::Relaxed) {
                return;
            }
        }
        eprintln!(
            "in-process job of {n} ranks did not finish in {} s (a rank panicked or hung)",
            WATCHDOG.as_secs()
        );
        std::process::abort();
    });
    let mut panicked = false;
    for h in handles {
        panicked |= h.join().is_err();
    }
    finished.store(true, Ordering::Relaxed);
    assert!(!panicked, "a rank thread panicked");
    let leftover = segments(&job);
    assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
}

/// The entries of /dev/shm that belong to in-process job `job`.
fn segments(job: &str) -> Vec<std::path::PathBuf> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(job))
        .map(|e| e.path())
        .collect()
}

/// Removes job `job`'s segments (a test that ends the process before its ranks finalize).
fn remove_segments(job: &str) {
    for p in segments(job) {
        let _ = std::fs::remove_file(p);
    }
}

/// Runs `body` on the world communicator of an `n`-rank in-process job on one node whose
/// ranks read the knobs `vars`, and finalizes each rank after it.
pub(crate) fn run_ranks(
    n: u32,
    vars: &[(&str, &str)],
    body: impl Fn(Comm) + Send + Sync + 'static,
) {
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

/// What one rank process printed and how it ended.
pub(crate) type RankOutput = (std::process::ExitStatus, String, String);

/// Starts this test binary as the ranks of a job (rank r on node `nodes[r]`) with a real
/// bootstrap store and job secret, running test `test` with `child_var=1` and the knobs
/// `vars` set; waits up to `timeout` for them (then kills every rank and panics) and returns
/// (status, stdout, stderr) per rank; checks that no segment of `job` is left.
pub(crate) fn run_procs(
    test: &str,
    child_var: &str,
    job: &str,
    nodes: &[u32],
    vars: &[(&str, &str)],
    timeout: std::time::Duration,
) -> Vec<RankOutput> {
    use std::process::{Command, Stdio};
    let secret = b"weft-procs-test-secret";
    let server = weft_boot::TcpStoreServer::bind("127.0.0.1:0", secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let np = nodes.len();
    let mut children: Vec<Option<std::process::Child>> = nodes
        .iter()
        .enumerate()
        .map(|(rank, node)| {
            let mut c = Command::new(&exe);
            c.args(["--exact", test, "--nocapture"])
                .env(child_var, "1")
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", np.to_string())
                .env("WEFT_JOB_ID", job)
                .env("WEFT_NODE_ID", format!("node{node}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            for (k, v) in vars {
                c.env(k, v);
            }
            Some(c.spawn().unwrap())
        })
        .collect();
    let deadline = std::time::Instant::now() + timeout;
    let mut outputs = Vec::new();
    for rank in 0..children.len() {
        let mut c = children[rank].take().expect("each child once");
        loop {
            if let Some(status) = c.try_wait().unwrap() {
                let out = c.wait_with_output().unwrap();
                outputs.push((
                    status,
                    String::from_utf8_lossy(&out.stdout).into_owned(),
                    String::from_utf8_lossy(&out.stderr).into_owned(),
                ));
                break;
            }
            if std::time::Instant::now() > deadline {
                let _ = c.kill();
                // The ranks not looked at yet go too: none may outlive the test.
                for other in children.iter_mut().flatten() {
                    let _ = other.kill();
                    let _ = other.wait();
                }
                let out = c.wait_with_output().unwrap();
                panic!(
                    "rank {rank} did not finish in {timeout:?}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    let leftover: Vec<_> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(job))
        .collect();
    assert!(leftover.is_empty(), "segments left behind: {leftover:?}");
    outputs
}

/// A counter by which the rank threads of an in-process job order their steps outside weft
/// (forcing the interleaving a test checks instead of sleeping and hoping): one thread
/// raises it, others wait until it reaches a value.
#[derive(Default)]
pub(crate) struct Signal(pub AtomicU64);

impl Signal {
    /// A new counter at 0, to share between ranks.
    pub(crate) fn new() -> Arc<Signal> {
        Arc::new(Signal::default())
    }

    /// Raises the counter to `v` (never lowers it).
    pub(crate) fn raise_to(&self, v: u64) {
        self.0.fetch_max(v, Ordering::SeqCst);
    }

    /// The counter now.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }

    /// Waits until the counter reaches `v`; bounded ([`STEP_WAIT`], then the test fails
    /// naming `what`), so a broken order fails instead of hanging.
    pub(crate) fn wait_for(&self, v: u64, what: &str) {
        let deadline = std::time::Instant::now() + STEP_WAIT;
        let mut spins = 0u32;
        while self.0.load(Ordering::SeqCst) < v {
            assert!(
                std::time::Instant::now() < deadline,
                "waited {} s for {what} (counter {} < {v})",
                STEP_WAIT.as_secs(),
                self.get()
            );
            spins += 1;
            if spins < 100 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
    }
}
