//! Fabric generator strings and the generators behind them:
//! `fat-tree:leaves=L,spines=S,endpoints-per-leaf=E[,uplinks-per-leaf=U][,ports-per-node=N][,pods=P,cores=C]`,
//! `torus:dims=AxBxC[xDxExF][,endpoints-per-router=E]` and
//! `dragonfly:groups=G,routers=R,endpoints-per-router=E`.
//!
//! Wiring rules (so results can be reproduced by hand):
//! - fat tree: leaf `i`'s uplink `j` (0 ≤ j < U) goes to spine `(i + j) mod S` of its pod (windows of
//!   consecutive spines overlap, so a pruned tree with U ≥ 2 stays connected);
//!   with pods, spine `j` connects to core `c` when `j mod m = c mod m`, `m = min(S, C)`;
//!   a node's `N` ports are consecutive endpoints of one leaf.
//! - torus: one router per coordinate, wrap-around links in every dimension of size > 1;
//!   a router's endpoints form one node (a host with an integrated router).
//! - dragonfly: routers of a group are all-to-all; groups `g` and `h` share one global link,
//!   on router `(((h − g) mod G) − 1) mod R` of group `g`.
//!
//! No I/O.

use super::FabricBuilder;
use weft_core::{Error, ErrorKind, Result};

/// Largest number of endpoints, switches or links a generator may produce: far above any
/// machine we plan for, low enough that a typo cannot exhaust memory.
const MAX_ELEMENTS: u64 = 16_000_000;

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

/// A parsed generator string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FabricSpec {
    /// A 2-level (or, with pods, 3-level) folded Clos.
    FatTree {
        /// Leaf switches (per pod when `pods` is set).
        leaves: u32,
        /// Spine (aggregation) switches (per pod when `pods` is set).
        spines: u32,
        /// Endpoint ports per leaf switch.
        endpoints_per_leaf: u32,
        /// Uplinks per leaf (≤ spines); fewer than `spines` prunes the tree.
        uplinks_per_leaf: u32,
        /// Ports per node (consecutive endpoints of one leaf).
        ports_per_node: u32,
        /// Pods and core switches for a 3-level tree.
        pods: Option<(u32, u32)>,
    },
    /// A torus with up to 6 dimensions.
    Torus {
        /// Size of each dimension.
        dims: Vec<u32>,
        /// Endpoints per router.
        endpoints_per_router: u32,
    },
    /// A dragonfly.
    Dragonfly {
        /// Groups.
        groups: u32,
        /// Routers per group.
        routers: u32,
        /// Endpoints per router.
        endpoints_per_router: u32,
    },
}

/// Parses a comma-separated `--faulty` list.
pub fn parse_faulty(list: &str) -> Vec<String> {
    list.split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

struct Fields<'a> {
    kind: &'a str,
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    fn parse(kind: &'a str, body: &'a str, allowed: &[&str]) -> Result<Self> {
        let mut pairs = Vec::new();
        for item in body.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| invalid(format!("fabric {kind}: {item:?} is not key=value")))?;
            let k = k.trim();
            if !allowed.contains(&k) {
                return Err(invalid(format!(
                    "fabric {kind}: unknown field {k:?} (expected one of {})",
                    allowed.join(", ")
                )));
            }
            if pairs.iter().any(|(seen, _)| *seen == k) {
                return Err(invalid(format!("fabric {kind}: field {k:?} given twice")));
            }
            pairs.push((k, v.trim()));
        }
        Ok(Fields { kind, pairs })
    }

    fn number(&self, key: &str, min: u32) -> Result<Option<u32>> {
        let Some((_, v)) = self.pairs.iter().find(|(k, _)| *k == key) else {
            return Ok(None);
        };
        let n: u32 = v.parse().map_err(|_| {
            invalid(format!(
                "fabric {}: field {key}={v:?} is not a non-negative integer",
                self.kind
            ))
        })?;
        if n < min {
            return Err(invalid(format!(
                "fabric {}: field {key}={n} must be at least {min}",
                self.kind
            )));
        }
        Ok(Some(n))
    }

    fn required(&self, key: &str, min: u32) -> Result<u32> {
        self.number(key, min)?
            .ok_or_else(|| invalid(format!("fabric {}: missing field {key}=", self.kind)))
    }
}

/// Parses a generator string.
pub fn parse_spec(spec: &str) -> Result<FabricSpec> {
    let (kind, body) = spec.split_once(':').ok_or_else(|| {
        invalid(format!(
            "fabric {spec:?}: expected fat-tree:…, torus:… or dragonfly:… (or a .toml/.json file)"
        ))
    })?;
    match kind.trim() {
        "fat-tree" => {
            let f = Fields::parse(
                "fat-tree",
                body,
                &[
                    "leaves",
                    "spines",
                    "endpoints-per-leaf",
                    "uplinks-per-leaf",
                    "ports-per-node",
                    "pods",
                    "cores",
                ],
            )?;
            let leaves = f.required("leaves", 1)?;
            let spines = f.required("spines", 1)?;
            let endpoints_per_leaf = f.required("endpoints-per-leaf", 1)?;
            let uplinks_per_leaf = f.number("uplinks-per-leaf", 1)?.unwrap_or(spines);
            if uplinks_per_leaf > spines {
                return Err(invalid(format!(
                    "fabric fat-tree: field uplinks-per-leaf={uplinks_per_leaf} exceeds spines={spines}"
                )));
            }
            let ports_per_node = f.number("ports-per-node", 1)?.unwrap_or(1);
            if endpoints_per_leaf % ports_per_node != 0 {
                return Err(invalid(format!(
                    "fabric fat-tree: field ports-per-node={ports_per_node} does not divide endpoints-per-leaf={endpoints_per_leaf}"
                )));
            }
            let pods = match (f.number("pods", 1)?, f.number("cores", 1)?) {
                (Some(p), Some(c)) => Some((p, c)),
                (None, None) => None,
                (Some(_), None) => {
                    return Err(invalid("fabric fat-tree: field pods= needs cores=".into()))
                }
                (None, Some(_)) => {
                    return Err(invalid("fabric fat-tree: field cores= needs pods=".into()))
                }
            };
            let total =
                leaves as u64 * endpoints_per_leaf as u64 * pods.map_or(1, |(p, _)| p as u64);
            if total > MAX_ELEMENTS {
                return Err(invalid(format!(
                    "fabric fat-tree: {total} endpoints is more than the planner's limit of {MAX_ELEMENTS}"
                )));
            }
            let pod_count = pods.map_or(1, |(p, _)| p as u64);
            let cores = pods.map_or(0, |(_, c)| c as u64);
            let switches = pod_count * (leaves as u64 + spines as u64) + cores;
            let links = pod_count * leaves as u64 * uplinks_per_leaf as u64
                + pod_count * spines as u64 * cores.max(1);
            if switches > MAX_ELEMENTS || links > MAX_ELEMENTS {
                return Err(invalid(format!(
                    "fabric fat-tree: {switches} switches and up to {links} links exceed the planner's limit of {MAX_ELEMENTS} (fields leaves, spines, pods, cores)"
                )));
            }
            Ok(FabricSpec::FatTree {
                leaves,
                spines,
                endpoints_per_leaf,
                uplinks_per_leaf,
                ports_per_node,
                pods,
            })
        }
        "torus" => {
            let f = Fields::parse("torus", body, &["dims", "endpoints-per-router"])?;
            let dims_text = f
                .pairs
                .iter()
                .find(|(k, _)| *k == "dims")
                .map(|(_, v)| *v)
                .ok_or_else(|| invalid("fabric torus: missing field dims=".into()))?;
            let mut dims = Vec::new();
            for part in dims_text.split('x') {
                let d: u32 = part.trim().parse().map_err(|_| {
                    invalid(format!(
                        "fabric torus: field dims={dims_text:?}: {part:?} is not a positive integer"
                    ))
                })?;
                if d == 0 {
                    return Err(invalid(format!(
                        "fabric torus: field dims={dims_text:?}: a dimension is 0"
                    )));
                }
                dims.push(d);
            }
            if dims.len() > 6 {
                return Err(invalid(format!(
                    "fabric torus: field dims={dims_text:?} has {} dimensions (at most 6)",
                    dims.len()
                )));
            }
            let routers: u64 = dims.iter().map(|&d| d as u64).product();
            let endpoints_per_router = f.number("endpoints-per-router", 1)?.unwrap_or(1);
            if routers * endpoints_per_router as u64 > MAX_ELEMENTS {
                return Err(invalid(format!(
                    "fabric torus: field dims={dims_text:?} gives more than {MAX_ELEMENTS} endpoints"
                )));
            }
            Ok(FabricSpec::Torus {
                dims,
                endpoints_per_router,
            })
        }
        "dragonfly" => {
            let f = Fields::parse(
                "dragonfly",
                body,
                &["groups", "routers", "endpoints-per-router"],
            )?;
            let groups = f.required("groups", 1)?;
            let routers = f.required("routers", 1)?;
            let endpoints_per_router = f.required("endpoints-per-router", 1)?;
            let (g, r) = (groups as u64, routers as u64);
            let links = g * (g - 1) / 2 + g * r * (r - 1) / 2;
            if g * r * endpoints_per_router as u64 > MAX_ELEMENTS || links > MAX_ELEMENTS {
                return Err(invalid(format!(
                    "fabric dragonfly: fields groups={groups}, routers={routers}, endpoints-per-router={endpoints_per_router} exceed the planner's limit of {MAX_ELEMENTS} endpoints or links"
                )));
            }
            Ok(FabricSpec::Dragonfly {
                groups,
                routers,
                endpoints_per_router,
            })
        }
        other => Err(invalid(format!(
            "fabric {spec:?}: unknown generator {other:?} (expected fat-tree, torus or dragonfly)"
        ))),
    }
}

impl FabricSpec {
    /// Lays the generated fabric out in a builder.
    pub fn builder(&self) -> Result<FabricBuilder> {
        match *self {
            FabricSpec::FatTree {
                leaves,
                spines,
                endpoints_per_leaf,
                uplinks_per_leaf,
                ports_per_node,
                pods,
            } => {
                let pod_count = pods.map_or(1, |(p, _)| p);
                let mut b = FabricBuilder::new(pods.is_some());
                let mut spine_ids = Vec::new();
                for p in 0..pod_count {
                    let prefix = if pods.is_some() {
                        format!("pod{p}.")
                    } else {
                        String::new()
                    };
                    let leaf0 = b.switch_count();
                    for i in 0..leaves {
                        b.add_switch(format!("{prefix}leaf{i}"), p);
                    }
                    let spine0 = b.switch_count();
                    for j in 0..spines {
                        b.add_switch(format!("{prefix}spine{j}"), p);
                    }
                    spine_ids.push(spine0);
                    for i in 0..leaves {
                        for j in 0..uplinks_per_leaf {
                            let s = ((i as u64 + j as u64) % spines as u64) as u32;
                            b.add_link(leaf0 + i, spine0 + s);
                        }
                        for e in 0..endpoints_per_leaf {
                            let global_leaf = (p as u64) * leaves as u64 + i as u64;
                            let node = global_leaf * (endpoints_per_leaf / ports_per_node) as u64
                                + (e / ports_per_node) as u64;
                            b.add_endpoint(None, leaf0 + i, node);
                        }
                    }
                }
                if let Some((_, cores)) = pods {
                    let core0 = b.switch_count();
                    for c in 0..cores {
                        b.add_switch(format!("core{c}"), pod_count);
                    }
                    let m = spines.min(cores);
                    for &spine0 in &spine_ids {
                        for j in 0..spines {
                            for c in 0..cores {
                                if j % m == c % m {
                                    b.add_link(spine0 + j, core0 + c);
                                }
                            }
                        }
                    }
                }
                Ok(b)
            }
            FabricSpec::Torus {
                ref dims,
                endpoints_per_router,
            } => {
                let mut b = FabricBuilder::new(false);
                let count: u32 = dims.iter().product();
                let coords = |mut r: u32| -> Vec<u32> {
                    dims.iter()
                        .map(|&d| {
                            let c = r % d;
                            r /= d;
                            c
                        })
                        .collect()
                };
                for r in 0..count {
                    let name = coords(r)
                        .iter()
                        .map(u32::to_string)
                        .collect::<Vec<_>>()
                        .join("x");
                    b.add_switch(format!("r{name}"), 0);
                }
                let mut stride = 1u32;
                for &d in dims {
                    if d > 1 {
                        for r in 0..count {
                            let c = (r / stride) % d;
                            let next = r - c * stride + ((c + 1) % d) * stride;
                            b.add_link(r, next);
                        }
                    }
                    stride *= d;
                }
                for r in 0..count {
                    for _ in 0..endpoints_per_router {
                        b.add_endpoint(None, r, r as u64);
                    }
                }
                Ok(b)
            }
            FabricSpec::Dragonfly {
                groups,
                routers,
                endpoints_per_router,
            } => {
                let mut b = FabricBuilder::new(true);
                for g in 0..groups {
                    for r in 0..routers {
                        b.add_switch(format!("g{g}.r{r}"), g);
                    }
                }
                for g in 0..groups {
                    for r in 0..routers {
                        for q in r + 1..routers {
                            b.add_link(g * routers + r, g * routers + q);
                        }
                    }
                    for h in g + 1..groups {
                        let rg = ((h - g) % groups - 1) % routers;
                        let rh = ((g + groups - h) % groups - 1) % routers;
                        b.add_link(g * routers + rg, h * routers + rh);
                    }
                }
                let mut node = 0u64;
                for s in 0..groups * routers {
                    for _ in 0..endpoints_per_router {
                        b.add_endpoint(None, s, node);
                        node += 1;
                    }
                }
                Ok(b)
            }
        }
    }
}
