//! A blocking collective that repeats the last directly run call of its collective on its
//! communicator (root, buffer lengths, element kind, predefined operation) runs that call's
//! direct run again without its checks and memo lookup (`Comm::coll_repeat`). These check
//! that the repeat is taken, that every call still moves this call's data (odd, empty,
//! larger and rendezvous-sized vectors, 1-7 ranks, threads and processes), and that
//! whatever differs from the last call (the operation, a user operation, alignment, a
//! length, the root, the communicator, an unfinished nonblocking collective) goes the usual
//! way and gets its usual answer.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use weft::coll::{Op, TypeKind};
use weft::{Comm, ErrorKind};

/// Calls of each collective in a row.
const CALLS: u64 = 6;

/// Rank `r`'s element `k` in call `call`.
fn v(r: u32, call: u64, k: usize) -> i64 {
    (r as i64 + 1) * 1000 + call as i64 * 10 + k as i64
}

/// Rank `r`'s vector of `n` elements in call `call`.
fn vec_of(r: u32, call: u64, n: usize) -> Vec<i64> {
    (0..n).map(|k| v(r, call, k)).collect()
}

/// Sum over ranks `from..to` of element `k` in call `call`.
fn sum(from: u32, to: u32, call: u64, k: usize) -> i64 {
    (from..to).map(|r| v(r, call, k)).sum()
}

/// Runs `one(w, call)` CALLS times; (direct runs, repeats) they added on this rank.
fn calls(w: &Comm, mut one: impl FnMut(&Comm, u64)) -> (u64, u64) {
    let (d, r) = (w.coll_direct_runs(), w.coll_repeat_runs());
    for call in 0..CALLS {
        one(w, call);
    }
    (w.coll_direct_runs() - d, w.coll_repeat_runs() - r)
}

/// Every collective that repeats, CALLS calls each with `n` elements per rank; each call's
/// result checked; (name, direct runs, repeats) per collective on this rank.
fn every_collective(w: &Comm, n: usize) -> Vec<(&'static str, u64, u64)> {
    let (me, p) = (w.rank(), w.size());
    let root = p - 1;
    let mut out = Vec::new();
    let c = calls(w, |w, call| {
        let mut b = if me == root {
            vec_of(root, call, n)
        } else {
            vec![0; n]
        };
        w.bcast(&mut b, root).unwrap();
        assert_eq!(b, vec_of(root, call, n), "bcast call {call}");
    });
    out.push(("bcast", c.0, c.1));
    let c = calls(w, |w, call| {
        let mut r = vec![0i64; if me == root { n } else { 0 }];
        w.reduce(&vec_of(me, call, n), &mut r, &Op::Sum, root)
            .unwrap();
        if me == root {
            let want: Vec<i64> = (0..n).map(|k| sum(0, p, call, k)).collect();
            assert_eq!(r, want, "reduce call {call}");
        }
    });
    out.push(("reduce", c.0, c.1));
    let c = calls(w, |w, call| {
        let mut r = vec![0i64; n];
        w.allreduce(&vec_of(me, call, n), &mut r, &Op::Sum).unwrap();
        let want: Vec<i64> = (0..n).map(|k| sum(0, p, call, k)).collect();
        assert_eq!(r, want, "allreduce call {call}");
    });
    out.push(("allreduce", c.0, c.1));
    let c = calls(w, |w, call| {
        let mut r = vec![0i64; n];
        w.scan(&vec_of(me, call, n), &mut r, &Op::Sum).unwrap();
        let want: Vec<i64> = (0..n).map(|k| sum(0, me + 1, call, k)).collect();
        assert_eq!(r, want, "scan call {call}");
    });
    out.push(("scan", c.0, c.1));
    let c = calls(w, |w, call| {
        let mut r = vec![-1i64; n];
        w.exscan(&vec_of(me, call, n), &mut r, &Op::Sum).unwrap();
        if me > 0 {
            let want: Vec<i64> = (0..n).map(|k| sum(0, me, call, k)).collect();
            assert_eq!(r, want, "exscan call {call}");
        }
    });
    out.push(("exscan", c.0, c.1));
    let c = calls(w, |w, call| {
        let mut r = vec![0i64; if me == root { n * p as usize } else { 0 }];
        w.gather(&vec_of(me, call, n), &mut r, root).unwrap();
        if me == root {
            let want: Vec<i64> = (0..p).flat_map(|s| vec_of(s, call, n)).collect();
            assert_eq!(r, want, "gather call {call}");
        }
    });
    out.push(("gather", c.0, c.1));
    let c = calls(w, |w, call| {
        let s: Vec<i64> = if me == root {
            (0..p).flat_map(|d| vec_of(d, call, n)).collect()
        } else {
            vec![]
        };
        let mut r = vec![0i64; n];
        w.scatter(&s, &mut r, root).unwrap();
        assert_eq!(r, vec_of(me, call, n), "scatter call {call}");
    });
    out.push(("scatter", c.0, c.1));
    let c = calls(w, |w, call| {
        let mut r = vec![0i64; n * p as usize];
        w.allgather(&vec_of(me, call, n), &mut r).unwrap();
        let want: Vec<i64> = (0..p).flat_map(|s| vec_of(s, call, n)).collect();
        assert_eq!(r, want, "allgather call {call}");
    });
    out.push(("allgather", c.0, c.1));
    let c = calls(w, |w, call| {
        // Block d of rank s: s's values shifted by d.
        let s: Vec<i64> = (0..p)
            .flat_map(|d| vec_of(me, call, n).into_iter().map(move |x| x + d as i64))
            .collect();
        let mut r = vec![0i64; n * p as usize];
        w.alltoall(&s, &mut r).unwrap();
        let want: Vec<i64> = (0..p)
            .flat_map(|s| vec_of(s, call, n).into_iter().map(move |x| x + me as i64))
            .collect();
        assert_eq!(r, want, "alltoall call {call}");
    });
    out.push(("alltoall", c.0, c.1));
    let c = calls(w, |w, call| {
        let s: Vec<i64> = (0..p)
            .flat_map(|d| {
                vec_of(0, call, n)
                    .into_iter()
                    .map(move |x| x * (d as i64 + 1))
            })
            .collect();
        let mut r = vec![0i64; n];
        w.reduce_scatter_block(&s, &mut r, &Op::Sum).unwrap();
        let want: Vec<i64> = vec_of(0, call, n)
            .into_iter()
            .map(|x| x * (me as i64 + 1) * p as i64)
            .collect();
        assert_eq!(r, want, "reduce_scatter_block call {call}");
    });
    out.push(("reduce_scatter_block", c.0, c.1));
    out
}

/// Every call that ran directly after the first of its run of equal calls repeated it, and
/// on 1 and 2 ranks every small call ran directly (their plans are messages and copies).
fn check_counts(counts: &[(&str, u64, u64)], ranks: u32, n: usize) {
    for &(name, direct, repeats) in counts {
        assert_eq!(
            repeats,
            direct.saturating_sub(1),
            "{name}, {ranks} ranks, {n} elements: {direct} direct runs, {repeats} repeats"
        );
        if ranks <= 2 && n * 8 <= 1024 {
            assert_eq!(
                direct,
                CALLS - 1,
                "{name}, {ranks} ranks, {n} elements: direct runs"
            );
        }
    }
}

#[test]
fn repeated_calls_repeat_and_move_each_calls_data() {
    for ranks in [1u32, 2, 3, 4, 7] {
        common::run_ranks(ranks, &[], move |w| {
            for n in [3usize, 0, 1, 1001, 8193] {
                let counts = every_collective(&w, n);
                check_counts(&counts, ranks, n);
            }
        });
    }
}

/// Four allreduce calls of 3 f32 on `w` (sum), so the next equal one repeats.
fn warm(w: &Comm) {
    for _ in 0..4 {
        let mut r = [0f32; 3];
        w.allreduce(&[1.0f32, 2.0, 3.0], &mut r, &Op::Sum).unwrap();
    }
}

/// The repeats `f` adds on `w`'s rank.
fn repeats_in(w: &Comm, f: impl FnOnce()) -> u64 {
    let before = w.coll_repeat_runs();
    f();
    w.coll_repeat_runs() - before
}

#[test]
fn whatever_differs_goes_the_usual_way() {
    for ranks in [2u32, 3] {
        common::run_ranks(ranks, &[], move |w| {
            let (me, p) = (w.rank(), w.size());
            let pf = p as f32;
            warm(&w);
            assert_eq!(
                repeats_in(&w, || warm(&w)),
                4,
                "equal calls repeat, rank {me}"
            );
            // Another predefined operation: its own result, not the sum's.
            let mut r = [0f32; 3];
            let x = [me as f32, 1.0, -(me as f32)];
            let n = repeats_in(&w, || w.allreduce(&x, &mut r, &Op::Max).unwrap());
            assert_eq!((n, r), (0, [pf - 1.0, 1.0, 0.0]), "max, rank {me}");
            // An operation the kind does not take: the usual error on every rank.
            warm(&w);
            let e = w.allreduce(&x, &mut r, &Op::Band).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidOp, "{e}");
            // A user operation (not commutative: the lowest rank's value wins).
            warm(&w);
            let first = Op::user::<f32>("first", false, |a, b| b.copy_from_slice(a));
            let n = repeats_in(&w, || w.allreduce(&x, &mut r, &first).unwrap());
            assert_eq!((n, r), (0, [0.0, 1.0, 0.0]), "user op, rank {me}");
            let n = repeats_in(&w, || w.allreduce(&x, &mut r, &first).unwrap());
            assert_eq!((n, r), (0, [0.0, 1.0, 0.0]), "user op again, rank {me}");
            // Misaligned buffers of the same lengths: the usual error.
            warm(&w);
            let mut raw = [0u64; 4];
            let mut out = [0u64; 4];
            let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut raw);
            let outb: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
            let e = w
                .allreduce_bytes(&bytes[1..13], &mut outb[1..13], TypeKind::F32, &Op::Sum)
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
            // A receive buffer of another length: the usual count error.
            warm(&w);
            let mut short = [0f32; 2];
            let e = w
                .allreduce(&[1.0f32, 2.0, 3.0], &mut short, &Op::Sum)
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidCount, "{e}");
            // And the equal call still repeats afterwards, with its result.
            warm(&w);
            let n = repeats_in(&w, || {
                w.allreduce(&[1.0f32, 2.0, 3.0], &mut r, &Op::Sum).unwrap()
            });
            assert_eq!((n, r), (1, [pf, 2.0 * pf, 3.0 * pf]), "rank {me}");
            // A moving root: each call's result at its root.
            for call in 0..3 * p {
                let root = call / 3;
                let mut got = [0i64; 2];
                let out: &mut [i64] = if me == root { &mut got } else { &mut [] };
                w.reduce(&[me as i64, call as i64], out, &Op::Sum, root)
                    .unwrap();
                if me == root {
                    let ranks: i64 = (0..p as i64).sum();
                    assert_eq!(got, [ranks, call as i64 * p as i64], "call {call}");
                }
            }
            // Alternating communicators of the same size, one in reverse rank order: each
            // call runs its own communicator's plan (a scan's result shows the order).
            let rev = w.split(0, (p - 1 - me) as i32).unwrap().unwrap();
            for call in 0..8i64 {
                let c = if call % 4 < 2 { &w } else { &rev };
                let at = c.rank() as i64;
                let mut got = [0i64; 1];
                c.scan(&[call * 100 + at], &mut got, &Op::Sum).unwrap();
                let want: i64 = (0..=at).map(|k| call * 100 + k).sum();
                assert_eq!(got, [want], "call {call}, rank {at} of its communicator");
            }
            rev.free().unwrap();
        });
    }
}

#[test]
fn an_unfinished_nonblocking_collective_stops_the_repeat() {
    common::run_ranks(3, &[], |w| {
        let me = w.rank();
        let d = w.dup().unwrap();
        warm(&w);
        // A broadcast from rank 0 on another communicator (the allreduce's memo stays),
        // which rank 0 starts only after the allreduce: on ranks 1 and 2 it is unfinished
        // during the allreduce, which then goes the usual way; rank 0 repeats.
        let mut b = [if me == 0 { 42i64 } else { 0 }];
        let mut r = [0f32; 3];
        let call = |r: &mut [f32; 3]| w.allreduce(&[1.0f32, 2.0, 3.0], r, &Op::Sum).unwrap();
        let n = if me != 0 {
            // SAFETY: the request is waited below, before the buffer goes.
            let req = unsafe { d.ibcast(&mut b, 0) }.unwrap();
            let n = repeats_in(&w, || call(&mut r));
            req.wait().unwrap();
            n
        } else {
            let n = repeats_in(&w, || call(&mut r));
            // Nonblocking, as on the other ranks: a blocking collective never matches a
            // nonblocking one (MPI-4.1 §6.12).
            // SAFETY: the request is waited at once.
            unsafe { d.ibcast(&mut b, 0) }.unwrap().wait().unwrap();
            n
        };
        let want = u64::from(me == 0);
        assert_eq!((n, r), (want, [3.0, 6.0, 9.0]), "rank {me}");
        assert_eq!(b, [42]);
        // With nothing unfinished the same call repeats everywhere.
        let n = repeats_in(&w, || call(&mut r));
        assert_eq!((n, r), (1, [3.0, 6.0, 9.0]), "rank {me}");
        d.free().unwrap();
    });
}

const CHILD: &str = "WEFT_TEST_REPEAT_CHILD";

/// One rank process: repeated small scans, exscans and allreduces, each result checked,
/// most of them repeats.
fn child() {
    let weft = weft::init().unwrap();
    let w = weft.world();
    let (me, p) = (w.rank(), w.size());
    let before = w.coll_repeat_runs();
    for call in 0..200u64 {
        let mine = vec_of(me, call, 3);
        let mut r = vec![0i64; 3];
        w.scan(&mine, &mut r, &Op::Sum).unwrap();
        let want: Vec<i64> = (0..3).map(|k| sum(0, me + 1, call, k)).collect();
        assert_eq!(r, want, "scan call {call}");
        w.exscan(&mine, &mut r, &Op::Sum).unwrap();
        if me > 0 {
            let want: Vec<i64> = (0..3).map(|k| sum(0, me, call, k)).collect();
            assert_eq!(r, want, "exscan call {call}");
        }
        w.allreduce(&mine, &mut r, &Op::Sum).unwrap();
        let want: Vec<i64> = (0..3).map(|k| sum(0, p, call, k)).collect();
        assert_eq!(r, want, "allreduce call {call}");
    }
    println!("rank {me}: repeats {}", w.coll_repeat_runs() - before);
    weft.finalize().unwrap();
    std::process::exit(0);
}

#[test]
fn repeats_across_processes() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let job = format!("repeat{}", std::process::id());
    let outputs = common::run_procs(
        "repeats_across_processes",
        CHILD,
        &job,
        &[0; 4],
        &[],
        common::JOB_TIMEOUT,
    );
    for (rank, (status, text, err)) in outputs.iter().enumerate() {
        assert!(status.success(), "rank {rank} failed: {text}{err}");
        let repeats: u64 = text
            .split("repeats ")
            .nth(1)
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or_else(|| panic!("rank {rank}: {text}{err}"));
        // Scan and exscan run directly on 4 ranks of one node; the allreduce may not.
        assert!(repeats >= 2 * 198, "rank {rank}: {repeats} repeats");
    }
}
