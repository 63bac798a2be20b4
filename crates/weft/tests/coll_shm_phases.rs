//! The node's collective area alternates the halves of its slots between phases and has no
//! arrival that frees them (weft-transport `shm::coll`): a rank that leaves a collective
//! early may write the next one's data while slower ranks still read this one's. Here the
//! area algorithms run back to back in a mixed sequence (bcast from rotating roots, reduce,
//! allreduce, allgather, allgatherv, alltoall, alltoallv, reduce-scatter, the counter barrier), each split into
//! many rounds by a small area, with ranks held back at random points, and every result is
//! checked against a serial reference. Reusing a half before every rank has left it, or
//! reading the wrong half, gives wrong bytes here.

mod common;

use weft::coll::{Op, Tuning};
use weft::Comm;

/// A small area: slots of a few hundred bytes, so every call takes many rounds.
const VARS: &[(&str, &str)] = &[("WEFT_SHM_COLL_BYTES", "16384")];

/// Deterministic per-(rank, iteration, point) pseudo-random number (splitmix64).
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Sometimes holds this rank back, so that others run ahead into the next collective.
fn skew(me: u32, it: u64, point: u64) {
    match mix(((me as u64) << 40) ^ (it << 8) ^ point) % 16 {
        0 => std::thread::sleep(std::time::Duration::from_micros(200)),
        1..=3 => std::thread::yield_now(),
        _ => {}
    }
}

fn val(r: u32, it: u64, i: usize) -> i64 {
    (r as i64 + 1) * 1_000_003 + it as i64 * 7919 + i as i64
}

fn force_shm(w: &Comm) {
    let vars: Vec<(String, &str)> = [
        "BCAST",
        "REDUCE",
        "ALLREDUCE",
        "ALLGATHER",
        "ALLTOALL",
        "REDUCE_SCATTER",
        "REDUCE_SCATTER_BLOCK",
        "ALLGATHERV",
        "ALLTOALLV",
    ]
    .iter()
    .map(|c| (format!("WEFT_{c}_ALGO"), "shm"))
    .chain(std::iter::once((
        "WEFT_BARRIER_ALGO".to_string(),
        "shm_counter",
    )))
    .collect();
    let refs: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    w.set_collective_tuning(Tuning::from_vars(&refs).unwrap());
}

fn sequence(w: &Comm, iters: u64) {
    force_shm(w);
    let (me, np) = (w.rank(), w.size());
    let npu = np as usize;
    for it in 0..iters {
        // 1..~700 elements: from one round to several of the small area's slots.
        let n = 1 + (mix(it) % 700) as usize;
        let what = format!("np={np} iteration {it} n={n}");
        skew(me, it, 0);
        match it % 9 {
            0 => {
                let root = (it as u32 / 9) % np;
                let mut buf: Vec<i64> = if me == root {
                    (0..n).map(|i| val(root, it, i)).collect()
                } else {
                    vec![-1; n]
                };
                w.bcast(&mut buf, root).unwrap();
                let want: Vec<i64> = (0..n).map(|i| val(root, it, i)).collect();
                assert_eq!(buf, want, "bcast from {root}, {what}");
            }
            1 | 2 => {
                let send: Vec<i64> = (0..n).map(|i| val(me, it, i)).collect();
                let mut out = vec![-1i64; n];
                let root = (it as u32) % np;
                let want: Vec<i64> = (0..n)
                    .map(|i| (0..np).map(|r| val(r, it, i)).sum())
                    .collect();
                if it % 9 == 1 {
                    w.allreduce(&send, &mut out, &Op::Sum).unwrap();
                    assert_eq!(out, want, "allreduce {what}");
                } else {
                    w.reduce(&send, &mut out, &Op::Sum, root).unwrap();
                    if me == root {
                        assert_eq!(out, want, "reduce to {root}, {what}");
                    }
                }
            }
            3 => {
                let mine: Vec<i64> = (0..n).map(|i| val(me, it, i)).collect();
                let mut all = vec![-1i64; n * npu];
                w.allgather(&mine, &mut all).unwrap();
                let want: Vec<i64> = (0..np)
                    .flat_map(|r| (0..n).map(move |i| val(r, it, i)))
                    .collect();
                assert_eq!(all, want, "allgather {what}");
            }
            4 => {
                // Block j of rank r's buffer is meant for rank j.
                let send: Vec<i64> = (0..npu * n)
                    .map(|k| val(me, it, k) * 31 + (k / n) as i64)
                    .collect();
                let mut recv = vec![-1i64; npu * n];
                w.alltoall(&send, &mut recv).unwrap();
                let want: Vec<i64> = (0..npu * n)
                    .map(|k| {
                        let (r, i) = ((k / n) as u32, k % n);
                        val(r, it, me as usize * n + i) * 31 + me as i64
                    })
                    .collect();
                assert_eq!(recv, want, "alltoall {what}");
            }
            5 => {
                let send: Vec<i64> = (0..npu * n).map(|k| val(me, it, k)).collect();
                let mut out = vec![-1i64; n];
                w.reduce_scatter_block(&send, &mut out, &Op::Sum).unwrap();
                let want: Vec<i64> = (0..n)
                    .map(|i| (0..np).map(|r| val(r, it, me as usize * n + i)).sum())
                    .collect();
                assert_eq!(out, want, "reduce_scatter_block {what}");
            }
            6 => {
                // Uneven blocks, some empty, some over several slots, in reverse rank order.
                let len = |r: u32| (mix(it ^ ((r as u64) << 20)) % 4) as usize * n / 2;
                let mut displs = vec![0usize; npu];
                let mut off = 0;
                for r in (0..np).rev() {
                    displs[r as usize] = off;
                    off += len(r) + 3;
                }
                let counts: Vec<usize> = (0..np).map(len).collect();
                let mine: Vec<i64> = (0..len(me)).map(|i| val(me, it, i)).collect();
                let mut all = vec![-1i64; off];
                w.allgatherv(&mine, &mut all, &counts, &displs).unwrap();
                let mut want = vec![-1i64; off];
                for r in 0..np {
                    for i in 0..len(r) {
                        want[displs[r as usize] + i] = val(r, it, i);
                    }
                }
                assert_eq!(all, want, "allgatherv {counts:?}, {what}");
            }
            7 => {
                // Every pair its own length (some empty, some over many slots' pieces, so
                // ranks take different numbers of rounds), blocks in reverse order with gaps.
                let len = |i: u32, j: u32| {
                    (mix(it ^ ((i as u64) << 20) ^ ((j as u64) << 30)) % 5) as usize * n / 3
                };
                let layout = |lens: &[usize]| {
                    let mut displs = vec![0usize; lens.len()];
                    let mut off = 0;
                    for j in (0..lens.len()).rev() {
                        displs[j] = off;
                        off += lens[j] + 1;
                    }
                    (displs, off)
                };
                let sc: Vec<usize> = (0..np).map(|j| len(me, j)).collect();
                let rc: Vec<usize> = (0..np).map(|i| len(i, me)).collect();
                let ((sd, sn), (rd, rn)) = (layout(&sc), layout(&rc));
                let item = |i: u32, j: u32, k: usize| val(i, it, k) * 64 + j as i64;
                let mut send = vec![-2i64; sn];
                for j in 0..np {
                    for k in 0..sc[j as usize] {
                        send[sd[j as usize] + k] = item(me, j, k);
                    }
                }
                let mut recv = vec![-1i64; rn];
                w.alltoallv(&send, &sc, &sd, &mut recv, &rc, &rd).unwrap();
                let mut want = vec![-1i64; rn];
                for i in 0..np {
                    for k in 0..rc[i as usize] {
                        want[rd[i as usize] + k] = item(i, me, k);
                    }
                }
                assert_eq!(recv, want, "alltoallv {sc:?} -> {rc:?}, {what}");
            }
            _ => w.barrier().unwrap(),
        }
        skew(me, it, 1);
    }
}

#[test]
fn area_collectives_back_to_back_with_skewed_ranks() {
    for np in [2, 3, 4, 7] {
        common::run_ranks(np, VARS, |w| sequence(&w, 140));
    }
}

/// With the shipped tuning, allgatherv's choice must not depend on the rank's own block: rank
/// 0's 2 MiB block alone would take the ring and the others' 8 B blocks the node area, and
/// the two never meet (a hang before the choice went by the largest block).
#[test]
fn allgatherv_with_uneven_blocks_chooses_alike_on_every_rank() {
    for np in [3u32, 4, 5] {
        common::run_ranks(np, &[], move |w| {
            let me = w.rank();
            for big in [1usize, 1 << 18] {
                let len = |r: u32| if r == 0 { big } else { 1 };
                let counts: Vec<usize> = (0..np).map(len).collect();
                let displs: Vec<usize> = (0..np).map(|r| (0..r).map(len).sum::<usize>()).collect();
                let total: usize = counts.iter().sum();
                let mine: Vec<i64> = (0..len(me)).map(|i| val(me, 0, i)).collect();
                let mut all = vec![-1i64; total];
                w.allgatherv(&mine, &mut all, &counts, &displs).unwrap();
                for r in 0..np {
                    let got = &all[displs[r as usize]..displs[r as usize] + len(r)];
                    let want: Vec<i64> = (0..len(r)).map(|i| val(r, 0, i)).collect();
                    assert!(
                        got == want.as_slice(),
                        "np={np} block of rank {r}, rank 0 sends {big}"
                    );
                }
            }
        });
    }
}

/// Alltoallv's ranks know only their own counts: with the shipped tuning, rank 0's 2 MiB
/// blocks alone must not take another algorithm than the others' 8 B blocks (the area one
/// needs every local rank; a rank on the message algorithms would leave it waiting).
#[test]
fn alltoallv_with_uneven_counts_chooses_alike_on_every_rank() {
    for np in [2u32, 3, 4, 5] {
        common::run_ranks(np, &[], move |w| {
            let me = w.rank();
            let len = |i: u32, j: u32| if i == 0 && j != 0 { 1 << 18 } else { 1 };
            let prefix = |c: &[usize]| {
                c.iter()
                    .scan(0, |s, &x| {
                        *s += x;
                        Some(*s - x)
                    })
                    .collect::<Vec<_>>()
            };
            let sc: Vec<usize> = (0..np).map(|j| len(me, j)).collect();
            let rc: Vec<usize> = (0..np).map(|i| len(i, me)).collect();
            let (sd, rd) = (prefix(&sc), prefix(&rc));
            let send: Vec<i64> = (0..np)
                .flat_map(|j| (0..len(me, j)).map(move |k| val(me, j as u64, k)))
                .collect();
            let mut recv = vec![-1i64; rc.iter().sum()];
            for call in 0..3 {
                w.alltoallv(&send, &sc, &sd, &mut recv, &rc, &rd).unwrap();
                for i in 0..np {
                    let got = &recv[rd[i as usize]..][..rc[i as usize]];
                    let want: Vec<i64> = (0..len(i, me)).map(|k| val(i, me as u64, k)).collect();
                    assert!(got == want.as_slice(), "np={np} call {call} block from {i}");
                }
            }
        });
    }
}

/// Ranks that disagree about a pair's count under the area alltoallv: the receiver says so
/// (InvalidCount, naming the sender and both lengths), every rank still takes part in the
/// same number of rounds, and the next calls run normally. Rank 1 expects from rank 0 more
/// (then it takes more rounds than anyone) or less than rank 0 sends.
#[test]
fn alltoallv_on_the_area_reports_disagreeing_counts_and_stays_in_step() {
    for np in [3u32, 4, 7] {
        common::run_ranks(np, VARS, move |w| {
            let me = w.rank();
            w.set_collective_tuning(Tuning::from_vars(&[("WEFT_ALLTOALLV_ALGO", "shm")]).unwrap());
            for (sent, expected) in [(5usize, 900usize), (900, 5), (0, 1), (1, 0)] {
                let len = |i: u32, j: u32| {
                    if i == 0 && j == 1 {
                        if me == 1 {
                            expected
                        } else {
                            sent
                        }
                    } else {
                        37
                    }
                };
                let sc: Vec<usize> = (0..np).map(|j| len(me, j)).collect();
                let rc: Vec<usize> = (0..np).map(|i| len(i, me)).collect();
                let sd: Vec<usize> = (0..np)
                    .map(|j| (0..j).map(|x| sc[x as usize]).sum())
                    .collect();
                let rd: Vec<usize> = (0..np)
                    .map(|i| (0..i).map(|x| rc[x as usize]).sum())
                    .collect();
                let send = vec![me as u16; sc.iter().sum()];
                let mut recv = vec![0u16; rc.iter().sum()];
                let r = w.alltoallv(&send, &sc, &sd, &mut recv, &rc, &rd);
                if me == 1 {
                    let e = r.unwrap_err();
                    assert_eq!(e.kind(), weft::ErrorKind::InvalidCount, "{e}");
                    let (s, x) = (2 * sent, 2 * expected);
                    assert!(
                        e.message().contains("alltoallv")
                            && e.message()
                                .contains(&format!("received {s} bytes from rank 0"))
                            && e.message().contains(&format!("expected {x}")),
                        "{e}"
                    );
                } else {
                    r.unwrap();
                }
                // Still in step: a correct call and a barrier on the area.
                let ok: Vec<usize> = vec![3; np as usize];
                let od: Vec<usize> = (0..np as usize).map(|j| 3 * j).collect();
                let send: Vec<u16> = (0..3 * np).map(|k| (me * 100 + k) as u16).collect();
                let mut recv = vec![0u16; send.len()];
                w.alltoallv(&send, &ok, &od, &mut recv, &ok, &od).unwrap();
                for i in 0..np {
                    for k in 0..3 {
                        assert_eq!(recv[(3 * i + k) as usize], (i * 100 + 3 * me + k) as u16);
                    }
                }
                w.barrier().unwrap();
            }
        });
    }
}
