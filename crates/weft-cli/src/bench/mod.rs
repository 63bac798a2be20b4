//! `weft bench`: OSU-style micro-benchmarks that start their own ranks through weft-launch.
//!
//! The driver (this process) launches the `weft` binary itself as N ranks with the hidden
//! `__bench-rank` subcommand; rank 0 prints the results. Methodology follows the OSU
//! micro-benchmarks: warm-up iterations are discarded, latency is half the round trip of a
//! ping-pong, bandwidth keeps a window of 64 messages in flight.

pub mod p2p;

use std::time::Duration;
use weft_launch::{JobSpec, OutputMode};

/// Arguments of `weft bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchKind,
}

/// The benchmarks.
#[derive(clap::Subcommand)]
pub enum BenchKind {
    /// Point-to-point latency (ping-pong) and bandwidth (windowed) between rank pairs.
    P2p(p2p::P2pArgs),
}

/// Runs `weft bench`.
pub fn run(args: BenchArgs) -> i32 {
    match args.what {
        BenchKind::P2p(a) => match a.validate() {
            Ok(()) => launch(a.nranks, a.to_rank_args(), a.timeout_s),
            Err(e) => {
                eprintln!("weft bench p2p: {e}");
                2
            }
        },
    }
}

/// Starts `nranks` copies of this binary in rank mode with `rank_args`.
fn launch(nranks: u32, rank_args: Vec<String>, timeout_s: u64) -> i32 {
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("weft bench: cannot find my own executable: {e}");
            return 1;
        }
    };
    let mut spec = JobSpec::new(nranks, exe);
    spec.args = std::iter::once("__bench-rank".to_string())
        .chain(rank_args)
        .map(Into::into)
        .collect();
    spec.timeout = Some(Duration::from_secs(timeout_s));
    spec.output = OutputMode::Inherit;
    match weft_launch::run_job(&spec) {
        Ok(outcome) => outcome.exit_code,
        Err(e) => {
            eprintln!("weft bench: {e}");
            1
        }
    }
}

/// Arguments of the hidden rank-side subcommand.
#[derive(clap::Args)]
pub struct RankArgs {
    #[command(subcommand)]
    pub what: RankKind,
}

/// Rank-side benchmarks.
#[derive(clap::Subcommand)]
pub enum RankKind {
    /// Rank side of `weft bench p2p`.
    P2p(p2p::P2pRankArgs),
}

/// Runs the rank side of a benchmark inside a job started by [`launch`].
pub fn run_rank(args: RankArgs) -> i32 {
    let result = match args.what {
        RankKind::P2p(a) => p2p::rank_main(a),
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
pub fn median(v: &mut [f64]) -> f64 {
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
pub fn parse_sizes(text: &str) -> Result<Vec<usize>, String> {
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
pub fn default_sizes() -> Vec<usize> {
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
