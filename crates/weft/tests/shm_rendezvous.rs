//! The same-node rendezvous copy chosen at start-up by the lane model (`weft::shm_rendezvous`),
//! forced through the figures of a lane file and the knobs over it. Which copy a message took
//! is seen without timing: the single copy (CMA) lets the receiver complete while the sender
//! stays out of the library (the receiver reads the sender's buffer itself), the pipelined
//! copy cannot complete until the sender streams its fragments.

mod common;

use common::Signal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Bytes of the message: a rendezvous (above the 16 KiB eager limit), below the split copy's
/// threshold with the slow ring's figures (about 1.2 MB), so the receiver copies alone.
const LEN: usize = 100_000;

/// Test calls the receiver makes while its sender is held when the pipelined copy is
/// expected (it can never complete then: nothing streams the fragments).
const POLLS_WHILE_HELD: u32 = 2_000;

/// A ring whose figures lose to CMA at every size (50 us per message, 1 GB/s).
const SLOW_RING: &str = "[[lane]]\ntransport = \"shm\"\nlatency_us = 50.0\noverhead_us = 0.0\ndedicated_gbytes_per_s = 1.0\n\n[[lane]]\ntransport = \"cma\"\nlatency_us = 1.5\noverhead_us = 1.5\ndedicated_gbytes_per_s = 12.0\n";
/// A ring whose figures beat CMA at every size (100 GB/s).
const FAST_RING: &str = "[[lane]]\ntransport = \"shm\"\nlatency_us = 0.3\noverhead_us = 0.1\ndedicated_gbytes_per_s = 100.0\n\n[[lane]]\ntransport = \"cma\"\nlatency_us = 1.5\noverhead_us = 1.5\ndedicated_gbytes_per_s = 12.0\n";

/// Writes `text` to a lane file of this test process; removed by the returned guard.
struct LaneFile(String);

impl LaneFile {
    fn new(name: &str, text: &str) -> LaneFile {
        let path = std::env::temp_dir().join(format!(
            "weft-test-lanes-{}-{name}.toml",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        LaneFile(path.to_string_lossy().into_owned())
    }
}

impl Drop for LaneFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Rank 0 starts a send of [`LEN`] bytes, then stays out of the library until rank 1 lets it
/// go. Rank 1 receives: when `single_copy` is expected it polls until the receive is done
/// (at most 30 s), else it polls [`POLLS_WHILE_HELD`] times. Returns whether the receive completed while the sender was
/// held; the data is checked either way.
fn completed_while_sender_held(vars: &[(&str, &str)], single_copy: bool) -> bool {
    let started = Signal::new();
    let release = Signal::new();
    let done_held = Arc::new(AtomicBool::new(false));
    let (st, rl, dh) = (started.clone(), release.clone(), done_held.clone());
    common::run_ranks(2, vars, move |w| {
        let data: Vec<u8> = (0..LEN).map(|i| (i * 7 % 251) as u8).collect();
        if w.rank() == 0 {
            w.scope(|s| {
                let r = w.isend(s, &data, 1, 9).unwrap();
                st.raise_to(1);
                rl.wait_for(1, "the receiver's verdict");
                r.wait().unwrap();
            });
        } else {
            let mut got = vec![0u8; LEN];
            st.wait_for(1, "the sender's rendezvous");
            w.scope(|s| {
                let mut r = w.irecv(s, &mut got, 0, 9).unwrap();
                let mut done = None;
                let mut polls = 0u32;
                // Bounded either way: a single copy completes at the first poll that sees
                // the request; a wrong choice fails the test after the deadline.
                let deadline = std::time::Instant::now() + common::STEP_WAIT;
                while done.is_none()
                    && (polls < POLLS_WHILE_HELD
                        || (single_copy && std::time::Instant::now() < deadline))
                {
                    done = r.test().unwrap();
                    polls += 1;
                }
                dh.store(done.is_some(), Ordering::SeqCst);
                rl.raise_to(1);
                let status = match done {
                    Some(status) => status,
                    None => r.wait().unwrap(),
                };
                assert_eq!(status.count::<u8>(), LEN);
            });
            assert!(got == data, "the message arrived damaged");
        }
        w.barrier().unwrap();
    });
    done_held.load(Ordering::SeqCst)
}

#[test]
fn slow_ring_figures_choose_the_single_copy() {
    let f = LaneFile::new("slow", SLOW_RING);
    assert!(completed_while_sender_held(
        &[("WEFT_LANE_FILE", &f.0)],
        true
    ));
    let r = weft::shm_rendezvous(
        &weft::Config::from_vars(&[("WEFT_LANE_FILE", &f.0)]).unwrap(),
        2,
        true,
    )
    .unwrap();
    assert_eq!(r.single_copy_from_bytes, 0, "{}", r.single_copy_why);
    assert!(r.split_from_bytes > LEN as u64, "{}", r.split_why);
}

#[test]
fn fast_ring_figures_choose_the_pipelined_copy() {
    let f = LaneFile::new("fast", FAST_RING);
    assert!(!completed_while_sender_held(
        &[("WEFT_LANE_FILE", &f.0)],
        false
    ));
}

#[test]
fn the_knobs_override_the_model() {
    let slow = LaneFile::new("slow-knob", SLOW_RING);
    assert!(!completed_while_sender_held(
        &[
            ("WEFT_LANE_FILE", &slow.0),
            ("WEFT_SHM_CMA_MIN_BYTES", "64M")
        ],
        false
    ));
    let fast = LaneFile::new("fast-knob", FAST_RING);
    assert!(completed_while_sender_held(
        &[
            ("WEFT_LANE_FILE", &fast.0),
            ("WEFT_SHM_CMA_MIN_BYTES", "0"),
            ("WEFT_SHM_COOP_BYTES", "64M")
        ],
        true
    ));
}

#[test]
fn cma_off_never_takes_the_single_copy() {
    let f = LaneFile::new("slow-off", SLOW_RING);
    assert!(!completed_while_sender_held(
        &[("WEFT_LANE_FILE", &f.0), ("WEFT_SHM_CMA", "off")],
        false
    ));
}
