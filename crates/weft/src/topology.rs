//! The node's topology as hwloc sees it (through the `hwlocality` bindings), reduced to what
//! the hierarchical collectives need: which *core group* a rank runs in, a core group being
//! the finest of the L3 caches, NUMA nodes and packages that splits the node into two or
//! more parts (docs/topology.md).
//!
//! The topology is this machine's, or one given by `WEFT_TOPOLOGY`: an hwloc synthetic
//! description (`synthetic:package:2 core:4 pu:1`) or the path of an hwloc XML file. On the
//! real machine a rank's CPUs are the one it will be pinned to (`WEFT_BIND`, [`bind`]) or,
//! unpinned, every CPU it may run on; a rank whose CPUs span two groups is in none. With a
//! given topology nothing is bound: local rank `l` is taken to run on the PU of logical
//! index `l mod PUs`, so a small machine can stand in for a bigger node in tests.
//!
//! Depends on hwloc (the system's libhwloc) and [`bind`]. A topology given by the knob that
//! hwloc cannot read is the user's error ([`NoGroup::BadTopology`]: the caller stops the
//! job); this machine's topology failing to load only leaves the rank in no group.

use crate::bind;
use crate::config::BindMode;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;

/// The core group a rank runs in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CoreGroup {
    /// What the groups are: `L3`, `NUMA` or `package`.
    pub kind: &'static str,
    /// The group's index among the node's groups of that kind (hwloc's logical index).
    pub index: u32,
    /// How many such groups the node has.
    pub count: u32,
}

/// Why a rank has no core group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum NoGroup {
    /// The topology `WEFT_TOPOLOGY` gives cannot be read: the message names it.
    BadTopology(String),
    /// The topology was read but puts the rank in no group, or this machine's could not be
    /// read: why.
    None(String),
}

impl std::fmt::Display for NoGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoGroup::BadTopology(why) | NoGroup::None(why) => f.write_str(why),
        }
    }
}

/// Where the topology comes from (`WEFT_TOPOLOGY`).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source<'a> {
    /// This machine's.
    Machine,
    /// An hwloc synthetic description.
    Synthetic(&'a str),
    /// An hwloc XML file.
    Xml(&'a str),
}

fn source(spec: &str) -> Source<'_> {
    let spec = spec.trim();
    if spec.is_empty() {
        Source::Machine
    } else if let Some(d) = spec.strip_prefix("synthetic:") {
        Source::Synthetic(d.trim().trim_matches('"'))
    } else {
        Source::Xml(spec)
    }
}

/// The core group of local rank `local` of `local_size` under the topology `spec`
/// (`WEFT_TOPOLOGY`) and binding `mode`; `Err` says why there is none (a given topology
/// hwloc cannot read; no hwloc data, the rank's CPUs span groups, the node is one group).
pub(crate) fn core_group(
    spec: &str,
    mode: BindMode,
    local: u32,
    local_size: u32,
) -> Result<CoreGroup, NoGroup> {
    let given = source(spec) != Source::Machine;
    // The bindings treat an hwloc error they did not expect as a bug (a panic).
    let found = std::panic::catch_unwind(|| {
        let topo = load(&source(spec)).map_err(|e| {
            if given {
                NoGroup::BadTopology(e)
            } else {
                NoGroup::None(e)
            }
        })?;
        read_group(&topo, spec, mode, local, local_size).map_err(NoGroup::None)
    });
    found.unwrap_or_else(|_| {
        let e = "hwloc failed unexpectedly".to_string();
        Err(if given {
            NoGroup::BadTopology(format!("WEFT_TOPOLOGY={spec}: {e}"))
        } else {
            NoGroup::None(e)
        })
    })
}

fn read_group(
    topo: &Topology,
    spec: &str,
    mode: BindMode,
    local: u32,
    local_size: u32,
) -> Result<CoreGroup, String> {
    let src = source(spec);
    // The rank's CPUs (OS indices).
    let cpus: Vec<usize> = match src {
        Source::Machine => match bind::cpu_for(mode, local, local_size) {
            Some(cpu) => vec![cpu],
            None => bind::allowed_cpus().to_vec(),
        },
        Source::Synthetic(_) | Source::Xml(_) => {
            let pus: Vec<&TopologyObject> = topo.objects_with_type(ObjectType::PU).collect();
            if pus.is_empty() {
                return Err("the topology has no PU".into());
            }
            let pu = pus[local as usize % pus.len()];
            vec![pu.os_index().ok_or("the topology's PU has no OS index")?]
        }
    };
    group_of(topo, &cpus)
}

fn load(src: &Source<'_>) -> Result<Topology, String> {
    let b = Topology::builder();
    let b = match *src {
        Source::Machine => b,
        Source::Synthetic(d) => b
            .from_synthetic(d)
            .map_err(|e| format!("WEFT_TOPOLOGY=synthetic:{d}: hwloc refused it: {e}"))?,
        Source::Xml(path) => {
            let xml = std::fs::read_to_string(path)
                .map_err(|e| format!("WEFT_TOPOLOGY={path}: could not read it: {e}"))?;
            b.from_xml(&xml)
                .map_err(|e| format!("WEFT_TOPOLOGY={path}: hwloc refused it: {e}"))?
        }
    };
    b.build()
        .map_err(|e| format!("hwloc: loading the topology: {e}"))
}

/// The finest group kind that splits the node and the one group holding every CPU in
/// `cpus`.
fn group_of(topo: &Topology, cpus: &[usize]) -> Result<CoreGroup, String> {
    if cpus.is_empty() {
        return Err("the CPUs this rank runs on are unknown".into());
    }
    let kinds = [
        (ObjectType::L3Cache, "L3"),
        (ObjectType::NUMANode, "NUMA"),
        (ObjectType::Package, "package"),
    ];
    // The finest kind: the most groups (two or more); the coarser kind wins a tie (the
    // same split, named by the bigger unit).
    let mut best: Option<(Vec<&TopologyObject>, &'static str)> = None;
    for (ty, kind) in kinds.into_iter().rev() {
        let objs: Vec<&TopologyObject> = topo.objects_with_type(ty).collect();
        if objs.len() >= 2 && best.as_ref().is_none_or(|(b, _)| objs.len() > b.len()) {
            best = Some((objs, kind));
        }
    }
    let Some((objs, kind)) = best else {
        return Err("the node is one L3 / NUMA / package group".into());
    };
    let holder = objs.iter().position(|o| {
        o.cpuset()
            .is_some_and(|set| cpus.iter().all(|&c| set.is_set(c)))
    });
    match holder {
        Some(i) => Ok(CoreGroup {
            kind,
            index: i as u32,
            count: objs.len() as u32,
        }),
        None => Err(format!(
            "its CPUs {} are not all in one {kind} group (bind ranks with WEFT_BIND=core)",
            bind::number_ranges(cpus)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_packages_take_ranks_by_pu() {
        let spec = "synthetic:package:2 core:4 pu:1";
        for local in 0..10 {
            let g = core_group(spec, BindMode::None, local, 10).unwrap();
            assert_eq!(g.kind, "package");
            assert_eq!(g.count, 2);
            assert_eq!(g.index, (local % 8) / 4, "local {local}");
        }
        // L3 finer than the packages wins; a single package with one L3 is no split.
        let spec = "synthetic:\"package:2 l3:2 core:2 pu:1\"";
        let g = core_group(spec, BindMode::None, 5, 8).unwrap();
        assert_eq!((g.kind, g.index, g.count), ("L3", 2, 4));
        assert!(matches!(
            core_group("synthetic:package:1 core:4 pu:1", BindMode::None, 0, 4),
            Err(NoGroup::None(_))
        ));
        let bad = |spec| match core_group(spec, BindMode::None, 0, 4) {
            Err(NoGroup::BadTopology(e)) => e,
            other => panic!("{spec}: {other:?}"),
        };
        assert!(bad("synthetic:nonsense").contains("hwloc refused"));
        assert!(bad("/nonexistent/topo.xml").contains("could not read"));
    }
}
