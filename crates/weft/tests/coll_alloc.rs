//! Allocations on the latency-bound path: after a warm-up, an 8-byte blocking allreduce,
//! reduce, bcast, barrier, gather, scatter, allgather or alltoall between two in-process
//! ranks must not allocate a plan, block list, scratch or request per call (the memo of the
//! last call, the plan cache and the schedule pools keep them), nor a buffer for a peer's
//! eager message that arrives before its receive is posted (the engine keeps the buffers of
//! delivered early messages for the next ones). Seen: 0.00 to 0.01 allocations per call
//! (what is left is the engine's queues growing now and then); the bound is one per ten
//! calls (it was three per call before the engine kept its buffers; without the memo a
//! gather takes 4 more). Counted with a global allocator that counts per thread. A rank
//! checks its counts only after its last collective call, so a failed check ends the test
//! instead of leaving the other rank waiting for it.

/// A rank may allocate once per this many repeated calls (see the module comment).
const CALLS_PER_ALLOCATION: u64 = 10;

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use weft::coll::Op;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

#[test]
fn small_collectives_do_not_allocate_per_call() {
    common::run_ranks(2, &[], |w| {
        const CALLS: u64 = 2000;
        let me = w.rank() as u64;
        let send = [me + 1];
        let mut out = [0u64];
        let mut b = [7u64];
        let mut two = [0u64; 2];
        let mut one = [0u64];
        let pair = [me * 10, me * 10 + 1];
        // Wrong results, counted inside the loop (checked after it, as the counts are).
        let wrong = Cell::new(0u64);
        let check = |ok: bool| wrong.set(wrong.get() + u64::from(!ok));
        let all =
            |w: &weft::Comm, out: &mut [u64], b: &mut [u64], two: &mut [u64], one: &mut [u64]| {
                [
                    ("allreduce", {
                        out[0] = 0;
                        let n0 = allocs();
                        w.allreduce(&send, out, &Op::Sum).unwrap();
                        let n = allocs() - n0;
                        check(out[0] == 3);
                        n
                    }),
                    ("reduce", {
                        out[0] = 0;
                        let n0 = allocs();
                        w.reduce(&send, out, &Op::Sum, 0).unwrap();
                        let n = allocs() - n0;
                        check(out[0] == if me == 0 { 3 } else { 0 });
                        n
                    }),
                    ("bcast", {
                        if me != 0 {
                            b[0] = 0;
                        }
                        let n0 = allocs();
                        w.bcast(b, 0).unwrap();
                        let n = allocs() - n0;
                        check(b[0] == 7);
                        n
                    }),
                    ("barrier", {
                        let n0 = allocs();
                        w.barrier().unwrap();
                        allocs() - n0
                    }),
                    ("gather", {
                        two.fill(0);
                        let n0 = allocs();
                        let r: &mut [u64] = if me == 0 { two } else { &mut [] };
                        w.gather(&send, r, 0).unwrap();
                        let n = allocs() - n0;
                        check(me != 0 || two == [1, 2]);
                        n
                    }),
                    ("scatter", {
                        one[0] = 99;
                        let n0 = allocs();
                        w.scatter(&pair, one, 0).unwrap();
                        let n = allocs() - n0;
                        check(one[0] == me);
                        n
                    }),
                    ("allgather", {
                        let n0 = allocs();
                        w.allgather(&send, two).unwrap();
                        allocs() - n0
                    }),
                    ("alltoall", {
                        let n0 = allocs();
                        w.alltoall(&pair, two).unwrap();
                        allocs() - n0
                    }),
                ]
            };
        for _ in 0..100 {
            all(&w, &mut out, &mut b, &mut two, &mut one);
        }
        let mut total = [0u64; 8];
        for _ in 0..CALLS {
            for (t, (_, n)) in total
                .iter_mut()
                .zip(all(&w, &mut out, &mut b, &mut two, &mut one))
            {
                *t += n;
            }
        }
        assert_eq!(wrong.get(), 0, "calls with a wrong result");
        assert_eq!((b[0], two[1], one[0]), (7, me + 10, me));
        let names = all(&w, &mut out, &mut b, &mut two, &mut one).map(|(name, _)| name);
        for (name, n) in names.iter().zip(total) {
            println!(
                "rank {me}: {name}: {:.2} allocations per call",
                n as f64 / CALLS as f64
            );
            assert!(
                n * CALLS_PER_ALLOCATION <= CALLS,
                "{name}: {n} allocations in {CALLS} calls"
            );
        }
    });
}

/// The v-forms, reduce-scatters and scans: repeated calls allocate no more than the others,
/// and a call that differs from the last only in its count or displacement arrays gets its
/// own plan (the results would be wrong with the last call's).
#[test]
fn v_forms_do_not_allocate_per_call_and_follow_their_arrays() {
    common::run_ranks(2, &[], |w| {
        const CALLS: u64 = 2000;
        let me = w.rank() as u64;
        let run = |w: &weft::Comm, displs: &[usize]| -> [(&'static str, u64); 8] {
            let counts = [1usize, 1];
            let send = [me + 1];
            let mut three = [0u64; 3];
            let mut one = [0u64];
            let src = [100u64, 101, 102];
            let n = |f: &mut dyn FnMut()| {
                let n0 = allocs();
                f();
                allocs() - n0
            };
            let out = [
                (
                    "gatherv",
                    n(&mut || {
                        let r: &mut [u64] = if me == 0 { &mut three } else { &mut [] };
                        w.gatherv(&send, r, &counts, displs, 0).unwrap();
                    }),
                ),
                (
                    "scatterv",
                    n(&mut || w.scatterv(&src, &counts, displs, &mut one, 0).unwrap()),
                ),
                (
                    "allgatherv",
                    n(&mut || w.allgatherv(&send, &mut three, &counts, displs).unwrap()),
                ),
                (
                    "alltoallv",
                    n(&mut || {
                        w.alltoallv(&src, &counts, displs, &mut three, &counts, displs)
                            .unwrap()
                    }),
                ),
                (
                    "reduce_scatter",
                    n(&mut || {
                        w.reduce_scatter(&[me, me + 1], &mut one, &counts, &Op::Sum)
                            .unwrap()
                    }),
                ),
                (
                    "reduce_scatter_block",
                    n(&mut || {
                        w.reduce_scatter_block(&[me, me + 1], &mut one, &Op::Sum)
                            .unwrap()
                    }),
                ),
                (
                    "scan",
                    n(&mut || w.scan(&send, &mut one, &Op::Sum).unwrap()),
                ),
                (
                    "exscan",
                    n(&mut || w.exscan(&send, &mut one, &Op::Sum).unwrap()),
                ),
            ];
            // The last allgatherv left every rank's block at its displacement.
            let mut g = [0u64; 3];
            w.allgatherv(&send, &mut g, &counts, displs).unwrap();
            assert_eq!(
                (g[displs[0]], g[displs[1]]),
                (1, 2),
                "displacements {displs:?}"
            );
            out
        };
        for _ in 0..100 {
            run(&w, &[0, 1]);
        }
        let mut total = [0u64; 8];
        for _ in 0..CALLS {
            for (t, (_, n)) in total.iter_mut().zip(run(&w, &[0, 1])) {
                *t += n;
            }
        }
        let counted: Vec<(&str, u64)> = run(&w, &[0, 1])
            .iter()
            .zip(total)
            .map(|((name, _), n)| (*name, n))
            .collect();
        // Same sizes, other displacements: alternating must follow the arrays every call.
        for i in 0..20 {
            run(&w, if i % 2 == 0 { &[2, 0] } else { &[0, 2] });
        }
        // What the memo does not cover is still checked on every call: buffer alignment
        // (the same lengths one byte off) and arrays of the wrong length (the same entries
        // split differently).
        use weft::coll::TypeKind;
        let words = [0u64; 5];
        let mut out = [0u64; 3];
        let send: &[u8] = bytemuck::cast_slice(&words[..4]);
        let recv: &mut [u8] = bytemuck::cast_slice_mut(&mut out[..2]);
        w.reduce_scatter_block_bytes(send, recv, TypeKind::U64, &Op::Sum)
            .unwrap();
        let send_off = &bytemuck::cast_slice::<u64, u8>(&words)[1..33];
        let e = w
            .reduce_scatter_block_bytes(send_off, recv, TypeKind::U64, &Op::Sum)
            .unwrap_err();
        assert_eq!(e.kind(), weft::ErrorKind::InvalidArgument, "{e}");
        let mut three = [0u64; 3];
        w.allgatherv(&[me], &mut three, &[1, 1], &[0, 1]).unwrap();
        let e = w
            .allgatherv(&[me], &mut three, &[1, 1, 0], &[1])
            .unwrap_err();
        assert_eq!(e.kind(), weft::ErrorKind::InvalidCount, "{e}");
        for (name, n) in counted {
            println!(
                "rank {me}: {name}: {:.2} allocations per call",
                n as f64 / CALLS as f64
            );
            assert!(
                n * CALLS_PER_ALLOCATION <= CALLS,
                "{name}: {n} allocations in {CALLS} calls"
            );
        }
    });
}

/// Rooted calls whose root changes every call (the memo of the last call never matches):
/// they take the schedule, from the plan cache and the pools, and allocate no more than
/// repeated calls (a direct run is resolved, once, only for a repeated call). Before,
/// scatter and gather built their plan on every such call (4 allocations per call).
#[test]
fn rotating_roots_do_not_allocate_per_call() {
    common::run_ranks(3, &[], |w| {
        const CALLS: u64 = 1500;
        let me = w.rank();
        let mut b = [0u64; 1];
        let src = [10u64, 11, 12];
        let mut one = [0u64];
        let mut three = [0u64; 3];
        let mut round = |i: u64| -> [u64; 3] {
            let root = (i % 3) as u32;
            b[0] = if me == root { i } else { 0 };
            let n0 = allocs();
            w.bcast(&mut b, root).unwrap();
            let n1 = allocs();
            w.scatter(&src, &mut one, root).unwrap();
            let n2 = allocs();
            let g: &mut [u64] = if me == root { &mut three } else { &mut [] };
            w.gather(&[u64::from(me) + i], g, root).unwrap();
            let n3 = allocs();
            assert_eq!((b[0], one[0]), (i, 10 + u64::from(me)), "call {i}");
            if me == root {
                assert_eq!(three, [i, i + 1, i + 2], "call {i}");
            }
            [n1 - n0, n2 - n1, n3 - n2]
        };
        for i in 0..60 {
            round(i);
        }
        let mut total = [0u64; 3];
        for i in 0..CALLS {
            for (t, n) in total.iter_mut().zip(round(i)) {
                *t += n;
            }
        }
        for (name, n) in ["bcast", "scatter", "gather"].iter().zip(total) {
            println!(
                "rank {me}: rotating {name}: {:.2} allocations per call",
                n as f64 / CALLS as f64
            );
            assert!(
                n * CALLS_PER_ALLOCATION <= CALLS,
                "{name}: {n} allocations in {CALLS} calls"
            );
        }
    });
}
