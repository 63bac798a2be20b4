//! Synchronous sends (MPI_Ssend): a send of any size completes only once the receiver has
//! matched it, over shared memory (CMA or copies), over TCP and (with the `ucx` feature) UCX.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Rank 1 raises `posted` just before it posts its receive, after waiting long enough that
/// an eager (buffered) send would long have returned; rank 0 checks on return from `ssend`
/// that the flag is up.
fn ssend_waits_for_the_receive(vars: &'static [(&'static str, &'static str)]) {
    for len in [0usize, 1, 8, 1000, 32_768, 70_000] {
        let posted = Arc::new(AtomicBool::new(false));
        let p = posted.clone();
        common::run_ranks(2, vars, move |w| {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            if w.rank() == 0 {
                w.ssend(&data, 1, 3).unwrap();
                assert!(
                    p.load(Ordering::SeqCst),
                    "ssend of {len} bytes returned before the receive was posted"
                );
            } else {
                std::thread::sleep(std::time::Duration::from_millis(100));
                p.store(true, Ordering::SeqCst);
                let mut got = vec![0u8; len];
                let st = w.recv(&mut got, 0, 3).unwrap();
                assert_eq!(st.count::<u8>(), len);
                assert_eq!(got, data);
            }
            w.barrier().unwrap();
        });
        assert!(posted.load(Ordering::SeqCst));
    }
}

#[test]
fn ssend_over_shared_memory() {
    // CMA for every rendezvous (by default it starts at 64 MiB, far above this message).
    ssend_waits_for_the_receive(&[("WEFT_SHM_CMA_MIN_BYTES", "0")]);
}

#[test]
fn ssend_over_shared_memory_without_cma() {
    ssend_waits_for_the_receive(&[("WEFT_SHM_CMA", "off")]);
}

#[test]
fn ssend_over_tcp() {
    ssend_waits_for_the_receive(&[("WEFT_TRANSPORTS", "tcp")]);
}

#[cfg(feature = "ucx")]
#[test]
fn ssend_over_ucx() {
    ssend_waits_for_the_receive(&[("WEFT_TRANSPORTS", "ucx")]);
}

#[test]
fn ssend_bad_arguments() {
    common::run_ranks(2, &[], |w| {
        let e = w.ssend(&[1u8], 5, 0).unwrap_err();
        assert_eq!(e.kind(), weft::ErrorKind::InvalidRank, "{e}");
        let e = w.ssend(&[1u8], 0, -7).unwrap_err();
        assert_eq!(e.kind(), weft::ErrorKind::InvalidTag, "{e}");
    });
}
