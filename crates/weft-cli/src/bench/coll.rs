//! `weft bench coll`: OSU-style latency of one collective over a range of sizes.
//!
//! Per size: a barrier, warm-up iterations, then timed iterations, each followed by an
//! untimed barrier as the OSU benchmarks do (so a call's time is its latency: without it a
//! root that returns after eager sends starts the next call while the others still finish
//! the last, and consecutive calls overlap; `--pipelined` measures that way); each rank
//! records its per-iteration times. The statistics are OSU 7.4's: `p50_us` is the median over
//! timed calls of the mean over ranks of the call's time (OSU sums each iteration's times over
//! ranks with MPI_Reduce and takes percentiles of the sums / P), and `avg_us` the mean over
//! ranks of each rank's mean. The stricter `max_p50_us` (the maximum over ranks of each
//! rank's median: the slowest rank's typical call) is reported beside them. Sizes are bytes
//! per rank: the whole vector for bcast/reduce/allreduce/scan/reduce_scatter, one block for
//! gather/scatter/allgather/alltoall. Reductions use f32 sum, as the OSU benchmarks do.

use super::{median, parse_sizes};
use std::io::IsTerminal;
use weft::coll::Op;
use weft::{Comm, Error, ErrorKind, Result};

const TAG_REPORT: i32 = 11;

/// The collectives the benchmark knows.
pub(crate) const OPS: &[&str] = &[
    "barrier",
    "bcast",
    "reduce",
    "allreduce",
    "gather",
    "scatter",
    "allgather",
    "alltoall",
    "reduce_scatter",
    "scan",
];

/// Arguments of `weft bench coll`.
#[derive(clap::Args, Clone)]
pub(crate) struct CollArgs {
    /// The collective: barrier, bcast, reduce, allreduce, gather, scatter, allgather,
    /// alltoall, reduce_scatter, scan.
    #[arg(long)]
    pub op: String,
    /// Number of ranks (default 2, or one per slot of --hosts).
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: Option<u32>,
    /// The rank count decided from `-n` and the hosts (set by `weft bench`).
    #[arg(skip)]
    pub nranks: u32,
    /// Sizes in bytes per rank, e.g. `8,64K,1M,4M` (default: 4 B to 1 MiB in powers of 4).
    #[arg(long)]
    pub sizes: Option<String>,
    /// Force an algorithm (as `WEFT_<OP>_ALGO` would), or `all` to run every one in turn.
    #[arg(long)]
    pub algo: Option<String>,
    /// Timed iterations per size (default: 1000 below 64 KiB, 100 above).
    #[arg(long)]
    pub iters: Option<u32>,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// No barrier between timed calls (consecutive calls may overlap; sessions 1-3 measured
    /// this way).
    #[arg(long)]
    pub pipelined: bool,
    /// Also write the results as CSV to this file.
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// Also draw latency against size as a PNG (one line per algorithm).
    #[arg(long)]
    pub plot: Option<std::path::PathBuf>,
    /// End the benchmark if one job runs longer than this many seconds.
    #[arg(long = "timeout", default_value_t = 600)]
    pub timeout_s: u64,
}

/// One measured point, as printed with `--json`.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) struct Point {
    pub op: String,
    pub bytes: u64,
    pub algo: String,
    /// OSU's P50: the median over calls of the mean over ranks of the call's time.
    pub p50_us: f64,
    /// OSU's average: the mean over ranks (and calls) of the time in the call.
    pub avg_us: f64,
    /// The maximum over ranks of each rank's median time (0 in results of older versions).
    #[serde(default)]
    pub max_p50_us: f64,
}

impl CollArgs {
    pub(super) fn validate(&self) -> std::result::Result<(), String> {
        if !OPS.contains(&self.op.as_str()) {
            return Err(format!(
                "--op {}: expected one of {}",
                self.op,
                OPS.join(", ")
            ));
        }
        if self.nranks == 0 {
            return Err("-n 0: need at least one rank".into());
        }
        if let Some(s) = &self.sizes {
            parse_sizes(s)?;
        }
        if self.iters == Some(0) {
            return Err("--iters 0: need at least one iteration".into());
        }
        Ok(())
    }

    /// The algorithms to run: the forced one, every registered one, or the selector's choice.
    pub(super) fn algorithms(&self) -> std::result::Result<Vec<Option<String>>, String> {
        match self.algo.as_deref() {
            None => Ok(vec![None]),
            Some("all") => {
                use weft::coll::select::{algorithms, Coll, Restriction};
                let coll = Coll::from_name(coll_name(&self.op)).map_err(|e| e.to_string())?;
                let n = self.nranks;
                let mut out = Vec::new();
                for a in algorithms(coll) {
                    // The benchmark reduces f32 with sum (commutative) in blocking calls on
                    // the world of one node, so only the rank-count restrictions can rule an
                    // algorithm out.
                    let skip = a.restrictions.iter().find(|r| match r {
                        Restriction::PowerOfTwo => !n.is_power_of_two(),
                        Restriction::SharedMemory => n < 2,
                        // CMA is the node's verdict at run time, the rails the network's
                        // (with --hosts): the run reports a refusal.
                        Restriction::Commutative
                        | Restriction::Blocking
                        | Restriction::CrossMemoryAttach
                        | Restriction::Rails => false,
                    });
                    match skip {
                        Some(r) => {
                            eprintln!("weft bench coll: skipping {} at {n} ranks: {r}", a.name)
                        }
                        None => out.push(Some(a.name.to_string())),
                    }
                }
                Ok(out)
            }
            Some(a) => Ok(vec![Some(a.to_string())]),
        }
    }

    pub(super) fn rank_args(&self, json_lines: bool) -> Vec<String> {
        let mut v = vec!["coll".to_string(), "--op".into(), self.op.clone()];
        if let Some(s) = &self.sizes {
            v.extend(["--sizes".into(), s.clone()]);
        }
        if let Some(i) = self.iters {
            v.extend(["--iters".into(), i.to_string()]);
        }
        if json_lines {
            v.push("--json".into());
        }
        if self.pipelined {
            v.push("--pipelined".into());
        }
        v
    }
}

/// The selector's name for a benchmark op (`reduce_scatter` is measured as the block form).
pub(crate) fn coll_name(op: &str) -> &str {
    match op {
        "reduce_scatter" => "reduce_scatter_block",
        other => other,
    }
}

/// The size the selector decides a benchmark call by: the bytes per rank, except for
/// reduce_scatter, whose calls (the block form) are chosen by each rank's share of the
/// vector, as [`measure`] sizes it. (The label had shown the choice for the whole vector:
/// np=5, 128 KiB said shm_direct while the call ran the area.)
pub(crate) fn selected_bytes(op: &str, bytes: usize, n: usize) -> u64 {
    match op {
        "reduce_scatter" => ((bytes / 4).max(1).max(n) / n * 4) as u64,
        _ => bytes as u64,
    }
}

/// Rank-side arguments.
#[derive(clap::Args)]
pub(crate) struct CollRankArgs {
    #[arg(long)]
    op: String,
    #[arg(long)]
    sizes: Option<String>,
    #[arg(long)]
    iters: Option<u32>,
    #[arg(long)]
    json: bool,
    #[arg(long)]
    pipelined: bool,
}

pub(super) fn rank_main(a: CollRankArgs) -> Result<()> {
    let weft = weft::init()?;
    let world = weft.world();
    let sizes = match &a.sizes {
        Some(s) => parse_sizes(s).map_err(|e| Error::new(ErrorKind::InvalidArgument, e))?,
        None => (1..=10).map(|i| 1usize << (2 * i)).collect(),
    };
    let (ppn, rails) = (weft.local().1, weft.network_rails());
    let algo = weft::coll::explain(coll_name(&a.op), 8, world.size(), ppn, rails)?;
    let me = world.rank();
    let progress = me == 0 && std::io::stderr().is_terminal();
    for (i, &bytes) in sizes.iter().enumerate() {
        let iters = a
            .iters
            .map(|n| n as usize)
            .unwrap_or(if bytes < 65536 { 1000 } else { 100 });
        let skip = (iters / 10).max(1);
        if progress {
            eprint!("\r{} {} B ({}/{})   ", a.op, bytes, i + 1, sizes.len());
        }
        let times = measure(&world, &a.op, bytes, iters, skip, !a.pipelined)?;
        let stats = osu_stats(&world, times)?;
        if let Some((p50, avg, max_p50)) = stats {
            let asked = selected_bytes(&a.op, bytes, world.size() as usize);
            let chosen = weft::coll::explain(coll_name(&a.op), asked, world.size(), ppn, rails)
                .map(|e| e.choice)
                .unwrap_or_else(|_| algo.choice.clone());
            let p = Point {
                op: a.op.clone(),
                bytes: bytes as u64,
                algo: chosen,
                p50_us: p50,
                avg_us: avg,
                max_p50_us: max_p50,
            };
            if a.json {
                println!("{}", serde_json::to_string(&p).expect("point serialises"));
            } else {
                if i == 0 {
                    println!(
                        "# weft bench coll --op {} ({} ranks)\n{:>10} {:>12} {:>12} {:>12}  algorithm",
                        a.op,
                        world.size(),
                        "bytes",
                        "p50_us",
                        "avg_us",
                        "max_p50_us"
                    );
                }
                println!(
                    "{:>10} {:>12.3} {:>12.3} {:>12.3}  {}",
                    p.bytes, p.p50_us, p.avg_us, p.max_p50_us, p.algo
                );
            }
        }
    }
    if progress {
        eprintln!();
    }
    weft.finalize()
}

/// Times `iters` calls (after `skip` warm-up calls), each followed by an untimed barrier
/// when `sync`; returns µs per call.
pub(crate) fn measure(
    world: &Comm,
    op: &str,
    bytes: usize,
    iters: usize,
    skip: usize,
    sync: bool,
) -> Result<Vec<f64>> {
    let n = world.size() as usize;
    let count = (bytes / 4).max(if op == "barrier" { 0 } else { 1 });
    let block = count;
    let (send_len, recv_len) = match op {
        "gather" => (block, block * n),
        "scatter" => (block * n, block),
        "allgather" => (block, block * n),
        "alltoall" => (block * n, block * n),
        "reduce_scatter" => (count.max(n) / n * n, count.max(n) / n),
        _ => (count, count),
    };
    let send = vec![1.0f32; send_len];
    let mut recv = vec![0.0f32; recv_len];
    let mut out = Vec::with_capacity(iters);
    world.barrier()?;
    for i in 0..iters + skip {
        let t = std::time::Instant::now();
        match op {
            "barrier" => world.barrier()?,
            "bcast" => world.bcast(&mut recv, 0)?,
            "reduce" => world.reduce(&send, &mut recv, &Op::Sum, 0)?,
            "allreduce" => world.allreduce(&send, &mut recv, &Op::Sum)?,
            "gather" => world.gather(&send, &mut recv, 0)?,
            "scatter" => world.scatter(&send, &mut recv, 0)?,
            "allgather" => world.allgather(&send, &mut recv)?,
            "alltoall" => world.alltoall(&send, &mut recv)?,
            "reduce_scatter" => world.reduce_scatter_block(&send, &mut recv, &Op::Sum)?,
            "scan" => world.scan(&send, &mut recv, &Op::Sum)?,
            other => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("unknown collective {other}"),
                ))
            }
        }
        if i >= skip {
            out.push(t.elapsed().as_secs_f64() * 1e6);
        }
        if sync && op != "barrier" {
            world.barrier()?;
        }
    }
    Ok(out)
}

/// OSU 7.4's statistics of one size, known to rank 0 (None elsewhere): (P50 over calls of
/// the mean over ranks, mean over ranks and calls, maximum over ranks of each rank's
/// median). Every rank timed the same number of calls.
pub(crate) fn osu_stats(world: &Comm, mut times: Vec<f64>) -> Result<Option<(f64, f64, f64)>> {
    if world.rank() != 0 {
        world.send(&times, 0, TAG_REPORT)?;
        return Ok(None);
    }
    let n = times.len();
    let mut sum = times.clone();
    let mut max_p50 = median(&mut times);
    for r in 1..world.size() {
        world.recv(&mut times, r as i32, TAG_REPORT)?;
        for (s, t) in sum.iter_mut().zip(&times) {
            *s += t;
        }
        max_p50 = max_p50.max(median(&mut times));
    }
    let ranks = f64::from(world.size());
    let mut mean: Vec<f64> = sum.iter().map(|s| s / ranks).collect();
    let avg = mean.iter().sum::<f64>() / n as f64;
    Ok(Some((median(&mut mean), avg, max_p50)))
}

#[cfg(test)]
mod tests {
    use super::selected_bytes;

    #[test]
    fn reduce_scatter_is_labelled_by_each_ranks_share() {
        // 128 KiB of floats over 5 ranks: 6553 floats each (the remainder is not sent).
        assert_eq!(selected_bytes("reduce_scatter", 131072, 5), 6553 * 4);
        // Fewer floats than ranks: one each.
        assert_eq!(selected_bytes("reduce_scatter", 8, 5), 4);
        assert_eq!(selected_bytes("bcast", 131072, 5), 131072);
        assert_eq!(selected_bytes("alltoall", 4096, 8), 4096);
    }
}
