//! Assembling and validating a fabric: names, links, endpoints, faulty parts, connectivity.
//!
//! Generators and file parsers fill a `FabricBuilder`; `build` checks everything a planner
//! relies on (unique names, known switches, no self links, nodes on one switch, a connected
//! switch graph) and lays the graph out compactly. No I/O.

use super::Fabric;
use std::collections::{HashMap, HashSet};
use weft_core::{Error, ErrorKind, Result};

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// A fabric under construction.
#[derive(Clone, Debug, Default)]
pub struct FabricBuilder {
    switch_names: Vec<String>,
    switch_pod: Vec<u32>,
    has_pods: bool,
    links: Vec<(u32, u32)>,
    /// (name if any, switch, node key)
    endpoints: Vec<(Option<String>, u32, u64)>,
    removed_switches: HashSet<u32>,
    removed_links: HashSet<(u32, u32)>,
}

impl FabricBuilder {
    /// An empty builder; `has_pods` says whether pod ids are meaningful.
    pub fn new(has_pods: bool) -> Self {
        FabricBuilder {
            has_pods,
            ..Default::default()
        }
    }

    /// Adds a switch and returns its id.
    pub fn add_switch(&mut self, name: String, pod: u32) -> u32 {
        self.switch_names.push(name);
        self.switch_pod.push(pod);
        self.switch_names.len() as u32 - 1
    }

    /// Adds an undirected link between two switches (parallel links collapse into one).
    pub fn add_link(&mut self, a: u32, b: u32) {
        self.links.push((a.min(b), a.max(b)));
    }

    /// Adds an endpoint on `switch`, belonging to the node identified by `node_key`.
    pub fn add_endpoint(&mut self, name: Option<String>, switch: u32, node_key: u64) {
        self.endpoints.push((name, switch, node_key));
    }

    /// Number of switches so far.
    pub fn switch_count(&self) -> u32 {
        self.switch_names.len() as u32
    }

    fn switch_index(&self) -> HashMap<&str, u32> {
        self.switch_names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect()
    }

    /// Marks switches (by name) and links (`A-B`) as faulty: they are dropped by `build`,
    /// together with the endpoints of dropped switches.
    pub fn remove_faulty(&mut self, faulty: &[String]) -> Result<()> {
        let index = self.switch_index();
        let find = |name: &str| -> Result<u32> {
            index.get(name).copied().ok_or_else(|| {
                invalid(format!(
                    "faulty: {name:?} is not a switch of this fabric (e.g. {:?})",
                    self.switch_names.first().map(String::as_str).unwrap_or("")
                ))
            })
        };
        let mut switches = Vec::new();
        let mut links = Vec::new();
        for item in faulty {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            if index.contains_key(item) {
                switches.push(index[item]);
            } else if let Some((a, b)) = split_link(item, &index) {
                let key = (a.min(b), a.max(b));
                if !self.links.contains(&key) {
                    return Err(invalid(format!(
                        "faulty: there is no link {item:?} in this fabric"
                    )));
                }
                links.push(key);
            } else {
                find(item)?;
            }
        }
        self.removed_switches.extend(switches);
        self.removed_links.extend(links);
        Ok(())
    }

    /// Validates and lays out the fabric.
    pub fn build(self, description: &str) -> Result<Fabric> {
        let n = self.switch_names.len();
        if n == 0 {
            return Err(invalid("fabric: no switches".into()));
        }
        let mut seen = HashSet::new();
        for name in &self.switch_names {
            if !seen.insert(name.as_str()) {
                return Err(invalid(format!("switches: duplicate switch name {name:?}")));
            }
        }
        // Renumber the surviving switches densely.
        let mut new_id = vec![u32::MAX; n];
        let mut names = Vec::new();
        let mut pods = Vec::new();
        for (s, id) in new_id.iter_mut().enumerate() {
            if !self.removed_switches.contains(&(s as u32)) {
                *id = names.len() as u32;
                names.push(self.switch_names[s].clone());
                pods.push(self.switch_pod[s]);
            }
        }
        let kept = names.len();
        if kept == 0 {
            return Err(invalid("faulty: every switch is faulty".into()));
        }
        let mut edges: Vec<(u32, u32)> = Vec::with_capacity(self.links.len() * 2);
        for &(a, b) in &self.links {
            if a as usize >= n || b as usize >= n {
                return Err(invalid(format!(
                    "links: switch id {} out of range",
                    a.max(b)
                )));
            }
            if a == b {
                return Err(invalid(format!(
                    "links: self link on switch {:?}",
                    self.switch_names[a as usize]
                )));
            }
            if self.removed_links.contains(&(a, b)) {
                continue;
            }
            let (na, nb) = (new_id[a as usize], new_id[b as usize]);
            if na == u32::MAX || nb == u32::MAX {
                continue;
            }
            edges.push((na, nb));
            edges.push((nb, na));
        }
        edges.sort_unstable();
        edges.dedup();
        let mut adj_offsets = vec![0u32; kept + 1];
        for &(a, _) in &edges {
            adj_offsets[a as usize + 1] += 1;
        }
        for i in 0..kept {
            adj_offsets[i + 1] += adj_offsets[i];
        }
        let adj: Vec<u32> = edges.iter().map(|&(_, b)| b).collect();

        // Endpoints: drop those on removed switches; nodes renumbered in first-seen order.
        let mut endpoint_switch = Vec::with_capacity(self.endpoints.len());
        let mut endpoint_node = Vec::with_capacity(self.endpoints.len());
        let mut endpoint_names = Vec::new();
        let named = self.endpoints.iter().any(|e| e.0.is_some());
        let mut node_ids: HashMap<u64, (u32, u32)> = HashMap::new();
        let mut endpoint_seen = HashSet::new();
        for (name, switch, node_key) in &self.endpoints {
            if *switch as usize >= n {
                return Err(invalid(format!(
                    "endpoints: switch id {switch} out of range"
                )));
            }
            let s = new_id[*switch as usize];
            if s == u32::MAX {
                continue;
            }
            let next = node_ids.len() as u32;
            let (node, node_switch) = *node_ids.entry(*node_key).or_insert((next, s));
            if node_switch != s {
                return Err(invalid(format!(
                    "endpoints: node of endpoint {} has ports on switches {:?} and {:?}; a node's ports must share one switch",
                    name.clone().unwrap_or_else(|| format!("ep{}", endpoint_switch.len())),
                    names[node_switch as usize],
                    names[s as usize]
                )));
            }
            if named {
                let label = name
                    .clone()
                    .unwrap_or_else(|| format!("ep{}", endpoint_switch.len()));
                if !endpoint_seen.insert(label.clone()) {
                    return Err(invalid(format!(
                        "endpoints: duplicate endpoint name {label:?}"
                    )));
                }
                endpoint_names.push(label);
            }
            endpoint_switch.push(s);
            endpoint_node.push(node);
        }
        if endpoint_switch.is_empty() {
            return Err(invalid("endpoints: the fabric has no endpoints".into()));
        }
        let mut switch_endpoints_offsets = vec![0u32; kept + 1];
        for &s in &endpoint_switch {
            switch_endpoints_offsets[s as usize + 1] += 1;
        }
        for i in 0..kept {
            switch_endpoints_offsets[i + 1] += switch_endpoints_offsets[i];
        }
        let mut fill = switch_endpoints_offsets.clone();
        let mut switch_endpoints = vec![0u32; endpoint_switch.len()];
        for (e, &s) in endpoint_switch.iter().enumerate() {
            switch_endpoints[fill[s as usize] as usize] = e as u32;
            fill[s as usize] += 1;
        }
        let fabric = Fabric {
            description: description.to_string(),
            switch_names: names,
            switch_pod: pods,
            has_pods: self.has_pods,
            adj_offsets,
            adj,
            endpoint_switch,
            endpoint_node,
            endpoint_names: if named { Some(endpoint_names) } else { None },
            switch_endpoints_offsets,
            switch_endpoints,
        };
        check_connected(&fabric)?;
        Ok(fabric)
    }
}

/// Splits `A-B` at the first '-' where both halves name switches (names may contain '-').
fn split_link(item: &str, index: &HashMap<&str, u32>) -> Option<(u32, u32)> {
    item.match_indices('-').find_map(|(i, _)| {
        let (a, b) = (item[..i].trim(), item[i + 1..].trim());
        Some((*index.get(a)?, *index.get(b)?))
    })
}

fn check_connected(fabric: &Fabric) -> Result<()> {
    let dist = fabric.distances_from(0);
    if let Some(s) = dist.iter().position(|&d| d == super::UNREACHABLE) {
        return Err(invalid(format!(
            "fabric: disconnected: switch {:?} cannot reach switch {:?}",
            fabric.switch_name(s as u32),
            fabric.switch_name(0)
        )));
    }
    Ok(())
}
