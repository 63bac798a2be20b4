//! k-nomial gather over `weft_model::tree::knomial`: with relative ranks
//! `(r − root) mod n`, every subtree is a contiguous range of relative ranks, so each rank
//! moves its whole subtree's blocks in one message; the root rotates them into rank order.
//! ceil(log_k n) levels instead of the linear algorithm's n − 1 messages at the root.
//! Equal blocks only.

use crate::coll::schedule::{Buf, Plan, Region};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::{KnomialLinks, TreeLinks};

/// A rank relative to the root: `(r − root) mod n`.
pub(crate) fn rel(r: u32, root: u32, n: u32) -> usize {
    ((r + n - root) % n) as usize
}

/// Gather of `block` bytes per rank from the send buffer into the root's receive buffer.
pub(crate) fn plan(rank: u32, size: u32, root: u32, radix: u32, block: usize) -> Result<Plan> {
    let tree = KnomialLinks::new(size, radix, root)?;
    let mut p = Plan::new();
    if rank != root && tree.children(rank).is_empty() {
        // A leaf sends its block straight from the send buffer.
        if let Some(parent) = tree.parent(rank) {
            p.step();
            p.send(parent, Region::new(Buf::Send, 0, block));
        }
        return Ok(p);
    }
    let me = rel(rank, root, size);
    let span = tree.subtree_size(rank) as usize;
    // The subtree's blocks in relative order, own block first.
    // Root 0 gathers in rank order already: straight into the receive buffer.
    let direct = rank == root && root == 0;
    let tmp = if direct {
        Buf::Recv
    } else {
        p.tmp(span * block)
    };
    p.step();
    p.copy(Region::new(Buf::Send, 0, block), Region::new(tmp, 0, block));
    for &c in tree.children(rank).iter() {
        let off = (rel(c, root, size) - me) * block;
        let len = tree.subtree_size(c) as usize * block;
        p.recv(c, Region::new(tmp, off, len));
    }
    p.step();
    match tree.parent(rank) {
        Some(parent) => p.send(parent, Region::new(tmp, 0, span * block)),
        None if direct => {}
        None => {
            for i in 0..size as usize {
                let owner = (i + root as usize) % size as usize;
                p.copy(
                    Region::new(tmp, i * block, block),
                    Region::new(Buf::Recv, owner * block, block),
                );
            }
        }
    }
    Ok(p)
}

/// ceil(log_k n) levels of k − 1 messages, each of a whole subtree's blocks.
pub(crate) fn cost(m: &CollModel) -> f64 {
    let (k, pf, n) = (m.radix(), m.procs(), m.bytes());
    m.knomial(k, 0.0, |l| (k.saturating_pow(l) as f64).min(pf) * n)
}
