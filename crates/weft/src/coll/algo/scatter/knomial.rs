//! k-nomial scatter over `weft_model::tree::knomial`, the mirror of the k-nomial gather
//! (`gather::knomial`): with relative ranks `(r − root) mod n` every subtree is a
//! contiguous range, so each rank passes its whole subtree's blocks down in one message;
//! the root first rotates them out of rank order. ceil(log_k n) levels instead of the
//! linear algorithm's n − 1 messages at the root. Equal blocks only.

use crate::coll::algo::gather::knomial::rel;
use crate::coll::schedule::{Buf, Plan, Region};
use weft_core::Result;
use weft_model::cost::CollModel;
use weft_model::tree::{KnomialLinks, TreeLinks};

/// Scatter of `block` bytes per rank from the root's send buffer into every receive buffer.
pub(crate) fn plan(rank: u32, size: u32, root: u32, radix: u32, block: usize) -> Result<Plan> {
    let tree = KnomialLinks::new(size, radix, root)?;
    let mut p = Plan::new();
    if rank != root && tree.children(rank).is_empty() {
        // A leaf receives its block straight into the receive buffer.
        if let Some(parent) = tree.parent(rank) {
            p.step();
            p.recv(parent, Region::new(Buf::Recv, 0, block));
        }
        return Ok(p);
    }
    let me = rel(rank, root, size);
    let span = tree.subtree_size(rank) as usize;
    // Root 0 holds the blocks in tree order already: send straight from the send buffer.
    let direct = rank == root && root == 0;
    let tmp = if direct {
        Buf::Send
    } else {
        p.tmp(span * block)
    };
    p.step();
    match tree.parent(rank) {
        Some(parent) => p.recv(parent, Region::new(tmp, 0, span * block)),
        None if direct => {}
        None => {
            for i in 0..size as usize {
                let owner = (i + root as usize) % size as usize;
                p.copy(
                    Region::new(Buf::Send, owner * block, block),
                    Region::new(tmp, i * block, block),
                );
            }
        }
    }
    p.step();
    for &c in tree.children(rank).iter() {
        let off = (rel(c, root, size) - me) * block;
        let len = tree.subtree_size(c) as usize * block;
        p.send(c, Region::new(tmp, off, len));
    }
    p.copy(Region::new(tmp, 0, block), Region::new(Buf::Recv, 0, block));
    Ok(p)
}

/// The mirror of the k-nomial gather.
pub(crate) fn cost(m: &CollModel) -> f64 {
    crate::coll::algo::gather::knomial::cost(m)
}
