//! The shared-memory direct (single-copy) alltoall, reduce, reduce-scatter, gather and bcast
//! across real processes: the test binary
//! starts copies of itself as ranks (a real bootstrap store, one segment, Cross Memory
//! Attach between processes) at 1, 2, 3, 4 and 7 ranks, with blocks of 0, 1, an odd number
//! of bytes and 1 MiB, checked against the values every rank can compute. Also: the node's
//! CMA verdict is one for all ranks, and forcing the algorithm where CMA is switched off
//! (`WEFT_SHM_CMA=off`) or in a nonblocking call is an error naming the restriction, and a
//! call whose algorithm does not read peers' memory does not wait for the node's verdict.

#![allow(
    clippy::disallowed_methods,
    reason = "tests hand variables to the jobs they start and read the suite's markers"
)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CHILD: &str = "WEFT_TEST_DIRECT_CHILD";
const MODE: &str = "WEFT_TEST_DIRECT_MODE";

/// Byte k of the block rank `from` sends to rank `to`.
fn byte(from: u32, to: u32, k: usize) -> u8 {
    (from as usize * 31 + to as usize * 7 + k * 13 + k / 251) as u8
}

fn alltoall_bytes(w: &weft::Comm, block: usize) {
    let (me, n) = (w.rank(), w.size());
    let send: Vec<u8> = (0..n)
        .flat_map(|to| (0..block).map(move |k| byte(me, to, k)))
        .collect();
    let mut recv = vec![0xeeu8; send.len()];
    w.alltoall(&send, &mut recv).unwrap();
    for from in 0..n {
        for k in 0..block {
            let got = recv[from as usize * block + k];
            assert_eq!(
                got,
                byte(from, me, k),
                "np={n} block={block}: byte {k} from rank {from} on rank {me}"
            );
        }
    }
}

/// The body of one rank (in a child process).
fn child() {
    let weft = weft::init().unwrap();
    let w = weft.world();
    let me = w.rank();
    match std::env::var(MODE).as_deref() {
        Ok("data") => {
            for block in [0usize, 1, 13, 4097, 1 << 20] {
                alltoall_bytes(&w, block);
            }
            // Typed elements, several calls back to back (the published addresses and the
            // phases must not mix calls up).
            for round in 0..20u32 {
                let n = w.size();
                let send: Vec<u64> = (0..n as u64 * 5)
                    .map(|i| (me as u64) << 40 | (round as u64) << 20 | i)
                    .collect();
                let mut recv = vec![0u64; send.len()];
                w.alltoall(&send, &mut recv).unwrap();
                for (i, &x) in recv.iter().enumerate() {
                    let (from, k) = (i as u64 / 5, i as u64 % 5);
                    assert_eq!(
                        x,
                        from << 40 | (round as u64) << 20 | (me as u64 * 5 + k),
                        "round {round}"
                    );
                }
            }
            // Reduce: every root, 0, 1, odd and 1 MiB of i64, and an operation that does not
            // commute (applied in rank order).
            let n = w.size();
            for count in [0usize, 1, 13, 4099, 1 << 17] {
                let send: Vec<i64> = (0..count)
                    .map(|i| (me as i64 + 1) * 1000 + i as i64 % 977)
                    .collect();
                for root in 0..n {
                    let mut out = vec![0i64; if me == root { count } else { 0 }];
                    w.reduce(&send, &mut out, &weft::coll::Op::Sum, root)
                        .unwrap();
                    for (i, &x) in out.iter().enumerate() {
                        let want: i64 =
                            (0..n as i64).map(|r| (r + 1) * 1000 + i as i64 % 977).sum();
                        assert_eq!(
                            x, want,
                            "reduce np={n} count={count} root={root} element {i}"
                        );
                    }
                }
            }
            // Reduce-scatter (equal blocks): 0, 1, odd and 1 MiB blocks of i64.
            for count in [0usize, 1, 13, 1 << 17] {
                let send: Vec<i64> = (0..count * n as usize)
                    .map(|i| (me as i64 + 1) * 7 + i as i64 % 1013)
                    .collect();
                let mut out = vec![0i64; count];
                w.reduce_scatter_block(&send, &mut out, &weft::coll::Op::Sum)
                    .unwrap();
                for (k, &x) in out.iter().enumerate() {
                    let i = me as usize * count + k;
                    let want: i64 = (0..n as i64).map(|r| (r + 1) * 7 + i as i64 % 1013).sum();
                    assert_eq!(
                        x, want,
                        "reduce_scatter_block np={n} count={count} element {k}"
                    );
                }
            }
            // Gather to every root, blocks of 0, 1, odd and 1 MiB.
            for len in [0usize, 1, 13, 1 << 20] {
                let mine: Vec<u8> = (0..len).map(|k| byte(me, 5, k)).collect();
                for root in 0..n {
                    let mut all = vec![0u8; if me == root { len * n as usize } else { 0 }];
                    w.gather(&mine, &mut all, root).unwrap();
                    for (i, &x) in all.iter().enumerate() {
                        let (from, k) = (i / len, i % len);
                        assert_eq!(
                            x,
                            byte(from as u32, 5, k),
                            "gather np={n} len={len} root={root}"
                        );
                    }
                }
            }
            // Bcast from every root, 0, 1, odd and 1 MiB.
            for len in [0usize, 1, 13, 4099, 1 << 20] {
                for root in 0..n {
                    let want: Vec<u8> = (0..len).map(|k| byte(root, 99, k)).collect();
                    let mut b = if me == root {
                        want.clone()
                    } else {
                        vec![0u8; len]
                    };
                    w.bcast(&mut b, root).unwrap();
                    assert!(b == want, "bcast np={n} len={len} root={root}");
                }
            }
            // x ↦ first then second: string-like concatenation of rank digits in a u64.
            let concat = weft::coll::Op::user::<u64>("concat", false, |a, b| {
                for (x, y) in a.iter().zip(b.iter_mut()) {
                    *y += *x * 16;
                }
            });
            let send = vec![me as u64 + 1; 20_000];
            let mut out = vec![0u64; if me == 0 { send.len() } else { 0 }];
            w.reduce(&send, &mut out, &concat, 0).unwrap();
            let want = (1..=n as u64).fold(0, |acc, d| acc * 16 + d);
            assert!(
                out.iter().all(|&x| x == want),
                "non-commutative reduce in rank order"
            );
            // A nonblocking call may overlap others in the area: forcing is refused.
            if w.size() > 1 {
                let send = vec![1u8; w.size() as usize];
                let mut recv = vec![0u8; send.len()];
                // SAFETY: the request (if any) is waited below, never leaked.
                let e = unsafe { w.ialltoall(&send, &mut recv) }.unwrap_err();
                assert!(
                    e.message().contains("shm_direct") && e.message().contains("nonblocking"),
                    "{e}"
                );
            }
            w.barrier().unwrap();
            println!("rank {me}: direct alltoall ok");
        }
        Ok("cma_off") => {
            let send = vec![me as u8; w.size() as usize];
            let mut recv = vec![0u8; send.len()];
            let e = w.alltoall(&send, &mut recv).unwrap_err();
            assert!(
                e.message().contains("shm_direct") && e.message().contains("Cross Memory Attach"),
                "{e}"
            );
            println!("rank {me}: refused: {e}");
        }
        Ok("lazy_vote") => {
            // Rank 0 starts nonblocking broadcasts (which never read peers' memory) and only
            // then sends rank 1 the message rank 1 waits for before its first collective: a
            // start that waited for every rank's CMA vote would hang here, as rank 1 votes
            // at its first collective.
            let mut small = [0u64; 1];
            let mut big = vec![0u8; 1 << 20];
            if me == 0 {
                small[0] = 42;
                big.iter_mut()
                    .enumerate()
                    .for_each(|(k, b)| *b = byte(0, 1, k));
                // SAFETY: both requests are waited below, never leaked.
                let a = unsafe { w.ibcast(&mut small, 0) }.unwrap();
                // SAFETY: as for `a`: waited below with it.
                let b = unsafe { w.ibcast(&mut big, 0) }.unwrap();
                w.send(&[7u32], 1, 7).unwrap();
                weft::coll::CollRequest::wait_all(vec![a, b]).unwrap();
            } else {
                let mut go = [0u32; 1];
                w.recv(&mut go, 0, 7).unwrap();
                assert_eq!(go[0], 7);
                // SAFETY: as above.
                let a = unsafe { w.ibcast(&mut small, 0) }.unwrap();
                // SAFETY: as for `a`: waited below with it.
                let b = unsafe { w.ibcast(&mut big, 0) }.unwrap();
                weft::coll::CollRequest::wait_all(vec![a, b]).unwrap();
                assert_eq!(small[0], 42);
                assert!(big.iter().enumerate().all(|(k, &b)| b == byte(0, 1, k)));
            }
            // A blocking call after them (a reduce at 2 ranks of 128 KiB: the k-nomial tree
            // since session 14, when the last default rule that read peers' memory went) is
            // still right.
            let send = vec![me as i64 + 1; 1 << 17];
            let mut sum = vec![0i64; 1 << 17];
            w.reduce(&send, &mut sum, &weft::coll::Op::Sum, 1).unwrap();
            if me == 1 {
                assert!(sum.iter().all(|&x| x == 3));
            }
            println!("rank {me}: lazy vote ok");
        }
        other => panic!("unknown mode {other:?}"),
    }
}

/// Runs `np` ranks of this test binary in `mode` with `vars`; every rank must succeed and
/// print `expect`.
fn run(test: &str, np: u32, mode: &str, vars: &[(&str, &str)], expect: &str) {
    let secret = b"coll-direct-test-secret";
    let server = weft_boot::TcpStoreServer::bind("127.0.0.1:0", secret).unwrap();
    let exe = std::env::current_exe().unwrap();
    let job = format!("direct{}-{np}-{mode}", std::process::id());
    let children: Vec<_> = (0..np)
        .map(|rank| {
            let mut c = Command::new(&exe);
            c.args(["--exact", test, "--nocapture"])
                .env(CHILD, "1")
                .env(MODE, mode)
                .env("WEFT_BOOT_ADDR", server.local_addr().to_string())
                .env("WEFT_JOB_SECRET", weft_boot::auth::encode_hex(secret))
                .env("WEFT_RANK", rank.to_string())
                .env("WEFT_SIZE", np.to_string())
                .env("WEFT_JOB_ID", &job)
                .env("WEFT_NODE_ID", "node0")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            // One rank has no peer to read from: the algorithm (like every one that uses the
            // node's area) needs two, so the single rank runs the default.
            if np > 1 && mode != "lazy_vote" {
                c.env("WEFT_ALLTOALL_ALGO", "shm_direct");
                c.env("WEFT_REDUCE_ALGO", "shm_direct");
                c.env("WEFT_BCAST_ALGO", "shm_direct");
                c.env("WEFT_GATHER_ALGO", "shm_direct");
                c.env("WEFT_REDUCE_SCATTER_BLOCK_ALGO", "shm_direct");
            }
            for (k, v) in vars {
                c.env(k, v);
            }
            c.spawn().unwrap()
        })
        .collect();
    // A hang catcher: lock-step ranks take minutes beside busy processes.
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut failures = Vec::new();
    for (rank, mut c) in children.into_iter().enumerate() {
        loop {
            if c.try_wait().unwrap().is_some() {
                let out = c.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                if !out.status.success() || !text.contains(expect) {
                    failures.push(format!(
                        "np={np} {mode} rank {rank}: {}{}",
                        text,
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
                break;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let out = c.wait_with_output().unwrap();
                failures.push(format!(
                    "np={np} {mode} rank {rank} hung: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn direct_alltoall_across_processes() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    for np in [1, 2, 3, 4, 7] {
        run(
            "direct_alltoall_across_processes",
            np,
            "data",
            &[],
            "direct alltoall ok",
        );
    }
}

#[test]
fn forcing_direct_alltoall_without_cma_names_the_restriction() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    run(
        "forcing_direct_alltoall_without_cma_names_the_restriction",
        3,
        "cma_off",
        &[("WEFT_SHM_CMA", "off")],
        "refused",
    );
}

#[test]
fn a_call_that_needs_no_cma_does_not_wait_for_the_votes() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    run(
        "a_call_that_needs_no_cma_does_not_wait_for_the_votes",
        2,
        "lazy_vote",
        &[],
        "lazy vote ok",
    );
}
