//! `weft plan links`: place a type I tree (k-ary, k-nomial, hierarchical k-nomial) on a
//! fabric and report height, radius, inter-group packets per level and the busiest link.

use super::fabric::FabricOpts;
use super::output::{print_json, write_text, Table};
use super::Timing;
use std::path::PathBuf;
use weft_core::Result;
use weft_model::fabric::Fabric;
use weft_model::plan::{analyse_links, LinkReport, PlaceMethod, Placement, TreeShape};
use weft_model::tree::Tree;

/// Arguments of `weft plan links`.
#[derive(clap::Args)]
pub(crate) struct LinksArgs {
    #[command(flatten)]
    fabric: FabricOpts,
    /// Number of processes.
    #[arg(long)]
    procs: u64,
    /// kary:K, knomial:K or hier:K.
    #[arg(long)]
    tree: String,
    /// contiguous, round-robin or random:SEED.
    #[arg(long, default_value = "contiguous")]
    place: String,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also write the result as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write the tree as Graphviz (rank@endpoint, edges child -> parent).
    #[arg(long)]
    dot: Option<PathBuf>,
}

/// The report as a one-row table (shared with the experiment report).
pub(crate) fn report_table(rows: &[(String, LinkReport)]) -> Table {
    let mut headers = vec!["tree".to_string(), "height".into(), "radius".into()];
    if let Some((_, r)) = rows.first() {
        for l in &r.level_names {
            headers.push(format!("inter-{l} packets"));
        }
    }
    headers.push("max link packets".into());
    headers.push("max link".into());
    let refs: Vec<&str> = headers.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for (name, r) in rows {
        let mut cells = vec![name.clone(), r.height.to_string(), r.radius.to_string()];
        cells.extend(r.inter_group_packets.iter().map(u64::to_string));
        cells.push(r.max_link_packets.to_string());
        cells.push(r.max_link.clone());
        t.row(cells);
    }
    t
}

pub(crate) fn run(args: LinksArgs, timing: &mut Timing) -> Result<()> {
    let shape = TreeShape::parse(&args.tree)?;
    let place = PlaceMethod::parse(&args.place)?;
    let fabric = args.fabric.load()?;
    timing.phase("build fabric");
    let placement = Placement::new(&fabric, args.procs, place)?;
    let tree = shape.build(&fabric, &placement)?;
    timing.phase("build tree");
    let report = analyse_links(&fabric, &placement, &tree)?;
    timing.phase("route tree edges");
    if args.json {
        let inter: serde_json::Map<String, serde_json::Value> = report
            .level_names
            .iter()
            .zip(&report.inter_group_packets)
            .map(|(l, &n)| (l.to_string(), n.into()))
            .collect();
        print_json(&serde_json::json!({
            "height": report.height,
            "radius": report.radius,
            "inter_group_packets": inter,
            "max_link_packets": report.max_link_packets,
            "max_link": report.max_link,
        }));
    } else {
        out!(
            "{}",
            report_table(&[(shape.name(), report.clone())]).render()
        );
    }
    if let Some(path) = &args.csv {
        write_text(path, &report_table(&[(shape.name(), report)]).csv())?;
    }
    if let Some(path) = &args.dot {
        write_text(path, &tree_dot(&fabric, &placement, &tree))?;
    }
    Ok(())
}

fn tree_dot(fabric: &Fabric, placement: &Placement, tree: &Tree) -> String {
    let mut out = String::from("digraph tree {\n  rankdir=BT;\n");
    for r in 0..tree.size() {
        out.push_str(&format!(
            "  r{r} [label=\"{r}@{}\"];\n",
            fabric.endpoint_name(placement.endpoint(r))
        ));
        if let Some(p) = tree.parent(r) {
            out.push_str(&format!("  r{r} -> r{p};\n"));
        }
    }
    out.push_str("}\n");
    out
}
