//! A user reduction operation that panics inside a blocking collective: the panic reaches
//! the caller, and a program that catches it goes on with collectives (the engine's guard
//! against nested advancing is cleared on the way out, and the call's receives are finished
//! before its buffers go). Before, the next collective panicked with "a collective driven
//! from inside another".

mod common;

use weft::Op;

#[test]
fn a_panicking_user_op_leaves_the_engine_usable() {
    common::run_ranks(2, &[("WEFT_ALLREDUCE_ALGO", "recursive_doubling")], |w| {
        let me = w.rank();
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
    });
}
