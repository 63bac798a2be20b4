//! Hierarchical k-nomial bcast, reduce and allreduce: the same schedules as the k-nomial
//! ones, on `weft_model::tree::hierarchical_knomial` over the ranks' nodes — the minimum-
//! height k-nomial tree in which every node's ranks form one subtree, so exactly one edge
//! enters each node (seed 001 §3.3, ALGORITHMS.md §2). The reduce combines children in tree
//! order, which is not rank order, so reduce and allreduce need a commutative operation.

use super::{knomial_bcast, knomial_reduce};
use crate::coll::schedule::{Buf, Plan};
use weft_core::Result;
use weft_model::tree::{hierarchical_knomial, GroupLevels, Tree};

/// The tree over ranks whose node ids are `nodes` (one per communicator rank).
pub(crate) fn tree(nodes: &[u32], radix: u32, root: u32) -> Result<Tree> {
    let levels = GroupLevels::new(vec![nodes.to_vec()])?;
    hierarchical_knomial(&levels, radix, None, root)
}

/// Broadcast of the first `bytes` of the receive buffer from `root`.
pub(crate) fn bcast(rank: u32, nodes: &[u32], root: u32, radix: u32, bytes: usize) -> Result<Plan> {
    let mut p = Plan::new();
    knomial_bcast::build_on(&mut p, rank, &tree(nodes, radix, root)?, Buf::Recv, bytes);
    Ok(p)
}

/// Reduce of `bytes` from the send buffer into the root's `out` (commutative operations).
pub(crate) fn reduce(
    p: &mut Plan,
    rank: u32,
    nodes: &[u32],
    root: u32,
    radix: u32,
    bytes: usize,
    out: Buf,
) -> Result<()> {
    let size = nodes.len() as u32;
    knomial_reduce::build_on(p, rank, size, root, &tree(nodes, radix, root)?, bytes, out);
    Ok(())
}

/// Allreduce: reduce to rank 0 up the tree, then broadcast down the same tree.
pub(crate) fn allreduce(rank: u32, nodes: &[u32], radix: u32, bytes: usize) -> Result<Plan> {
    let mut p = Plan::new();
    let t = tree(nodes, radix, 0)?;
    knomial_reduce::build_on(&mut p, rank, nodes.len() as u32, 0, &t, bytes, Buf::Recv);
    knomial_bcast::build_on(&mut p, rank, &t, Buf::Recv, bytes);
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_model::tree::{inter_group_edges, knomial};

    #[test]
    fn one_edge_enters_each_node() {
        // Ranks striped over 3 nodes: a plain k-nomial tree crosses nodes on most edges.
        let nodes: Vec<u32> = (0..12).map(|r| r % 3).collect();
        let levels = GroupLevels::new(vec![nodes.clone()]).unwrap();
        for root in [0, 5] {
            let t = tree(&nodes, 2, root).unwrap();
            assert_eq!(inter_group_edges(&t, &levels), vec![2], "root {root}");
            let plain = knomial(12, 2, root).unwrap();
            assert!(inter_group_edges(&plain, &levels)[0] > 2);
        }
        // The plans follow the tree: every rank but the root receives exactly once.
        let t = tree(&nodes, 2, 0).unwrap();
        for r in 1..12 {
            assert!(t.parent(r).is_some());
        }
        assert!(bcast(3, &nodes, 0, 2, 64).is_ok());
    }
}
