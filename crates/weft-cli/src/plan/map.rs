//! `weft plan map`: a job's virtual torus on a physical torus with faulty or excluded nodes
//! (`weft_model::mapping::torus`), with the dilation and congestion it costs.

use super::output::{fixed, print_json, write_text, Table};
use super::Timing;
use std::path::PathBuf;
use weft_core::{Error, ErrorKind, Result};
use weft_model::mapping::{map_torus, Torus};
use weft_model::plan::rng::SplitMix64;

/// Arguments of `weft plan map`.
#[derive(clap::Args)]
pub(crate) struct MapArgs {
    /// The machine: a torus such as 16x16x16.
    #[arg(long)]
    torus: String,
    /// The job's virtual torus, such as 12x12x12 (fewer dimensions are padded with 1s).
    #[arg(long)]
    job: String,
    /// Nodes to leave out, one a line: a node index or coordinates `x,y,z`; `#` starts a
    /// comment.
    #[arg(long)]
    exclude: Option<PathBuf>,
    /// Also mark this fraction of the machine's nodes faulty, at random (see --seed).
    #[arg(long, default_value_t = 0.0)]
    faulty_fraction: f64,
    /// Seed of --faulty-fraction's choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the placement as CSV: virtual coordinates, physical node and coordinates.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Draw the dilation histogram (how many virtual edges take each number of hops) as a
    /// PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// How many virtual edges of `m` take each number of hops (index = hops, 0 to the largest
/// dilation; two virtual nodes never share a physical one, so index 0 stays 0).
fn dilation_histogram(torus: &Torus, m: &weft_model::mapping::TorusMap) -> Vec<u64> {
    let edges = weft_model::mapping::torus::virtual_edges(&m.virtual_torus);
    let mut count = vec![0u64; m.report.max_dilation as usize + 1];
    for (a, b) in edges {
        let hops = torus.distance(m.node_of[a as usize], m.node_of[b as usize]);
        count[hops as usize] += 1;
    }
    count
}

/// The nodes `text` (an --exclude file) names.
fn excluded(torus: &Torus, text: &str, file: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{file}:{}: {line:?}: {why}", n + 1),
            )
        };
        let fields: std::result::Result<Vec<u32>, _> =
            line.split(',').map(|f| f.trim().parse::<u32>()).collect();
        let fields = fields.map_err(|_| bad("expected a node index or coordinates x,y,z"))?;
        let node = match fields[..] {
            [i] if i < torus.nodes() => i,
            [_] => return Err(bad(&format!("the torus has {} nodes", torus.nodes()))),
            _ if fields.len() == torus.dims.len()
                && fields.iter().zip(&torus.dims).all(|(c, d)| c < d) =>
            {
                torus.index(&fields)
            }
            _ => {
                return Err(bad(&format!(
                    "not a node of {}",
                    weft_model::mapping::torus::shape(&torus.dims)
                )))
            }
        };
        out.push(node);
    }
    Ok(out)
}

pub(crate) fn run(args: MapArgs, timing: &mut Timing) -> Result<()> {
    let torus = Torus::parse(&args.torus)?;
    let job = Torus::parse(&args.job)?;
    if !(0.0..1.0).contains(&args.faulty_fraction) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "--faulty-fraction {}: expected a fraction in [0, 1)",
                args.faulty_fraction
            ),
        ));
    }
    let n = torus.nodes() as usize;
    let mut faulty = vec![false; n];
    if let Some(path) = &args.exclude {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        for node in excluded(&torus, &text, &path.display().to_string())? {
            faulty[node as usize] = true;
        }
    }
    let random = (args.faulty_fraction * n as f64).round() as usize;
    let mut order: Vec<u32> = (0..n as u32).collect();
    SplitMix64::new(args.seed).shuffle(&mut order);
    for &node in order.iter().take(random) {
        faulty[node as usize] = true;
    }
    let bad = faulty.iter().filter(|&&f| f).count();
    timing.phase("faults");
    let m = map_torus(&torus, &faulty, &job.dims)?;
    timing.phase("map");
    let r = &m.report;
    let shape = weft_model::mapping::torus::shape;
    if args.json {
        print_json(&serde_json::json!({
            "torus": shape(&torus.dims),
            "job": shape(&m.virtual_torus.dims),
            "faulty": bad,
            "healthy": n - bad,
            "strategy": r.strategy,
            "repaired": r.repaired,
            "edges": r.edges,
            "max_dilation": r.max_dilation,
            "mean_dilation": r.mean_dilation,
            "congestion": r.congestion,
            "node_of": m.node_of,
        }));
    } else {
        let mut t = Table::new(&[
            "torus",
            "job",
            "faulty",
            "strategy",
            "repaired",
            "edges",
            "max dilation",
            "mean dilation",
            "congestion",
        ]);
        t.row(vec![
            shape(&torus.dims),
            shape(&m.virtual_torus.dims),
            bad.to_string(),
            r.strategy.clone(),
            r.repaired.to_string(),
            r.edges.to_string(),
            r.max_dilation.to_string(),
            fixed(r.mean_dilation, 3),
            r.congestion.to_string(),
        ]);
        out!("{}", t.render());
    }
    if let Some(path) = &args.csv {
        let mut text = String::from("virtual,node,physical\n");
        for (v, &p) in m.node_of.iter().enumerate() {
            let c = |t: &Torus, i: u32| {
                t.coord(i)
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            text.push_str(&format!(
                "{},{p},{}\n",
                c(&m.virtual_torus, v as u32),
                c(&torus, p)
            ));
        }
        write_text(path, &text)?;
    }
    if let Some(path) = &args.plot {
        let count = dilation_histogram(&torus, &m);
        let title = format!(
            "{} on {} with {bad} faulty nodes: max dilation {}, mean {}",
            shape(&m.virtual_torus.dims),
            shape(&torus.dims),
            r.max_dilation,
            fixed(r.mean_dilation, 3)
        );
        crate::plot::bar_chart(
            path,
            &crate::plot::Labels {
                title: &title,
                x: "hops per virtual edge",
                y: "virtual edges",
            },
            &(1..count.len()).map(|h| h.to_string()).collect::<Vec<_>>(),
            &[(
                "virtual edges".into(),
                count[1..].iter().map(|&c| c as f64).collect(),
            )],
        )?;
    }
    Ok(())
}
