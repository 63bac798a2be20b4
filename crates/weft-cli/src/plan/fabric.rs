//! `weft plan fabric` and the `--fabric`/`--faulty` options every subcommand shares: a
//! generator string or a `.toml`/`.json` description file.

use super::output::{print_json, write_text, Table};
use super::Timing;
use std::path::PathBuf;
use weft_core::{Error, Result};
use weft_model::fabric::{parse_fabric_json, parse_fabric_toml, parse_faulty, Fabric};

/// Where the fabric comes from.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct FabricOpts {
    /// A generator (`fat-tree:leaves=L,spines=S,endpoints-per-leaf=E[,uplinks-per-leaf=U]
    /// [,ports-per-node=N][,pods=P,cores=C]`, `torus:dims=AxBxC`, `dragonfly:groups=G,
    /// routers=R,endpoints-per-router=E`) or a .toml/.json file.
    #[arg(long)]
    pub(crate) fabric: String,
    /// Faulty switches or links (`A-B`), comma-separated switch names.
    #[arg(long)]
    pub(crate) faulty: Option<String>,
}

impl FabricOpts {
    /// Builds the fabric (reading the file when `--fabric` names one).
    pub(crate) fn load(&self) -> Result<Fabric> {
        let faulty = self.faulty.as_deref().map(parse_faulty).unwrap_or_default();
        let spec = self.fabric.trim();
        let is_file = spec.ends_with(".toml") || spec.ends_with(".json");
        if is_file {
            let text = std::fs::read_to_string(spec).map_err(|e| {
                Error::new(
                    weft_core::ErrorKind::InvalidArgument,
                    format!("fabric file {spec}: {e}"),
                )
            })?;
            if spec.ends_with(".json") {
                parse_fabric_json(&text, spec, &faulty)
            } else {
                parse_fabric_toml(&text, spec, &faulty)
            }
        } else {
            Fabric::generate(spec, &faulty)
        }
    }
}

/// Arguments of `weft plan fabric`.
#[derive(clap::Args)]
pub(crate) struct FabricArgs {
    #[command(flatten)]
    fabric: FabricOpts,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Write the switch graph as Graphviz.
    #[arg(long)]
    dot: Option<PathBuf>,
}

pub(crate) fn run(args: FabricArgs, timing: &mut Timing) -> Result<()> {
    let f = args.fabric.load()?;
    timing.phase("build fabric");
    let mut diameter = 0u16;
    // Eccentricity from every switch is O(S·(S+L)): fine for describing, capped for huge
    // fabrics where we report the eccentricity of switch 0 only.
    let exact = f.switch_count() <= 4096;
    let sources: Vec<u32> = if exact {
        (0..f.switch_count()).collect()
    } else {
        vec![0]
    };
    for s in sources {
        diameter = diameter.max(f.distances_from(s).into_iter().max().unwrap_or(0));
    }
    timing.phase("distances");
    let max_ports = (0..f.switch_count())
        .map(|s| f.neighbours(s).len() + f.switch_endpoints(s).len())
        .max()
        .unwrap_or(0);
    if args.json {
        print_json(&serde_json::json!({
            "fabric": f.description(),
            "switches": f.switch_count(),
            "endpoints": f.endpoint_count(),
            "nodes": f.node_count(),
            "switch_links": f.switch_link_count(),
            "pods": f.has_pods(),
            "switch_diameter": diameter,
            "switch_diameter_exact": exact,
            "max_switch_ports": max_ports,
        }));
    } else {
        let mut t = Table::new(&["property", "value"]);
        t.row(vec!["fabric".into(), f.description().into()]);
        t.row(vec!["switches".into(), f.switch_count().to_string()]);
        t.row(vec!["endpoints".into(), f.endpoint_count().to_string()]);
        t.row(vec!["nodes".into(), f.node_count().to_string()]);
        t.row(vec![
            "switch links".into(),
            f.switch_link_count().to_string(),
        ]);
        t.row(vec!["pods".into(), f.has_pods().to_string()]);
        t.row(vec![
            if exact {
                "switch diameter"
            } else {
                "eccentricity of switch 0"
            }
            .into(),
            diameter.to_string(),
        ]);
        t.row(vec!["most ports on a switch".into(), max_ports.to_string()]);
        out!("{}", t.render());
    }
    if let Some(path) = &args.dot {
        let mut dot = String::from("graph fabric {\n  node [shape=box];\n");
        for s in 0..f.switch_count() {
            for &n in f.neighbours(s) {
                if n > s {
                    dot.push_str(&format!(
                        "  \"{}\" -- \"{}\";\n",
                        f.switch_name(s),
                        f.switch_name(n)
                    ));
                }
            }
        }
        dot.push_str("}\n");
        write_text(path, &dot)?;
    }
    Ok(())
}
