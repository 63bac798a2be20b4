//! Placement of ranks on a fabric's endpoints: `contiguous` (rank i on endpoint i, so ranks
//! fill a node, then a leaf switch, then a pod), `round-robin` (rank i on the next switch in
//! turn: the first endpoint of every switch, then the second, …) and `random:SEED` (a seeded
//! shuffle). One rank per endpoint. Also derives the group levels (node ⊂ switch ⊂ pod) of
//! the placed ranks for hierarchical trees. No I/O.

use super::rng::SplitMix64;
use crate::fabric::Fabric;
use weft_core::{Error, ErrorKind, Result};

/// How ranks are laid on endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlaceMethod {
    /// Rank i on endpoint i.
    Contiguous,
    /// Ranks dealt over switches in turn.
    RoundRobin,
    /// A seeded random permutation of the endpoints.
    Random(u64),
}

impl PlaceMethod {
    /// Parses `contiguous`, `round-robin` or `random:SEED`.
    pub fn parse(text: &str) -> Result<PlaceMethod> {
        match text.trim() {
            "contiguous" => Ok(PlaceMethod::Contiguous),
            "round-robin" => Ok(PlaceMethod::RoundRobin),
            other => {
                if let Some(seed) = other.strip_prefix("random:") {
                    seed.trim().parse().map(PlaceMethod::Random).map_err(|_| {
                        Error::new(
                            ErrorKind::InvalidArgument,
                            format!("place: random seed {seed:?} is not an unsigned integer"),
                        )
                    })
                } else {
                    Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!(
                            "place: unknown placement {other:?} (expected contiguous, round-robin or random:SEED)"
                        ),
                    ))
                }
            }
        }
    }
}

/// Ranks `0..procs` mapped to endpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    endpoints: Vec<u32>,
}

/// Checks `procs` against the fabric's endpoint count.
pub fn check_procs(fabric: &Fabric, procs: u64) -> Result<u32> {
    if procs == 0 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "procs: must be at least 1".to_string(),
        ));
    }
    if procs > fabric.endpoint_count() as u64 {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "procs: {procs} processes but the fabric has only {} endpoints",
                fabric.endpoint_count()
            ),
        ));
    }
    Ok(procs as u32)
}

impl Placement {
    /// Places `procs` ranks on `fabric`.
    pub fn new(fabric: &Fabric, procs: u64, method: PlaceMethod) -> Result<Placement> {
        let procs = check_procs(fabric, procs)? as usize;
        let endpoints = match method {
            PlaceMethod::Contiguous => (0..procs as u32).collect(),
            PlaceMethod::RoundRobin => {
                let mut out = Vec::with_capacity(procs);
                let mut depth = 0usize;
                while out.len() < procs {
                    for s in 0..fabric.switch_count() {
                        if let Some(&e) = fabric.switch_endpoints(s).get(depth) {
                            out.push(e);
                            if out.len() == procs {
                                break;
                            }
                        }
                    }
                    depth += 1;
                }
                out
            }
            PlaceMethod::Random(seed) => {
                let mut all: Vec<u32> = (0..fabric.endpoint_count()).collect();
                SplitMix64::new(seed).shuffle(&mut all);
                all.truncate(procs);
                all
            }
        };
        Ok(Placement { endpoints })
    }

    /// A placement from an explicit rank → endpoint list (distinct, existing endpoints).
    pub fn from_endpoints(fabric: &Fabric, endpoints: Vec<u32>) -> Result<Placement> {
        let mut seen = vec![false; fabric.endpoint_count() as usize];
        for &e in &endpoints {
            fabric.check_endpoint(e)?;
            if std::mem::replace(&mut seen[e as usize], true) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("members: endpoint {e} listed twice"),
                ));
            }
        }
        Ok(Placement { endpoints })
    }

    /// Number of ranks.
    pub fn procs(&self) -> u32 {
        self.endpoints.len() as u32
    }

    /// The endpoint of `rank`.
    pub fn endpoint(&self, rank: u32) -> u32 {
        self.endpoints[rank as usize]
    }

    /// All endpoints in rank order.
    pub fn endpoints(&self) -> &[u32] {
        &self.endpoints
    }

    /// Group ids of every rank, innermost first: node, switch, then pod when the fabric has
    /// pods. Each level nests in the next by construction.
    pub fn group_levels(&self, fabric: &Fabric) -> Vec<Vec<u32>> {
        let node = self
            .endpoints
            .iter()
            .map(|&e| fabric.endpoint_node(e))
            .collect();
        let switch: Vec<u32> = self
            .endpoints
            .iter()
            .map(|&e| fabric.endpoint_switch(e))
            .collect();
        let mut levels = vec![node, switch.clone()];
        if fabric.has_pods() {
            levels.push(switch.iter().map(|&s| fabric.switch_pod(s)).collect());
        }
        levels
    }
}

/// Names of the group levels `group_levels` returns.
pub fn level_names(fabric: &Fabric) -> Vec<&'static str> {
    if fabric.has_pods() {
        vec!["node", "switch", "pod"]
    } else {
        vec!["node", "switch"]
    }
}
