//! Type I trees on a placement and what they cost the fabric: height, radius (fabric links
//! on the longest leaf-to-root path), tree edges crossing each group level (node, switch,
//! pod), and the busiest directed link when every rank sends one aggregation packet to its
//! parent along the fabric's unicast route.
//!
//! The trees come from `crate::tree` (the builders the live collectives use); this module
//! only places and routes them. Rank 0 is the root. No I/O.

use super::place::{level_names, Placement};
use crate::fabric::{DistanceCache, Fabric, Vertex};
use crate::tree::{hierarchical_knomial, inter_group_edges, kary, knomial, GroupLevels, Tree};
use std::collections::HashMap;
use weft_core::{Error, ErrorKind, Result};

/// A type I tree shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TreeShape {
    /// k-ary, breadth-first numbering.
    Kary(u32),
    /// k-nomial.
    Knomial(u32),
    /// Minimum-height hierarchical k-nomial over node ⊂ switch ⊂ pod.
    Hier(u32),
}

impl TreeShape {
    /// Parses `kary:K`, `knomial:K` or `hier:K` (K ≥ 2).
    pub fn parse(text: &str) -> Result<TreeShape> {
        let bad = || {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("tree: {text:?} is not kary:K, knomial:K or hier:K"),
            )
        };
        let (kind, k) = text.trim().split_once(':').ok_or_else(bad)?;
        let k: u32 = k.trim().parse().map_err(|_| bad())?;
        if k < 2 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("tree: radix {k} in {text:?} is below 2"),
            ));
        }
        match kind.trim() {
            "kary" => Ok(TreeShape::Kary(k)),
            "knomial" => Ok(TreeShape::Knomial(k)),
            "hier" => Ok(TreeShape::Hier(k)),
            _ => Err(bad()),
        }
    }

    /// The shape as written on the command line.
    pub fn name(self) -> String {
        match self {
            TreeShape::Kary(k) => format!("kary:{k}"),
            TreeShape::Knomial(k) => format!("knomial:{k}"),
            TreeShape::Hier(k) => format!("hier:{k}"),
        }
    }

    /// Builds the tree over the placed ranks, rooted at rank 0.
    pub fn build(self, fabric: &Fabric, placement: &Placement) -> Result<Tree> {
        let p = placement.procs();
        match self {
            TreeShape::Kary(k) => kary(p, k, 0),
            TreeShape::Knomial(k) => knomial(p, k, 0),
            TreeShape::Hier(k) => {
                let levels = GroupLevels::new(placement.group_levels(fabric))?;
                hierarchical_knomial(&levels, k, None, 0)
            }
        }
    }
}

/// Link analysis of one placed tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkReport {
    /// Edges on the longest root-to-leaf path.
    pub height: u32,
    /// Fabric links on the longest leaf-to-root path.
    pub radius: u32,
    /// Level names, innermost first (`node`, `switch`, `pod`).
    pub level_names: Vec<&'static str>,
    /// Tree edges crossing each level's group boundaries (= inter-group packets per
    /// aggregation).
    pub inter_group_packets: Vec<u64>,
    /// Packets on the busiest directed link.
    pub max_link_packets: u64,
    /// The busiest link as `from->to` (lowest pair in vertex order on ties; empty when no
    /// packet crosses the fabric).
    pub max_link: String,
    /// Link traversals over all packets.
    pub total_link_packets: u64,
}

fn vertex_key(fabric: &Fabric, v: Vertex) -> u64 {
    match v {
        Vertex::Endpoint(e) => e as u64,
        Vertex::Switch(s) => fabric.endpoint_count() as u64 + s as u64,
    }
}

fn key_vertex(fabric: &Fabric, key: u64) -> Vertex {
    let e = fabric.endpoint_count() as u64;
    if key < e {
        Vertex::Endpoint(key as u32)
    } else {
        Vertex::Switch((key - e) as u32)
    }
}

/// Routes every tree edge (child → parent) and measures the tree; see the module docs.
pub fn analyse_links(fabric: &Fabric, placement: &Placement, tree: &Tree) -> Result<LinkReport> {
    if tree.size() != placement.procs() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "tree: {} ranks but {} placed processes",
                tree.size(),
                placement.procs()
            ),
        ));
    }
    let levels = GroupLevels::new(placement.group_levels(fabric))?;
    let inter = inter_group_edges(tree, &levels);
    let mut cache = DistanceCache::new(fabric, 256 << 20);
    let vertices = fabric.endpoint_count() as u64 + fabric.switch_count() as u64;
    let mut load: HashMap<u64, u64> = HashMap::new();
    let mut total = 0u64;
    // Radius: walk ranks top-down so a parent's distance to the root is known first.
    let mut to_root = vec![0u32; tree.size() as usize];
    let mut queue = std::collections::VecDeque::from([tree.root()]);
    let mut radius = 0;
    while let Some(r) = queue.pop_front() {
        for &c in tree.children(r) {
            let route = fabric.route(placement.endpoint(c), placement.endpoint(r), &mut cache);
            let links = route.len().saturating_sub(1) as u32;
            // Endpoints of one node talk through memory: their 2-vertex route is no link.
            let fabric_links = if fabric.endpoint_node(placement.endpoint(c))
                == fabric.endpoint_node(placement.endpoint(r))
            {
                0
            } else {
                links
            };
            if fabric_links > 0 {
                for w in route.windows(2) {
                    let key = vertex_key(fabric, w[0]) * vertices + vertex_key(fabric, w[1]);
                    *load.entry(key).or_insert(0) += 1;
                    total += 1;
                }
            }
            to_root[c as usize] = to_root[r as usize] + fabric_links;
            radius = radius.max(to_root[c as usize]);
            queue.push_back(c);
        }
    }
    let (max_key, max_link_packets) = load
        .iter()
        .map(|(&k, &v)| (k, v))
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .unwrap_or((0, 0));
    let max_link = if max_link_packets == 0 {
        String::new()
    } else {
        format!(
            "{}->{}",
            fabric.vertex_name(key_vertex(fabric, max_key / vertices)),
            fabric.vertex_name(key_vertex(fabric, max_key % vertices))
        )
    };
    Ok(LinkReport {
        height: tree.height(),
        radius,
        level_names: level_names(fabric),
        inter_group_packets: inter,
        max_link_packets,
        max_link,
        total_link_packets: total,
    })
}
