//! The node synchronisation engine with one thread per rank (in-process jobs over a memory
//! store and real shared regions): full/empty hand-off, locks, barrier and reduce rounds,
//! burst reduce, table overflow, and bad input. The multi-process runs (2, 3, 4, 7
//! processes and a killed one) are in weft-shmem's C tests.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use weft::sync::{SyncEngine, SyncOp};
use weft::{ErrorKind, Weft};

fn run(n: u32, vars: &[(&str, &str)], body: impl Fn(&Weft, SyncEngine) + Send + Sync + 'static) {
    common::run_job(
        n,
        vars,
        |_| 0,
        move |_, weft, _| {
            let engine = SyncEngine::new(&weft, "t").unwrap();
            body(&weft, engine);
            weft.finalize().unwrap();
        },
    );
}

#[test]
fn barrier_reduce_and_full_empty_at_2_3_4_7_ranks() {
    for n in [2u32, 3, 4, 7] {
        run(n, &[], move |w, e| {
            let me = w.world().rank() as i64;
            for round in 0..100i64 {
                let s: i64 = e.reduce(1, me + round, SyncOp::Sum, n).unwrap();
                assert_eq!(s, (n as i64) * (n as i64 - 1) / 2 + n as i64 * round);
                e.barrier(2, n).unwrap();
            }
            let m: f64 = e.reduce(3, me as f64 * 0.25, SyncOp::Min, n).unwrap();
            assert_eq!(m, 0.0);
            let x: u64 = e.reduce(4, 1u64 << me, SyncOp::Or, n).unwrap();
            assert_eq!(x, (1u64 << n) - 1);
            // A token around the ring: each put waits until the previous value was taken.
            for lap in 0..10i64 {
                if me == 0 {
                    e.put(100, lap, 1).unwrap();
                }
                let v: i64 = e.get(100 + me as u64).unwrap();
                assert_eq!(v, lap + me);
                if (me as u32) + 1 < n {
                    e.put(101 + me as u64, v + 1, 1).unwrap();
                }
            }
            // n readers per value; the producer waits for all of them each time.
            for i in 0..20u64 {
                if me == 0 {
                    e.put(200, i, n).unwrap();
                }
                assert_eq!(e.get::<u64>(200).unwrap(), i);
                e.barrier(2, n).unwrap();
            }
        });
    }
}

#[test]
fn lock_protects_a_read_modify_write() {
    let shared = Arc::new(AtomicU64::new(0));
    let s = shared.clone();
    run(4, &[], move |_, e| {
        for _ in 0..500 {
            e.lock(7).unwrap();
            // Deliberately not atomic as a whole: only the lock makes it correct.
            let v = s.load(Ordering::Relaxed);
            std::hint::spin_loop();
            s.store(v + 1, Ordering::Relaxed);
            e.unlock(7).unwrap();
        }
        e.barrier(8, 4).unwrap();
    });
    assert_eq!(shared.load(Ordering::Relaxed), 2000);
}

#[test]
fn burst_reduce_in_chunks_is_identical_everywhere() {
    run(3, &[], |w, e| {
        let me = w.world().rank() as f64;
        let src: Vec<f64> = (0..70_000).map(|i| me * 0.5 + i as f64).collect();
        let mut dst = vec![0.0; src.len()];
        e.burst_reduce(9, &src, &mut dst, SyncOp::Sum, 3).unwrap();
        for (i, d) in dst.iter().enumerate() {
            assert_eq!(*d, 1.5 + 3.0 * i as f64);
        }
        let isrc: Vec<i64> = (0..1000).map(|i| i * (me as i64 + 1)).collect();
        let mut idst = vec![0i64; 1000];
        e.burst_reduce(10, &isrc, &mut idst, SyncOp::Max, 3)
            .unwrap();
        assert!(idst.iter().enumerate().all(|(i, &x)| x == 3 * i as i64));
    });
}

#[test]
fn full_sets_overflow_and_a_full_table_is_an_error() {
    run(1, &[], |_, e| {
        let cap = e.capacity() as u64;
        // Half the capacity fits whatever the hash does (sets spill into the overflow).
        for a in 0..cap / 2 {
            e.put(a * 64, a as i64, 1).unwrap();
        }
        // Then the table fills up: a clear error, never a wrong entry.
        let mut stored = cap / 2;
        let err = loop {
            match e.put(stored * 64, stored as i64, 1) {
                Ok(()) => stored += 1,
                Err(err) => break err,
            }
            assert!(stored <= cap, "more words stored than the table holds");
        };
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.message().contains("table is full"), "{err}");
        for a in (0..stored).step_by(37) {
            assert_eq!(e.get::<i64>(a * 64).unwrap(), a as i64);
        }
    });
}

#[test]
fn bad_arguments_are_errors() {
    run(1, &[], |_, e| {
        let err = e.put(1, 1i64, 0).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidCount);
        assert!(err.message().contains("0x1"), "{err}");
        assert_eq!(e.barrier(1, 0).unwrap_err().kind(), ErrorKind::InvalidCount);
        assert_eq!(e.unlock(5).unwrap_err().kind(), ErrorKind::InvalidArgument);
        assert_eq!(
            e.reduce(6, 1.0f64, SyncOp::Xor, 1).unwrap_err().kind(),
            ErrorKind::InvalidOp
        );
        assert!(e.lock(u64::MAX).is_err());
        let mut d = [0i64; 2];
        assert_eq!(
            e.burst_reduce(7, &[1i64], &mut d, SyncOp::Sum, 1)
                .unwrap_err()
                .kind(),
            ErrorKind::InvalidCount
        );
        assert!(
            e.burst_reduce(7, &[1i64], &mut d[..1], SyncOp::Sum, 2)
                .is_err(),
            "more participants than local ranks"
        );
        assert!(e.try_lock(11).unwrap());
        assert!(!e.try_lock(11).unwrap());
        e.unlock(11).unwrap();
        assert_eq!(e.reduce(12, 5i64, SyncOp::Prod, 1).unwrap(), 5);
    });
}
