//! A user reduction operation that panics inside a blocking collective: the panic reaches
//! the caller, and a program that catches it goes on with collectives (the engine's guard
//! against nested advancing is cleared on the way out, and the call's receives are finished
//! before its buffers go). Before, the next collective panicked with "a collective driven
//! from inside another".

mod common;

use weft::Op;

#[test]
fn a_panicking_user_op_leaves_the_engine_usable() {
    panicking_user_op(false);
}

/// The same in a repeated call, whose reduction runs in a direct run (no schedule).
#[test]
fn a_panicking_user_op_in_a_direct_run_leaves_the_engine_usable() {
    panicking_user_op(true);
}

fn panicking_user_op(warm: bool) {
    common::run_ranks(
        2,
        &[("WEFT_ALLREDUCE_ALGO", "recursive_doubling")],
        move |w| {
            let me = w.rank();
            if warm {
                // Same shape as the call below (3 commutative 8-byte elements).
                let mut out = [0i64; 3];
                w.allreduce(&[1i64; 3], &mut out, &Op::Sum).unwrap();
                assert_eq!(out, [2; 3]);
            }
            let direct_before = w.coll_direct_runs();
            let op = Op::user::<i64>("boom on rank 0", true, move |a, b| {
                assert!(me != 0, "user op fails on rank 0");
                for (x, y) in a.iter().zip(b.iter_mut()) {
                    *y += x;
                }
            });
            let send = [me as i64 + 1; 3];
            let mut recv = [0i64; 3];
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                w.allreduce(&send, &mut recv, &op)
            }));
            assert_eq!(r.is_err(), me == 0, "only rank 0's op panics");
            assert_eq!(
                w.coll_direct_runs() > direct_before,
                warm,
                "the allreduce ran directly exactly when it repeated a call"
            );
            // Both ranks carry on: a barrier, a correct allreduce with a predefined op, and a
            // nonblocking one that progress must advance.
            w.barrier().unwrap();
            let mut out = [0i64; 3];
            w.allreduce(&send, &mut out, &Op::Sum).unwrap();
            assert_eq!(out, [3; 3]);
            let mut out2 = [0i64; 3];
            // SAFETY: the request is waited before the buffers go.
            let req = unsafe { w.iallreduce(&send, &mut out2, &Op::Max) }.unwrap();
            w.barrier().unwrap();
            req.wait().unwrap();
            assert_eq!(out2, [2; 3]);
        },
    );
}

/// A blocking broadcast's leaf waits as a plain receive (no schedule). While it waits, the
/// engine advances this rank's nonblocking allreduce, whose user operation panics: the
/// panic unwinds through the broadcast, and its receive must be given up on the way, or
/// the root's data, arriving later, would be written into the leaf's buffer (freed memory,
/// had it been on the unwound stack; here it stays alive so the test can look at it).
#[test]
fn a_panic_during_a_direct_leaf_wait_gives_up_its_receive() {
    panic_during_a_leaf_wait(true);
}

/// The same for a first call, whose leaf waits in the schedule.
#[test]
fn a_panic_during_a_scheduled_leaf_wait_gives_up_its_receive() {
    panic_during_a_leaf_wait(false);
}

/// `warm`: a first broadcast of the same shape, so the one that the panic unwinds through
/// repeats it and runs directly (a first call takes the schedule).
fn panic_during_a_leaf_wait(warm: bool) {
    let vars = [
        ("WEFT_BCAST_ALGO", "knomial"),
        ("WEFT_ALLREDUCE_ALGO", "recursive_doubling"),
    ];
    // 1: rank 1 has started its allreduce and goes into the broadcast; 2: the panic has come
    // out of rank 1's broadcast. Rank 0 sends the allreduce's data only after 1 and the
    // broadcast's only after 2, so the panic can only happen in the leaf's wait and the
    // root's data can only arrive after the receive was given up.
    let step = common::Signal::new();
    common::run_ranks(2, &vars, move |w| {
        let me = w.rank();
        let fired = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = fired.clone();
        let op = Op::user::<i64>("boom once on rank 1", true, move |a, b| {
            if me == 1 && !f.swap(true, std::sync::atomic::Ordering::Relaxed) {
                panic!("user op fails once on rank 1");
            }
            for (x, y) in a.iter().zip(b.iter_mut()) {
                *y += x;
            }
        });
        // The nonblocking call's buffers live for ever and its request is never waited
        // (forgotten below), so the panic cannot leave the engine pointing at freed memory
        // through it.
        let send: &'static [i64] = Box::leak(Box::new([me as i64 + 1; 2]));
        let recv: &'static mut [i64] = Box::leak(Box::new([0i64; 2]));
        if warm {
            let mut buf = [0u8; 16];
            w.bcast(&mut buf, 0).unwrap();
        }
        let direct_before = w.coll_direct_runs();
        let mut buf = [7u8; 16];
        if me == 0 {
            step.wait_for(1, "rank 1 going into the broadcast");
            // SAFETY: the buffers are leaked, so they outlive the request.
            let req = unsafe { w.iallreduce(send, recv, &op) }.unwrap();
            step.wait_for(2, "the panic out of rank 1's broadcast");
            buf = [9u8; 16];
            w.bcast(&mut buf, 0).unwrap();
            w.send(&[1u8], 1, 77).unwrap();
            std::mem::forget(req);
        } else {
            // SAFETY: as above.
            let req = unsafe { w.iallreduce(send, recv, &op) }.unwrap();
            step.raise_to(1);
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.bcast(&mut buf, 0)));
            step.raise_to(2);
            assert!(
                r.is_err(),
                "the user op's panic reaches the broadcast's caller"
            );
            assert_eq!(
                w.coll_direct_runs() > direct_before,
                warm,
                "the broadcast ran directly exactly when it repeated a call"
            );
            // Rank 0's broadcast has been sent before this message.
            let mut done = [0u8];
            w.recv(&mut done, 0, 77).unwrap();
            assert_eq!(
                buf, [7u8; 16],
                "a given-up receive wrote into the leaf's buffer"
            );
            std::mem::forget(req);
        }
        w.barrier().unwrap();
    });
}
