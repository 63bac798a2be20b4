//! The node's topology as hwloc sees it (hwloc 2.x, loaded at run time: [`crate::hwloc`]),
//! reduced to what the hierarchical collectives need: which *core group* a rank runs in, a
//! core group being the finest of the L3 caches, NUMA nodes and packages that splits the
//! node into two or more parts (docs/topology.md).
//!
//! The topology is this machine's, or one given by `WEFT_TOPOLOGY`: an hwloc synthetic
//! description (`synthetic:package:2 core:4 pu:1`) or the path of an hwloc XML file. On the
//! real machine a rank's CPUs are the one it will be pinned to (`WEFT_BIND`, [`bind`]) or,
//! unpinned, every CPU it may run on; a rank whose CPUs span two groups is in none. With a
//! given topology nothing is bound: local rank `l` is taken to run on the PU of logical
//! index `l mod PUs`, so a small machine can stand in for a bigger node in tests.
//!
//! Depends on [`crate::hwloc`] and [`bind`]. A topology given by the knob that cannot be
//! read (hwloc refuses it, or hwloc cannot be loaded at all) is the user's error
//! ([`NoGroup::BadTopology`]: the caller stops the job); this machine's topology failing to
//! load, or hwloc missing, only leaves the rank in no group, and the reason is kept.

use crate::bind;
use crate::config::Config;
use crate::hwloc::{self, LoadError, Obj, Topology};

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
    /// read (hwloc missing, or failing): why.
    None(String),
}

impl std::fmt::Display for NoGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoGroup::BadTopology(why) | NoGroup::None(why) => f.write_str(why),
        }
    }
}

fn source(spec: &str) -> hwloc::Source<'_> {
    let spec = spec.trim();
    if spec.is_empty() {
        hwloc::Source::Machine
    } else if let Some(d) = spec.strip_prefix("synthetic:") {
        hwloc::Source::Synthetic(d.trim().trim_matches('"'))
    } else {
        hwloc::Source::Xml(spec)
    }
}

/// The topology `config` names (`WEFT_TOPOLOGY`), loaded with hwloc (`WEFT_HWLOC_LIB`).
fn load(config: &Config) -> Result<Topology, NoGroup> {
    let spec = config.topology.trim();
    let src = source(spec);
    Topology::load(&config.hwloc_lib, src).map_err(|e| match (src, e) {
        (hwloc::Source::Machine, LoadError::NoLibrary(why)) => NoGroup::None(format!(
            "no hwloc to read this machine's topology: {why} (install libhwloc15, or name \
             the library in WEFT_HWLOC_LIB)"
        )),
        (hwloc::Source::Machine, LoadError::Refused(why)) => {
            NoGroup::None(format!("hwloc: this machine's topology: {why}"))
        }
        (_, LoadError::NoLibrary(why)) => NoGroup::BadTopology(format!(
            "WEFT_TOPOLOGY={spec} needs hwloc, which cannot be had: {why} (install \
             libhwloc15, name the library in WEFT_HWLOC_LIB, or unset WEFT_TOPOLOGY)"
        )),
        (_, LoadError::Refused(why)) => {
            NoGroup::BadTopology(format!("WEFT_TOPOLOGY={spec}: {why}"))
        }
    })
}

/// The core group of local rank `local` of `local_size` under the topology and binding of
/// `config` (`WEFT_TOPOLOGY`, `WEFT_BIND`); `Err` says why there is none (a given topology
/// that cannot be read; no hwloc, the rank's CPUs span groups, the node is one group).
pub(crate) fn core_group(
    config: &Config,
    local: u32,
    local_size: u32,
) -> Result<CoreGroup, NoGroup> {
    let topo = load(config)?;
    read_group(&topo, config, local, local_size).map_err(NoGroup::None)
}

/// The core group of every local rank of a node of `local_size` ranks under `config`, the
/// topology loaded once; `Err` as for [`core_group`], naming the first local rank in none.
pub(crate) fn core_groups(config: &Config, local_size: u32) -> Result<Vec<CoreGroup>, NoGroup> {
    let topo = load(config)?;
    (0..local_size)
        .map(|local| {
            read_group(&topo, config, local, local_size)
                .map_err(|why| NoGroup::None(format!("local rank {local}: {why}")))
        })
        .collect()
}

fn read_group(
    topo: &Topology,
    config: &Config,
    local: u32,
    local_size: u32,
) -> Result<CoreGroup, String> {
    // The rank's CPUs (OS indices).
    let cpus: Vec<usize> = match source(&config.topology) {
        hwloc::Source::Machine => match bind::cpu_for(config.bind, local, local_size) {
            Some(cpu) => vec![cpu],
            None => bind::allowed_cpus().to_vec(),
        },
        hwloc::Source::Synthetic(_) | hwloc::Source::Xml(_) => {
            let pus = topo.objects(hwloc::OBJ_PU);
            if pus.is_empty() {
                return Err("the topology has no PU".into());
            }
            let pu = pus[local as usize % pus.len()];
            vec![pu.first_cpu().ok_or("the topology's PU has no CPU")?]
        }
    };
    group_of(topo, &cpus)
}

/// The finest group kind that splits the node and the one group holding every CPU in
/// `cpus`.
fn group_of(topo: &Topology, cpus: &[usize]) -> Result<CoreGroup, String> {
    if cpus.is_empty() {
        return Err("the CPUs this rank runs on are unknown".into());
    }
    let kinds = [
        (hwloc::OBJ_L3CACHE, "L3"),
        (hwloc::OBJ_NUMANODE, "NUMA"),
        (hwloc::OBJ_PACKAGE, "package"),
    ];
    // The finest kind: the most groups (two or more); the coarser kind wins a tie (the
    // same split, named by the bigger unit).
    let mut best: Option<(Vec<Obj<'_>>, &'static str)> = None;
    for (ty, kind) in kinds.into_iter().rev() {
        let objs = topo.objects(ty);
        if objs.len() >= 2 && best.as_ref().is_none_or(|(b, _)| objs.len() > b.len()) {
            best = Some((objs, kind));
        }
    }
    let Some((objs, kind)) = best else {
        return Err("the node is one L3 / NUMA / package group".into());
    };
    let holder = objs.iter().position(|o| cpus.iter().all(|&c| o.has_cpu(c)));
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

    fn given(topology: &str) -> Config {
        Config::from_vars(&[("WEFT_TOPOLOGY", topology)]).unwrap()
    }

    #[test]
    fn synthetic_packages_take_ranks_by_pu() {
        let two_by_four = given("synthetic:package:2 core:4 pu:1");
        for local in 0..10 {
            let g = core_group(&two_by_four, local, 10).unwrap();
            assert_eq!(g.kind, "package");
            assert_eq!(g.count, 2);
            assert_eq!(g.index, (local % 8) / 4, "local {local}");
        }
        let all = core_groups(&two_by_four, 10).unwrap();
        let ids: Vec<u32> = all.iter().map(|g| g.index).collect();
        assert_eq!(ids, [0, 0, 0, 0, 1, 1, 1, 1, 0, 0]);
        // L3 finer than the packages wins; a single package with one L3 is no split.
        let g = core_group(&given("synthetic:\"package:2 l3:2 core:2 pu:1\""), 5, 8).unwrap();
        assert_eq!((g.kind, g.index, g.count), ("L3", 2, 4));
        // NUMA nodes finer than the packages win too.
        let g = core_group(&given("synthetic:package:2 numa:2 core:2 pu:1"), 6, 8).unwrap();
        assert_eq!((g.kind, g.index, g.count), ("NUMA", 3, 4));
        assert!(matches!(
            core_group(&given("synthetic:package:1 core:4 pu:1"), 0, 4),
            Err(NoGroup::None(_))
        ));
    }

    #[test]
    fn a_topology_that_cannot_be_read_is_an_error_naming_the_knob() {
        let bad = |spec| match core_group(&given(spec), 0, 4) {
            Err(NoGroup::BadTopology(e)) => {
                assert!(e.contains("WEFT_TOPOLOGY"), "{e}");
                e
            }
            other => panic!("{spec}: {other:?}"),
        };
        assert!(bad("synthetic:nonsense").contains("hwloc refused"));
        assert!(bad("/nonexistent/topo.xml").contains("could not read"));
        // Without hwloc a given topology is an error; this machine's is no group, and why.
        let vars = [
            ("WEFT_TOPOLOGY", "synthetic:package:2 core:4 pu:1"),
            ("WEFT_HWLOC_LIB", "libhwloc-not-there.so.15"),
        ];
        match core_group(&Config::from_vars(&vars).unwrap(), 0, 4) {
            Err(NoGroup::BadTopology(e)) => {
                assert!(
                    e.contains("WEFT_TOPOLOGY=synthetic:package:2 core:4 pu:1"),
                    "{e}"
                );
                assert!(e.contains("libhwloc-not-there.so.15"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let machine = Config::from_vars(&vars[1..]).unwrap();
        match core_groups(&machine, 4) {
            Err(NoGroup::None(e)) => assert!(e.contains("no hwloc"), "{e}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_xml_topology_is_read() {
        // hwloc's own XML export of a synthetic two-package machine.
        let dir = std::env::temp_dir().join(format!("weft-topology-xml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("two.xml");
        let made = std::process::Command::new("lstopo-no-graphics")
            .args(["-i", "package:2 core:2 pu:1", "--of", "xml"])
            .arg(&path)
            .status();
        if !matches!(made, Ok(s) if s.success()) {
            std::fs::remove_dir_all(&dir).unwrap();
            println!("skipped: lstopo-no-graphics (hwloc) is not installed");
            return;
        }
        let config = given(path.to_str().unwrap());
        let ids: Vec<u32> = core_groups(&config, 4)
            .unwrap()
            .iter()
            .map(|g| g.index)
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(ids, [0, 0, 1, 1]);
    }
}
