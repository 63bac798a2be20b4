//! The `weft` command: run jobs, inspect the runtime, benchmark, and plan aggregation trees.
//!
//! Each subcommand lives in its own module; this file only parses and dispatches.

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;
use weft_core::knob::{KnobValues, LOG, PROCESS_KNOBS};

mod aggd;
mod bench;
mod build_info;
mod clean;
mod info;
mod install;
mod mpiexec;
mod plan;
mod plot;
mod progress;
mod run;
mod sim;
mod transports;
mod tune;

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
    /// The aggregation manager: hands type II trees to communicators within each switch's
    /// aggregation entries (docs/aggd.md).
    Aggd(aggd::AggdArgs),
    /// Remove shared-memory segments left in /dev/shm by jobs that are gone (`--dry-run`
    /// lists them).
    Clean(clean::CleanArgs),
    /// OSU-style benchmarks; they start their own ranks.
    Bench(bench::BenchArgs),
    /// Install weft's MPI and OpenSHMEM libraries, headers, wrappers, pkg-config and
    /// modulefile under a prefix (relocatable).
    Install(install::InstallArgs),
    /// Measure this node (lanes, crossovers, the collectives' algorithms per size) and
    /// write a tuning file the runtime loads with WEFT_TUNING_FILE; `--check FILE` compares
    /// the cost model with a file's measurements.
    Tune(tune::TuneArgs),
    /// Simulate a collective's schedule (weft's own plans) on a model of a machine or
    /// fabric: predicted time, busiest links, timeline.
    Sim(sim::SimArgs),
    /// Rank side of `weft tune` (started by its driver).
    #[command(name = "__tune-rank", hide = true)]
    TuneRank(tune::rank::TuneRankArgs),
    /// Rank side of `weft bench` (started by the benchmark driver).
    #[command(name = "__bench-rank", hide = true)]
    BenchRank(bench::RankArgs),
    /// Host agent of a multi-host job (started by `weft run --hosts` through the launcher).
    #[command(name = "__agent", hide = true)]
    Agent(run::AgentArgs),
    /// mpiexec/mpirun of Open MPI and MPICH mapped onto `weft run` (what the mpiexec and
    /// mpirun wrappers run); `weft mpiexec --help` lists the options.
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Mpiexec {
        /// mpiexec's options, the program and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<OsString>,
    },
}

/// Parses `args` (with the program name first) as the `weft` command line.
fn parse(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    let version: &'static str = Box::leak(build_info::long_version().into_boxed_str());
    let matches = Cli::command()
        .long_version(version)
        .try_get_matches_from(run::normalize_args(&Cli::command(), args)?)?;
    Cli::from_arg_matches(&matches)
}

/// Runs `weft mpiexec`.
#[allow(
    clippy::disallowed_methods,
    reason = "mpiexec maps its launcher's whole environment (Open MPI's and MPICH's variables) as they do"
)]
fn mpiexec(args: Vec<OsString>) -> i32 {
    let env: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    match mpiexec::translate(&args, &env) {
        Err(e) => {
            eprintln!("mpiexec: {e}");
            2
        }
        Ok(mpiexec::Plan::Help) => {
            print!("{}", mpiexec::HELP);
            0
        }
        Ok(mpiexec::Plan::Version) => {
            println!("mpiexec (weft) {}", build_info::long_version());
            0
        }
        Ok(mpiexec::Plan::Run { args, warnings }) => {
            for w in warnings {
                eprintln!("{w}");
            }
            let mut argv: Vec<OsString> = vec!["mpiexec".into(), "run".into()];
            argv.extend(args);
            match Cli::try_parse_from(argv) {
                Ok(Cli {
                    command: Command::Run(a),
                }) => run::run(a),
                Ok(_) => unreachable!("the arguments start with run"),
                Err(e) => {
                    let _ = e.print();
                    2
                }
            }
        }
    }
}

fn main() -> ExitCode {
    // What the launcher and the tools log (WEFT_LOG); a rank's own weft reads it again at
    // init, in its own process. A filter that would show nothing by a typo stops every
    // command here, before a job starts.
    if let Ok((values, _)) = KnobValues::read_env(&[PROCESS_KNOBS]) {
        let filter = values.text(LOG);
        if let Some(f) = &filter {
            if let Err(why) = weft_core::logging::check_filter(f) {
                eprintln!("weft: {LOG}={f}: {why}");
                return ExitCode::from(2);
            }
        }
        weft_core::logging::init(filter.as_deref());
    }
    let cli = match parse(std::env::args_os().collect()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if matches!(cli.command, Command::Info(_) | Command::Plan(_)) {
        weft_launch::default_sigpipe();
    }
    let code = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Aggd(a) => aggd::run(a),
        Command::Info(a) => info::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Install(a) => install::run(a),
        Command::Clean(a) => clean::run(a),
        Command::BenchRank(a) => bench::run_rank(a),
        Command::Tune(a) => tune::run(a),
        Command::Sim(a) => sim::run(a),
        Command::TuneRank(a) => match tune::rank::rank_main(a) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("weft tune: {e}");
                1
            }
        },
        Command::Agent(a) => run::agent(a),
        Command::Mpiexec { args } => mpiexec(args),
    };
    ExitCode::from(code.clamp(0, 255) as u8)
}
