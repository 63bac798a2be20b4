//! `weft plan radix` (F(k) = (a + b·k)·log_k P, its optimum and near-optimal range, and the
//! curve) and `weft plan radix-table` (the range per message size from the cost-model
//! parameters, like seed 001's Table 2). The model itself is `weft_model::cost`.

use super::output::{fixed, print_json, write_text, Table};
use super::Timing;
use crate::plot::{line_chart_with, ChartOpts, Labels, Mark, Series};
use std::path::PathBuf;
use weft_core::{units::parse_bytes, Error, ErrorKind, Result};
use weft_model::cost::{f_us, optimal_radix_eps, AggregationParams};
use weft_model::plan::choose::sunway_like_params;

/// Arguments of `weft plan radix`.
#[derive(clap::Args)]
pub(crate) struct RadixArgs {
    /// Per-level fixed cost a, µs.
    #[arg(long, allow_negative_numbers = true)]
    a_us: f64,
    /// Per-child cost b, µs.
    #[arg(long, allow_negative_numbers = true)]
    b_us: f64,
    /// Number of processes P.
    #[arg(long)]
    procs: u32,
    /// Tolerance ε for [k_min, k_max], µs.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    epsilon_us: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write F(k) for k = 2..=min(P, 4096) as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw F(k) as a PNG line chart.
    #[arg(long)]
    plot: Option<PathBuf>,
}

fn check_inputs(a_us: f64, b_us: f64, procs: u32, epsilon_us: f64) -> Result<()> {
    let bad = |m: String| Err(Error::new(ErrorKind::InvalidArgument, m));
    if !(a_us.is_finite() && a_us >= 0.0) {
        return bad(format!("a-us: {a_us} must be a non-negative number"));
    }
    if !(b_us.is_finite() && b_us > 0.0) {
        return bad(format!("b-us: {b_us} must be a positive number"));
    }
    if procs < 2 {
        return bad(format!("procs: {procs} must be at least 2"));
    }
    if !(epsilon_us.is_finite() && epsilon_us >= 0.0) {
        return bad(format!(
            "epsilon-us: {epsilon_us} must be a non-negative number"
        ));
    }
    Ok(())
}

pub(crate) fn run(args: RadixArgs, timing: &mut Timing) -> Result<()> {
    check_inputs(args.a_us, args.b_us, args.procs, args.epsilon_us)?;
    let c = optimal_radix_eps(args.a_us, args.b_us, args.procs, args.epsilon_us);
    timing.phase("optimal radix");
    if args.json {
        print_json(&serde_json::json!({
            "k_opt": c.k_opt,
            "f_opt_us": c.f_opt_us,
            "k_min": c.k_min,
            "k_max": c.k_max,
        }));
    } else {
        let mut t = Table::new(&["k*", "F* (us)", "k_min", "k_max", "epsilon (us)"]);
        t.row(vec![
            c.k_opt.to_string(),
            fixed(c.f_opt_us, 4),
            c.k_min.to_string(),
            c.k_max.to_string(),
            args.epsilon_us.to_string(),
        ]);
        out!("{}", t.render());
    }
    // The curve is flat long before k = P on any real machine; 4096 points keep a typo'd P
    // from producing gigabytes of CSV.
    let curve: Vec<(f64, f64)> = (2..=args.procs.min(4096))
        .map(|k| (k as f64, f_us(args.a_us, args.b_us, args.procs, k)))
        .collect();
    if let Some(path) = &args.csv {
        let mut t = Table::new(&["k", "f_us"]);
        for (k, f) in &curve {
            t.row(vec![k.to_string(), f.to_string()]);
        }
        write_text(path, &t.csv())?;
    }
    if let Some(path) = &args.plot {
        let title = format!(
            "F(k), P = {}, a = {} us, b = {} us",
            args.procs, args.a_us, args.b_us
        );
        line_chart_with(
            path,
            &Labels {
                title: &title,
                x: "radix k",
                y: "F(k) (us)",
            },
            &[Series {
                name: "F(k)".into(),
                points: curve,
            }],
            &ChartOpts {
                log_x: true,
                marks: vec![Mark {
                    x: c.k_opt as f64,
                    label: format!(
                        "k* = {}, [k_min, k_max] = [{}, {}]",
                        c.k_opt, c.k_min, c.k_max
                    ),
                    band: Some((c.k_min as f64, c.k_max as f64)),
                }],
                ..ChartOpts::default()
            },
        )?;
    }
    Ok(())
}

/// The cost-model parameters in words, with units (for tables and reports).
pub(crate) fn describe_params(p: &weft_model::cost::AggregationParams) -> String {
    format!(
        "matching θ = {} us per child packet, store-and-forward {} us/B, reduction γ = {} \
         us/B, link latency {} us, {} hops per tree level",
        p.theta_us,
        p.store_forward_us_per_byte,
        p.gamma_us_per_byte,
        p.link_latency_us,
        p.hops_per_level
    )
}

/// Arguments of `weft plan radix-table`.
#[derive(clap::Args)]
pub(crate) struct RadixTableArgs {
    /// Number of processes P.
    #[arg(long, default_value_t = 512)]
    procs: u32,
    /// Message sizes (comma-separated, K/M suffixes allowed).
    #[arg(long, default_value = "8,64,256,1K,2K,4K,16K,64K")]
    sizes: String,
    /// Matching cost θ per child packet, µs (default: 0.008, see `sunway_like_params`).
    #[arg(long, allow_negative_numbers = true)]
    theta_us: Option<f64>,
    /// Store-and-forward cost per byte, µs (default 0.0001).
    #[arg(long, allow_negative_numbers = true)]
    store_forward_us_per_byte: Option<f64>,
    /// Reduction cost γ per byte, µs (default 0.00015).
    #[arg(long, allow_negative_numbers = true)]
    gamma_us_per_byte: Option<f64>,
    /// Latency of one link, µs (default 0.28).
    #[arg(long, allow_negative_numbers = true)]
    link_latency_us: Option<f64>,
    /// Links a packet crosses per tree level (default 4).
    #[arg(long, allow_negative_numbers = true)]
    hops_per_level: Option<f64>,
    /// Tolerance ε, µs.
    #[arg(long, default_value_t = 0.1, allow_negative_numbers = true)]
    epsilon_us: f64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the table as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Plot k*, k_min and k_max against message size.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Parses `8,64,1K` into byte counts.
pub(crate) fn parse_sizes(text: &str) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let b = parse_bytes(item).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("sizes: {}", e.message()),
            )
        })?;
        out.push(b);
    }
    if out.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "sizes: the list is empty".to_string(),
        ));
    }
    Ok(out)
}

/// The cost-model parameters with command-line overrides.
pub(crate) fn params_from(
    theta_us: Option<f64>,
    store_forward_us_per_byte: Option<f64>,
    gamma_us_per_byte: Option<f64>,
    link_latency_us: Option<f64>,
    hops_per_level: Option<f64>,
) -> Result<AggregationParams> {
    let mut p = sunway_like_params();
    let fields = [
        ("theta-us", theta_us, &mut p.theta_us),
        (
            "store-forward-us-per-byte",
            store_forward_us_per_byte,
            &mut p.store_forward_us_per_byte,
        ),
        (
            "gamma-us-per-byte",
            gamma_us_per_byte,
            &mut p.gamma_us_per_byte,
        ),
        ("link-latency-us", link_latency_us, &mut p.link_latency_us),
    ];
    for (name, value, slot) in fields {
        if let Some(v) = value {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("{name}: {v} must be a non-negative number"),
                ));
            }
            *slot = v;
        }
    }
    if let Some(h) = hops_per_level {
        if !(h.is_finite() && h >= 0.0) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("hops-per-level: {h} must be a non-negative number"),
            ));
        }
        p.hops_per_level = h as _;
    }
    Ok(p)
}

pub(crate) fn run_table(args: RadixTableArgs, timing: &mut Timing) -> Result<()> {
    let sizes = parse_sizes(&args.sizes)?;
    let params = params_from(
        args.theta_us,
        args.store_forward_us_per_byte,
        args.gamma_us_per_byte,
        args.link_latency_us,
        args.hops_per_level,
    )?;
    if args.procs < 2 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("procs: {} must be at least 2", args.procs),
        ));
    }
    let mut t = Table::new(&[
        "bytes", "a (us)", "b (us)", "k*", "F* (us)", "k_min", "k_max",
    ]);
    let mut json_rows = Vec::new();
    let mut points = (Vec::new(), Vec::new(), Vec::new());
    for &bytes in &sizes {
        let (a, b) = params.a_b_for_bytes(bytes);
        check_inputs(a, b, args.procs, args.epsilon_us).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("size {bytes}: the parameters give {}", e.message()),
            )
        })?;
        let c = optimal_radix_eps(a, b, args.procs, args.epsilon_us);
        t.row(vec![
            bytes.to_string(),
            fixed(a, 3),
            fixed(b, 5),
            c.k_opt.to_string(),
            fixed(c.f_opt_us, 3),
            c.k_min.to_string(),
            c.k_max.to_string(),
        ]);
        json_rows.push(serde_json::json!({
            "bytes": bytes, "a_us": a, "b_us": b, "k_opt": c.k_opt,
            "f_opt_us": c.f_opt_us, "k_min": c.k_min, "k_max": c.k_max,
        }));
        points.0.push((bytes as f64, c.k_opt as f64));
        points.1.push((bytes as f64, c.k_min as f64));
        points.2.push((bytes as f64, c.k_max as f64));
    }
    timing.phase("radix table");
    if args.json {
        print_json(&serde_json::Value::Array(json_rows));
    } else {
        outln!(
            "parameters: {}, P = {}, epsilon = {} us",
            describe_params(&params),
            args.procs,
            args.epsilon_us
        );
        out!("{}", t.render());
    }
    if let Some(path) = &args.csv {
        write_text(path, &t.csv())?;
    }
    if let Some(path) = &args.plot {
        let title = format!("radix range per message size, P = {}", args.procs);
        line_chart_with(
            path,
            &Labels {
                title: &title,
                x: "message size (bytes)",
                y: "radix k",
            },
            &[
                Series {
                    name: "k*".into(),
                    points: points.0,
                },
                Series {
                    name: "k_min".into(),
                    points: points.1,
                },
                Series {
                    name: "k_max".into(),
                    points: points.2,
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
