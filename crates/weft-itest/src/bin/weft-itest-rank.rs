//! The rank program of weft's multi-process tests: `weft-itest-rank SCENARIO [ARGS]`.
//!
//! Each scenario checks its own results and exits non-zero (printing why) on any mismatch,
//! so the test that launched it only needs the job's exit code and output.

use weft::{Comm, ErrorKind, ANY_SOURCE, ANY_TAG};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scenario = args.first().cloned().unwrap_or_default();
    let weft = match weft::init() {
        Ok(w) => w,
        Err(e) => {
            weft_core::diag!("init failed: {e}");
            std::process::exit(3);
        }
    };
    let world = weft.world();
    let result = match scenario.as_str() {
        "exchange" => exchange(&world, &args[1..]),
        "wildcards" => wildcards(&world),
        "split" => split(&world),
        "die-mid-exchange" => die_mid_exchange(&world),
        "dead-peer-error" => dead_peer_error(&world),
        "collectives" => collectives(&world),
        "rails" => exchange(&world, &[]).map(|()| {
            println!(
                "rank {} striped {}",
                world.rank(),
                weft.tcp_striped_fragments()
            )
        }),
        "multi-rail" => multi_rail(&world).map(|()| {
            println!(
                "rank {} multi-rail ok striped {}",
                world.rank(),
                weft.tcp_striped_fragments()
            )
        }),
        "transport" => {
            println!(
                "rank {} network {}",
                world.rank(),
                weft.network_transport().unwrap_or("none")
            );
            Ok(())
        }
        "traffic" => traffic(&world, &args[1..]),
        "info" => {
            let (lr, ls) = weft.local();
            let cpus = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .map(|v| v.trim().to_owned())
                })
                .unwrap_or_default();
            println!(
                "rank {} of {} local {lr} of {ls} yield {} compete {} cpus {cpus}",
                world.rank(),
                world.size(),
                weft.yields_when_idle(),
                weft.pinned_beside_others()
            );
            Ok(())
        }
        other => Err(format!("unknown scenario {other:?}")),
    };
    if let Err(msg) = result {
        if scenario == "traffic" {
            // As an MPI program's fatal handler does: the launcher then knows this rank's
            // end is a consequence (of a dead peer), not the job's first cause.
            weft.abort(1, &format!("rank {}: FAILED: {msg}", world.rank()));
        }
        weft_core::diag!("rank {}: FAILED: {msg}", world.rank());
        std::process::exit(1);
    }
    if scenario != "dead-peer-error" {
        if let Err(e) = weft.finalize() {
            weft_core::diag!("rank {}: finalize: {e}", world.rank());
            std::process::exit(1);
        }
    }
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Sizes around every protocol boundary, plus random ones from a seed all ranks share.
fn sizes(eager: usize) -> Vec<usize> {
    let mut v = vec![
        0,
        1,
        3,
        31,
        32,
        33,
        64,
        1001,
        eager - 1,
        eager,
        eager + 1,
        65_537,
        1 << 20,
        (4 << 20) + 13,
    ];
    let mut x = 12345u64;
    for _ in 0..6 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.push((x >> 33) as usize % (3 << 20));
    }
    v
}

/// Every rank sends every size to every other rank (nonblocking), data checked byte for byte.
fn exchange(world: &Comm, args: &[String]) -> Result<(), String> {
    let eager: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(16384);
    let me = world.rank();
    let n = world.size();
    for (i, len) in sizes(eager).into_iter().enumerate() {
        let tag = i as i32;
        let outs: Vec<Vec<u8>> = (0..n)
            .map(|p| pattern(len, (me * 1000 + p) as u64 + i as u64))
            .collect();
        let mut ins: Vec<Vec<u8>> = (0..n).map(|_| vec![0u8; len]).collect();
        world
            .scope(|s| -> weft::Result<()> {
                let mut reqs = Vec::new();
                for (p, b) in ins.iter_mut().enumerate() {
                    reqs.push(world.irecv(s, b, p as i32, tag)?);
                }
                for (p, b) in outs.iter().enumerate() {
                    reqs.push(world.isend(s, b, p as u32, tag)?);
                }
                s.wait_all(reqs)?;
                Ok(())
            })
            .map_err(|e| e.to_string())?;
        for (p, b) in ins.iter().enumerate() {
            if *b != pattern(len, (p as u32 * 1000 + me) as u64 + i as u64) {
                return Err(format!("data from rank {p} of {len} bytes differs"));
            }
        }
    }
    println!("rank {me}: exchange ok");
    Ok(())
}

/// Everyone sends to rank 0 with mixed tags; rank 0 receives with wildcards and checks
/// per-sender order.
fn wildcards(world: &Comm) -> Result<(), String> {
    let me = world.rank();
    let n = world.size();
    const PER: u32 = 40;
    if me == 0 {
        let mut next = vec![0u32; n as usize];
        let mut buf = vec![0u32; 30_000];
        for _ in 0..PER * (n - 1) {
            let st = world
                .recv(&mut buf, ANY_SOURCE, ANY_TAG)
                .map_err(|e| e.to_string())?;
            let src = st.source as usize;
            if buf[0] != src as u32 || buf[1] != next[src] || st.tag != (buf[1] % 4) as i32 {
                return Err(format!(
                    "message {:?} from {src} out of order (expected {})",
                    &buf[..2],
                    next[src]
                ));
            }
            next[src] += 1;
        }
    } else {
        for i in 0..PER {
            let len = if i % 5 == 2 {
                30_000
            } else {
                2 + i as usize % 3
            };
            let mut v = vec![0u32; len];
            v[0] = me;
            v[1] = i;
            world
                .send(&v, 0, (i % 4) as i32)
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn split(world: &Comm) -> Result<(), String> {
    let me = world.rank();
    let sub = world
        .split((me % 2) as i32, me as i32)
        .map_err(|e| e.to_string())?
        .ok_or("no comm")?;
    let mut sum = [0u64];
    // A ring over the sub-communicator accumulating world ranks.
    let mut acc = me as u64;
    for _ in 1..sub.size() {
        let right = (sub.rank() + 1) % sub.size();
        let left = (sub.rank() + sub.size() - 1) % sub.size();
        sub.sendrecv(&[acc], right, 0, &mut sum, left as i32, 0)
            .map_err(|e| e.to_string())?;
        acc = sum[0] + me as u64;
    }
    let expected: u64 = (0..world.size())
        .filter(|r| r % 2 == me % 2)
        .map(u64::from)
        .sum();
    if sub.size() > 1 && acc != expected {
        return Err(format!("ring sum {acc}, expected {expected}"));
    }
    Ok(())
}

/// Rank 1 kills itself (SIGKILL) in the middle of a stream of messages; the others keep
/// exchanging until the launcher ends the job.
fn die_mid_exchange(world: &Comm) -> Result<(), String> {
    let me = world.rank();
    let n = world.size();
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let big = vec![1u8; 200_000];
    let mut inp = vec![0u8; 200_000];
    for i in 0.. {
        if me == 1 && i == 50 {
            // SAFETY: raising a signal on ourselves has no memory-safety implications.
            unsafe { libc::raise(libc::SIGKILL) };
        }
        let _ = world.sendrecv(&big, right, 0, &mut inp, left as i32, 0);
    }
    Ok(())
}

fn val(rank: u32, i: usize) -> i64 {
    (rank as i64 + 1) * 1_000_003 + i as i64 * 7
}

/// Every collective at several sizes (elements of i64), checked against a serial reference.
fn collectives(world: &Comm) -> Result<(), String> {
    use weft::coll::Op;
    let me = world.rank();
    let n = world.size();
    let nu = n as usize;
    let e = |x: weft::Error| x.to_string();
    for count in [0usize, 1, 7, 4097, 150_001] {
        let mine: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
        world.barrier().map_err(e)?;

        let root = n - 1;
        let mut b: Vec<i64> = if me == root {
            mine.clone()
        } else {
            vec![0; count]
        };
        world.bcast(&mut b, root).map_err(e)?;
        if b.iter().enumerate().any(|(i, &x)| x != val(root, i)) {
            return Err(format!("bcast of {count} from {root} differs"));
        }

        let sum = |i: usize| (0..n).map(|r| val(r, i)).sum::<i64>();
        let mut out = vec![0i64; count];
        world.allreduce(&mine, &mut out, &Op::Sum).map_err(e)?;
        if out.iter().enumerate().any(|(i, &x)| x != sum(i)) {
            return Err(format!("allreduce sum of {count} differs"));
        }
        world.allreduce(&mine, &mut out, &Op::Max).map_err(e)?;
        if out.iter().enumerate().any(|(i, &x)| x != val(n - 1, i)) {
            return Err(format!("allreduce max of {count} differs"));
        }
        let mut red = vec![0i64; count];
        world.reduce(&mine, &mut red, &Op::Sum, 0).map_err(e)?;
        if me == 0 && red.iter().enumerate().any(|(i, &x)| x != sum(i)) {
            return Err(format!("reduce of {count} differs"));
        }

        let groot = 1 % n;
        let mut g = vec![0i64; count * nu];
        world.gather(&mine, &mut g, groot).map_err(e)?;
        if me == groot {
            for r in 0..n {
                if (0..count).any(|i| g[r as usize * count + i] != val(r, i)) {
                    return Err(format!("gather of {count}: block of rank {r} differs"));
                }
            }
        }
        let all: Vec<i64> = (0..n)
            .flat_map(|r| (0..count).map(move |i| val(r, i)))
            .collect();
        let mut ag = vec![0i64; count * nu];
        world.allgather(&mine, &mut ag).map_err(e)?;
        if ag != all {
            return Err(format!("allgather of {count} differs"));
        }
        let mut sc = vec![0i64; count];
        world.scatter(&all, &mut sc, 0).map_err(e)?;
        if sc.iter().enumerate().any(|(i, &x)| x != val(me, i)) {
            return Err(format!("scatter of {count} differs"));
        }
        // alltoall: block j of rank r's send is val(r * n + j, i).
        let a2a_send: Vec<i64> = (0..n)
            .flat_map(|j| (0..count).map(move |i| val(me * n + j, i)))
            .collect();
        let mut a2a = vec![0i64; count * nu];
        world.alltoall(&a2a_send, &mut a2a).map_err(e)?;
        for r in 0..n {
            if (0..count).any(|i| a2a[r as usize * count + i] != val(r * n + me, i)) {
                return Err(format!("alltoall of {count}: block from rank {r} differs"));
            }
        }
        // reduce_scatter_block: everyone contributes `a2a_send`; rank me gets block me summed.
        let mut rs = vec![0i64; count];
        world
            .reduce_scatter_block(&a2a_send, &mut rs, &Op::Sum)
            .map_err(e)?;
        if rs
            .iter()
            .enumerate()
            .any(|(i, &x)| x != (0..n).map(|r| val(r * n + me, i)).sum::<i64>())
        {
            return Err(format!("reduce_scatter_block of {count} differs"));
        }
        let mut sc_out = vec![0i64; count];
        world.scan(&mine, &mut sc_out, &Op::Sum).map_err(e)?;
        if sc_out
            .iter()
            .enumerate()
            .any(|(i, &x)| x != (0..=me).map(|r| val(r, i)).sum::<i64>())
        {
            return Err(format!("scan of {count} differs"));
        }
        world.exscan(&mine, &mut sc_out, &Op::Sum).map_err(e)?;
        if me > 0
            && sc_out
                .iter()
                .enumerate()
                .any(|(i, &x)| x != (0..me).map(|r| val(r, i)).sum::<i64>())
        {
            return Err(format!("exscan of {count} differs"));
        }
    }
    println!("rank {me}: collectives ok");
    Ok(())
}

/// Rank 1 exits cleanly at once without sending; rank 0's receive from it must fail with a
/// peer-died error naming rank 1 (not hang).
fn dead_peer_error(world: &Comm) -> Result<(), String> {
    match world.rank() {
        0 => {
            let mut b = [0u8; 8];
            match world.recv(&mut b, 1, 0) {
                Err(e) if e.kind() == ErrorKind::PeerDead && e.message().contains("rank 1") => {
                    println!("rank 0 got: {e}");
                    Ok(())
                }
                other => Err(format!("expected a peer-died error, got {other:?}")),
            }
        }
        _ => std::process::exit(0),
    }
}

/// Mixed traffic for the fault campaign: `traffic SECONDS [exit RANK CODE AFTER_MS | segv
/// RANK AFTER_MS]`. Every
/// round is a ring exchange of a size that walks across the eager, rendezvous and pipelined
/// protocols, an allreduce, a bcast and an alltoall, checked; it goes on for `SECONDS` (the
/// campaign usually kills something first). With `exit`, rank `RANK` calls `exit(CODE)`
/// without finalizing once `AFTER_MS` have passed; with `segv` it writes through a null
/// pointer (a real segmentation fault, as a crashing program has). It prints `traffic running` once the
/// first round is done, so the campaign injects its fault into a job that moves data.
fn traffic(world: &Comm, args: &[String]) -> Result<(), String> {
    use std::time::{Duration, Instant};
    use weft::coll::Op;
    let num = |i: usize, d: u64| -> u64 { args.get(i).and_then(|v| v.parse().ok()).unwrap_or(d) };
    let limit = Duration::from_secs(num(0, 30));
    let exit = (args.get(1).map(String::as_str) == Some("exit")).then(|| {
        (
            num(2, 0) as u32,
            num(3, 1) as i32,
            Duration::from_millis(num(4, 100)),
        )
    });
    let segv = (args.get(1).map(String::as_str) == Some("segv"))
        .then(|| (num(2, 0) as u32, Duration::from_millis(num(3, 100))));
    let (me, n) = (world.rank(), world.size());
    let e = |x: weft::Error| x.to_string();
    let start = Instant::now();
    let sizes = [0usize, 8, 1000, 4096, 70_000, 300_000, 1 << 20];
    let mut round = 0usize;
    while start.elapsed() < limit {
        if let Some((rank, code, after)) = exit {
            if me == rank && start.elapsed() >= after {
                std::process::exit(code);
            }
        }
        if let Some((rank, after)) = segv {
            if me == rank && start.elapsed() >= after {
                crash();
            }
        }
        let len = sizes[round % sizes.len()];
        let send = pattern(len, (me as u64) << 32 | round as u64);
        let mut recv = vec![0u8; len];
        let (right, left) = ((me + 1) % n, (me + n - 1) % n);
        world
            .sendrecv(&send, right, 5, &mut recv, left as i32, 5)
            .map_err(e)?;
        if recv != pattern(len, (left as u64) << 32 | round as u64) {
            return Err(format!("round {round}: ring data from {left} differs"));
        }
        let mine = [me as u64 + round as u64; 128];
        let mut sum = [0u64; 128];
        world.allreduce(&mine, &mut sum, &Op::Sum).map_err(e)?;
        let want = (0..n as u64).sum::<u64>() + n as u64 * round as u64;
        if sum.iter().any(|&x| x != want) {
            return Err(format!("round {round}: allreduce differs"));
        }
        let mut b = vec![round as u32; 16 << 10];
        world
            .bcast(&mut b, (round % n as usize) as u32)
            .map_err(e)?;
        let out: Vec<u32> = (0..n).map(|r| me * 1000 + r).collect();
        let mut back = vec![0u32; n as usize];
        world.alltoall(&out, &mut back).map_err(e)?;
        if back
            .iter()
            .enumerate()
            .any(|(r, &x)| x != r as u32 * 1000 + me)
        {
            return Err(format!("round {round}: alltoall differs"));
        }
        if round == 0 {
            println!("traffic running rank {me} pid {}", std::process::id());
        }
        round += 1;
    }
    println!("traffic done rank {me} after {round} rounds");
    Ok(())
}

/// Dies of a real segmentation fault (not a signal sent from outside, which Rust's own
/// SIGSEGV handler would survive).
fn crash() -> ! {
    // SAFETY: deliberately not: a write through a null pointer, so the kernel sends SIGSEGV
    // for a fault at address 0 (volatile, so it is not optimised away).
    unsafe { std::ptr::write_volatile(std::ptr::null_mut::<u8>(), 1) };
    unreachable!("the write through a null pointer did not fault")
}

/// Allreduce of several element types and operations at sizes from zero elements, fewer
/// than there are rails, odd counts to a few MiB, each checked element by element against
/// a serial reference (the job forces the algorithm under test with
/// `WEFT_ALLREDUCE_ALGO`).
fn multi_rail(world: &Comm) -> Result<(), String> {
    use weft::coll::{Op, F64I32};
    let me = world.rank();
    let n = world.size();
    let e = |x: weft::Error| x.to_string();
    for count in [0usize, 1, 2, 3, 7, 1001, 65_537, 300_001] {
        let sum = |i: usize| (0..n).map(|r| val(r, i)).sum::<i64>();
        let mine: Vec<i64> = (0..count).map(|i| val(me, i)).collect();
        let mut out = vec![0i64; count];
        world.allreduce(&mine, &mut out, &Op::Sum).map_err(e)?;
        if let Some(i) = (0..count).find(|&i| out[i] != sum(i)) {
            return Err(format!("i64 sum of {count}: element {i} differs"));
        }
        // Small integers: every order of the additions gives the exact sum.
        let fval = |r: u32, i: usize| ((r as usize * 31 + i) % 1000) as f64 - 500.0;
        let mine: Vec<f64> = (0..count).map(|i| fval(me, i)).collect();
        let mut out = vec![0f64; count];
        world.allreduce(&mine, &mut out, &Op::Sum).map_err(e)?;
        if let Some(i) = (0..count).find(|&i| out[i] != (0..n).map(|r| fval(r, i)).sum::<f64>()) {
            return Err(format!("f64 sum of {count}: element {i} differs"));
        }
        let bval = |r: u32, i: usize| (r as usize * 97 + i * 13) as u8;
        let mine: Vec<u8> = (0..count).map(|i| bval(me, i)).collect();
        let mut out = vec![0u8; count];
        world.allreduce(&mine, &mut out, &Op::Sum).map_err(e)?;
        let wrapped = |i: usize| (0..n).fold(0u8, |a, r| a.wrapping_add(bval(r, i)));
        if let Some(i) = (0..count).find(|&i| out[i] != wrapped(i)) {
            return Err(format!("u8 sum of {count}: element {i} differs"));
        }
        let ival = |r: u32, i: usize| ((r as i64 * 7919 + i as i64 * 104_729) % 65_521) as i32;
        let mine: Vec<i32> = (0..count).map(|i| ival(me, i)).collect();
        let mut out = vec![0i32; count];
        world.allreduce(&mine, &mut out, &Op::Max).map_err(e)?;
        if let Some(i) = (0..count).find(|&i| out[i] != (0..n).map(|r| ival(r, i)).max().unwrap()) {
            return Err(format!("i32 max of {count}: element {i} differs"));
        }
        // MPI_DOUBLE_INT with MPI_MAXLOC: ties (every other element) go to the lowest rank.
        let lval = |r: u32, i: usize| if i.is_multiple_of(2) { 1.0 } else { fval(r, i) };
        let mine: Vec<F64I32> = (0..count)
            .map(|i| F64I32::new(lval(me, i), me as i32))
            .collect();
        let mut out = vec![F64I32::default(); count];
        world.allreduce(&mine, &mut out, &Op::MaxLoc).map_err(e)?;
        for (i, got) in out.iter().enumerate() {
            let best = (0..n).fold(None::<(f64, u32)>, |b, r| match b {
                Some((v, _)) if v >= lval(r, i) => b,
                _ => Some((lval(r, i), r)),
            });
            let (v, r) = best.expect("ranks");
            if got.value != v || got.index != r as i32 {
                return Err(format!(
                    "maxloc of {count}: element {i} is {got:?}, not ({v}, {r})"
                ));
            }
        }
    }
    Ok(())
}
