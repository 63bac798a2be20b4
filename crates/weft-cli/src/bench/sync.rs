//! `weft bench sync`: the node synchronisation engine's barrier and reduce (`weft::sync`)
//! against a software tournament barrier/reduce over shared memory (flags and values in
//! the symmetric heaps, each PE waiting on its own words), and weft's communicator barrier
//! for reference, at each of several process counts (one job per count).
//!
//! The tournament spins, then yields the CPU; the engine follows its wait policy (spin while
//! every rank has a core, yield, then sleep on a futex). Without yielding or sleeping an
//! oversubscribed node would starve the process being waited for.
//! Depends on the runtime and the launcher.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Instant;
use weft::rma::SymmetricHeap;
use weft::sync::{SyncEngine, SyncOp};
use weft::{Error, ErrorKind, Result};
use weft_launch::HostsSpec;

/// Arguments of `weft bench sync`.
#[derive(clap::Args, Clone)]
pub(crate) struct SyncArgs {
    /// Process counts, one job each, e.g. `2,4,8` (default 2,4,8, or one per slot of --hosts).
    #[arg(short = 'n', long = "np")]
    pub nranks: Option<String>,
    /// Timed operations per measurement.
    #[arg(long, default_value_t = 20_000)]
    pub iters: u32,
    /// Measurements of each kind, interleaved (engine, tournament, ... again); the median
    /// is printed, so one slow run of a noisy machine does not decide the comparison.
    #[arg(long, default_value_t = 3)]
    pub reps: u32,
    /// End each job if it runs longer than this many seconds.
    #[arg(long = "timeout", default_value_t = 600)]
    pub timeout_s: u64,
}

fn parse_counts(text: &str) -> std::result::Result<Vec<u32>, String> {
    let v: Vec<u32> = text
        .split(',')
        .map(|s| s.trim().parse::<u32>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| format!("-n {text}: expected a list like 2,4,8"))?;
    if v.is_empty() || v.iter().any(|&n| !(1..=1024).contains(&n)) {
        return Err(format!("-n {text}: each count must be 1..=1024"));
    }
    Ok(v)
}

/// Runs `weft bench sync`: one job per process count; rank 0 of each prints one line.
pub(crate) fn run(a: SyncArgs, on: Option<&HostsSpec>) -> i32 {
    let text = match (&a.nranks, on) {
        (Some(t), _) => t.clone(),
        (None, Some(h)) => weft_launch::place::total_slots(&h.hosts).to_string(),
        (None, None) => "2,4,8".to_owned(),
    };
    let counts = match parse_counts(&text) {
        Ok(c) if a.iters > 0 && (1..=101).contains(&a.reps) => c,
        Ok(_) => {
            eprintln!(
                "weft bench sync: --iters {} --reps {}: need at least one iteration and 1..=101 repetitions",
                a.iters, a.reps
            );
            return 2;
        }
        Err(e) => {
            eprintln!("weft bench sync: {e}");
            return 2;
        }
    };
    println!(
        "# weft bench sync, {} operations each, microseconds per operation (median of {} interleaved runs); speedup = tournament / engine\n{:>6} {:>14} {:>14} {:>14} {:>14} {:>14} {:>15} {:>14}",
        a.iters, a.reps, "procs", "engine_barrier", "tourn_barrier", "engine_reduce", "tourn_reduce", "comm_barrier", "barrier_speedup", "reduce_speedup"
    );
    let progress = crate::progress::Progress::new("bench sync", counts.len() as u64, false);
    for n in counts {
        progress.start(&format!("{n} processes"));
        let args = vec![
            "sync".to_string(),
            "--iters".into(),
            a.iters.to_string(),
            "--reps".into(),
            a.reps.to_string(),
        ];
        let (code, out) = super::launch_capture(n, args, a.timeout_s, &[], on);
        for line in String::from_utf8_lossy(&out).lines() {
            progress.println(line);
        }
        if code != 0 {
            eprintln!("weft bench sync: job of {n} processes failed (exit {code})");
            return code;
        }
        progress.done();
    }
    0
}

/// Rank-side arguments.
#[derive(clap::Args)]
pub(crate) struct SyncRankArgs {
    #[arg(long)]
    iters: u32,
    #[arg(long, default_value_t = 1)]
    reps: u32,
}

/// Words of the tournament in each PE's heap: per round an arrival flag and a value, then the
/// release flag and the result.
const ROUNDS: u64 = 32;

struct Tournament<'a> {
    heap: &'a SymmetricHeap,
    base: u64,
    me: u32,
    n: u32,
    epoch: u64,
}

impl Tournament<'_> {
    fn word(&self, pe: u32, index: u64) -> Result<&std::sync::atomic::AtomicU64> {
        self.heap.atomic_u64(pe, self.base + index * 8)
    }

    fn wait(&self, index: u64, epoch: u64) -> Result<()> {
        let w = self.word(self.me, index)?;
        let mut spins = 0u32;
        while w.load(SeqCst) < epoch {
            spins += 1;
            if spins < 4000 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        Ok(())
    }

    /// One tournament round trip: winners of each pairing wait for the loser's arrival (and
    /// combine its value), the champion releases the tree top-down with the result.
    fn run(&mut self, value: i64) -> Result<i64> {
        self.epoch += 1;
        let epoch = self.epoch;
        let (me, n) = (self.me, self.n);
        let mut acc = value;
        let mut round = 0u64;
        let mut lost = false;
        while (1u64 << round) < n as u64 {
            let step = 1u32 << round;
            if me % (2 * step) == 0 {
                if me + step < n {
                    self.wait(round * 2, epoch)?;
                    acc = acc.wrapping_add(self.word(me, round * 2 + 1)?.load(SeqCst) as i64);
                }
                round += 1;
            } else {
                let winner = me - step;
                self.word(winner, round * 2 + 1)?.store(acc as u64, SeqCst);
                self.word(winner, round * 2)?.store(epoch, SeqCst);
                lost = true;
                break;
            }
        }
        let result = if lost {
            self.wait(ROUNDS * 2, epoch)?;
            self.word(me, ROUNDS * 2 + 1)?.load(SeqCst) as i64
        } else {
            acc
        };
        for r in (0..round).rev() {
            let child = me + (1u32 << r);
            if child < n {
                self.word(child, ROUNDS * 2 + 1)?
                    .store(result as u64, SeqCst);
                self.word(child, ROUNDS * 2)?.store(epoch, SeqCst);
            }
        }
        Ok(result)
    }
}

/// The rank side: all measurements, rank 0 prints one line.
pub(crate) fn rank_main(a: SyncRankArgs) -> Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    let heap = SymmetricHeap::new(&weft)?;
    let engine = SyncEngine::new(&weft, "bench")?;
    let (me, n) = (heap.pe(), heap.npes());
    if (0..n).any(|pe| !heap.accessible(pe)) {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "weft bench sync: every process must be on one node (the engine is node-wide)",
        ));
    }
    let iters = a.iters;
    let base = heap.malloc(8 * (ROUNDS as usize * 2 + 2))? as u64 + heap.base() as u64;
    let mut t = Tournament {
        heap: &heap,
        base,
        me,
        n,
        epoch: 0,
    };
    let expected = n as i64 * (n as i64 - 1) / 2;
    let time = |f: &mut dyn FnMut() -> Result<()>| -> Result<f64> {
        for _ in 0..iters / 10 {
            f()?;
        }
        engine.barrier(1, n)?;
        let start = Instant::now();
        for _ in 0..iters {
            f()?;
        }
        Ok(start.elapsed().as_secs_f64() * 1e6 / iters as f64)
    };
    // Columns: engine barrier, tournament barrier, engine reduce, tournament reduce,
    // communicator barrier; each repetition measures all five in turn.
    let mut samples: [Vec<f64>; 5] = Default::default();
    for _ in 0..a.reps.max(1) {
        samples[0].push(time(&mut || engine.barrier(2, n))?);
        samples[1].push(time(&mut || t.run(0).map(drop))?);
        samples[2].push(time(&mut || {
            let s: i64 = engine.reduce(3, me as i64, SyncOp::Sum, n)?;
            check(s, expected)
        })?);
        samples[3].push(time(&mut || check(t.run(me as i64)?, expected))?);
        samples[4].push(time(&mut || world.barrier())?);
    }
    let [eb, tb, er, tr, cb] = samples.map(median);
    if me == 0 {
        println!(
            "{n:>6} {eb:>14.3} {tb:>14.3} {er:>14.3} {tr:>14.3} {cb:>14.3} {:>15.2} {:>14.2}",
            tb / eb,
            tr / er
        );
    }
    drop(world);
    weft.finalize()
}

/// The middle value (the upper middle of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn check(got: i64, expected: i64) -> Result<()> {
    if got != expected {
        return Err(Error::new(
            ErrorKind::Internal,
            format!("weft bench sync: reduce gave {got}, expected {expected}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn count_lists() {
        assert_eq!(parse_counts("2,4,8").unwrap(), vec![2, 4, 8]);
        assert!(parse_counts("0").is_err());
        assert!(parse_counts("x").is_err());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![5.0]), 5.0);
    }
}
