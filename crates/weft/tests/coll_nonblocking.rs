//! Nonblocking collectives: several outstanding on one communicator, started in the same
//! order on every rank and completed in reverse order (or by polling), data checked; the
//! byte-level entry points against the typed ones; argument errors of the byte-level calls.
//! One thread per rank (the in-process harness), at 1-4 ranks.

mod common;

use weft::coll::{CollRequest, Op, TypeKind};
use weft::{Comm, ErrorKind};

fn input(rank: u32, i: usize, salt: u64) -> u64 {
    (rank as u64 + 1) * 1_000_003 + i as u64 * 7 + salt
}

/// Sizes that cross the eager limit (16 KiB) and the rendezvous-copy threshold.
const COUNTS: &[usize] = &[0, 1, 13, 2049, 40_000];

fn outstanding_then_reverse(w: &Comm) {
    let (rank, size) = (w.rank(), w.size());
    for &n in COUNTS {
        let sends: Vec<Vec<u64>> = (0..3)
            .map(|k| (0..n).map(|i| input(rank, i, k)).collect())
            .collect();
        let mut sums = vec![vec![0u64; n]; 3];
        let mut bc_a: Vec<u64> = if rank == 0 {
            (0..n).map(|i| i as u64 * 3 + 1).collect()
        } else {
            vec![0; n]
        };
        let root_b = size - 1;
        let mut bc_b: Vec<u32> = if rank == root_b {
            (0..n).map(|i| i as u32 ^ 0x5a5a).collect()
        } else {
            vec![0; n]
        };
        {
            let [s0, s1, s2] = &mut sums[..] else {
                unreachable!()
            };
            // SAFETY: every request is waited below, none is leaked.
            let mut reqs: Vec<CollRequest<'_>> = unsafe {
                vec![
                    w.iallreduce(&sends[0], s0, &Op::Sum).unwrap(),
                    w.ibcast(&mut bc_a, 0).unwrap(),
                    w.ibarrier().unwrap(),
                    w.iallreduce(&sends[1], s1, &Op::Sum).unwrap(),
                    w.ibcast(&mut bc_b, root_b).unwrap(),
                    w.iallreduce(&sends[2], s2, &Op::Max).unwrap(),
                    w.ibarrier().unwrap(),
                ]
            };
            while let Some(r) = reqs.pop() {
                r.wait().unwrap();
            }
        }
        for (k, got) in sums.iter().take(2).enumerate() {
            let want: Vec<u64> = (0..n)
                .map(|i| (0..size).map(|r| input(r, i, k as u64)).sum())
                .collect();
            assert_eq!(*got, want, "allreduce {k} of {n} at {size} ranks");
        }
        let want: Vec<u64> = (0..n).map(|i| input(size - 1, i, 2)).collect();
        assert_eq!(sums[2], want, "allreduce max of {n} at {size} ranks");
        let want_a: Vec<u64> = (0..n).map(|i| i as u64 * 3 + 1).collect();
        assert_eq!(bc_a, want_a, "bcast from 0 of {n} at {size} ranks");
        let want_b: Vec<u32> = (0..n).map(|i| i as u32 ^ 0x5a5a).collect();
        assert_eq!(bc_b, want_b, "bcast from {root_b} of {n} at {size} ranks");
    }
}

/// Polling with `test` completes requests too, in any order of polling.
fn polled(w: &Comm) {
    let (rank, size) = (w.rank(), w.size());
    let n = 3000;
    let send: Vec<i32> = (0..n).map(|i| i as i32 - rank as i32).collect();
    let mut sum = vec![0i32; n];
    let mut gathered = vec![0i32; n * size as usize];
    let mut scanned = vec![0i32; n];
    // SAFETY: the requests are polled to completion and dropped, none is leaked.
    let mut reqs = unsafe {
        vec![
            w.iallreduce(&send, &mut sum, &Op::Sum).unwrap(),
            w.iallgather(&send, &mut gathered).unwrap(),
            w.iscan(&send, &mut scanned, &Op::Sum).unwrap(),
        ]
    };
    let mut polls = 0u64;
    while !reqs.is_empty() {
        // Poll the newest first, so completion order differs from start order.
        for i in (0..reqs.len()).rev() {
            if reqs[i].test().unwrap() {
                assert!(reqs[i].is_finished());
                drop(reqs.remove(i));
            }
        }
        polls += 1;
        assert!(polls < 100_000_000, "requests never completed");
    }
    drop(reqs);
    for i in 0..n {
        let want: i32 = (0..size).map(|r| i as i32 - r as i32).sum();
        assert_eq!(sum[i], want);
        let pre: i32 = (0..=rank).map(|r| i as i32 - r as i32).sum();
        assert_eq!(scanned[i], pre);
    }
    for r in 0..size as usize {
        for i in 0..n {
            assert_eq!(gathered[r * n + i], i as i32 - r as i32);
        }
    }
}

/// `wait_all` advances every request together: ranks list the same two collectives in
/// opposite orders and both complete, data checked.
fn opposite_orders(w: &Comm) {
    let (rank, size) = (w.rank(), w.size());
    let n = 9000;
    let send: Vec<u64> = (0..n).map(|i| input(rank, i, 5)).collect();
    let mut sum = vec![0u64; n];
    let mut b: Vec<u64> = if rank == 0 { vec![42; n] } else { vec![0; n] };
    {
        // SAFETY: both requests are completed by wait_all, none is leaked.
        let (x, y) = unsafe {
            (
                w.iallreduce(&send, &mut sum, &Op::Sum).unwrap(),
                w.ibcast(&mut b, 0).unwrap(),
            )
        };
        let reqs = if rank % 2 == 0 {
            vec![x, y]
        } else {
            vec![y, x]
        };
        CollRequest::wait_all(reqs).unwrap();
    }
    let want: Vec<u64> = (0..n)
        .map(|i| (0..size).map(|r| input(r, i, 5)).sum())
        .collect();
    assert_eq!(sum, want);
    assert!(b.iter().all(|&v| v == 42));
}

/// Dropping an unfinished request finishes it; the data is there afterwards.
fn dropped(w: &Comm) {
    let size = w.size();
    let send = vec![w.rank() as u64 + 1; 5000];
    let mut recv = vec![0u64; 5000];
    // SAFETY: the request is dropped (which waits), not leaked.
    let r = unsafe { w.iallreduce(&send, &mut recv, &Op::Sum).unwrap() };
    drop(r);
    let want = (size as u64) * (size as u64 + 1) / 2;
    assert!(recv.iter().all(|&v| v == want), "{}", recv[0]);
}

/// The byte-level entry points give the typed results and check their buffers.
fn bytes(w: &Comm) {
    let (rank, size) = (w.rank(), w.size());
    let n = 777;
    let send: Vec<f64> = (0..n).map(|i| (i as f64) * 0.5 + rank as f64).collect();
    let mut typed = vec![0f64; n];
    w.allreduce(&send, &mut typed, &Op::Sum).unwrap();
    let mut raw = vec![0f64; n];
    w.allreduce_bytes(
        bytemuck::cast_slice(&send),
        bytemuck::cast_slice_mut(&mut raw),
        TypeKind::F64,
        &Op::Sum,
    )
    .unwrap();
    assert_eq!(raw, typed);
    // Nonblocking reduce-scatter-block, reduce and exscan through bytes.
    let blocks: Vec<u32> = (0..size as usize * 4)
        .map(|i| i as u32 * 10 + rank)
        .collect();
    let mut mine = [0u32; 4];
    let mut at_root = vec![0u32; blocks.len()];
    let mut ex = vec![0u32; blocks.len()];
    {
        // SAFETY: both requests are waited below.
        let (a, b, c) = unsafe {
            let a = w
                .ireduce_scatter_block_bytes(
                    bytemuck::cast_slice(&blocks),
                    bytemuck::cast_slice_mut(&mut mine),
                    TypeKind::U32,
                    &Op::Sum,
                )
                .unwrap();
            let out: &mut [u32] = if rank == 0 { &mut at_root } else { &mut [] };
            let b = w
                .ireduce_bytes(
                    bytemuck::cast_slice(&blocks),
                    bytemuck::cast_slice_mut(out),
                    TypeKind::U32,
                    &Op::Max,
                    0,
                )
                .unwrap();
            let c = w
                .iexscan_bytes(
                    bytemuck::cast_slice(&blocks),
                    bytemuck::cast_slice_mut(&mut ex),
                    TypeKind::U32,
                    &Op::Sum,
                )
                .unwrap();
            (a, b, c)
        };
        c.wait().unwrap();
        b.wait().unwrap();
        a.wait().unwrap();
    }
    let ranks_sum: u32 = (0..size).sum();
    for (j, &v) in mine.iter().enumerate() {
        let i = rank as usize * 4 + j;
        assert_eq!(v, i as u32 * 10 * size + ranks_sum);
    }
    if rank == 0 {
        for (i, &v) in at_root.iter().enumerate() {
            assert_eq!(v, i as u32 * 10 + size - 1);
        }
    }
    if rank > 0 {
        let below: u32 = (0..rank).sum();
        for (i, &v) in ex.iter().enumerate() {
            assert_eq!(v, i as u32 * 10 * rank + below);
        }
    }
    // Bad byte buffers: a partial element, a misaligned buffer, an op the type lacks.
    let words = vec![0u64; 9];
    let raw: &[u8] = bytemuck::cast_slice(&words);
    let mut out = vec![0u64; 9];
    let e = w
        .allreduce_bytes(
            &raw[..12],
            &mut bytemuck::cast_slice_mut(&mut out)[..12],
            TypeKind::U64,
            &Op::Sum,
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidCount, "{e}");
    assert!(
        e.message().contains("12 bytes") && e.message().contains("u64"),
        "{e}"
    );
    let e = w
        .allreduce_bytes(
            &raw[1..9],
            &mut bytemuck::cast_slice_mut(&mut out)[1..9],
            TypeKind::U64,
            &Op::Sum,
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("aligned"), "{e}");
    let e = w
        .allreduce_bytes(
            &raw[..8],
            &mut bytemuck::cast_slice_mut(&mut out)[..8],
            TypeKind::F64,
            &Op::Band,
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOp, "{e}");
    // Every rank made the same calls (including the failing ones, which start nothing), so
    // the communicator is still in step.
    w.barrier().unwrap();
}

/// Two persistent collectives whose call numbers are 2^13 apart have the same message tag.
/// A start whose tag an unfinished call on the communicator holds is refused (before it
/// takes a number) until that call completes; then it runs, and neither call takes the
/// other's data.
fn repeated_call_numbers(w: &Comm) {
    if w.size() != 2 {
        return;
    }
    let me = w.rank();
    let first = w.reserve_coll_seq();
    for _ in 1..1u32 << 13 {
        w.reserve_coll_seq();
    }
    let again = w.reserve_coll_seq();
    assert_eq!(again.wrapping_sub(first), 1 << 13);
    let (want_a, want_b) = ([11u64, 12, 13, 14], [21u64, 22, 23, 24]);
    let mut a = if me == 1 { want_a } else { [0; 4] };
    let mut b = if me == 1 { want_b } else { [0; 4] };
    if me == 0 {
        // Rank 1 (the root) has not started: the first call stays unfinished here.
        // SAFETY: every request is waited, none is leaked.
        let ra = w
            .with_coll_seq(first, || unsafe { w.ibcast(&mut a, 1) })
            .unwrap();
        assert!(!ra.is_finished(), "rank 1 has not started yet");
        let mut early = [0u64; 4];
        // SAFETY: the call fails (no request is made); `early` outlives it anyway.
        let e = w
            .with_coll_seq(again, || unsafe { w.ibcast(&mut early, 1) })
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        assert!(e.message().contains("same message tag"), "{e}");
        assert!(e.message().contains("both persistent"), "{e}");
        w.send(&[1u8], 1, 5).unwrap();
        ra.wait().unwrap();
        // SAFETY: the request is waited at once.
        let rb = w.with_coll_seq(again, || unsafe { w.ibcast(&mut b, 1) });
        rb.unwrap().wait().unwrap();
    } else {
        let mut go = [0u8];
        w.recv(&mut go, 0, 5).unwrap();
        // SAFETY: each request is waited at once.
        let ra = w.with_coll_seq(first, || unsafe { w.ibcast(&mut a, 1) });
        ra.unwrap().wait().unwrap();
        // SAFETY: as above.
        let rb = w.with_coll_seq(again, || unsafe { w.ibcast(&mut b, 1) });
        rb.unwrap().wait().unwrap();
    }
    assert_eq!((a, b), (want_a, want_b), "rank {me}");
    w.barrier().unwrap();
}

#[test]
fn a_repeated_call_number_never_takes_another_calls_messages() {
    common::run_ranks(2, &[], |w| repeated_call_numbers(&w));
}

#[test]
fn outstanding_collectives_complete_in_any_order() {
    for np in 1..=4 {
        common::run_ranks(np, &[], |w| {
            outstanding_then_reverse(&w);
            polled(&w);
            opposite_orders(&w);
            dropped(&w);
            bytes(&w);
        });
    }
}

#[test]
fn nonblocking_calls_avoid_the_node_area() {
    // Forcing the area for a nonblocking call is refused by name; the blocking call uses it.
    common::run_ranks(3, &[("WEFT_ALLREDUCE_ALGO", "shm")], |w| {
        let send = [1u64; 4];
        let mut recv = [0u64; 4];
        // SAFETY: the call fails, so there is no request to leak.
        let e = unsafe { w.iallreduce(&send, &mut recv, &Op::Sum) }.unwrap_err();
        assert!(
            e.message().contains("nonblocking") && e.message().contains("shm"),
            "{e}"
        );
        w.allreduce(&send, &mut recv, &Op::Sum).unwrap();
        assert_eq!(recv, [3u64; 4]);
    });
    // With the shipped table, blocking area collectives interleave with outstanding
    // nonblocking ones.
    common::run_ranks(4, &[], |w| {
        let n = 1 << 15;
        let send = vec![w.rank() as u64; n];
        let mut a = vec![0u64; n];
        let mut b = vec![0u64; n];
        let mut c = vec![0u64; n];
        // SAFETY: waited below.
        let r = unsafe { w.iallreduce(&send, &mut a, &Op::Sum).unwrap() };
        w.allreduce(&send, &mut b, &Op::Sum).unwrap();
        w.barrier().unwrap();
        w.bcast(&mut c, 2).unwrap();
        r.wait().unwrap();
        assert!(a.iter().chain(&b).all(|&v| v == 6));
    });
}

/// Call numbers are 13 bits in tags. Thousands of outstanding allreduces whose numbers wrap
/// past 2^13 while earlier ones are still unfinished, completed in opposite orders on
/// alternate ranks, each with its own data: none may take another's messages. Then a rank
/// that already has 2^13 unfinished collectives is refused a further one (it could share a
/// tag with the oldest), by name, and the job carries on once they complete.
#[test]
fn call_numbers_wrap_without_mixing_outstanding_collectives() {
    const MANY: usize = 5000;
    const LIMIT: usize = 1 << 13;
    common::run_ranks(2, &[], |w| {
        let me = w.rank();
        for round in 0..2u64 {
            let sends: Vec<[u64; 1]> = (0..MANY as u64)
                .map(|i| [(me as u64 + 1) * 1_000_000 + round * 10_000 + i])
                .collect();
            let mut sums = vec![[0u64; 1]; MANY];
            {
                // SAFETY: every request is waited below, none is leaked.
                let mut reqs: Vec<CollRequest<'_>> = sends
                    .iter()
                    .zip(sums.iter_mut())
                    .map(|(s, r)| unsafe { w.iallreduce(s, r, &Op::Sum) }.unwrap())
                    .collect();
                if me == 1 {
                    reqs.reverse();
                }
                CollRequest::wait_all(reqs).unwrap();
            }
            for (i, s) in sums.iter().enumerate() {
                let want = 3_000_000 + 2 * (round * 10_000 + i as u64);
                assert_eq!(s[0], want, "round {round} call {i} on rank {me}");
            }
        }
        // Rank 0 fills its limit before rank 1 starts any: none of them can finish.
        let mut token = [0u8; 1];
        if me == 0 {
            let reqs: Vec<CollRequest<'static>> =
                (0..LIMIT).map(|_| w.ibarrier().unwrap()).collect();
            let e = w.ibarrier().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(
                e.message().contains("unfinished") && e.message().contains("13 bits"),
                "{e}"
            );
            w.send(&token, 1, 9).unwrap();
            CollRequest::wait_all(reqs).unwrap();
        } else {
            w.recv(&mut token, 0, 9).unwrap();
            let reqs: Vec<CollRequest<'static>> =
                (0..LIMIT).map(|_| w.ibarrier().unwrap()).collect();
            CollRequest::wait_all(reqs).unwrap();
        }
        // Both ranks numbered the same calls (the refused one took no number).
        let x = [me as u64 + 1];
        let mut y = [0u64];
        w.allreduce(&x, &mut y, &Op::Sum).unwrap();
        assert_eq!(y[0], 3);
    });
}
