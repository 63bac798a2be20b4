//! Hierarchical k-nomial broadcast: the k-nomial broadcast's schedule on
//! `weft_model::tree::hierarchical_knomial` over the ranks' nested groups
//! (`Comm::coll_levels`: core groups inside nodes, docs/topology.md) — the minimum-height
//! k-nomial tree in which every group's ranks form one subtree at every level, so exactly
//! one edge enters each group (seed 001 §3.3, ALGORITHMS.md §2). The hierarchical reduce and
//! allreduce use the same tree ([`tree`]).

use super::knomial as knomial_bcast;
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::{hierarchical_knomial, GroupLevels, Tree};

/// The tree over ranks grouped by `levels` (innermost first).
pub(crate) fn tree(levels: &GroupLevels, radix: u32, root: u32) -> Result<Tree> {
    hierarchical_knomial(levels, radix, None, root)
}

/// Broadcast of the first `bytes` of the receive buffer down `tree` ([`tree`], rooted at
/// the root).
pub(crate) fn plan(rank: u32, tree: &Tree, bytes: usize) -> Plan {
    let mut p = Plan::new();
    knomial_bcast::build_on(&mut p, rank, tree, Buf::Recv, bytes);
    p
}

/// A k-nomial fan-out across the node leaders, then inside the busiest node.
pub(crate) fn cost(m: &CollModel) -> f64 {
    m.hier_fan(m.radix(), m.bytes(), 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coll::schedule::Action;
    use weft_model::tree::{inter_group_edges, knomial};

    #[test]
    fn one_edge_enters_each_node() {
        // Ranks striped over 3 nodes: a plain k-nomial tree crosses nodes on most edges.
        let nodes: Vec<u32> = (0..12).map(|r| r % 3).collect();
        let levels = GroupLevels::new(vec![nodes.clone()]).unwrap();
        for root in [0, 5] {
            let t = tree(&levels, 2, root).unwrap();
            assert_eq!(inter_group_edges(&t, &levels), vec![2], "root {root}");
            let plain = knomial(12, 2, root).unwrap();
            assert!(inter_group_edges(&plain, &levels)[0] > 2);
        }
        // The plans follow the tree: every rank but the root receives exactly once.
        let t = tree(&levels, 2, 0).unwrap();
        for r in 1..12 {
            assert!(t.parent(r).is_some());
        }
        let recvs: Vec<u32> = plan(3, &t, 64)
            .each_step()
            .flatten()
            .filter_map(|a| match *a {
                Action::Recv { peer, .. } => Some(peer),
                _ => None,
            })
            .collect();
        assert_eq!(recvs, vec![t.parent(3).unwrap()]);
    }
}
