//! Every collective × every registered algorithm (forced through the tuning) × np in
//! {1, 2, 3, 4, 5, 7, 8} × sizes {0, 1, odd, eager limit ± 1, 1 MiB for some}, one thread per
//! rank, checked against a serial reference computed here. Inputs are small integers, so
//! floating-point sums are exact in any order and compared exactly.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

mod common;

use std::sync::Arc;

use weft::coll::select::{algorithms, Algorithm, Coll, Restriction};
use weft::coll::{Op, Tuning, F64I32};
use weft::{Comm, ErrorKind};

/// Extra knobs for every rank (none: the defaults, cooperative rendezvous included, are what
/// the matrix must pass with).
const VARS: &[(&str, &str)] = &[];

fn run_ranks(n: u32, body: impl Fn(Comm) + Send + Sync + 'static) {
    common::run_ranks(n, VARS, body)
}

const NPS: &[u32] = &[1, 2, 3, 4, 5, 7, 8];
/// Element counts of 8-byte elements: 0, 1, odd, eager limit (16 KiB) − 8 and + 8 bytes.
const COUNTS: &[usize] = &[0, 1, 13, 2047, 2049];
/// 1 MiB of 8-byte elements, run at fewer rank counts.
const BIG: usize = 1 << 17;

/// The restriction that rules `a` out for this call, mirroring the selector's rules.
fn blocked(a: &Algorithm, np: u32, commutative: bool) -> Option<Restriction> {
    a.restrictions.iter().copied().find(|r| match r {
        Restriction::Commutative => !commutative,
        Restriction::PowerOfTwo => !np.is_power_of_two(),
        Restriction::SharedMemory => np < 2,
        // The matrix makes blocking calls, and the ranks are threads of one process, which
        // can always read its own memory.
        Restriction::Blocking | Restriction::CrossMemoryAttach => false,
        // The ranks share one node: no network rail between them.
        Restriction::Rails => true,
    })
}

/// Checks that `r` failed because of `why`, with a message naming the algorithm.
#[track_caller]
fn refused(r: weft::Result<()>, why: Restriction, a: &Algorithm) {
    let e = r.unwrap_err();
    let word = match why {
        Restriction::Commutative => "commutative",
        Restriction::PowerOfTwo => "power-of-two",
        Restriction::SharedMemory => "one node",
        Restriction::Blocking => "nonblocking",
        Restriction::CrossMemoryAttach => "Cross Memory Attach",
        Restriction::Rails => "network rail",
    };
    assert!(
        e.message().contains(word) && e.message().contains(a.name),
        "{e}"
    );
}

fn force(w: &Comm, coll: Coll, algo: &str) {
    let var = format!("WEFT_{}_ALGO", coll.name().to_ascii_uppercase());
    w.set_collective_tuning(Tuning::from_vars(&[(var.as_str(), algo)]).unwrap());
}

fn counts_for(np: u32) -> Vec<usize> {
    let mut c = COUNTS.to_vec();
    if matches!(np, 2 | 4 | 5) {
        c.push(BIG);
    }
    c
}

/// Compares without printing megabytes: names the first differing element.
#[track_caller]
fn same<T: PartialEq + std::fmt::Debug>(got: &[T], want: &[T], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        panic!(
            "{what}: element {i} of {} is {:?}, expected {:?}",
            got.len(),
            got[i],
            want[i]
        );
    }
}

fn val(r: u32, i: usize) -> i64 {
    ((r as i64 + 1) * 7 + (i as i64 % 1013) * 3) % 97 - 40
}

/// Affine maps x ↦ a·x + b mod 2³², packed (a, b) into a u64; composition applies the lower
/// rank's map first. Associative and not commutative.
fn affine_op() -> Op {
    Op::user::<u64>("affine", false, |a, b| {
        for (x, y) in a.iter().zip(b.iter_mut()) {
            *y = compose(*x, *y);
        }
    })
}

fn compose(first: u64, second: u64) -> u64 {
    let (a1, b1) = ((first >> 32) as u32, first as u32);
    let (a2, b2) = ((second >> 32) as u32, second as u32);
    let a = a1.wrapping_mul(a2);
    let b = a2.wrapping_mul(b1).wrapping_add(b2);
    ((a as u64) << 32) | b as u64
}

fn affine(r: u32, i: usize) -> u64 {
    let a = 2 * (r as u64 + i as u64 % 5) + 1;
    let b = (r as u64 * 31 + i as u64) % 1000;
    (a << 32) | b
}

fn sum_ref(ranks: std::ops::Range<u32>, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| ranks.clone().map(|r| val(r, i)).sum())
        .collect()
}

fn affine_ref(ranks: std::ops::Range<u32>, n: usize) -> Vec<u64> {
    (0..n)
        .map(|i| {
            ranks
                .clone()
                .map(|r| affine(r, i))
                .reduce(compose)
                .unwrap_or(0)
        })
        .collect()
}

fn reductions(w: &Comm) {
    let (me, np) = (w.rank(), w.size());
    for coll in [Coll::Allreduce, Coll::Reduce] {
        for a in algorithms(coll) {
            force(w, coll, a.name);
            if let Some(why) = blocked(a, np, true) {
                let r = if coll == Coll::Allreduce {
                    w.allreduce(&[1i64], &mut [0], &Op::Sum)
                } else {
                    w.reduce(&[1i64], &mut [0], &Op::Sum, 0)
                };
                refused(r, why, a);
                continue;
            }
            for n in counts_for(np) {
                let what = format!("{} {} np={np} n={n}", coll.name(), a.name);
                let send: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
                let mut out = vec![0i64; n];
                let root = (n as u32 * 3 + 1) % np;
                // Twice: the second call repeats the first, so a plan of one step of plain
                // messages runs directly (coll::direct) where the first took the schedule.
                for call in 0..2 {
                    out.fill(0);
                    if coll == Coll::Allreduce {
                        w.allreduce(&send, &mut out, &Op::Sum).unwrap();
                        same(&out, &sum_ref(0..np, n), &format!("{what} call {call}"));
                    } else {
                        w.reduce(&send, &mut out, &Op::Sum, root).unwrap();
                        if me == root {
                            same(&out, &sum_ref(0..np, n), &format!("{what} call {call}"));
                        } else {
                            assert!(out.iter().all(|&x| x == 0), "{what}: non-root touched");
                        }
                    }
                }
                if n > 3000 {
                    continue;
                }
                // Floats (exact: small integers), max.
                let fs: Vec<f64> = (0..n).map(|i| val(me, i) as f64 * 0.5).collect();
                let mut fo = vec![0f64; n];
                let fref: Vec<f64> = (0..n)
                    .map(|i| {
                        (0..np)
                            .map(|r| val(r, i) as f64 * 0.5)
                            .fold(f64::MIN, f64::max)
                    })
                    .collect();
                if coll == Coll::Allreduce {
                    w.allreduce(&fs, &mut fo, &Op::Max).unwrap();
                    same(&fo, &fref, &format!("{what} f64 max"));
                } else {
                    w.reduce(&fs, &mut fo, &Op::Max, root).unwrap();
                    if me == root {
                        same(&fo, &fref, &format!("{what} f64 max"));
                    }
                }
                // Pairs with minloc.
                let ps: Vec<F64I32> = (0..n)
                    .map(|i| F64I32::new((val(me, i) % 5) as f64, me as i32))
                    .collect();
                let mut po = vec![F64I32::default(); n];
                let pref: Vec<F64I32> = (0..n)
                    .map(|i| {
                        let v = (0..np).map(|r| val(r, i) % 5).min().unwrap();
                        let r = (0..np).find(|&r| val(r, i) % 5 == v).unwrap();
                        F64I32::new(v as f64, r as i32)
                    })
                    .collect();
                if coll == Coll::Allreduce {
                    w.allreduce(&ps, &mut po, &Op::MinLoc).unwrap();
                    same(&po, &pref, &format!("{what} minloc"));
                } else {
                    w.reduce(&ps, &mut po, &Op::MinLoc, root).unwrap();
                    if me == root {
                        same(&po, &pref, &format!("{what} minloc"));
                    }
                }
                // Bitwise xor on u8.
                let bs: Vec<u8> = (0..n)
                    .map(|i| (val(me, i) as u8).wrapping_mul(37))
                    .collect();
                let mut bo = vec![0u8; n];
                let bref: Vec<u8> = (0..n)
                    .map(|i| (0..np).fold(0, |x, r| x ^ (val(r, i) as u8).wrapping_mul(37)))
                    .collect();
                if coll == Coll::Allreduce {
                    w.allreduce(&bs, &mut bo, &Op::Bxor).unwrap();
                    same(&bo, &bref, &format!("{what} bxor"));
                }
                // A non-commutative user op: rank order, or a restriction error; twice, so
                // the operand order is checked in a direct run too.
                let us: Vec<u64> = (0..n).map(|i| affine(me, i)).collect();
                for call in 0..2 {
                    let mut uo = vec![0u64; n];
                    let r = if coll == Coll::Allreduce {
                        w.allreduce(&us, &mut uo, &affine_op())
                    } else {
                        w.reduce(&us, &mut uo, &affine_op(), root)
                    };
                    if let Some(why) = blocked(a, np, false) {
                        refused(r, why, a);
                    } else {
                        r.unwrap();
                        if coll == Coll::Allreduce || me == root {
                            same(
                                &uo,
                                &affine_ref(0..np, n),
                                &format!("{what} non-commutative call {call}"),
                            );
                        }
                    }
                }
            }
        }
    }
}

fn scans(w: &Comm) {
    let (me, np) = (w.rank(), w.size());
    for a in algorithms(Coll::Scan) {
        force_scans(w, a.name);
        scans_with(w, me, np);
    }
}

/// Forces `algo` for both scan and exscan (they share their algorithms).
fn force_scans(w: &Comm, algo: &str) {
    w.set_collective_tuning(
        Tuning::from_vars(&[("WEFT_SCAN_ALGO", algo), ("WEFT_EXSCAN_ALGO", algo)]).unwrap(),
    );
}

fn scans_with(w: &Comm, me: u32, np: u32) {
    // Each call twice in a row: the second repeats the first and may run directly.
    for n in counts_for(np).into_iter().flat_map(|n| [n, n]) {
        let send: Vec<u64> = (0..n).map(|i| affine(me, i)).collect();
        let mut out = vec![7u64; n];
        w.scan(&send, &mut out, &affine_op()).unwrap();
        same(
            &out,
            &affine_ref(0..me + 1, n),
            &format!("scan np={np} n={n}"),
        );
        let mut out = vec![7u64; n];
        w.exscan(&send, &mut out, &affine_op()).unwrap();
        if me == 0 {
            assert!(out.iter().all(|&x| x == 7), "exscan touched rank 0");
        } else {
            same(
                &out,
                &affine_ref(0..me, n),
                &format!("exscan np={np} n={n}"),
            );
        }
        let s: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
        let mut o = vec![0i64; n];
        w.scan(&s, &mut o, &Op::Sum).unwrap();
        same(
            &o,
            &sum_ref(0..me + 1, n),
            &format!("scan sum np={np} n={n}"),
        );
    }
}

fn reduce_scatters(w: &Comm) {
    let (me, np) = (w.rank(), w.size());
    for a in algorithms(Coll::ReduceScatter) {
        force(w, Coll::ReduceScatter, a.name);
        force_also(w, Coll::ReduceScatterBlock, a.name);
        if let Some(why) = blocked(a, np, true) {
            let send = vec![1i64; np as usize];
            refused(w.reduce_scatter_block(&send, &mut [0], &Op::Sum), why, a);
            continue;
        }
        for n in counts_for(np) {
            let blk = n / np as usize + 1;
            let send: Vec<i64> = (0..blk * np as usize).map(|i| val(me, i)).collect();
            let full = sum_ref(0..np, blk * np as usize);
            let mine = &full[me as usize * blk..(me as usize + 1) * blk];
            // Twice: the second call repeats the first and may run directly.
            for call in 0..2 {
                let mut out = vec![0i64; blk];
                w.reduce_scatter_block(&send, &mut out, &Op::Sum).unwrap();
                same(
                    &out,
                    mine,
                    &format!("reduce_scatter_block {} np={np} n={n} call {call}", a.name),
                );
            }
            // Uneven counts: rank r gets r + n % 3 elements.
            let counts: Vec<usize> = (0..np as usize).map(|r| r + n % 3).collect();
            let total: usize = counts.iter().sum();
            let start: usize = counts[..me as usize].iter().sum();
            let us: Vec<u64> = (0..total).map(|i| affine(me, i)).collect();
            if blocked(a, np, false).is_none() {
                let full = affine_ref(0..np, total);
                for call in 0..2 {
                    let mut uo = vec![0u64; counts[me as usize]];
                    w.reduce_scatter(&us, &mut uo, &counts, &affine_op())
                        .unwrap();
                    same(
                        &uo,
                        &full[start..start + counts[me as usize]],
                        &format!("reduce_scatter {} np={np} n={n} call {call}", a.name),
                    );
                }
            } else {
                let mut uo = vec![0u64; counts[me as usize]];
                let r = w.reduce_scatter(&us, &mut uo, &counts, &affine_op());
                refused(r, blocked(a, np, false).unwrap(), a);
                let s: Vec<i64> = (0..total).map(|i| val(me, i)).collect();
                let mut o = vec![0i64; counts[me as usize]];
                w.reduce_scatter(&s, &mut o, &counts, &Op::Sum).unwrap();
                let full = sum_ref(0..np, total);
                same(
                    &o,
                    &full[start..start + counts[me as usize]],
                    &format!("reduce_scatter {} np={np} n={n}", a.name),
                );
            }
        }
    }
}

/// Forces a second collective on top of the current forcing.
fn force_also(w: &Comm, coll: Coll, algo: &str) {
    let rs = format!(
        "WEFT_{}_ALGO",
        Coll::ReduceScatter.name().to_ascii_uppercase()
    );
    let var = format!("WEFT_{}_ALGO", coll.name().to_ascii_uppercase());
    w.set_collective_tuning(
        Tuning::from_vars(&[(rs.as_str(), algo), (var.as_str(), algo)]).unwrap(),
    );
}

fn movers(w: &Comm) {
    let (me, np) = (w.rank(), w.size());
    let npu = np as usize;
    for n in counts_for(np) {
        let root = (n as u32 + 2) % np;
        // bcast
        for a in algorithms(Coll::Bcast) {
            force(w, Coll::Bcast, a.name);
            let mut buf: Vec<i64> = if me == root {
                (0..n).map(|i| val(root, i)).collect()
            } else {
                vec![0; n]
            };
            let r = w.bcast(&mut buf, root);
            if let Some(why) = blocked(a, np, true) {
                refused(r, why, a);
                continue;
            }
            r.unwrap();
            let want: Vec<i64> = (0..n).map(|i| val(root, i)).collect();
            same(&buf, &want, &format!("bcast {} np={np} n={n}", a.name));
            // Again: a repeated call, which may run directly (coll::direct).
            if me != root {
                buf.fill(0);
            }
            w.bcast(&mut buf, root).unwrap();
            same(
                &buf,
                &want,
                &format!("bcast {} np={np} n={n} again", a.name),
            );
        }
        let n = if n == BIG { BIG / npu } else { n };
        let mine: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
        let all: Vec<i64> = (0..np)
            .flat_map(|r| (0..n).map(move |i| val(r, i)))
            .collect();
        // gather / scatter / allgather, every algorithm
        for a in algorithms(Coll::Gather) {
            force(w, Coll::Gather, a.name);
            let mut g = if me == root {
                vec![0i64; n * npu]
            } else {
                vec![]
            };
            if let Some(why) = blocked(a, np, true) {
                refused(w.gather(&mine, &mut g, root), why, a);
                continue;
            }
            for call in 0..2 {
                g.fill(0);
                w.gather(&mine, &mut g, root).unwrap();
                if me == root {
                    same(
                        &g,
                        &all,
                        &format!("gather {} np={np} n={n} call {call}", a.name),
                    );
                }
            }
        }
        for a in algorithms(Coll::Scatter) {
            force(w, Coll::Scatter, a.name);
            let mut s = vec![0i64; n];
            let src = if me == root { all.clone() } else { vec![] };
            for call in 0..2 {
                s.fill(0);
                w.scatter(&src, &mut s, root).unwrap();
                same(
                    &s,
                    &mine,
                    &format!("scatter {} np={np} n={n} call {call}", a.name),
                );
            }
        }
        for a in algorithms(Coll::Allgather) {
            force(w, Coll::Allgather, a.name);
            let mut ag = vec![0i64; n * npu];
            let r = w.allgather(&mine, &mut ag);
            if let Some(why) = blocked(a, np, true) {
                refused(r, why, a);
                continue;
            }
            r.unwrap();
            same(&ag, &all, &format!("allgather {} np={np} n={n}", a.name));
            // Again: a repeated call, which may run directly (coll::direct).
            ag.fill(0);
            w.allgather(&mine, &mut ag).unwrap();
            same(
                &ag,
                &all,
                &format!("allgather {} np={np} n={n} again", a.name),
            );
        }
        // alltoall: block j of rank i holds val(i, j·n + k).
        let send: Vec<i64> = (0..n * npu).map(|i| val(me, i)).collect();
        let want: Vec<i64> = (0..np)
            .flat_map(|r| (0..n).map(move |k| val(r, me as usize * n + k)))
            .collect();
        for a in algorithms(Coll::Alltoall) {
            force(w, Coll::Alltoall, a.name);
            let mut recv = vec![0i64; n * npu];
            let r = w.alltoall(&send, &mut recv);
            if let Some(why) = blocked(a, np, true) {
                refused(r, why, a);
                continue;
            }
            r.unwrap();
            same(&recv, &want, &format!("alltoall {} np={np} n={n}", a.name));
            recv.fill(0);
            w.alltoall(&send, &mut recv).unwrap();
            same(
                &recv,
                &want,
                &format!("alltoall {} np={np} n={n} again", a.name),
            );
        }
        // v-variants: rank r contributes r + n % 4 elements, stored in reverse rank order
        // with a gap of one element.
        let counts: Vec<usize> = (0..npu).map(|r| r + n % 4).collect();
        let mut displs = vec![0usize; npu];
        let mut off = 0;
        for r in (0..npu).rev() {
            displs[r] = off;
            off += counts[r] + 1;
        }
        let total = off;
        let mine_v: Vec<i64> = (0..counts[me as usize]).map(|i| val(me, i)).collect();
        let mut want_v = vec![-1i64; total];
        for r in 0..npu {
            for i in 0..counts[r] {
                want_v[displs[r] + i] = val(r as u32, i);
            }
        }
        let mut gv = if me == root {
            vec![-1i64; total]
        } else {
            vec![]
        };
        w.gatherv(&mine_v, &mut gv, &counts, &displs, root).unwrap();
        if me == root {
            same(&gv, &want_v, &format!("gatherv np={np} n={n}"));
        }
        for a in algorithms(Coll::Allgatherv) {
            force(w, Coll::Allgatherv, a.name);
            let mut agv = vec![-1i64; total];
            let r = w.allgatherv(&mine_v, &mut agv, &counts, &displs);
            if let Some(why) = blocked(a, np, true) {
                refused(r, why, a);
                continue;
            }
            r.unwrap();
            same(
                &agv,
                &want_v,
                &format!("allgatherv {} np={np} n={n}", a.name),
            );
        }
        let mut sv = vec![0i64; counts[me as usize]];
        let src = if me == root { want_v.clone() } else { vec![] };
        w.scatterv(&src, &counts, &displs, &mut sv, root).unwrap();
        same(&sv, &mine_v, &format!("scatterv np={np} n={n}"));
        // alltoallv: rank i sends (i + j + n) % 3 elements to j.
        let cnt = |i: usize, j: usize| (i + j + n) % 3;
        let sc: Vec<usize> = (0..npu).map(|j| cnt(me as usize, j)).collect();
        let rc: Vec<usize> = (0..npu).map(|i| cnt(i, me as usize)).collect();
        let prefix = |c: &[usize]| {
            c.iter()
                .scan(0, |s, &x| {
                    let o = *s;
                    *s += x;
                    Some(o)
                })
                .collect::<Vec<_>>()
        };
        let (sd, rd) = (prefix(&sc), prefix(&rc));
        let sbuf: Vec<i64> = (0..npu)
            .flat_map(|j| (0..sc[j]).map(move |k| (me as i64) * 1000 + j as i64 * 10 + k as i64))
            .collect();
        let want: Vec<i64> = (0..npu)
            .flat_map(|i| (0..rc[i]).map(move |k| i as i64 * 1000 + me as i64 * 10 + k as i64))
            .collect();
        for a in algorithms(Coll::Alltoallv) {
            force(w, Coll::Alltoallv, a.name);
            let mut rbuf = vec![0i64; rc.iter().sum()];
            if let Some(why) = blocked(a, np, true) {
                refused(w.alltoallv(&sbuf, &sc, &sd, &mut rbuf, &rc, &rd), why, a);
                continue;
            }
            for call in 0..2 {
                rbuf.fill(0);
                w.alltoallv(&sbuf, &sc, &sd, &mut rbuf, &rc, &rd).unwrap();
                same(
                    &rbuf,
                    &want,
                    &format!("alltoallv {} np={np} n={n} call {call}", a.name),
                );
            }
        }
    }
}

#[test]
fn every_collective_every_algorithm_every_size() {
    for &np in NPS {
        run_ranks(np, |w| {
            for a in algorithms(Coll::Barrier) {
                force(&w, Coll::Barrier, a.name);
                if let Some(why) = blocked(a, w.size(), true) {
                    refused(w.barrier(), why, a);
                    continue;
                }
                for _ in 0..3 {
                    w.barrier().unwrap();
                }
            }
            let t = std::time::Instant::now();
            let say = |what: &str| {
                if w.rank() == 0 && std::env::var_os("COLL_TEST_TRACE").is_some() {
                    eprintln!("np={} {what} done at {:?}", w.size(), t.elapsed());
                }
            };
            reductions(&w);
            say("reductions");
            scans(&w);
            say("scans");
            reduce_scatters(&w);
            say("reduce_scatters");
            movers(&w);
            say("movers");
        });
    }
}

#[test]
fn bad_input_gives_clear_errors() {
    run_ranks(3, |w| {
        w.set_collective_tuning(Tuning::default());
        let me = w.rank();
        let e = w.bcast(&mut [0u8; 4], 3).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidRoot);
        assert!(e.message().contains("root 3"), "{e}");
        let e = w.allreduce(&[1.0f64], &mut [0.0], &Op::Band).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidOp);
        assert!(
            e.message().contains("band") && e.message().contains("f64"),
            "{e}"
        );
        let e = w.allreduce(&[1i32, 2], &mut [0], &Op::Sum).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidCount);
        let e = w
            .allgatherv(&[1u8], &mut [0u8; 3], &[1, 1, 1], &[0, 1, 1])
            .unwrap_err();
        assert!(e.message().contains("overlap"), "{e}");
        let e = w
            .alltoallv(&[1u8], &[1, 0], &[0, 0], &mut [0u8], &[1, 0, 0], &[0, 0, 0])
            .unwrap_err();
        assert!(
            e.message().contains("send_counts") && e.message().contains("3 ranks"),
            "{e}"
        );
        // Mismatched counts between ranks: the receiver sees the wrong size and says so; a
        // buffer shorter than the message is a truncation, as MPI classes it.
        // (The shared-memory algorithms cannot see it; they are not forced here.)
        force(&w, Coll::Bcast, "knomial");
        let n = if me == 0 { 4 } else { 2 };
        let mut buf = vec![1u32; n];
        let r = w.bcast(&mut buf, 0);
        if me != 0 {
            let e = r.unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Truncate, "{e}");
            assert!(
                e.message().contains("bcast") && e.message().contains("16 bytes"),
                "{e}"
            );
        }
        w.barrier().unwrap();
        // Forcing an algorithm whose restriction fails is an error naming it.
        force(&w, Coll::Allreduce, "ring");
        let e = w.allreduce(&[1u64], &mut [0], &affine_op()).unwrap_err();
        assert!(
            e.message().contains("WEFT_ALLREDUCE_ALGO=ring") && e.message().contains("commutative"),
            "{e}"
        );
        w.barrier().unwrap();
    });
}

/// An operation and its serial reference.
type OpRef<T> = (Op, fn(T, T) -> T);

/// Applies `op` serially in rank order, as the reference for one element type.
fn check_type<T: weft::coll::Datatype + PartialEq + std::fmt::Debug>(
    w: &Comm,
    ops: &[OpRef<T>],
    make: impl Fn(u32, usize) -> T,
) {
    let (me, np) = (w.rank(), w.size());
    for n in [0usize, 1, 5, 300] {
        let send: Vec<T> = (0..n).map(|i| make(me, i)).collect();
        for (op, f) in ops {
            let want: Vec<T> = (0..n)
                .map(|i| (1..np).fold(make(0, i), |acc, r| f(acc, make(r, i))))
                .collect();
            let mut out: Vec<T> = (0..n).map(|i| make(0, i)).collect();
            w.allreduce(&send, &mut out, op).unwrap();
            same(&out, &want, &format!("allreduce {op:?} np={np} n={n}"));
            let prefix: Vec<T> = (0..n)
                .map(|i| (1..=me).fold(make(0, i), |acc, r| f(acc, make(r, i))))
                .collect();
            w.scan(&send, &mut out, op).unwrap();
            same(&out, &prefix, &format!("scan {op:?} np={np} n={n}"));
        }
    }
}

macro_rules! int_ops {
    ($t:ty) => {
        [
            (
                Op::Sum,
                (|a: $t, b: $t| a.wrapping_add(b)) as fn($t, $t) -> $t,
            ),
            (Op::Prod, |a: $t, b: $t| a.wrapping_mul(b)),
            (Op::Min, |a: $t, b: $t| a.min(b)),
            (Op::Max, |a: $t, b: $t| a.max(b)),
            (Op::Land, |a: $t, b: $t| (a != 0 && b != 0) as $t),
            (Op::Lor, |a: $t, b: $t| (a != 0 || b != 0) as $t),
            (Op::Lxor, |a: $t, b: $t| ((a != 0) != (b != 0)) as $t),
            (Op::Band, |a: $t, b: $t| a & b),
            (Op::Bor, |a: $t, b: $t| a | b),
            (Op::Bxor, |a: $t, b: $t| a ^ b),
        ]
    };
}

#[test]
fn every_type_and_op_against_a_serial_fold() {
    for np in [3u32, 4] {
        run_ranks(np, |w| {
            // Recursive doubling is exact for any op; the default choice covers the rest.
            for forced in [true, false] {
                if forced {
                    force(&w, Coll::Allreduce, "recursive_doubling");
                } else {
                    w.set_collective_tuning(Tuning::default());
                }
                let m = |r: u32, i: usize| (r as usize * 7 + i * 3) % 11;
                check_type::<i8>(&w, &int_ops!(i8), |r, i| m(r, i) as i8 - 5);
                check_type::<i16>(&w, &int_ops!(i16), |r, i| m(r, i) as i16 * 300 - 1500);
                check_type::<i32>(&w, &int_ops!(i32), |r, i| m(r, i) as i32 - 5);
                check_type::<i64>(&w, &int_ops!(i64), |r, i| m(r, i) as i64 * 1_000_000_007);
                check_type::<u8>(&w, &int_ops!(u8), |r, i| m(r, i) as u8 * 23);
                check_type::<u16>(&w, &int_ops!(u16), |r, i| m(r, i) as u16 * 6007);
                check_type::<u32>(&w, &int_ops!(u32), |r, i| m(r, i) as u32 * 400_000_009);
                check_type::<u64>(&w, &int_ops!(u64), |r, i| m(r, i) as u64 * (1 << 60));
                // Small integers and halves: exact in any order.
                let fops32: [OpRef<f32>; 4] = [
                    (Op::Sum, |a, b| a + b),
                    (Op::Prod, |a, b| a * b),
                    (Op::Min, f32::min),
                    (Op::Max, f32::max),
                ];
                check_type::<f32>(&w, &fops32, |r, i| m(r, i) as f32 * 0.5 - 2.0);
                let fops64: [OpRef<f64>; 4] = [
                    (Op::Sum, |a, b| a + b),
                    (Op::Prod, |a, b| a * b),
                    (Op::Min, f64::min),
                    (Op::Max, f64::max),
                ];
                check_type::<f64>(&w, &fops64, |r, i| m(r, i) as f64 * 0.25 - 1.0);
                // Pairs: ties go to the smaller index.
                fn loc<P: Copy>(min: bool, v: impl Fn(&P) -> (f64, i32)) -> impl Fn(P, P) -> P {
                    move |a, b| {
                        let ((av, ai), (bv, bi)) = (v(&a), v(&b));
                        let a_wins = if av == bv { ai < bi } else { (av < bv) == min };
                        if a_wins {
                            a
                        } else {
                            b
                        }
                    }
                }
                macro_rules! pairs {
                    ($p:ty, $v:ty) => {{
                        let ops: [OpRef<$p>; 2] = [
                            (Op::MinLoc, |a, b| {
                                loc::<$p>(true, |p| (p.value as f64, p.index))(a, b)
                            }),
                            (Op::MaxLoc, |a, b| {
                                loc::<$p>(false, |p| (p.value as f64, p.index))(a, b)
                            }),
                        ];
                        check_type::<$p>(&w, &ops, |r, i| <$p>::new((m(r, i) % 4) as $v, r as i32));
                    }};
                }
                pairs!(weft::coll::F32I32, f32);
                pairs!(F64I32, f64);
                pairs!(weft::coll::I32I32, i32);
                pairs!(weft::coll::I64I32, i64);
            }
        });
    }
}

#[test]
fn barriers_hold_every_rank_until_all_arrived() {
    use std::sync::atomic::{AtomicU32, Ordering};
    for &np in NPS {
        let entered = Arc::new(AtomicU32::new(0));
        run_ranks(np, move |w| {
            let mut round = 0;
            for a in algorithms(Coll::Barrier) {
                force(&w, Coll::Barrier, a.name);
                if blocked(a, np, true).is_some() {
                    continue;
                }
                for _ in 0..20 {
                    // Stagger the ranks so a barrier that does not wait would be caught.
                    if w.rank() == round % np {
                        std::thread::sleep(std::time::Duration::from_micros(300));
                    }
                    entered.fetch_add(1, Ordering::SeqCst);
                    w.barrier().unwrap();
                    round += 1;
                    let seen = entered.load(Ordering::SeqCst);
                    assert!(
                        seen >= np * round,
                        "{} np={np}: left with {seen} of {} entries",
                        a.name,
                        np * round
                    );
                }
            }
        });
    }
}

/// The hierarchical algorithms on made-up node groupings (the machine is one node; the
/// tuning's synthetic grouping stands in for `node_of`): every np, sizes 0, 1, odd and past
/// the eager limit, each root, radix 2 and 3; data checked.
#[test]
fn hierarchical_algorithms_on_synthetic_nodes() {
    for &np in NPS {
        run_ranks(np, |w| {
            let (me, np) = (w.rank(), w.size());
            // Nodes of 1, 2, 3, ... ranks in rank order, and an interleaved grouping.
            let runs: Vec<u32> = (0..np)
                .map(|r| (((8 * r + 1) as f64).sqrt() as u32 - 1) / 2)
                .collect();
            let striped: Vec<u32> = (0..np).map(|r| r % 3).collect();
            for nodes in [runs, striped] {
                for radix in ["2", "3"] {
                    let vars = [
                        ("WEFT_BCAST_ALGO", "hier_knomial"),
                        ("WEFT_REDUCE_ALGO", "hier_knomial"),
                        ("WEFT_ALLREDUCE_ALGO", "hier_knomial"),
                        ("WEFT_BCAST_RADIX", radix),
                        ("WEFT_REDUCE_RADIX", radix),
                        ("WEFT_ALLREDUCE_RADIX", radix),
                    ];
                    w.set_collective_tuning(
                        Tuning::from_vars(&vars)
                            .unwrap()
                            .with_synthetic_nodes(nodes.clone()),
                    );
                    for n in [0usize, 1, 13, 2049] {
                        let what = format!("nodes {nodes:?} radix {radix} n={n}");
                        let send: Vec<i64> = (0..n).map(|i| val(me, i)).collect();
                        let mut out = vec![0i64; n];
                        w.allreduce(&send, &mut out, &Op::Sum).unwrap();
                        same(&out, &sum_ref(0..np, n), &format!("allreduce {what}"));
                        for root in 0..np {
                            let mut b: Vec<i64> = if me == root {
                                (0..n).map(|i| val(root + 9, i)).collect()
                            } else {
                                vec![0; n]
                            };
                            w.bcast(&mut b, root).unwrap();
                            let want: Vec<i64> = (0..n).map(|i| val(root + 9, i)).collect();
                            same(&b, &want, &format!("bcast root {root} {what}"));
                            let mut r = vec![0i64; if me == root { n } else { 0 }];
                            w.reduce(&send, &mut r, &Op::Sum, root).unwrap();
                            if me == root {
                                same(
                                    &r,
                                    &sum_ref(0..np, n),
                                    &format!("reduce root {root} {what}"),
                                );
                            }
                        }
                        // A non-commutative operation is refused by name.
                        if n == 1 {
                            let e = w.allreduce(&[1u64], &mut [0], &affine_op()).unwrap_err();
                            assert!(e.message().contains("commutative"), "{e}");
                        }
                    }
                }
            }
        });
    }
}
