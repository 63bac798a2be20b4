//! The `weft` command: run jobs, inspect the runtime, benchmark, and plan aggregation trees.
//!
//! Each subcommand lives in its own module; this file only parses and dispatches.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod bench;
mod info;
mod install;
mod plan;
mod plot;
mod run;
mod transports;

/// weft: a communication runtime for HPC clusters.
#[derive(Parser)]
#[command(name = "weft", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start a job of N ranks on this machine or on several hosts.
    Run(run::RunArgs),
    /// What this machine and build offer; `--knobs` lists every setting.
    Info(info::InfoArgs),
    /// Plan aggregation trees for a whole machine (offline model).
    Plan(plan::PlanArgs),
    /// OSU-style benchmarks; they start their own ranks.
    Bench(bench::BenchArgs),
    /// Install weft's MPI and OpenSHMEM libraries, headers, wrappers, pkg-config and
    /// modulefile under a prefix (relocatable).
    Install(install::InstallArgs),
    /// Rank side of `weft bench` (started by the benchmark driver).
    #[command(name = "__bench-rank", hide = true)]
    BenchRank(bench::RankArgs),
    /// Host agent of a multi-host job (started by `weft run --hosts` through the launcher).
    #[command(name = "__agent", hide = true)]
    Agent(run::AgentArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Info(_) | Command::Plan(_)) {
        weft_launch::default_sigpipe();
    }
    let code = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Info(a) => info::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Install(a) => install::run(a),
        Command::BenchRank(a) => bench::run_rank(a),
        Command::Agent(a) => run::agent(a),
    };
    ExitCode::from(code.clamp(0, 255) as u8)
}
