//! Fabrics: graphs of endpoints (NIC ports) and switches, built from a generator string
//! (`fat-tree:…`, `torus:…`, `dragonfly:…`) or from a TOML/JSON description, plus
//! deterministic shortest-path unicast routing.
//!
//! Pure model code: no I/O (the CLI reads files and hands the text in), no `unsafe`, and no
//! dependency on the runtime or the tree builders. Every endpoint hangs off exactly one switch
//! (a NIC port has one cable), so all routing runs on the much smaller switch graph.
//!
//! Routing rule (documented because tree costs depend on it): a packet for destination `d`
//! at switch `x` moves to a neighbour one hop closer to `d`; when several are, the neighbours
//! are sorted by switch id and the one at index `key mod count` is taken, where `key` is the
//! destination endpoint's index (or the destination switch's id). Because the choice depends
//! only on the destination, all routes to one destination form a tree (like destination-based
//! forwarding tables) and different destinations spread over different spines (D-mod-k).

mod build;
mod file;
mod route;
mod spec;

pub use build::FabricBuilder;
pub use file::{parse_fabric_json, parse_fabric_toml};
pub use route::{DistanceCache, UNREACHABLE};
pub use spec::{parse_faulty, parse_spec, FabricSpec};

use weft_core::{Error, ErrorKind, Result};

/// A network: switches connected by links, with endpoints attached to switches.
///
/// Switch ids are `0..switch_count()`, endpoint indices `0..endpoint_count()`. Endpoints are
/// grouped into nodes (a node's ports sit on one switch) and switches into optional pods.
#[derive(Clone, Debug)]
pub struct Fabric {
    description: String,
    switch_names: Vec<String>,
    switch_pod: Vec<u32>,
    has_pods: bool,
    adj_offsets: Vec<u32>,
    adj: Vec<u32>,
    endpoint_switch: Vec<u32>,
    endpoint_node: Vec<u32>,
    endpoint_names: Option<Vec<String>>,
    switch_endpoints_offsets: Vec<u32>,
    switch_endpoints: Vec<u32>,
}

/// A vertex of the fabric graph, for naming links.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vertex {
    /// An endpoint (NIC port) by index.
    Endpoint(u32),
    /// A switch by id.
    Switch(u32),
}

impl Fabric {
    /// Builds a fabric from a generator string (`fat-tree:…`, `torus:…`, `dragonfly:…`),
    /// removing the `faulty` switches and links (names, `A-B` for a link).
    pub fn generate(spec: &str, faulty: &[String]) -> Result<Fabric> {
        let parsed = parse_spec(spec)?;
        let mut builder = parsed.builder()?;
        builder.remove_faulty(faulty)?;
        builder.build(spec)
    }

    /// A one-line description (the generator string or file summary).
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Number of switches.
    pub fn switch_count(&self) -> u32 {
        self.switch_names.len() as u32
    }

    /// Number of endpoints (NIC ports).
    pub fn endpoint_count(&self) -> u32 {
        self.endpoint_switch.len() as u32
    }

    /// Number of undirected switch-to-switch links.
    pub fn switch_link_count(&self) -> u64 {
        self.adj.len() as u64 / 2
    }

    /// Number of nodes (groups of endpoints of one host).
    pub fn node_count(&self) -> u32 {
        self.endpoint_node.iter().max().map_or(0, |m| m + 1)
    }

    /// Whether switches are grouped into pods (3-level fat trees, dragonfly groups).
    pub fn has_pods(&self) -> bool {
        self.has_pods
    }

    /// The pod of a switch (0 when the fabric has no pods).
    pub fn switch_pod(&self, switch: u32) -> u32 {
        self.switch_pod[switch as usize]
    }

    /// The name of a switch.
    pub fn switch_name(&self, switch: u32) -> &str {
        &self.switch_names[switch as usize]
    }

    /// Looks a switch up by name.
    pub fn switch_by_name(&self, name: &str) -> Option<u32> {
        self.switch_names
            .iter()
            .position(|n| n == name)
            .map(|i| i as u32)
    }

    /// The name of an endpoint (`ep<i>` unless a file named it).
    pub fn endpoint_name(&self, endpoint: u32) -> String {
        match &self.endpoint_names {
            Some(names) => names[endpoint as usize].clone(),
            None => format!("ep{endpoint}"),
        }
    }

    /// The name of a vertex.
    pub fn vertex_name(&self, v: Vertex) -> String {
        match v {
            Vertex::Endpoint(e) => self.endpoint_name(e),
            Vertex::Switch(s) => self.switch_name(s).to_string(),
        }
    }

    /// The switch an endpoint is cabled to.
    pub fn endpoint_switch(&self, endpoint: u32) -> u32 {
        self.endpoint_switch[endpoint as usize]
    }

    /// The node (host) an endpoint belongs to.
    pub fn endpoint_node(&self, endpoint: u32) -> u32 {
        self.endpoint_node[endpoint as usize]
    }

    /// Neighbour switches of a switch, sorted by id, without duplicates.
    pub fn neighbours(&self, switch: u32) -> &[u32] {
        let a = self.adj_offsets[switch as usize] as usize;
        let b = self.adj_offsets[switch as usize + 1] as usize;
        &self.adj[a..b]
    }

    /// Ports in use on a switch: links to other switches plus attached endpoints. This is the
    /// default degree limit of a type II tree (a switch cannot have more children than ports).
    pub fn switch_ports(&self, switch: u32) -> u32 {
        (self.neighbours(switch).len() + self.switch_endpoints(switch).len()) as u32
    }

    /// Endpoints attached to a switch, in index order.
    pub fn switch_endpoints(&self, switch: u32) -> &[u32] {
        let a = self.switch_endpoints_offsets[switch as usize] as usize;
        let b = self.switch_endpoints_offsets[switch as usize + 1] as usize;
        &self.switch_endpoints[a..b]
    }

    /// Checks that an endpoint index exists.
    pub fn check_endpoint(&self, endpoint: u32) -> Result<()> {
        if endpoint < self.endpoint_count() {
            Ok(())
        } else {
            Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "endpoint {endpoint}: the fabric has only {} endpoints",
                    self.endpoint_count()
                ),
            ))
        }
    }
}
