//! The aggregation manager's state (`weft aggd`, docs/aggd.md): a fabric, each switch's free
//! aggregation entries, and the type II trees granted to communicators, keyed by
//! communicator name. Pure state and decisions; the service does the I/O.
//!
//! A request names its members by endpoint name (the runtime sends each rank's host name;
//! a rank on a host of several ranks repeats it). Distinct endpoints are the tree's members.
//! Fewer than two distinct endpoints, an unknown name, or no tree within the entry limits
//! (see [`type2_tree`]) give a type I answer with the reason: the communicator's collectives
//! run on host trees and nothing is consumed. A granted tree consumes one entry on every
//! switch it keeps until [`EntryPool::release`] gives them back.

use super::alloc::{type2_tree, AllocConfig};
use super::type2::Type2Planner;
use crate::fabric::Fabric;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One kept switch of a granted tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeSwitch {
    /// The switch's name in the fabric.
    pub name: String,
    /// Index (in [`Type2Tree::switches`]) of its parent; `None` for the root.
    pub parent: Option<u32>,
}

/// A type II tree as the manager grants it: kept switches (root first) with parent links,
/// and for every requested member the kept switch its endpoint hangs under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Type2Tree {
    /// The kept switches, root first; every parent comes before its children.
    pub switches: Vec<TreeSwitch>,
    /// Per requested member (in request order): index of the switch it hangs under.
    pub member_switch: Vec<u32>,
    /// Kept switches: the entries this tree holds.
    pub cost: u32,
    /// Edges on the longest root-to-endpoint path.
    pub height: u32,
}

impl Type2Tree {
    /// The switches above member `m`, from the one it hangs under up to the root.
    pub fn chain(&self, m: usize) -> Vec<u32> {
        let mut out = vec![self.member_switch[m]];
        while let Some(p) = self.switches[*out.last().expect("non-empty") as usize].parent {
            out.push(p);
        }
        out
    }
}

/// The manager's answer to an allocation request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Grant {
    /// A type II tree: its switches' entries are held until release.
    Type2(Type2Tree),
    /// No in-network tree: the collectives run on the hosts; why.
    Type1 {
        /// Why no type II tree was granted.
        reason: String,
    },
}

/// Entries in use and trees granted, for `status`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStatus {
    /// Entries per switch.
    pub entries_per_switch: u32,
    /// Communicators holding a type II tree.
    pub trees: u32,
    /// Entries in use over all switches.
    pub entries_used: u64,
    /// Switches with no free entry.
    pub full_switches: u32,
}

/// The fabric, its switches' free entries, and the trees granted.
pub struct EntryPool {
    fabric: Fabric,
    config: AllocConfig,
    used: Vec<u32>,
    by_name: HashMap<String, u32>,
    held: HashMap<String, Vec<u32>>,
}

impl EntryPool {
    /// A pool over `fabric` where every switch has `config.entries` entries and trees are
    /// made as `config` says.
    pub fn new(fabric: Fabric, config: AllocConfig) -> EntryPool {
        let by_name = (0..fabric.endpoint_count())
            .map(|e| (fabric.endpoint_name(e), e))
            .collect();
        EntryPool {
            used: vec![0; fabric.switch_count() as usize],
            fabric,
            config,
            by_name,
            held: HashMap::new(),
        }
    }

    /// The fabric.
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// Entries in use on switch `s`.
    pub fn used(&self, s: u32) -> u32 {
        self.used[s as usize]
    }

    /// Whether communicator `comm` holds a tree.
    pub fn holds(&self, comm: &str) -> bool {
        self.held.contains_key(comm)
    }

    /// A tree for communicator `comm` whose members sit on the endpoints named `members`.
    /// `Err` when `comm` already holds a tree (release it first).
    pub fn allocate(&mut self, comm: &str, members: &[String]) -> Result<Grant, String> {
        if self.held.contains_key(comm) {
            return Err(format!(
                "communicator {comm:?} already holds a tree (release it first)"
            ));
        }
        let mut endpoints = Vec::with_capacity(members.len());
        for name in members {
            match self.by_name.get(name) {
                Some(&e) => endpoints.push(e),
                None => {
                    return Ok(Grant::Type1 {
                        reason: format!("host {name:?} is not an endpoint of the fabric"),
                    })
                }
            }
        }
        let mut distinct = endpoints.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() < 2 {
            return Ok(Grant::Type1 {
                reason: format!(
                    "the members sit on {} endpoint (a host tree needs no switch)",
                    distinct.len()
                ),
            });
        }
        let mut planner = Type2Planner::new(&self.fabric, 64 << 20);
        let mut capacity = Vec::new();
        let made = match type2_tree(
            &self.fabric,
            &mut planner,
            &distinct,
            &self.used,
            self.config,
            &mut capacity,
        ) {
            Ok(m) => m,
            Err(reason) => return Ok(Grant::Type1 { reason }),
        };
        let (t, a) = (&made.physical, &made.derived);
        // Kept local switches in the physical tree's order (parents before children).
        let mut index = vec![u32::MAX; t.switch_count() as usize];
        let mut switches = Vec::new();
        for i in 0..t.switch_count() {
            if a.kept(i) {
                index[i as usize] = switches.len() as u32;
                switches.push(TreeSwitch {
                    name: self.fabric.switch_name(t.switch(i)).to_string(),
                    parent: a.switch_parent(i).map(|p| index[p as usize]),
                });
            }
        }
        let member_switch = endpoints
            .iter()
            .map(|e| {
                let m = distinct
                    .binary_search(e)
                    .expect("distinct holds every endpoint");
                index[a.member_parent(m as u32) as usize]
            })
            .collect();
        for &s in &made.kept_switches {
            self.used[s as usize] += 1;
        }
        self.held
            .insert(comm.to_string(), made.kept_switches.clone());
        Ok(Grant::Type2(Type2Tree {
            cost: a.cost(),
            height: a.height(),
            switches,
            member_switch,
        }))
    }

    /// Gives back the entries of `comm`'s tree; false when it holds none.
    pub fn release(&mut self, comm: &str) -> bool {
        match self.held.remove(comm) {
            Some(kept) => {
                for s in kept {
                    self.used[s as usize] -= 1;
                }
                true
            }
            None => false,
        }
    }

    /// Entries in use and trees held.
    pub fn status(&self) -> PoolStatus {
        PoolStatus {
            entries_per_switch: self.config.entries,
            trees: self.held.len() as u32,
            entries_used: self.used.iter().map(|&u| u as u64).sum(),
            full_switches: self
                .used
                .iter()
                .filter(|&&u| u >= self.config.entries)
                .count() as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Method;

    /// Two leaf switches under one spine, two hosts on each leaf.
    fn fabric() -> Fabric {
        let text = r#"
switches = [{ name = "spine" }, { name = "leaf0" }, { name = "leaf1" }]
links = [["spine", "leaf0"], ["spine", "leaf1"]]
endpoints = [
  { name = "h0", switch = "leaf0" }, { name = "h1", switch = "leaf0" },
  { name = "h2", switch = "leaf1" }, { name = "h3", switch = "leaf1" },
]
"#;
        crate::fabric::parse_fabric_toml(text, "test", &[]).unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn pool(entries: u32) -> EntryPool {
        EntryPool::new(fabric(), AllocConfig::new(entries, None, Method::Mincost))
    }

    #[test]
    fn a_tree_over_two_leaves_keeps_the_spine_and_the_leaves() {
        let mut p = pool(4);
        let g = p
            .allocate("c", &names(&["h0", "h0", "h1", "h2", "h3"]))
            .unwrap();
        let Grant::Type2(t) = g else { panic!("{g:?}") };
        assert_eq!(t.switches[0].name, "spine");
        assert_eq!(t.switches[0].parent, None);
        assert_eq!(t.cost, 3);
        assert_eq!(t.member_switch.len(), 5);
        // Ranks on one host share a switch; hosts of one leaf share it; the chain ends at
        // the root.
        assert_eq!(t.member_switch[0], t.member_switch[1]);
        assert_eq!(t.member_switch[0], t.member_switch[2]);
        assert_ne!(t.member_switch[0], t.member_switch[3]);
        assert_eq!(*t.chain(4).last().unwrap(), 0);
        assert_eq!(t.chain(4).len(), 2);
        assert_eq!(p.status().entries_used, 3);
    }

    #[test]
    fn hosts_of_one_leaf_need_only_that_leaf() {
        let mut p = pool(1);
        let Grant::Type2(t) = p.allocate("a", &names(&["h0", "h1"])).unwrap() else {
            panic!()
        };
        assert_eq!(t.cost, 1);
        assert_eq!(t.switches[0].name, "leaf0");
        let leaf0 = p.fabric().switch_by_name("leaf0").unwrap();
        assert_eq!(p.used(leaf0), 1);
    }

    #[test]
    fn entries_run_out_then_release_gives_them_back() {
        let mut p = pool(2);
        let all = names(&["h0", "h1", "h2", "h3"]);
        for c in ["c0", "c1"] {
            assert!(
                matches!(p.allocate(c, &all).unwrap(), Grant::Type2(_)),
                "{c}"
            );
        }
        let spine = p.fabric().switch_by_name("spine").unwrap();
        assert_eq!(p.used(spine), 2);
        // The spine is full: every tree over both leaves needs it.
        match p.allocate("c2", &all).unwrap() {
            Grant::Type1 { reason } => assert!(reason.contains("2 entries per switch"), "{reason}"),
            g => panic!("{g:?}"),
        }
        assert!(!p.holds("c2"));
        assert_eq!(p.status().entries_used, 6);
        assert!(p.release("c0"));
        assert!(!p.release("c0"), "released twice");
        assert_eq!(p.used(spine), 1);
        assert!(matches!(p.allocate("c2", &all).unwrap(), Grant::Type2(_)));
        assert_eq!(p.status().trees, 2);
    }

    #[test]
    fn refusals_say_why_and_consume_nothing() {
        let mut p = pool(2);
        for (members, why) in [
            (names(&["h0", "h0"]), "1 endpoint"),
            (names(&["h0", "nowhere"]), "\"nowhere\" is not an endpoint"),
        ] {
            match p.allocate("x", &members).unwrap() {
                Grant::Type1 { reason } => assert!(reason.contains(why), "{reason}"),
                g => panic!("{g:?}"),
            }
        }
        assert_eq!(p.status().entries_used, 0);
        p.allocate("x", &names(&["h0", "h2"])).unwrap();
        let e = p.allocate("x", &names(&["h0", "h2"])).unwrap_err();
        assert!(e.contains("already holds"), "{e}");
    }
}
