//! `weft bench`: OSU-style micro-benchmarks that start their own ranks through weft-launch.
//!
//! The driver (this process) launches the `weft` binary itself as N ranks with the hidden
//! `__bench-rank` subcommand; rank 0 prints the results. Methodology follows the OSU
//! micro-benchmarks: warm-up iterations are discarded, latency is half the round trip of a
//! ping-pong, bandwidth keeps a window of 64 messages in flight.

pub(crate) mod coll;
pub(crate) mod p2p;
pub(crate) mod shmem;
pub(crate) mod startup;
pub(crate) mod sync;

use std::time::Duration;
use weft_launch::{HostsSpec, JobSpec, OutputMode};

/// Arguments of `weft bench`.
#[derive(clap::Args)]
pub(crate) struct BenchArgs {
    /// Hosts to run on (`--hosts`, `--launcher`, `--map-by`, `--boot-addr`), parsed exactly
    /// as by `weft run`.
    #[command(flatten)]
    pub on: crate::run::HostArgs,
    #[command(subcommand)]
    pub what: BenchKind,
}

/// The benchmarks.
#[derive(clap::Subcommand)]
pub(crate) enum BenchKind {
    /// Point-to-point latency (ping-pong) and bandwidth (windowed) between rank pairs.
    P2p(p2p::P2pArgs),
    /// Latency of one collective over a range of sizes, per algorithm.
    Coll(coll::CollArgs),
    /// OpenSHMEM-style put/get latency and bandwidth, and the 8-byte put rate per initiator.
    Shmem(shmem::ShmemArgs),
    /// The node synchronisation engine's barrier and reduce against software ones.
    Sync(sync::SyncArgs),
    /// Launch + init + barrier + finalize of whole jobs, weft run against other launchers.
    Startup(startup::StartupArgs),
}

/// Runs `weft bench`.
pub(crate) fn run(args: BenchArgs) -> i32 {
    let place = match args.on.resolve() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("weft bench: {e}");
            return 2;
        }
    };
    let on = place.hosts.as_ref();
    // Every benchmark sizes its job like `weft run`: -n, else one rank per host slot.
    let size = |np: Option<u32>| crate::run::job_size_or(np, &place, 2);
    match args.what {
        BenchKind::P2p(mut a) => {
            a.nranks = size(a.np);
            match a.validate() {
                Ok(()) => launch(a.nranks, a.to_rank_args(), a.timeout_s, &[], on),
                Err(e) => {
                    eprintln!("weft bench p2p: {e}");
                    2
                }
            }
        }
        BenchKind::Coll(mut a) => {
            a.nranks = size(a.np);
            run_coll(a, on)
        }
        BenchKind::Shmem(mut a) => {
            a.nranks = size(a.np);
            shmem::run(a, on)
        }
        BenchKind::Sync(a) => sync::run(a, on),
        BenchKind::Startup(a) => startup::run(a, on),
    }
}

/// Runs one job per algorithm, collects the points, prints them and writes CSV and plot.
fn run_coll(a: coll::CollArgs, on: Option<&HostsSpec>) -> i32 {
    if let Err(e) = a.validate() {
        eprintln!("weft bench coll: {e}");
        return 2;
    }
    let algos = match a.algorithms() {
        Ok(v) => v,
        Err(e) => {
            eprintln!("weft bench coll: {e}");
            return 2;
        }
    };
    let knob = format!("WEFT_{}_ALGO", coll::coll_name(&a.op).to_ascii_uppercase());
    let progress =
        crate::progress::Progress::new(&format!("bench coll {}", a.op), algos.len() as u64, a.json);
    let mut points: Vec<coll::Point> = Vec::new();
    // Points of the job without a forced algorithm: the selector's choice at each size.
    let mut chosen: Vec<usize> = Vec::new();
    for algo in &algos {
        progress.start(algo.as_deref().unwrap_or("the default choice"));
        let env: Vec<(String, String)> = algo.iter().map(|x| (knob.clone(), x.clone())).collect();
        let (code, stdout) = launch_capture(a.nranks, a.rank_args(true), a.timeout_s, &env, on);
        if code != 0 {
            eprintln!(
                "weft bench coll: job with {} failed (exit {code})",
                algo.as_deref().unwrap_or("the default algorithm")
            );
            return code;
        }
        for line in String::from_utf8_lossy(&stdout).lines() {
            match serde_json::from_str::<coll::Point>(line) {
                Ok(mut p) => {
                    match algo {
                        Some(x) => p.algo = x.clone(),
                        None => chosen.push(points.len()),
                    }
                    points.push(p)
                }
                Err(_) => progress.println(line),
            }
        }
        progress.done();
    }
    drop(progress);
    if a.json {
        for p in &points {
            println!("{}", serde_json::to_string(p).expect("point serialises"));
        }
    } else {
        println!("# weft bench coll --op {} -n {}", a.op, a.nranks);
        println!(
            "{:>10} {:>24} {:>12} {:>12} {:>12}",
            "bytes", "algorithm", "p50_us", "avg_us", "max_p50_us"
        );
        for p in &points {
            println!(
                "{:>10} {:>24} {:>12.3} {:>12.3} {:>12.3}",
                p.bytes, p.algo, p.p50_us, p.avg_us, p.max_p50_us
            );
        }
    }
    if let Some(path) = &a.csv {
        let mut text = String::from("op,bytes,algo,p50_us,avg_us,max_p50_us\n");
        for p in &points {
            text.push_str(&format!(
                "{},{},{},{:.3},{:.3},{:.3}\n",
                p.op, p.bytes, p.algo, p.p50_us, p.avg_us, p.max_p50_us
            ));
        }
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("weft bench coll: --csv {}: {e}", path.display());
            return 1;
        }
    }
    if let Some(path) = &a.plot {
        let mut series: Vec<crate::plot::Series> = Vec::new();
        // The default choice is one curve whatever algorithm each size took.
        if !chosen.is_empty() {
            series.push(crate::plot::Series {
                name: "default choice".into(),
                points: chosen
                    .iter()
                    .map(|&i| (points[i].bytes.max(1) as f64, points[i].p50_us))
                    .collect(),
            });
        }
        for (_, p) in points
            .iter()
            .enumerate()
            .filter(|(i, _)| !chosen.contains(i))
        {
            match series.iter_mut().find(|s| s.name == p.algo) {
                Some(s) => s.points.push((p.bytes.max(1) as f64, p.p50_us)),
                None => series.push(crate::plot::Series {
                    name: p.algo.clone(),
                    points: vec![(p.bytes.max(1) as f64, p.p50_us)],
                }),
            }
        }
        let title = format!("{} latency, {} ranks", a.op, a.nranks);
        let labels = crate::plot::Labels {
            title: &title,
            x: "bytes per rank",
            y: "p50 latency (us)",
        };
        let opts = crate::plot::ChartOpts {
            x_bytes: true,
            ..crate::plot::ChartOpts::default()
        };
        if let Err(e) = crate::plot::line_chart_with(path, &labels, &series, &opts) {
            eprintln!("weft bench coll: --plot {}: {e}", path.display());
            return 1;
        }
    }
    0
}

/// Starts `nranks` copies of this binary in rank mode with `rank_args`; output is forwarded.
fn launch(
    nranks: u32,
    rank_args: Vec<String>,
    timeout_s: u64,
    env: &[(String, String)],
    on: Option<&HostsSpec>,
) -> i32 {
    run_ranks(nranks, rank_args, timeout_s, env, OutputMode::Inherit, on).0
}

/// Like [`launch`] but collects the ranks' stdout (stderr is passed on after the job).
fn launch_capture(
    nranks: u32,
    rank_args: Vec<String>,
    timeout_s: u64,
    env: &[(String, String)],
    on: Option<&HostsSpec>,
) -> (i32, Vec<u8>) {
    run_ranks(nranks, rank_args, timeout_s, env, OutputMode::Capture, on)
}

fn run_ranks(
    nranks: u32,
    rank_args: Vec<String>,
    timeout_s: u64,
    env: &[(String, String)],
    output: OutputMode,
    on: Option<&HostsSpec>,
) -> (i32, Vec<u8>) {
    run_ranks_of(
        "__bench-rank",
        nranks,
        rank_args,
        timeout_s,
        env,
        output,
        on,
    )
}

/// Starts `nranks` copies of this binary as the hidden subcommand `sub` with `rank_args`
/// and collects their stdout (stderr is passed on after the job), as [`launch_capture`]
/// does for `__bench-rank` (`weft tune` starts its own rank side through it).
pub(crate) fn run_subcommand(
    sub: &str,
    nranks: u32,
    rank_args: Vec<String>,
    timeout_s: u64,
    env: &[(String, String)],
    on: Option<&HostsSpec>,
) -> (i32, Vec<u8>) {
    run_ranks_of(
        sub,
        nranks,
        rank_args,
        timeout_s,
        env,
        OutputMode::Capture,
        on,
    )
}

fn run_ranks_of(
    sub: &str,
    nranks: u32,
    rank_args: Vec<String>,
    timeout_s: u64,
    env: &[(String, String)],
    output: OutputMode,
    on: Option<&HostsSpec>,
) -> (i32, Vec<u8>) {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("weft bench: cannot find my own executable: {e}");
            return (1, Vec::new());
        }
    };
    let mut spec = JobSpec::new(nranks, exe);
    spec.args = std::iter::once(sub.to_string())
        .chain(rank_args)
        .map(Into::into)
        .collect();
    spec.timeout = Some(Duration::from_secs(timeout_s));
    spec.output = output;
    spec.env = env.to_vec();
    spec.hosts = on.cloned();
    match weft_launch::run_job(&spec) {
        Ok(outcome) => {
            if output == OutputMode::Capture {
                std::io::Write::write_all(&mut std::io::stderr(), &outcome.stderr).ok();
            }
            (outcome.exit_code, outcome.stdout)
        }
        Err(e) => {
            eprintln!("weft bench: {e}");
            (1, Vec::new())
        }
    }
}

/// Arguments of the hidden rank-side subcommand.
#[derive(clap::Args)]
pub(crate) struct RankArgs {
    #[command(subcommand)]
    pub what: RankKind,
}

/// Rank-side benchmarks.
#[derive(clap::Subcommand)]
pub(crate) enum RankKind {
    /// Rank side of `weft bench p2p`.
    P2p(p2p::P2pRankArgs),
    /// Rank side of `weft bench coll`.
    Coll(coll::CollRankArgs),
    /// Rank side of `weft bench shmem`.
    Shmem(shmem::ShmemRankArgs),
    /// Rank side of `weft bench sync`.
    Sync(sync::SyncRankArgs),
    /// Rank side of `weft bench startup` (also started by other launchers).
    Startup(startup::StartupRankArgs),
}

/// Runs the rank side of a benchmark inside a job started by [`launch`].
pub(crate) fn run_rank(args: RankArgs) -> i32 {
    let result = match args.what {
        RankKind::P2p(a) => p2p::rank_main(a),
        RankKind::Coll(a) => coll::rank_main(a),
        RankKind::Shmem(a) => shmem::rank_main(a),
        RankKind::Sync(a) => sync::rank_main(a),
        RankKind::Startup(a) => startup::rank_main(a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("weft bench: {e}");
            1
        }
    }
}

/// Median of `v` (sorted in place); 0 for an empty slice.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Parses a comma-separated size list (`8,1K,1M`).
pub(crate) fn parse_sizes(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            weft_core::units::parse_bytes(s)
                .map(|b| b as usize)
                .map_err(|e| format!("--sizes: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|v| {
            if v.is_empty() {
                Err("--sizes: empty list".to_string())
            } else {
                Ok(v)
            }
        })
}

/// The OSU default sizes: 1 B to 4 MiB in powers of two.
pub(crate) fn default_sizes() -> Vec<usize> {
    (0..=22).map(|i| 1usize << i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_sizes() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(parse_sizes("8,1K,1M").unwrap(), vec![8, 1024, 1 << 20]);
        assert!(parse_sizes("8,x").is_err());
        assert!(parse_sizes("").is_err());
        assert_eq!(default_sizes().last(), Some(&(4 << 20)));
    }
}
