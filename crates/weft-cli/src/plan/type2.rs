//! `weft plan type2`: root selection, physical tree and minimum-cost derived tree for one
//! member set, with both trees' switch counts and a Graphviz drawing.

use super::fabric::FabricOpts;
use super::output::{print_json, write_text, Table};
use super::{check_degree, Timing};
use std::path::PathBuf;
use weft_core::{Error, ErrorKind, Result};
use weft_model::fabric::Fabric;
use weft_model::plan::{
    cost_lower_bound, min_cost_tree, DerivedTree, PhysicalTree, PlaceMethod, Placement,
    Type2Planner,
};

/// Arguments of `weft plan type2`.
#[derive(clap::Args)]
pub(crate) struct Type2Args {
    #[command(flatten)]
    fabric: FabricOpts,
    /// Member endpoints: indices and ranges, e.g. `0-15,32,40-47`.
    #[arg(long, conflicts_with = "procs")]
    members: Option<String>,
    /// Or: this many ranks placed with `--place`.
    #[arg(long)]
    procs: Option<u64>,
    /// Placement for `--procs`: contiguous, round-robin or random:SEED.
    #[arg(long, default_value = "contiguous")]
    place: String,
    /// Most children a switch may have in the derived tree (default: its port count).
    #[arg(long)]
    degree: Option<u32>,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write both trees as Graphviz (physical dashed grey, minimum-cost bold).
    #[arg(long)]
    dot: Option<PathBuf>,
}

/// Parses `0-15,32` into endpoint indices.
pub(crate) fn parse_members(text: &str) -> Result<Vec<u32>> {
    let bad = |item: &str| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("members: {item:?} is not an endpoint index or a range A-B"),
        )
    };
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if let Some((a, b)) = item.split_once('-') {
            let a: u32 = a.trim().parse().map_err(|_| bad(item))?;
            let b: u32 = b.trim().parse().map_err(|_| bad(item))?;
            if b < a || b - a > 50_000_000 {
                return Err(bad(item));
            }
            out.extend(a..=b);
        } else {
            out.push(item.parse().map_err(|_| bad(item))?);
        }
    }
    if out.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "members: the list is empty".to_string(),
        ));
    }
    Ok(out)
}

pub(crate) fn run(args: Type2Args, timing: &mut Timing) -> Result<()> {
    if let Some(d) = args.degree {
        check_degree(d)?;
    }
    let fabric = args.fabric.load()?;
    timing.phase("build fabric");
    let members = match (&args.members, args.procs) {
        (Some(list), _) => Placement::from_endpoints(&fabric, parse_members(list)?)?
            .endpoints()
            .to_vec(),
        (None, Some(p)) => Placement::new(&fabric, p, PlaceMethod::parse(&args.place)?)?
            .endpoints()
            .to_vec(),
        (None, None) => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "members: give --members LIST or --procs P".to_string(),
            ))
        }
    };
    let mut planner = Type2Planner::new(&fabric, 256 << 20);
    let load = vec![0u32; fabric.switch_count() as usize];
    let (hops, candidates) = planner.root_candidates(&members, &load);
    let root = candidates[0];
    let physical = planner.physical_tree(root, &members);
    timing.phase("root and physical tree");
    let capacity: Vec<u32> = (0..physical.switch_count())
        .map(|i| {
            args.degree
                .unwrap_or_else(|| fabric.switch_ports(physical.switch(i)))
        })
        .collect();
    let derived = min_cost_tree(&physical, &capacity).ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "degree: the {} switches of the physical tree, at most {} children each, cannot hold {} members",
                physical.switch_count(),
                capacity.iter().max().copied().unwrap_or(0),
                members.len()
            ),
        )
    })?;
    timing.phase("minimum-cost tree");
    let plain = physical.as_derived();
    let widest = capacity.iter().max().copied().unwrap_or(2);
    let bound = cost_lower_bound(members.len() as u32, widest);
    if args.json {
        print_json(&serde_json::json!({
            "root": fabric.switch_name(root),
            "max_hops": hops,
            "root_candidates": candidates.len(),
            "members": members.len(),
            "degree": args.degree.unwrap_or(widest),
            "physical_switches": physical.switch_count(),
            "physical_height": plain.height(),
            "physical_max_children": plain.max_children(),
            "mincost_switches": derived.cost(),
            "mincost_height": derived.height(),
            "mincost_max_children": derived.max_children(),
            "lower_bound": bound,
        }));
    } else {
        let mut t = Table::new(&["tree", "switches", "height", "max children"]);
        t.row(vec![
            "physical".into(),
            physical.switch_count().to_string(),
            plain.height().to_string(),
            plain.max_children().to_string(),
        ]);
        t.row(vec![
            "min-cost".into(),
            derived.cost().to_string(),
            derived.height().to_string(),
            derived.max_children().to_string(),
        ]);
        outln!(
            "root {} ({} hops to the farthest of {} members; {} candidate roots), degree {}, lower bound {} switches",
            fabric.switch_name(root),
            hops,
            members.len(),
            candidates.len(),
            args.degree
                .map_or_else(|| format!("= ports (up to {widest})"), |d| d.to_string()),
            bound
        );
        out!("{}", t.render());
    }
    if let Some(path) = &args.dot {
        write_text(path, &dot(&fabric, &physical, &derived))?;
    }
    Ok(())
}

/// Graphviz of both trees: physical edges dashed grey, derived edges bold; kept switches
/// filled.
pub(crate) fn dot(fabric: &Fabric, t: &PhysicalTree, a: &DerivedTree) -> String {
    let mut out = String::from("digraph type2 {\n  rankdir=BT;\n  node [shape=box];\n");
    for i in 0..t.switch_count() {
        let name = fabric.switch_name(t.switch(i));
        let style = if a.kept(i) {
            ", style=filled, fillcolor=lightblue"
        } else {
            ""
        };
        out.push_str(&format!("  \"{name}\" [label=\"{name}\"{style}];\n"));
        if let Some(p) = t.parent(i) {
            out.push_str(&format!(
                "  \"{name}\" -> \"{}\" [style=dashed, color=grey];\n",
                fabric.switch_name(t.switch(p))
            ));
        }
        if let Some(p) = a.switch_parent(i) {
            out.push_str(&format!(
                "  \"{name}\" -> \"{}\" [penwidth=2.5];\n",
                fabric.switch_name(t.switch(p))
            ));
        }
    }
    for (m, &e) in t.members().iter().enumerate() {
        let name = fabric.endpoint_name(e);
        out.push_str(&format!("  \"{name}\" [shape=ellipse];\n"));
        out.push_str(&format!(
            "  \"{name}\" -> \"{}\" [style=dashed, color=grey];\n",
            fabric.switch_name(t.switch(t.member_switch(m as u32)))
        ));
        out.push_str(&format!(
            "  \"{name}\" -> \"{}\" [penwidth=2.5];\n",
            fabric.switch_name(t.switch(a.member_parent(m as u32)))
        ));
    }
    out.push_str("}\n");
    out
}
