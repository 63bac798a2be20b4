//! Fabric description files (TOML or JSON, same shape):
//!
//! ```toml
//! switches = [{ name = "s0", pod = 0 }, { name = "s1" }]
//! links = [["s0", "s1"]]
//! endpoints = [{ name = "n0p0", switch = "s0", node = "n0" }, { name = "n1", switch = "s1" }]
//! ```
//!
//! `pod` is optional (pods count only when at least one switch names one); `node` is optional
//! (each endpoint is its own node). The caller reads the file; this module only parses text.

use super::{Fabric, FabricBuilder};
use serde::Deserialize;
use std::collections::HashMap;
use weft_core::{Error, ErrorKind, Result};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSwitch {
    name: String,
    pod: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileEndpoint {
    name: String,
    switch: String,
    node: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFabric {
    switches: Vec<FileSwitch>,
    #[serde(default)]
    links: Vec<(String, String)>,
    endpoints: Vec<FileEndpoint>,
}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// Parses a TOML fabric description; `origin` names the file in messages and `faulty`
/// lists switches or `A-B` links to drop. The format:
///
/// ```toml
/// switches = [{ name = "s0", pod = 0 }, { name = "s1" }]   # pod optional
/// links = [["s0", "s1"]]                                  # undirected switch links
/// endpoints = [{ name = "n0p0", switch = "s0", node = "n0" }, { name = "e1", switch = "s1" }]
/// ```
///
/// `node` is optional (each endpoint is then its own node); a node's endpoints must share a
/// switch. JSON files have the same shape.
pub fn parse_fabric_toml(text: &str, origin: &str, faulty: &[String]) -> Result<Fabric> {
    let file: FileFabric = toml::from_str(text).map_err(|e| {
        invalid(format!(
            "fabric file {origin}: {}",
            one_line(&e.to_string())
        ))
    })?;
    from_file(file, origin, faulty)
}

/// Parses a JSON fabric description; `origin` names the file in messages.
pub fn parse_fabric_json(text: &str, origin: &str, faulty: &[String]) -> Result<Fabric> {
    let file: FileFabric =
        serde_json::from_str(text).map_err(|e| invalid(format!("fabric file {origin}: {e}")))?;
    from_file(file, origin, faulty)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn from_file(file: FileFabric, origin: &str, faulty: &[String]) -> Result<Fabric> {
    let has_pods = file.switches.iter().any(|s| s.pod.is_some());
    let mut b = FabricBuilder::new(has_pods);
    let mut ids = HashMap::new();
    for s in &file.switches {
        if s.name.is_empty() {
            return Err(invalid(format!(
                "fabric file {origin}: switches: empty name"
            )));
        }
        let id = b.add_switch(s.name.clone(), s.pod.unwrap_or(0));
        if ids.insert(s.name.as_str(), id).is_some() {
            return Err(invalid(format!(
                "fabric file {origin}: switches: duplicate switch name {:?}",
                s.name
            )));
        }
    }
    let find = |field: &str, name: &str| -> Result<u32> {
        ids.get(name).copied().ok_or_else(|| {
            invalid(format!(
                "fabric file {origin}: {field}: unknown switch {name:?}"
            ))
        })
    };
    for (a, b_name) in &file.links {
        let (x, y) = (find("links", a)?, find("links", b_name)?);
        if x == y {
            return Err(invalid(format!(
                "fabric file {origin}: links: self link on switch {a:?}"
            )));
        }
        b.add_link(x, y);
    }
    let mut nodes: HashMap<&str, u64> = HashMap::new();
    for (i, e) in file.endpoints.iter().enumerate() {
        let s = find("endpoints", &e.switch)?;
        let key = match &e.node {
            Some(n) => {
                let next = nodes.len() as u64;
                *nodes.entry(n.as_str()).or_insert(next)
            }
            // Unnamed nodes get keys far above the named ones so they never collide.
            None => (1u64 << 40) + i as u64,
        };
        b.add_endpoint(Some(e.name.clone()), s, key);
    }
    b.remove_faulty(faulty)?;
    b.build(&format!("file {origin}"))
        .map_err(|e| e.context(format!("fabric file {origin}")))
}
