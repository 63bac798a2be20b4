//! `weft plan alloc`: one type II tree per communicator of a pattern, in order, under a
//! limited number of tree entries per switch; reports failures and entry use.

use super::fabric::FabricOpts;
use super::output::{fixed, print_json, write_text, Table};
use super::{check_degree, Timing};
use std::path::PathBuf;
use weft_core::Result;
use weft_model::plan::{allocate, AllocConfig, Method, Pattern};

/// Arguments of `weft plan alloc`.
#[derive(clap::Args)]
pub(crate) struct AllocArgs {
    #[command(flatten)]
    fabric: FabricOpts,
    /// grid2d:RxC, grid3d:AxBxC or random:COUNT,SIZE,SEED.
    #[arg(long)]
    pattern: String,
    /// Tree entries per switch.
    #[arg(long)]
    entries: u32,
    /// Most children of a switch in a minimum-cost tree (default: the switch's port count).
    #[arg(long)]
    degree: Option<u32>,
    /// physical or mincost.
    #[arg(long, default_value = "mincost")]
    method: String,
    /// Roots may be this many hops farther from their farthest member than the closest root.
    #[arg(long, default_value_t = 2)]
    root_slack: u32,
    /// Most physical trees built per communicator before it falls back to type I.
    #[arg(long, default_value_t = 64)]
    root_attempts: u32,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the result as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
}

pub(crate) fn run(args: AllocArgs, timing: &mut Timing) -> Result<()> {
    if let Some(d) = args.degree {
        check_degree(d)?;
    }
    let method = Method::parse(&args.method)?;
    let pattern = Pattern::parse(&args.pattern)?;
    let fabric = args.fabric.load()?;
    timing.phase("build fabric");
    let comms = pattern.communicators(&fabric)?;
    timing.phase("build pattern");
    let report = allocate(
        &fabric,
        &comms,
        AllocConfig {
            root_slack_hops: args.root_slack,
            max_root_attempts: args.root_attempts,
            ..AllocConfig::new(args.entries, args.degree, method)
        },
    )?;
    timing.phase("allocate trees");
    if timing_enabled(timing) {
        eprintln!(
            "timing: {} endpoints, {} switches, {} communicators, {} BFS rows",
            fabric.endpoint_count(),
            fabric.switch_count(),
            report.communicators,
            report.rows_computed
        );
    }
    let mut t = Table::new(&[
        "method",
        "communicators",
        "failures",
        "failure rate",
        "entries used",
        "peak entries",
    ]);
    t.row(vec![
        method.name().into(),
        report.communicators.to_string(),
        report.failures.to_string(),
        fixed(report.failure_rate, 4),
        report.entries_used.to_string(),
        report.peak_entries.to_string(),
    ]);
    if args.json {
        print_json(&serde_json::json!({
            "method": method.name(),
            "communicators": report.communicators,
            "failures": report.failures,
            "failure_rate": report.failure_rate,
            "entries_used": report.entries_used,
            "peak_entries": report.peak_entries,
            "switches_touched": report.switches_touched,
            "later_roots": report.later_roots,
        }));
    } else {
        out!("{}", t.render());
    }
    if let Some(path) = &args.csv {
        write_text(path, &t.csv())?;
    }
    Ok(())
}

fn timing_enabled(timing: &Timing) -> bool {
    timing.enabled
}
