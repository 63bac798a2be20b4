//! `weft plan`: the aggregation planner's command line. Subcommands load a fabric, call the
//! pure models in `weft_model::{fabric, plan, tree, cost}` and print a table (default),
//! JSON (`--json`), CSV (`--csv FILE`), PNG plots (`--plot FILE`) or Graphviz (`--dot FILE`).
//!
//! This shell does the I/O (reading fabric files, writing outputs, timing); the models do
//! none. Bad input prints one `weft plan: <kind>: <message>` line and exits with code 2.

/// Like `print!`, but a closed stdout (e.g. `| head`) ends output quietly instead of
/// panicking.
macro_rules! out {
    ($($t:tt)*) => {
        $crate::plan::output::emit(&format!($($t)*))
    };
}

/// Like `println!`; see `out!`.
macro_rules! outln {
    ($($t:tt)*) => {
        $crate::plan::output::emit(&format!("{}\n", format!($($t)*)))
    };
}

mod alloc;
mod choose;
mod experiment;
pub(crate) mod fabric;
mod links;
mod map;
mod output;
mod radix;
mod type2;

use clap::Subcommand;
use std::time::Instant;
use weft_core::{Error, ErrorKind, Result};

/// Arguments of `weft plan`.
#[derive(clap::Args)]
pub(crate) struct PlanArgs {
    /// Print how long each phase took and the peak memory, on stderr.
    #[arg(long, global = true)]
    timing: bool,
    #[command(subcommand)]
    command: PlanCommand,
}

#[derive(Subcommand)]
enum PlanCommand {
    /// Describe a fabric: switches, endpoints, links, diameter.
    Fabric(fabric::FabricArgs),
    /// Place a type I tree and report height, radius, inter-group packets, busiest link.
    Links(links::LinksArgs),
    /// F(k) = (a + b·k)·log_k P: optimal radix, near-optimal range, curve.
    Radix(radix::RadixArgs),
    /// The radix range per message size from the cost-model parameters.
    RadixTable(radix::RadixTableArgs),
    /// Per message size: type I or type II, which radix, and the crossover.
    Choose(choose::ChooseArgs),
    /// Regenerate the paper's analyses as a Markdown report with plots.
    Experiment(experiment::ExperimentArgs),
    /// Type II trees for a member set: root, physical tree, minimum-cost tree.
    Type2(type2::Type2Args),
    /// Create a type II tree per communicator of a pattern under limited switch entries.
    Alloc(alloc::AllocArgs),
    /// A job's virtual torus on a torus machine with faulty nodes: dilation, congestion.
    Map(map::MapArgs),
}

/// Phase timer for `--timing`.
pub(crate) struct Timing {
    enabled: bool,
    start: Instant,
    last: Instant,
}

impl Timing {
    fn new(enabled: bool) -> Self {
        let now = Instant::now();
        Timing {
            enabled,
            start: now,
            last: now,
        }
    }

    /// Reports the time since the previous phase.
    pub(crate) fn phase(&mut self, name: &str) {
        if self.enabled {
            let now = Instant::now();
            eprintln!(
                "timing: {name:<22} {:>10.3} ms",
                (now - self.last).as_secs_f64() * 1e3
            );
            self.last = now;
        }
    }

    fn finish(&self) {
        if self.enabled {
            eprintln!(
                "timing: {:<22} {:>10.3} ms",
                "total",
                self.start.elapsed().as_secs_f64() * 1e3
            );
            if let Some(kib) = peak_rss_kib() {
                eprintln!(
                    "timing: {:<22} {:>10.1} MiB",
                    "peak resident memory",
                    kib as f64 / 1024.0
                );
            }
        }
    }
}

/// Peak resident set size from /proc (Linux); `None` elsewhere.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `weft plan`.
pub(crate) fn run(args: PlanArgs) -> i32 {
    let mut timing = Timing::new(args.timing);
    let outcome = match args.command {
        PlanCommand::Fabric(a) => fabric::run(a, &mut timing),
        PlanCommand::Links(a) => links::run(a, &mut timing),
        PlanCommand::Radix(a) => radix::run(a, &mut timing),
        PlanCommand::RadixTable(a) => radix::run_table(a, &mut timing),
        PlanCommand::Choose(a) => choose::run(a, &mut timing),
        PlanCommand::Experiment(a) => experiment::run(a, &mut timing),
        PlanCommand::Type2(a) => type2::run(a, &mut timing),
        PlanCommand::Alloc(a) => alloc::run(a, &mut timing),
        PlanCommand::Map(a) => map::run(a, &mut timing),
    };
    timing.finish();
    match outcome {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("weft plan: {e}");
            match e.kind() {
                ErrorKind::Io | ErrorKind::Internal => 1,
                _ => 2,
            }
        }
    }
}

/// Rejects a degree limit below 2.
pub(crate) fn check_degree(degree: u32) -> Result<()> {
    if degree < 2 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("degree: {degree} is below 2 (a switch must combine at least two children)"),
        ));
    }
    Ok(())
}
