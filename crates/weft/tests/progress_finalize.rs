//! Finalize flushes queued shared-memory control messages: a rank whose receive completed
//! while its ring to the sender was full still owes the sender the acknowledgement (`FIN`,
//! or `CTS` without CMA) when it calls finalize, and must send it before it stops polling,
//! else the sender waits for ever on its rendezvous send. One thread per rank (the
//! in-process harness), 2 ranks, small rings so a burst of eager messages fills one.

mod common;

use std::sync::mpsc;
use std::time::Duration;
use weft::Comm;

/// Messages of this payload take 9 ring cells of 64 bytes (with the 32-byte header); a
/// 4096-byte ring holds 63 usable cells, so a burst of 7 fills it exactly and leaves no room
/// for the acknowledgement that follows.
const SMALL_BYTES: usize = 9 * 64 - 32;
const BURST: usize = 7;
const BIG_BYTES: usize = 64 * 1024;

fn small(k: usize) -> Vec<u8> {
    (0..SMALL_BYTES).map(|i| (i * 7 + k) as u8).collect()
}

fn big() -> Vec<u8> {
    (0..BIG_BYTES).map(|i| (i * 13 + 5) as u8).collect()
}

/// Rank 1: send a burst to 0 (fills its ring; the sends complete in the ring), recv big from
/// 0 (its `FIN` is queued), finalize. Rank 0: isend big to 1, pause without polling, recv
/// the burst, wait big (needs the `FIN`), finalize.
fn fin_behind_a_full_ring(w: &Comm) {
    if w.rank() == 0 {
        let data = big();
        w.scope(|s| {
            let r = w.isend(s, &data, 1, 3).unwrap();
            // Rank 1 fills the ring, receives and finalizes meanwhile.
            std::thread::sleep(Duration::from_millis(200));
            for k in 0..BURST {
                let mut got = vec![0u8; SMALL_BYTES];
                w.recv(&mut got, 1, 2).unwrap();
                assert_eq!(got, small(k), "small message {k}");
            }
            r.wait().unwrap();
        });
    } else {
        for k in 0..BURST {
            w.send(&small(k), 0, 2).unwrap();
        }
        let mut got = vec![0u8; BIG_BYTES];
        w.recv(&mut got, 0, 3).unwrap();
        assert_eq!(got, big());
    }
}

fn run_bounded(vars: &'static [(&'static str, &'static str)]) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        common::run_ranks(2, vars, |w| fin_behind_a_full_ring(&w));
        let _ = tx.send(());
    });
    // A hang catcher: the scenario takes milliseconds, minutes on a loaded machine.
    match rx.recv_timeout(common::STEP_WAIT) {
        Ok(()) => {}
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("a rank failed (see its panic)"),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("hang: finalize stopped polling with an acknowledgement still queued")
        }
    }
}

#[test]
fn finalize_flushes_a_queued_fin() {
    run_bounded(&[
        ("WEFT_SHM_RING_BYTES", "4096"),
        ("WEFT_SHM_EAGER_BYTES", "1024"),
        ("WEFT_SHM_FRAGMENT_BYTES", "2016"),
    ]);
}
