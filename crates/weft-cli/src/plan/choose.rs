//! `weft plan choose`: per message size, which tree type (I or II) and which radix the cost
//! model picks for P placed processes, and the crossover size. Model: `weft_model::plan::choose`.

use super::fabric::FabricOpts;
use super::output::{fixed, print_json, write_text, Table};
use super::radix::{params_from, parse_sizes};
use super::Timing;
use crate::plot::{line_chart_with, ChartOpts, Labels, Series};
use std::path::PathBuf;
use weft_core::Result;
use weft_model::plan::choose::{choose, SwitchCost};
use weft_model::plan::{PlaceMethod, Placement};

/// Arguments of `weft plan choose`.
#[derive(clap::Args)]
pub(crate) struct ChooseArgs {
    #[command(flatten)]
    fabric: FabricOpts,
    /// Number of processes.
    #[arg(long)]
    procs: u64,
    /// contiguous, round-robin or random:SEED.
    #[arg(long, default_value = "contiguous")]
    place: String,
    /// Message sizes (comma-separated, K/M suffixes allowed).
    #[arg(long, default_value = "8,64,256,1K,2K,4K,16K,64K,256K")]
    sizes: String,
    /// Tolerance ε of the radix range, µs.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    epsilon_us: f64,
    /// NIC matching cost θ per child packet, µs (default: `sunway_like_params`).
    #[arg(long, allow_negative_numbers = true)]
    theta_us: Option<f64>,
    /// NIC store-and-forward cost per byte, µs.
    #[arg(long, allow_negative_numbers = true)]
    store_forward_us_per_byte: Option<f64>,
    /// NIC reduction cost γ per byte, µs.
    #[arg(long, allow_negative_numbers = true)]
    gamma_us_per_byte: Option<f64>,
    /// Latency of one link, µs.
    #[arg(long, allow_negative_numbers = true)]
    link_latency_us: Option<f64>,
    /// Switch fixed cost per level, µs.
    #[arg(long, allow_negative_numbers = true)]
    switch_theta_us: Option<f64>,
    /// Switch reduction cost per child per byte, µs.
    #[arg(long, allow_negative_numbers = true)]
    switch_us_per_byte: Option<f64>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the table as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Plot both types' modelled time against message size.
    #[arg(long)]
    plot: Option<PathBuf>,
}

pub(crate) fn run(args: ChooseArgs, timing: &mut Timing) -> Result<()> {
    let sizes = parse_sizes(&args.sizes)?;
    let params = params_from(
        args.theta_us,
        args.store_forward_us_per_byte,
        args.gamma_us_per_byte,
        args.link_latency_us,
        None,
    )?;
    let mut switch = SwitchCost::default();
    for (name, v, slot) in [
        (
            "switch-theta-us",
            args.switch_theta_us,
            &mut switch.theta_us,
        ),
        (
            "switch-us-per-byte",
            args.switch_us_per_byte,
            &mut switch.us_per_byte,
        ),
    ] {
        if let Some(v) = v {
            if !(v.is_finite() && v >= 0.0) {
                return Err(weft_core::Error::new(
                    weft_core::ErrorKind::InvalidArgument,
                    format!("{name}: {v} must be a non-negative number"),
                ));
            }
            *slot = v;
        }
    }
    let place = PlaceMethod::parse(&args.place)?;
    let fabric = args.fabric.load()?;
    timing.phase("build fabric");
    let placement = Placement::new(&fabric, args.procs, place)?;
    let (rows, crossover) = choose(
        &fabric,
        &placement,
        &params,
        &switch,
        &sizes,
        args.epsilon_us,
    )?;
    timing.phase("evaluate both types");
    let mut t = Table::new(&[
        "bytes",
        "pick",
        "k",
        "type I (us)",
        "I height",
        "I radius",
        "type II (us)",
        "II switches",
        "II height",
    ]);
    for r in &rows {
        t.row(vec![
            r.bytes.to_string(),
            if r.pick_type2 { "type II" } else { "type I" }.into(),
            r.k.to_string(),
            fixed(r.type1_us, 3),
            r.type1_height.to_string(),
            r.type1_radius.to_string(),
            fixed(r.type2_us, 3),
            r.type2_switches.to_string(),
            r.type2_height.to_string(),
        ]);
    }
    if args.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "bytes": r.bytes,
                    "type": if r.pick_type2 { "II" } else { "I" },
                    "k": r.k,
                    "type1_us": r.type1_us,
                    "type2_us": r.type2_us,
                })
            })
            .collect();
        print_json(&serde_json::json!({ "sizes": list, "crossover_bytes": crossover }));
    } else {
        out!("{}", t.render());
        match crossover {
            Some(b) => outln!("crossover: type I from {b} bytes"),
            None => outln!("crossover: none in the sizes given"),
        }
    }
    if let Some(path) = &args.csv {
        write_text(path, &t.csv())?;
    }
    if let Some(path) = &args.plot {
        let s1 = rows
            .iter()
            .map(|r| (r.bytes.max(1) as f64, r.type1_us))
            .collect();
        let s2 = rows
            .iter()
            .map(|r| (r.bytes.max(1) as f64, r.type2_us))
            .collect();
        line_chart_with(
            path,
            &Labels {
                title: &format!("modelled aggregation time, {} processes", args.procs),
                x: "message size (bytes)",
                y: "time (us)",
            },
            &[
                Series {
                    name: "type I (hierarchical k-nomial)".into(),
                    points: s1,
                },
                Series {
                    name: "type II (minimum-cost)".into(),
                    points: s2,
                },
            ],
            &ChartOpts {
                x_bytes: true,
                ..ChartOpts::default()
            },
        )?;
    }
    Ok(())
}
